package schemas

import (
	"context"
	"errors"
	"os"
	"reflect"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas/registrytest"
)

// batchLandedV2 is the Go side of testdata/evolution/v2/BatchLanded.avsc:
// source_ref (which had a default) is gone, priority (with a default) is new.
type batchLandedV2 struct {
	BatchID        string            `avro:"batch_id"`
	Dataset        string            `avro:"dataset"`
	ExpectedWrites []string          `avro:"expected_writes"`
	WriteDeadline  *time.Time        `avro:"write_deadline"`
	Attributes     map[string]string `avro:"attributes"`
	Producer       string            `avro:"producer"`
	Priority       int               `avro:"priority"`
	OccurredAt     time.Time         `avro:"occurred_at"`
}

func (batchLandedV2) EventType() string   { return TypeBatchLanded }
func (e batchLandedV2) Batch() string     { return e.BatchID }
func (batchLandedV2) DatasetName() string { return "" }
func (batchLandedV2) ID() string          { return "" }

func readFile(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// v2Codec is a reader/writer on schema v2. history lists the writer schemas
// it knows besides its own (single-object needs them; Confluent does not).
func v2Codec(t *testing.T, opts Options, history ...string) *Codec {
	t.Helper()
	set, err := loadSchemaSet(os.DirFS("testdata/evolution/v2"), []kindSpec{kindOf[batchLandedV2](TypeBatchLanded)}, history)
	if err != nil {
		t.Fatal(err)
	}
	return newCodec(opts, set)
}

// The v1 fixture must be a version lakewap shipped, so that these tests
// prove something about real producers.
func TestV1FixtureIsAShippedSchema(t *testing.T) {
	s, err := parseSchema(readFile(t, "testdata/evolution/v1/BatchLanded.avsc"))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, fp := range readGolden(t)[TypeBatchLanded] {
		found = found || fp == Fingerprint(s)
	}
	if !found {
		t.Fatalf("v1 fixture fingerprint %016x is not in fingerprints.golden", Fingerprint(s))
	}
}

func TestEvolution(t *testing.T) {
	ctx := context.Background()
	v1Text := readFile(t, "testdata/evolution/v1/BatchLanded.avsc")
	v2Text := readFile(t, "testdata/evolution/v2/BatchLanded.avsc")
	v1Event := sampleEvents()[0].(BatchLanded)
	v2Event := batchLandedV2{BatchID: "b-2", Dataset: "orders", ExpectedWrites: []string{"orders"},
		WriteDeadline: ptr(ms("2024-06-01T01:00:00Z")), Attributes: map[string]string{"k": "v"},
		Producer: "new-producer", Priority: 9, OccurredAt: ms("2024-06-01T00:00:00.25Z")}

	// What each reader must see: removed fields take the reader's default,
	// unknown fields are skipped.
	v1AsV2 := batchLandedV2{BatchID: v1Event.BatchID, Dataset: v1Event.Dataset, ExpectedWrites: v1Event.ExpectedWrites,
		WriteDeadline: v1Event.WriteDeadline, Attributes: v1Event.Attributes, Producer: v1Event.Producer,
		Priority: 0, OccurredAt: v1Event.OccurredAt}
	v2AsV1 := BatchLanded{BatchID: v2Event.BatchID, Dataset: v2Event.Dataset, SourceRef: "",
		ExpectedWrites: v2Event.ExpectedWrites, WriteDeadline: v2Event.WriteDeadline, Attributes: v2Event.Attributes,
		Producer: v2Event.Producer, OccurredAt: v2Event.OccurredAt}

	reg := registrytest.New(t)
	client, err := NewRegistryClient(reg.URL, reg.Client())
	if err != nil {
		t.Fatal(err)
	}
	v1, err := NewCodec(Options{})
	if err != nil {
		t.Fatal(err)
	}
	v1KnowsV2, err := NewCodec(Options{WriterSchemas: []string{v2Text}})
	if err != nil {
		t.Fatal(err)
	}
	v1Registry, err := NewCodec(Options{Registry: client})
	if err != nil {
		t.Fatal(err)
	}
	freshV1Registry := func() *Codec {
		c, err := NewCodec(Options{Registry: client})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	for _, tc := range []struct {
		name     string
		producer *Codec
		ev       Event
		consumer *Codec
		want     Event
	}{
		{"single-object v1 producer, v2 reader", v1, v1Event, v2Codec(t, Options{}, v1Text), v1AsV2},
		{"single-object v2 producer, v1 reader", v2Codec(t, Options{}), v2Event, v1KnowsV2, v2AsV1},
		// With a registry neither side needs the other's schema in advance.
		{"confluent v1 producer, v2 reader", v1Registry, v1Event, v2Codec(t, Options{Registry: client}), v1AsV2},
		{"confluent v2 producer, v1 reader", v2Codec(t, Options{Registry: client}), v2Event, freshV1Registry(), v2AsV1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := tc.producer.Encode(ctx, topic, tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			got, err := tc.consumer.Decode(ctx, b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("\n got %#v\nwant %#v", got, tc.want)
			}
		})
	}

	// Single-object encoding carries only a fingerprint: a reader that was
	// not given the newer schema cannot decode, and says so permanently.
	b, err := v2Codec(t, Options{}).Encode(ctx, topic, v2Event)
	if err != nil {
		t.Fatal(err)
	}
	_, err = v1.Decode(ctx, b)
	var de *DecodeError
	if !errors.As(err, &de) || de.Reason != DecodeUnknownFingerprint {
		t.Fatalf("v1 reader without the v2 schema: %v", err)
	}
}

// A writer schema that drops a field the reader needs (no default) must be
// refused when the codec is built, not when the first message arrives.
func TestIncompatibleWriterSchemaIsRefused(t *testing.T) {
	bad := `{"type":"record","name":"BatchLanded","namespace":"io.lakewap.events","fields":[{"name":"batch_id","type":"string"}]}`
	if _, err := NewCodec(Options{WriterSchemas: []string{bad}}); err == nil {
		t.Fatal("NewCodec accepted a writer schema without dataset/occurred_at")
	}
	if _, err := NewCodec(Options{WriterSchemas: []string{`{"type":"record","name":"x.Y","fields":[]}`}}); err == nil {
		t.Fatal("NewCodec accepted a foreign writer schema")
	}
}
