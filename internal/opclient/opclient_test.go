package opclient

import (
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

func TestReadEvents(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	at := time.Date(2025, 6, 1, 11, 0, 0, 0, time.UTC)
	evs, err := ReadEvents(strings.NewReader(`{"type":"BatchLanded","batch_id":"b1","dataset":"billing","expected_writes":["f"]}
{"type":"write_complete","batch_id":"b1","dataset":"billing","write":"f","occurred_at":"2025-06-01T11:00:00Z",
 "row_count":3}
  {"type":"BatchCancelled","batch_id":"b2","dataset":"billing"}`), now)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 3 {
		t.Fatalf("%d events: %+v", len(evs), evs)
	}
	if l := evs[0].(schemas.BatchLanded); !l.OccurredAt.Equal(now) || l.ExpectedWrites[0] != "f" || l.Attributes == nil {
		t.Errorf("landed = %+v, want occurred_at now and empty attributes", l)
	}
	if w := evs[1].(schemas.WriteComplete); !w.OccurredAt.Equal(at) || w.RowCount == nil || *w.RowCount != 3 {
		t.Errorf("write = %+v, want the given occurred_at and 3 rows", w)
	}
	if c := evs[2].(schemas.BatchCancelled); c.BatchID != "b2" {
		t.Errorf("cancel = %+v", c)
	}

	for _, c := range []struct{ doc, want string }{
		{`{"batch_id":"b"}`, `document 1: no "type"`},
		{`{"type":"BatchLanded","batch_id":"b","datset":"x"}`, `unknown field "datset"`},
		{`{"type":"Nope"}`, `unknown event type "Nope"`},
		{`{"type":"BatchLanded"} [1]`, `document 2: want an object`},
		{`{"type":"BatchLanded",`, `document 1`},
	} {
		if _, err := ReadEvents(strings.NewReader(c.doc), now); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.doc, err, c.want)
		}
	}
}
