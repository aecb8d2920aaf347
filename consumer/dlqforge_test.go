package consumer

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/kafka"
)

// TestDeadLetterHeadersAreLakewapsOnly: a dead letter carried the
// original's headers as they came, then lakewap's wap.dlq.* headers, so a
// producer's message with headers of those names put two of each in its
// dead letter, the producer's first: whoever read the first (Kafka's
// clients give all of them; a lookup that stops at the first match, as
// kafka.HeaderValue does) read the producer's reason, error, topic,
// partition, offset and time, and could be sent to another record, or to
// another topic, for the one that failed, or told the original was
// dropped. The original's headers of that prefix are left out: the
// wap.dlq.* headers of a dead letter are lakewap's alone.
func TestDeadLetterHeadersAreLakewapsOnly(t *testing.T) {
	forged := []kafka.Header{
		{Key: "h", Value: []byte("kept")},
		{Key: HeaderDLQReason, Value: []byte("registry_unavailable")},
		{Key: HeaderDLQError, Value: []byte("nothing to see")},
		{Key: HeaderDLQTopic, Value: []byte("wap.requests")},
		{Key: HeaderDLQPartition, Value: []byte("7")},
		{Key: HeaderDLQOffset, Value: []byte("12345")},
		{Key: HeaderDLQTime, Value: []byte("2020-01-01T00:00:00Z")},
		{Key: HeaderDLQDropped, Value: []byte("value dropped")},
		{Key: "WAP.DLQ.Reason", Value: []byte("other spelling")},
	}
	msg := kafka.Message{Topic: "wap.events", Partition: 2, Offset: 40, Key: []byte("b-1"), Value: []byte("junk"), Headers: forged}
	at := time.Date(2026, 12, 5, 23, 0, 0, 0, time.UTC)
	dl := deadLetter(msg, &PoisonError{Reason: "undecodable", Err: errors.New("bad magic")}, at)
	want := map[string]string{HeaderDLQReason: "undecodable", HeaderDLQError: "bad magic", HeaderDLQTopic: "wap.events",
		HeaderDLQPartition: "2", HeaderDLQOffset: "40", HeaderDLQTime: "2026-12-05T23:00:00Z"}
	for _, tc := range []struct {
		what string
		m    kafka.Message
		want map[string]string
	}{
		{"dead letter", dl, want},
		{"dead letter without its original", withoutOriginal(dl, msg), nil},
	} {
		seen := map[string][]string{}
		for _, h := range tc.m.Headers {
			if strings.HasPrefix(strings.ToLower(h.Key), "wap.dlq.") {
				seen[h.Key] = append(seen[h.Key], string(h.Value))
			}
		}
		for k, v := range seen {
			if len(v) != 1 {
				t.Errorf("%s: %d headers %s: %q; want lakewap's alone", tc.what, len(v), k, v)
			}
		}
		for k, v := range tc.want {
			if got, _ := kafka.HeaderValue(tc.m.Headers, k); got != v {
				t.Errorf("%s: %s is %q, want %q", tc.what, k, got, v)
			}
		}
		if tc.want == nil {
			if got, _ := kafka.HeaderValue(tc.m.Headers, HeaderDLQDropped); !strings.Contains(got, "too large") {
				t.Errorf("%s: %s is %q, want lakewap's note", tc.what, HeaderDLQDropped, got)
			}
			if got, _ := kafka.HeaderValue(tc.m.Headers, HeaderDLQOffset); got != "40" {
				t.Errorf("%s: %s is %q, want 40", tc.what, HeaderDLQOffset, got)
			}
		}
	}
	for _, h := range dl.Headers {
		if k := strings.ToLower(h.Key); k == HeaderDLQDropped || h.Key == "WAP.DLQ.Reason" {
			t.Errorf("dead letter with its original: header %s %q, the producer's", h.Key, h.Value)
		}
	}
	if got, ok := kafka.HeaderValue(dl.Headers, "h"); !ok || got != "kept" {
		t.Errorf("the original's header h is %q (%v), want it kept", got, ok)
	}
}
