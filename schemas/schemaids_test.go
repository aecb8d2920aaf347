package schemas

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"

	"github.com/lakewap/lakewap/schemas/registrytest"
)

// A producer who can register schemas (Confluent clients do by default)
// can send each message under a schema id of its own. The codec keeps the
// maxSchemaIDs ids it used last (readable or not); an id it keeps is
// answered without asking the registry, and a new one pushes out the one
// used longest ago. Before, the codec counted ids for the process's life:
// past maxSchemaIDs every new id was refused (too_many_schemas) until a
// restart, a legitimate new schema of a lakewap event included, and the
// registry client and the Avro parser kept every schema they were given
// (hamba's GetSchema caches by id and parses into the parser's global
// cache of named types), so the ids held down did not hold memory down.
func TestSchemaIDsResolvedAreBounded(t *testing.T) {
	ctx := context.Background()
	soe, confluent, reg := codecs(t)
	ev := sampleEvents()[2]
	good, err := soe.Encode(ctx, topic, ev)
	if err != nil {
		t.Fatal(err)
	}
	message := func(id int) []byte {
		return append([]byte{0, byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}, good[10:]...)
	}
	reasons := map[string]int{}
	junk := make([]int, maxSchemaIDs+100)
	for i := range junk {
		junk[i] = reg.Register("junk-value", fmt.Sprintf(`{"type":"record","name":"com.example.Junk%d","fields":[{"name":"id","type":"long"}]}`, i))
		for range 2 {
			_, err := confluent.Decode(ctx, message(junk[i]))
			var de *DecodeError
			if !errors.As(err, &de) || !de.Permanent() {
				t.Fatalf("schema %d: %v, want a permanent decode error", i, err)
			}
			reasons[de.Reason]++
		}
	}
	if got := reg.Requests("get"); got != len(junk) {
		t.Errorf("the registry was asked %d times for %d distinct ids, sent twice each; want once each", got, len(junk))
	}
	if reasons[DecodeIncompatibleSchema] != 2*len(junk) {
		t.Errorf("reasons %v, want %d incompatible", reasons, 2*len(junk))
	}
	confluent.mu.Lock()
	held := confluent.resolved.Len()
	confluent.mu.Unlock()
	if held > maxSchemaIDs {
		t.Errorf("the codec holds %d schema ids, want at most %d", held, maxSchemaIDs)
	}
	for _, name := range []string{"com.example.Junk0", fmt.Sprint("com.example.Junk", len(junk)-1)} {
		if avro.DefaultSchemaCache.Get(name) != nil {
			t.Errorf("the Avro parser's global cache holds the registry's schema %s", name)
		}
	}
	// A new schema of a lakewap event is still read.
	text, err := SchemaText(ev.EventType())
	if err != nil {
		t.Fatal(err)
	}
	got, err := confluent.Decode(ctx, message(reg.Register("wap.events-new", text)))
	if err != nil || got.Batch() != ev.Batch() {
		t.Errorf("a new schema id of %s after %d junk ones: %v, %v; want it decoded", ev.EventType(), len(junk), got, err)
	}
	// The id used longest ago was let go, and no copy of it is kept
	// elsewhere: it is asked for again.
	before := reg.Requests("get")
	if _, err := confluent.Decode(ctx, message(junk[0])); err == nil {
		t.Fatal("junk decoded")
	}
	if reg.Requests("get") != before+1 {
		t.Errorf("the first junk id, let go, was answered without asking the registry")
	}
}

