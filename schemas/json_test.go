package schemas

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

func TestJSONRoundTrip(t *testing.T) {
	for _, ev := range append(sampleEvents(), minimalEvents()...) {
		doc, err := ToJSON(ev)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.ContainsRune(doc, '\n') {
			t.Errorf("%s: ToJSON is not one line: %s", ev.EventType(), doc)
		}
		got, err := FromJSON(strings.ToLower(ev.EventType()), doc)
		if err != nil {
			t.Fatalf("%s: %v\n%s", ev.EventType(), err, doc)
		}
		if !reflect.DeepEqual(got, ev) {
			t.Errorf("%s:\n got %#v\nwant %#v", ev.EventType(), got, ev)
		}
	}
}

func TestFromJSONScriptInput(t *testing.T) {
	doc := `{"batch_id":"b1","dataset":"orders","expected_writes":["orders"],
	         "write_deadline":"2024-05-01T01:00:00Z","occurred_at":"2024-05-01T00:00:00.5+02:00"}`
	ev, err := FromJSON("batch-landed", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	bl := ev.(BatchLanded)
	if bl.BatchID != "b1" || !bl.OccurredAt.Equal(ms("2024-04-30T22:00:00.5Z")) || !bl.WriteDeadline.Equal(ms("2024-05-01T01:00:00Z")) {
		t.Fatalf("%+v", bl)
	}
	for _, tc := range []struct{ typ, doc, want string }{
		{"BatchLanded", `{"batch_id":"b1","datset":"orders"}`, "unknown field"},
		{"BatchLanded", `{"batch_id":"b1"} {"batch_id":"b2"}`, "more than one"},
		{"BatchLanded", `{"occurred_at":"yesterday"}`, "yesterday"},
		{"Nope", `{}`, "unknown event type"},
	} {
		if _, err := FromJSON(tc.typ, []byte(tc.doc)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("FromJSON(%s, %s) = %v, want error containing %q", tc.typ, tc.doc, err, tc.want)
		}
	}
}
