package main

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

func TestReadEvents(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	at := time.Date(2025, 6, 1, 11, 0, 0, 0, time.UTC)
	evs, err := readEvents(strings.NewReader(`{"type":"BatchLanded","batch_id":"b1","dataset":"billing","expected_writes":["f"]}
{"type":"write_complete","batch_id":"b1","dataset":"billing","write":"f","occurred_at":"2025-06-01T11:00:00Z",
 "row_count":3}
  {"type":"BatchCancelled","batch_id":"b2","dataset":"billing"}`), now)
	must(t, err)
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
		if _, err := readEvents(strings.NewReader(c.doc), now); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.doc, err, c.want)
		}
	}
}

func TestEventFromFlags(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		args []string
		want schemas.Event
	}{
		{[]string{"landed", "--batch", "b", "--dataset", "d", "--writes", "x, y", "--deadline", "2025-06-01T14:00:00Z"},
			schemas.BatchLanded{BatchID: "b", Dataset: "d", ExpectedWrites: []string{"x", "y"}, Producer: "lakewap emit", OccurredAt: now}},
		{[]string{"batch-landed", "--batch", "b", "--dataset", "d", "--writes", "x", "--at", "2025-06-01T10:00:00Z", "--deadline", "30m"},
			schemas.BatchLanded{BatchID: "b", Dataset: "d", ExpectedWrites: []string{"x"}, Producer: "lakewap emit", OccurredAt: now.Add(-2 * time.Hour)}},
		{[]string{"WriteComplete", "--batch", "b", "--dataset", "d", "--write", "x"},
			schemas.WriteComplete{BatchID: "b", Dataset: "d", Write: "x", Paths: []string{}, OccurredAt: now}},
		{[]string{"cancel", "--batch", "b", "--dataset", "d", "--reason", "why"},
			schemas.BatchCancelled{BatchID: "b", Dataset: "d", Reason: "why", OccurredAt: now}},
	} {
		var o emitOptions
		var stderr bytes.Buffer
		ev, code := eventFromFlags(c.args, &o, now, io.Discard, &stderr)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", c.args, code, stderr.String())
		}
		switch got := ev.(type) {
		case schemas.BatchLanded:
			want := c.want.(schemas.BatchLanded)
			if got.WriteDeadline == nil {
				t.Fatalf("%v: no deadline", c.args)
			}
			if wantDL := map[string]time.Time{"landed": now.Add(2 * time.Hour), "batch-landed": now.Add(-90 * time.Minute)}[c.args[0]]; !got.WriteDeadline.Equal(wantDL) {
				t.Errorf("%v: deadline %s, want %s", c.args, got.WriteDeadline, wantDL)
			}
			if got.BatchID != want.BatchID || strings.Join(got.ExpectedWrites, ",") != strings.Join(want.ExpectedWrites, ",") ||
				!got.OccurredAt.Equal(want.OccurredAt) || got.Producer != want.Producer {
				t.Errorf("%v: %+v, want %+v", c.args, got, want)
			}
		case schemas.WriteComplete:
			want := c.want.(schemas.WriteComplete)
			if got.Write != want.Write || got.RowCount != nil || !got.OccurredAt.Equal(now) {
				t.Errorf("%v: %+v (row count %v), want %+v without a row count", c.args, got, got.RowCount, want)
			}
		default:
			if got != c.want {
				t.Errorf("%v: %+v, want %+v", c.args, got, c.want)
			}
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"landed", "--deadline", "soon"}, "neither a duration"},
		{[]string{"write", "--at", "yesterday"}, "--at"},
		{[]string{"cancel", "extra"}, `unexpected argument "extra"`},
		{[]string{"landed", "--attr", "novalue"}, "want k=v"},
		{[]string{"published"}, `unknown event "published"`},
	} {
		var stderr bytes.Buffer
		if _, code := eventFromFlags(c.args, &emitOptions{}, now, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 saying %q", c.args, code, stderr.String(), c.want)
		}
	}
}
