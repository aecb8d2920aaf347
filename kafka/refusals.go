package kafka

// What the readiness endpoint says of Kafka topics that refuse lakewap's
// own records: a topic whose max.message.bytes an operator lowered, or whose
// ACLs no longer let lakewap write. The writers retry such a record for ever
// (it is a result, a run record or a dead letter: not to be dropped), and the
// partition behind it waits; only an operator can help.

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// RefusalFor is how long a refusal is reported after it was last seen: the
// writers retry a refused record at least this often, so a refusal still in
// force is seen again within it.
const RefusalFor = time.Minute

// Refusal is a topic's refusal of lakewap's records.
type Refusal struct {
	Topic string
	// Reason is the broker's error, e.g. MESSAGE_TOO_LARGE or
	// TOPIC_AUTHORIZATION_FAILED.
	Reason string
	// Bytes is the largest record refused as too large (0 for other reasons).
	Bytes int
	At    time.Time // last seen
}

// Refusals records, per topic, the writes a broker refused for a reason
// that a retry does not change. A write refused as too large is not one by
// itself: its writer may write a smaller record instead (a result event
// cut, a dead letter without its original), which any producer can make
// happen; the writer says so with TooLarge when it has nothing smaller and
// will retry the same. A successful write clears its topic's refusal, one
// as too large only when the write was at least as large.
// A nil *Refusals records nothing.
type Refusals struct {
	now    func() time.Time
	mu     sync.Mutex
	m      map[string]Refusal
	counts map[[2]string]uint64 // by topic and reason: what Counts tells
}

// NewRefusals returns an empty record.
func NewRefusals() *Refusals {
	return &Refusals{now: time.Now, m: map[string]Refusal{}, counts: map[[2]string]uint64{}}
}

// Observe records the outcome of a write of bytes to topic.
func (r *Refusals) Observe(topic string, bytes int, err error) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	old, had := r.m[topic]
	if err == nil {
		if had && (old.Bytes == 0 || bytes >= old.Bytes) {
			delete(r.m, topic)
		}
		return
	}
	if TooLarge(err) {
		return // the writer's to judge (TooLarge)
	}
	if reason, ok := refusal(err); ok {
		r.m[topic] = Refusal{Topic: topic, Reason: reason, At: r.now()}
		r.counts[[2]string{topic, reason}]++
	}
}

// TooLarge records that topic refused a record of bytes as too large and
// its writer has nothing smaller to write: it retries the same, and what
// waits behind it waits.
func (r *Refusals) TooLarge(topic string, bytes int) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	ref := Refusal{Topic: topic, Reason: kafkago.MessageSizeTooLarge.Title(), Bytes: bytes, At: r.now()}
	if old, had := r.m[topic]; had && old.Bytes > bytes && r.now().Sub(old.At) < RefusalFor {
		ref.Bytes = old.Bytes
	}
	r.m[topic] = ref
	r.counts[[2]string{topic, ref.Reason}]++
}

// RefusalCount is how many writes a topic refused for one reason.
type RefusalCount struct {
	Topic, Reason string
	Writes        uint64
}

// Counts lists the refused writes counted since start, by topic and reason
// (the reasons are the broker errors of refusals: a bounded set; the topics
// are those lakewap writes).
func (r *Refusals) Counts() []RefusalCount {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]RefusalCount, 0, len(r.counts))
	for k, n := range r.counts {
		out = append(out, RefusalCount{Topic: k[0], Reason: k[1], Writes: n})
	}
	slices.SortFunc(out, func(a, b RefusalCount) int {
		return cmp.Or(strings.Compare(a.Topic, b.Topic), strings.Compare(a.Reason, b.Reason))
	})
	return out
}

// Refusing lists the refusals seen within RefusalFor, by topic.
func (r *Refusals) Refusing() []Refusal {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Refusal
	now := r.now()
	for t, ref := range r.m {
		if now.Sub(ref.At) >= RefusalFor {
			delete(r.m, t)
			continue
		}
		out = append(out, ref)
	}
	slices.SortFunc(out, func(a, b Refusal) int { return strings.Compare(a.Topic, b.Topic) })
	return out
}

// refusals are the broker errors a retry of the same write does not change.
var refusals = []kafkago.Error{kafkago.MessageSizeTooLarge, kafkago.RecordListTooLarge, kafkago.TopicAuthorizationFailed,
	kafkago.ClusterAuthorizationFailed, kafkago.PolicyViolation, kafkago.InvalidRecord, kafkago.SASLAuthenticationFailed}

// refusal names the broker's refusal in err, if err is one.
func refusal(err error) (string, bool) {
	var mtl kafkago.MessageTooLargeError
	if errors.As(err, &mtl) {
		return kafkago.MessageSizeTooLarge.Title(), true
	}
	var we kafkago.WriteErrors
	if errors.As(err, &we) {
		for _, e := range we {
			if e == nil {
				continue
			}
			if reason, ok := refusal(e); ok {
				return reason, true
			}
		}
		return "", false
	}
	for _, code := range refusals {
		if errors.Is(err, code) {
			return code.Title(), true
		}
	}
	return "", false
}
