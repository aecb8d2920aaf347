package cli

import (
	"bytes"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

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
		var o Emit
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
		if _, code := eventFromFlags(c.args, &Emit{}, now, io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 saying %q", c.args, code, stderr.String(), c.want)
		}
	}
}
