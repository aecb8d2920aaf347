package schemas

import (
	"context"
	"errors"
	"reflect"
	"testing"
)

// FuzzDecode: arbitrary bytes never panic, and yield either a typed error or
// an event that encodes back to a value decoding to the same event.
func FuzzDecode(f *testing.F) {
	ctx := context.Background()
	soe, err := NewCodec(Options{})
	if err != nil {
		f.Fatal(err)
	}
	for _, ev := range append(sampleEvents(), minimalEvents()...) {
		b, err := soe.Encode(ctx, topic, ev)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		// Confluent framing of the same body: without a registry this must
		// fail as unknown_schema_id, never by reading the body.
		f.Add(append([]byte{0, 0, 0, 0, 100}, b[10:]...))
	}
	f.Add([]byte{})
	f.Add([]byte{0xC3})
	f.Add([]byte("garbage"))
	f.Fuzz(func(t *testing.T, value []byte) {
		ev, err := soe.Decode(ctx, value)
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || de.Reason == "" || ev != nil {
				t.Fatalf("untyped error %T %v (event %v)", err, err, ev)
			}
			if !de.Permanent() {
				t.Fatalf("no registry, yet a transient error: %v", err)
			}
			return
		}
		if ev == nil {
			t.Fatal("nil event without error")
		}
		again, err := soe.Encode(ctx, topic, ev)
		if err != nil {
			t.Fatalf("decoded %#v does not encode: %v", ev, err)
		}
		ev2, err := soe.Decode(ctx, again)
		if err != nil || !reflect.DeepEqual(ev, ev2) {
			t.Fatalf("re-encoding changed the event: %#v -> %#v (%v)", ev, ev2, err)
		}
	})
}
