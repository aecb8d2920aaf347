package schemas

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"
	"testing/fstest"
	"time"

	"github.com/lakewap/lakewap/schemas/registrytest"
)

// Writer-side types of producers whose schema has a plain field where
// lakewap's reader has ["null", X]: Apache Avro (Java) reads such values and
// its compatibility check calls the pair compatible.
type (
	writeCompletePlain struct {
		BatchID    string    `avro:"batch_id"`
		Dataset    string    `avro:"dataset"`
		Write      string    `avro:"write"`
		Paths      []string  `avro:"paths"`
		RowCount   int64     `avro:"row_count"`
		OccurredAt time.Time `avro:"occurred_at"`
	}
	batchLandedPlain struct {
		BatchID        string            `avro:"batch_id"`
		Dataset        string            `avro:"dataset"`
		SourceRef      string            `avro:"source_ref"`
		ExpectedWrites []string          `avro:"expected_writes"`
		WriteDeadline  time.Time         `avro:"write_deadline"`
		Attributes     map[string]string `avro:"attributes"`
		Producer       string            `avro:"producer"`
		OccurredAt     time.Time         `avro:"occurred_at"`
	}
	branchReadyPlain struct {
		EventID        string    `avro:"event_id"`
		BatchID        string    `avro:"batch_id"`
		Dataset        string    `avro:"dataset"`
		Repository     string    `avro:"repository"`
		Branch         string    `avro:"branch"`
		LakeFSURI      string    `avro:"lakefs_uri"`
		S3URI          string    `avro:"s3_uri"`
		ExpectedWrites []string  `avro:"expected_writes"`
		WriteDeadline  time.Time `avro:"write_deadline"`
		OccurredAt     time.Time `avro:"occurred_at"`
	}
)

func (writeCompletePlain) EventType() string { return TypeWriteComplete }
func (e writeCompletePlain) Batch() string   { return e.BatchID }
func (batchLandedPlain) EventType() string   { return TypeBatchLanded }
func (e batchLandedPlain) Batch() string     { return e.BatchID }
func (branchReadyPlain) EventType() string   { return TypeBranchReady }
func (e branchReadyPlain) Batch() string     { return e.BatchID }

// Only the codec sees these test types.
func (writeCompletePlain) DatasetName() string { return "" }
func (writeCompletePlain) ID() string          { return "" }
func (batchLandedPlain) DatasetName() string   { return "" }
func (batchLandedPlain) ID() string            { return "" }
func (branchReadyPlain) DatasetName() string   { return "" }
func (branchReadyPlain) ID() string            { return "" }

// plainSchema is the current schema of eventType with field's
// ["null", X] union replaced by X (and its null default dropped).
func plainSchema(t *testing.T, eventType, field string) string {
	t.Helper()
	text, err := SchemaText(eventType)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(text), &doc); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, f := range doc["fields"].([]any) {
		f := f.(map[string]any)
		if f["name"] != field {
			continue
		}
		union := f["type"].([]any)
		if len(union) != 2 || union[0] != "null" {
			t.Fatalf("%s.%s is %v, not [null, X]", eventType, field, union)
		}
		f["type"] = union[1]
		delete(f, "default")
		found = true
	}
	if !found {
		t.Fatalf("%s has no field %s", eventType, field)
	}
	b, _ := json.Marshal(doc)
	return string(b)
}

// A writer schema with a plain field where the reader has ["null", X]
// decodes in both wire formats, the value landing in the union's X branch.
func TestPlainWriterFieldReadsIntoNullableReaderField(t *testing.T) {
	ctx := context.Background()
	at := ms("2024-06-01T00:00:00.25Z")
	deadline := ms("2024-06-01T01:00:00Z")
	for _, tc := range []struct {
		eventType, field string
		kind             kindSpec
		ev               Event
		want             Event
	}{
		{TypeWriteComplete, "row_count", kindOf[writeCompletePlain](TypeWriteComplete),
			writeCompletePlain{BatchID: "b-1", Dataset: "orders", Write: "orders", Paths: []string{"p"}, RowCount: 42, OccurredAt: at},
			WriteComplete{BatchID: "b-1", Dataset: "orders", Write: "orders", Paths: []string{"p"}, RowCount: ptr(int64(42)), OccurredAt: at}},
		{TypeBatchLanded, "write_deadline", kindOf[batchLandedPlain](TypeBatchLanded),
			batchLandedPlain{BatchID: "b-2", Dataset: "orders", ExpectedWrites: []string{"orders"}, WriteDeadline: deadline,
				Attributes: map[string]string{}, Producer: "java", OccurredAt: at},
			BatchLanded{BatchID: "b-2", Dataset: "orders", ExpectedWrites: []string{"orders"}, WriteDeadline: ptr(deadline),
				Attributes: map[string]string{}, Producer: "java", OccurredAt: at}},
		{TypeBranchReady, "write_deadline", kindOf[branchReadyPlain](TypeBranchReady),
			branchReadyPlain{EventID: "e", BatchID: "b-3", Dataset: "orders", Repository: "lake", Branch: "wap-orders-b-3",
				ExpectedWrites: []string{"orders"}, WriteDeadline: deadline, OccurredAt: at},
			BranchReady{EventID: "e", BatchID: "b-3", Dataset: "orders", Repository: "lake", Branch: "wap-orders-b-3",
				ExpectedWrites: []string{"orders"}, WriteDeadline: ptr(deadline), OccurredAt: at}},
	} {
		text := plainSchema(t, tc.eventType, tc.field)
		set, err := loadSchemaSet(fstest.MapFS{tc.eventType + ".avsc": {Data: []byte(text)}}, []kindSpec{tc.kind}, nil)
		if err != nil {
			t.Fatal(err)
		}
		reg := registrytest.New(t)
		client, err := NewRegistryClient(reg.URL, reg.Client())
		if err != nil {
			t.Fatal(err)
		}
		knowsPlain, err := NewCodec(Options{WriterSchemas: []string{text}})
		if err != nil {
			t.Fatalf("%s: NewCodec refused the plain writer schema: %v", tc.eventType, err)
		}
		withRegistry, err := NewCodec(Options{Registry: client})
		if err != nil {
			t.Fatal(err)
		}
		for _, wire := range []struct {
			name               string
			producer, consumer *Codec
		}{
			{"single-object", newCodec(Options{}, set), knowsPlain},
			{"confluent", newCodec(Options{Registry: client}, set), withRegistry},
		} {
			t.Run(tc.eventType+"."+tc.field+"/"+wire.name, func(t *testing.T) {
				b, err := wire.producer.Encode(ctx, topic, tc.ev)
				if err != nil {
					t.Fatal(err)
				}
				got, err := wire.consumer.Decode(ctx, b)
				if err != nil {
					t.Fatal(err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("\n got %#v\nwant %#v", got, tc.want)
				}
			})
		}
	}
}
