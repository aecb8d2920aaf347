package schemas

import (
	"context"
	"encoding/binary"
	"reflect"
	"testing"

	"github.com/hamba/avro/v2"
)

// withoutNewFields is ev as a reader sees an event whose writer did not
// have target_ref, rows_checked and failures: their defaults.
func withoutNewFields(ev Event) Event {
	strip := func(r AuditReport) AuditReport {
		checks := make([]CheckResult, len(r.Checks))
		for i, c := range r.Checks {
			c.RowsChecked, c.Failures = nil, nil
			checks[i] = c
		}
		r.Checks = checks
		return r
	}
	switch e := ev.(type) {
	case BatchPublished:
		e.Report = strip(e.Report)
		return e
	case BatchAborted:
		if e.Report != nil {
			r := strip(*e.Report)
			e.Report = &r
		}
		e.TargetRef = ""
		return e
	case BatchFailed:
		e.TargetRef = ""
		return e
	}
	return ev
}

// Outcomes gained target_ref (BatchAborted, BatchFailed) and check results
// rows_checked and failures: events written with the shipped schemas (kept
// in history/) still decode, with the new fields at their defaults, and an
// event written with the new schemas resolves into the shipped ones, so a
// consumer that has not upgraded reads it.
func TestOutcomeFieldsAreEvolutionSafe(t *testing.T) {
	ctx := context.Background()
	current, err := NewCodec(Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range sampleEvents() {
		name := ev.EventType()
		if name != TypeBatchPublished && name != TypeBatchAborted && name != TypeBatchFailed {
			continue
		}
		t.Run(name, func(t *testing.T) {
			old, err := parseSchema(readFile(t, "history/"+name+".v1.avsc"))
			if err != nil {
				t.Fatal(err)
			}
			// Old producer, current consumer.
			body, err := avro.Marshal(old, ev)
			if err != nil {
				t.Fatal(err)
			}
			msg := binary.LittleEndian.AppendUint64([]byte{singleObjectMagic0, singleObjectMagic1}, Fingerprint(old))
			got, err := current.Decode(ctx, append(msg, body...))
			if err != nil {
				t.Fatalf("decode an event of the shipped schema: %v", err)
			}
			if want := withoutNewFields(ev); !reflect.DeepEqual(got, want) {
				t.Fatalf("old writer, new reader:\n got %#v\nwant %#v", got, want)
			}
			// Current producer, old consumer.
			text, err := SchemaText(name)
			if err != nil {
				t.Fatal(err)
			}
			writer, err := parseSchema(text)
			if err != nil {
				t.Fatal(err)
			}
			resolved, err := avro.NewSchemaCompatibility().Resolve(old, writer)
			if err != nil {
				t.Fatalf("the shipped schema cannot read the new one: %v", err)
			}
			body, err = avro.Marshal(writer, ev)
			if err != nil {
				t.Fatal(err)
			}
			out := reflect.New(reflect.TypeOf(ev))
			if err := avro.Unmarshal(resolved, body, out.Interface()); err != nil {
				t.Fatalf("old reader: %v", err)
			}
			if got, want := out.Elem().Interface().(Event), withoutNewFields(ev); !reflect.DeepEqual(got, want) {
				t.Fatalf("new writer, old reader:\n got %#v\nwant %#v", got, want)
			}
		})
	}
}