// The codec's own reading of a schema by id sends the registry's basic
// credentials, as registering does.
func TestSchemaByIDWithBasicAuth(t *testing.T) {
	ctx := context.Background()
	reg := registrytest.New(t)
	reg.RequireBasicAuth("lakewap", "s3cret")
	codec := func(opts ...RegistryOption) *Codec {
		client, err := NewRegistryClient(reg.URL, reg.Client(), opts...)
		if err != nil {
			t.Fatal(err)
		}
		c, err := NewCodec(Options{Registry: client})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	ev := sampleEvents()[1]
	b, err := codec(WithBasicAuth("lakewap", "s3cret")).Encode(ctx, topic, ev)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := codec(WithBasicAuth("lakewap", "s3cret")).Decode(ctx, b); err != nil || got.Batch() != ev.Batch() {
		t.Errorf("decoded with the credentials: %v, %v", got, err)
	}
	var de *DecodeError
	if _, err := codec().Decode(ctx, b); !errors.As(err, &de) || de.Reason != DecodeRegistryUnavailable {
		t.Errorf("decoded without the credentials: %v, want %s", err, DecodeRegistryUnavailable)
	}
}

// A writer schema is read only from an answer of at most
// maxRegistryAnswer bytes (lakewap's largest registered schema, BatchAborted, is 4.7 KB): hamba
// prints a record schema to fingerprint it by adding each field to a
// string, so the time grows with the square of its fields, and a producer
// that registered schemas of 12,000 optional fields (700 KB) made each new
// id cost 2.7 s of CPU in the partition's decode (measured). A larger one
// is refused (incompatible_schema) without being parsed, and not asked
// for again.
func TestLargeWriterSchemasAreRefused(t *testing.T) {
	ctx := context.Background()
	soe, confluent, reg := codecs(t)
	ev := sampleEvents()[2]
	good, err := soe.Encode(ctx, topic, ev)
	if err != nil {
		t.Fatal(err)
	}
	text, err := SchemaText(ev.EventType())
	if err != nil {
		t.Fatal(err)
	}
	var extra []string
	for i := range 1500 {
		extra = append(extra, fmt.Sprintf(`{"name":"x%05d","type":["null","string"],"default":null}`, i))
	}
	big := strings.Replace(text, `"fields":[`, `"fields":[`+strings.Join(extra, ",")+",", 1)
	id := reg.Register("big", big)
	message := append([]byte{0, byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}, good[10:]...)
	for range 2 {
		_, err := confluent.Decode(ctx, message)
		var de *DecodeError
		if !errors.As(err, &de) || de.Reason != DecodeIncompatibleSchema || !strings.Contains(err.Error(), "bytes") {
			t.Fatalf("a writer schema of %d bytes: %v; want %s naming its size", len(big), err, DecodeIncompatibleSchema)
		}
	}
	if n := reg.Requests("get"); n != 1 {
		t.Errorf("the registry was asked %d times for the large schema, want once", n)
	}
}

// A producer sending messages under schema ids the registry does not have
// (junk, or a registry other than lakewap's) made the codec ask the
// registry once per message: 10,000 messages over 100 such ids were 10,000
// calls. The registry's "no such id" is kept for missingFor, for at most
// maxSchemaIDs ids: the messages are still dead-lettered unknown_schema_id,
// at one call per id, and an id registered later is read once that time is
// over.
func TestUnknownSchemaIDsAreRememberedForAWhile(t *testing.T) {
	ctx := context.Background()
	soe, confluent, reg := codecs(t)
	now := time.Unix(1_800_000_000, 0)
	confluent.now = func() time.Time { return now }
	ev := sampleEvents()[2]
	good, err := soe.Encode(ctx, topic, ev)
	if err != nil {
		t.Fatal(err)
	}
	message := func(id int) []byte {
		return append([]byte{0, byte(id >> 24), byte(id >> 16), byte(id >> 8), byte(id)}, good[10:]...)
	}
	unknown := func(id int) {
		t.Helper()
		_, err := confluent.Decode(ctx, message(id))
		var de *DecodeError
		if !errors.As(err, &de) || de.Reason != DecodeUnknownSchemaID || !de.Permanent() {
			t.Fatalf("schema id %d: %v, want a permanent %s", id, err, DecodeUnknownSchemaID)
		}
	}
	const ids, messages = 100, 10_000
	for i := range messages {
		unknown(1_000_000 + i%ids)
	}
	if got := reg.Requests("get"); got != ids {
		t.Errorf("the registry was asked %d times for %d messages over %d unknown ids; want once per id", got, messages, ids)
	}

	// An id the registry gets later (ids here start at 100): unknown until
	// the registry's answer is missingFor old, then read.
	text, err := SchemaText(ev.EventType())
	if err != nil {
		t.Fatal(err)
	}
	later := 100
	unknown(later)
	if id := reg.Register("wap.events-value", text); id != later {
		t.Fatalf("registered as %d, want %d", id, later)
	}
	before := reg.Requests("get")
	now = now.Add(missingFor - time.Second)
	unknown(later)
	if got := reg.Requests("get"); got != before {
		t.Errorf("asked the registry %d times within missingFor of its answer, want none", got-before)
	}
	now = now.Add(time.Second)
	got, err := confluent.Decode(ctx, message(later))
	if err != nil || got.Batch() != ev.Batch() {
		t.Errorf("an id registered after it was asked, read missingFor later: %v, %v; want it decoded", got, err)
	}

	// At most maxSchemaIDs such answers are kept.
	for i := range maxSchemaIDs + 10 {
		unknown(2_000_000 + i)
	}
	confluent.mu.Lock()
	held := confluent.missing.Len()
	confluent.mu.Unlock()
	if held > maxSchemaIDs {
		t.Errorf("the codec holds %d unknown schema ids, want at most %d", held, maxSchemaIDs)
	}
}
