package schemas

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// A producer who can register schemas (Confluent clients do by default)
// can send each message under a schema id of its own. The codec resolves
// at most maxSchemaIDs of them per process: past that, a message of a new
// id is dead-lettered (too_many_schemas) without asking the registry, and
// an id whose schema cannot be read is answered again without asking.
// Before, every new id cost a registry call and stayed in memory for good
// (the codec's plans, the registry client's schemas, the Avro parser's
// named types), and an unreadable id was asked for again with each message.
func TestSchemaIDsResolvedAreBounded(t *testing.T) {
	ctx := context.Background()
	soe, confluent, reg := codecs(t)
	good, err := soe.Encode(ctx, topic, sampleEvents()[2])
	if err != nil {
		t.Fatal(err)
	}
	message := func(id int) []byte {
		return append([]byte{0, byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}, good[10:]...)
	}
	reasons := map[string]int{}
	for i := range maxSchemaIDs + 100 {
		id := reg.Register("junk-value", fmt.Sprintf(`{"type":"record","name":"com.example.Junk%d","fields":[{"name":"id","type":"long"}]}`, i))
		for range 2 {
			_, err := confluent.Decode(ctx, message(id))
			var de *DecodeError
			if !errors.As(err, &de) || !de.Permanent() {
				t.Fatalf("schema %d: %v, want a permanent decode error", i, err)
			}
			reasons[de.Reason]++
		}
	}
	if got := reg.Requests("get"); got > maxSchemaIDs {
		t.Errorf("the registry was asked %d times for %d distinct ids, sent twice each; want at most %d", got, maxSchemaIDs+100, maxSchemaIDs)
	}
	if reasons[DecodeTooManySchemas] != 200 || reasons[DecodeIncompatibleSchema] != 2*maxSchemaIDs {
		t.Errorf("reasons %v, want %d incompatible and 200 too many", reasons, 2*maxSchemaIDs)
	}
}
