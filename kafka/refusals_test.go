package kafka

import (
	"errors"
	"fmt"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// A refusal stays reported while a retry meets it again, is cleared by a
// write as large as the record refused (a smaller one proves nothing), and
// is forgotten RefusalFor after it was last seen; errors a retry may pass
// are not refusals, nor is a write refused as too large until its writer
// says it has nothing smaller (TooLarge).
func TestRefusalsAreReportedUntilAWriteAsLargeGoesThrough(t *testing.T) {
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	r := NewRefusals()
	r.now = func() time.Time { return now }
	tooLarge := kafkago.WriteErrors{kafkago.MessageSizeTooLarge}
	r.Observe("wap.results", 40_000, tooLarge) // the writer may cut it
	if got := r.Refusing(); len(got) != 0 {
		t.Fatalf("refusing %+v after one write refused as too large; want none until its writer gives up", got)
	}
	r.TooLarge("wap.results", 40_000)
	r.Observe("wap.runs", 100, fmt.Errorf("changelog: writing: %w", kafkago.TopicAuthorizationFailed))
	r.Observe("wap.dlq", 100, kafkago.NotLeaderForPartition) // passes on retry
	r.Observe("wap.dlq", 100, errors.New("dial tcp: connection refused"))
	got := r.Refusing()
	if len(got) != 2 || got[0].Topic != "wap.results" || got[0].Bytes != 40_000 || got[0].Reason != "Message Size Too Large" ||
		got[1].Topic != "wap.runs" || got[1].Reason != "Topic Authorization Failed" {
		t.Fatalf("refusing %+v; want wap.results (40,000 bytes too large) and wap.runs (not authorised)", got)
	}
	r.Observe("wap.results", 500, nil) // a small event went through
	r.Observe("wap.runs", 10, nil)     // any write proves the ACL back
	if got := r.Refusing(); len(got) != 1 || got[0].Topic != "wap.results" {
		t.Fatalf("refusing %+v after small writes; want wap.results still", got)
	}
	now = now.Add(RefusalFor / 2)
	r.TooLarge("wap.results", 30_000) // the cut event, refused too
	if got := r.Refusing(); len(got) != 1 || got[0].Bytes != 40_000 {
		t.Fatalf("refusing %+v; want the largest refused kept", got)
	}
	r.Observe("wap.results", 40_000, nil)
	if got := r.Refusing(); len(got) != 0 {
		t.Fatalf("refusing %+v after the refused event went through; want none", got)
	}
	r.TooLarge("wap.results", 40_000)
	now = now.Add(RefusalFor)
	if got := r.Refusing(); len(got) != 0 {
		t.Errorf("refusing %+v a RefusalFor after it was last seen; want none", got)
	}
	var none *Refusals
	none.Observe("x", 1, kafkago.TopicAuthorizationFailed) // a nil record records nothing
	none.TooLarge("x", 1)
	if none.Refusing() != nil {
		t.Error("a nil Refusals reports refusals")
	}
}

// Counts tells every refused write by topic and the broker's reason, kept
// after the refusal itself is cleared (a counter for /metrics), and nothing
// of writes a retry may pass or of a write its writer may still cut.
func TestRefusalCountsAreKeptByTopicAndReason(t *testing.T) {
	r := NewRefusals()
	r.Observe("wap.results", 40_000, kafkago.WriteErrors{kafkago.MessageSizeTooLarge}) // the writer may cut it
	r.TooLarge("wap.results", 40_000)
	r.TooLarge("wap.results", 40_000)
	r.Observe("wap.runs", 100, kafkago.TopicAuthorizationFailed)
	r.Observe("wap.dlq", 100, kafkago.NotLeaderForPartition)
	r.Observe("wap.runs", 100, nil)
	got := r.Counts()
	want := []RefusalCount{{"wap.results", "Message Size Too Large", 2}, {"wap.runs", "Topic Authorization Failed", 1}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Counts() = %v; want %v", got, want)
	}
	var none *Refusals
	if none.Counts() != nil {
		t.Error("a nil *Refusals counts something")
	}
}
