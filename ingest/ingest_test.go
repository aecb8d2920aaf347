package ingest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakewap/lakewap/kafka"

	"github.com/lakewap/lakewap/consumer"
	"github.com/lakewap/lakewap/schemas"
)

// runner records what reaches it.
type runner struct {
	mu       sync.Mutex
	handled  []schemas.Event
	traces   []schemas.TraceContext
	invalid  []string // batch ids
	handle   error
	invalidE error
}

func (r *runner) Assigned(context.Context, int, func(time.Time) bool) error { return nil }
func (r *runner) Revoked(int)                                               {}
func (r *runner) Handle(_ context.Context, _ int, ev schemas.Event, trace schemas.TraceContext) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.handled = append(r.handled, ev)
	r.traces = append(r.traces, trace)
	return r.handle
}
func (r *runner) Invalid(_ context.Context, _ int, ev schemas.Event, problem error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.invalid = append(r.invalid, ev.Batch()+": "+problem.Error())
	return r.invalidE
}

type refusal struct{ reason string }

func (r refusal) Error() string         { return "refused here" }
func (r refusal) RefusedReason() string { return r.reason }

// testEncoder is a codec without a registry and a function encoding with it
// for topic "in".
func testEncoder(t *testing.T) (*schemas.Codec, func(schemas.Event) []byte) {
	t.Helper()
	codec, err := schemas.NewCodec(schemas.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return codec, func(ev schemas.Event) []byte {
		v, err := codec.Encode(context.Background(), "in", ev)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// Each message reaches the runner as a typed event or leaves as a dead
// letter with its reason and an error that says what is wrong and nothing
// else; an invalid event of a configured batch ends its run first.
func TestStage(t *testing.T) {
	codec, encode := testEncoder(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	landed := schemas.BatchLanded{BatchID: "b", Dataset: "billing", ExpectedWrites: []string{"f"}, OccurredAt: now}
	ready := schemas.BranchReady{BatchID: "b", Dataset: "billing", Branch: "x", ExpectedWrites: []string{"f"}, OccurredAt: now}
	header := func(typ string) []kafka.Header {
		return []kafka.Header{{Key: schemas.HeaderEventType, Value: []byte(typ)}}
	}
	with := func(f func(*schemas.BatchLanded)) []byte { ev := landed; f(&ev); return encode(ev) }
	for _, c := range []struct {
		name       string
		msg        kafka.Message
		runner     *runner // nil: one that applies everything
		wantReason string  // "" = handed to the runner
		wantText   string
		invalid    bool // the runner was asked to end the run
	}{
		{name: "no header", msg: kafka.Message{Key: []byte("b"), Value: encode(landed)}},
		{name: "matching header", msg: kafka.Message{Key: []byte("b"), Value: encode(landed), Headers: header(schemas.TypeBatchLanded)}},
		{name: "mismatched header", msg: kafka.Message{Key: []byte("b"), Value: encode(landed), Headers: header(schemas.TypeBatchCancelled)},
			wantReason: ReasonTypeMismatch, wantText: `header wap.event_type says "BatchCancelled", value is BatchLanded (batch "b")`},
		{name: "result event", msg: kafka.Message{Key: []byte("b"), Value: encode(ready), Headers: header(schemas.TypeBranchReady)},
			wantReason: ReasonUnexpectedType, wantText: "BranchReady is not an input event"},
		{name: "garbage", msg: kafka.Message{Key: []byte("b"), Value: []byte("{}")},
			wantReason: schemas.DecodeUnknownMagic, wantText: "decode event: unknown_magic"},
		{name: "wrong key", msg: kafka.Message{Key: []byte("other"), Value: encode(landed)},
			wantReason: ReasonKeyMismatch, wantText: `message key "other" is not the batch id "b"`},
		{name: "invalid", msg: kafka.Message{Key: []byte("b"), Value: with(func(e *schemas.BatchLanded) { e.ExpectedWrites = nil })},
			wantReason: schemas.ReasonInvalid, wantText: "invalid event: expected_writes: is empty", invalid: true},
		{name: "unknown dataset", msg: kafka.Message{Key: []byte("b"), Value: with(func(e *schemas.BatchLanded) { e.Dataset = "nope" })},
			wantReason: schemas.ReasonInvalid, wantText: `dataset: "nope" is not a configured dataset`},
		{name: "bad batch id", msg: kafka.Message{Key: []byte("b 1"), Value: with(func(e *schemas.BatchLanded) { e.BatchID = "b 1" })},
			wantReason: schemas.ReasonInvalid, wantText: "batch_id: contains ' '"},
		{name: "source ref not allowed", msg: kafka.Message{Key: []byte("b"), Value: with(func(e *schemas.BatchLanded) { e.SourceRef = "attacker" })},
			wantReason: schemas.ReasonInvalid, wantText: `source_ref: "attacker" is not a ref dataset billing may branch from`, invalid: true},
		{name: "malformed request", msg: kafka.Message{Key: []byte("b"), Value: encode(schemas.RevertRequested{RequestID: "q", BatchID: "b", Dataset: "billing", OccurredAt: now})},
			wantReason: schemas.ReasonInvalid, wantText: "reason"}, // its own problem: the batch's run goes on
		{name: "refused", msg: kafka.Message{Key: []byte("b"), Value: encode(landed)}, runner: &runner{handle: refusal{"over_budget"}},
			wantReason: "over_budget", wantText: "refused here"},
		{name: "invalid, run over budget", msg: kafka.Message{Key: []byte("b"), Value: with(func(e *schemas.BatchLanded) { e.Producer = "\xff" })},
			runner: &runner{invalidE: refusal{"over_budget"}}, wantReason: "over_budget", wantText: "refused here", invalid: true},
	} {
		var counted []string
		r := c.runner
		if r == nil {
			r = &runner{}
		}
		h := Wrap(Config{Codec: codec, Now: func() time.Time { return now },
			Counted: func(typ, outcome string) { counted = append(counted, typ+"/"+outcome) },
			Rules: schemas.Rules{Known: func(d string) bool { return d == "billing" },
				SourceAllowed: func(d, ref string) bool { return ref == "main" }}}, r)
		err := h.Handle(context.Background(), c.msg)
		if c.invalid != (len(r.invalid) == 1) {
			t.Errorf("%s: runner asked to end runs %v", c.name, r.invalid)
		}
		if c.wantReason == "" {
			if err != nil || len(r.handled) != 1 || r.handled[0].EventType() != schemas.TypeBatchLanded || len(counted) > 0 {
				t.Errorf("%s: %v, handled %v, counted %v", c.name, err, r.handled, counted)
			}
			continue
		}
		var p *consumer.PoisonError
		if !errors.As(err, &p) {
			t.Errorf("%s: %v, want a dead letter", c.name, err)
			continue
		}
		if p.Reason != c.wantReason || !strings.Contains(p.Err.Error(), c.wantText) || strings.Contains(p.Err.Error(), "poison") {
			t.Errorf("%s: reason %q error %q, want %q saying %q", c.name, p.Reason, p.Err, c.wantReason, c.wantText)
		}
		if len(counted) != 1 || !strings.HasSuffix(counted[0], "/dead_letter") {
			t.Errorf("%s: counted %v, want one dead letter", c.name, counted)
		}
		if len(r.handled) > 0 && r.handle == nil {
			t.Errorf("%s: the runner got %v", c.name, r.handled)
		}
	}
}

// A runner's error that is not a refusal (the state store is down) is
// retried, never dead-lettered; so is a decode error the codec calls
// transient.
func TestStageRetries(t *testing.T) {
	codec, err := schemas.NewCodec(schemas.Options{})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	v, err := codec.Encode(context.Background(), "in", schemas.WriteComplete{BatchID: "b", Dataset: "billing", Write: "f", OccurredAt: now})
	if err != nil {
		t.Fatal(err)
	}
	down := errors.New("store down")
	h := Wrap(Config{Codec: codec}, &runner{handle: down})
	err = h.Handle(context.Background(), kafka.Message{Key: []byte("b"), Value: v})
	var p *consumer.PoisonError
	if !errors.Is(err, down) || errors.As(err, &p) {
		t.Errorf("Handle = %v, want the store's error, to be retried", err)
	}
	// A Confluent-framed value whose schema only an unreachable registry knows.
	reg, err := schemas.NewRegistryClient("http://127.0.0.1:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	withRegistry, err := schemas.NewCodec(schemas.Options{Registry: reg, RegistryTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h = Wrap(Config{Codec: withRegistry}, &runner{})
	err = h.Handle(context.Background(), kafka.Message{Key: []byte("b"), Value: []byte{0, 0, 0, 0, 42, 2}})
	var de *schemas.DecodeError
	if !errors.As(err, &de) || de.Reason != schemas.DecodeRegistryUnavailable || errors.As(err, &p) {
		t.Errorf("Handle = %v, want registry_unavailable, to be retried", err)
	}
}

// Requests come from the requests topic only, and nothing else does; with
// operators configured a request must be signed with one's key, and then
// names that operator as who asked.
func TestRequestChannel(t *testing.T) {
	codec, encode := testEncoder(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	key := []byte("alice-signing-key-0123")
	revert := encode(schemas.RevertRequested{RequestID: "q", BatchID: "b", Dataset: "billing", Reason: "r", RequestedBy: "mallory", OccurredAt: now})
	signed := func(name string, k []byte, value []byte) []kafka.Header {
		return []kafka.Header{{Key: schemas.HeaderOperator, Value: []byte(name)}, {Key: schemas.HeaderSignature, Value: []byte(schemas.SignRequest(k, schemas.RequestScope{Cluster: "c1", Topic: "req"}, "b", value))}}
	}
	for _, c := range []struct {
		name, topic string
		value       []byte
		headers     []kafka.Header
		operators   map[string][]byte
		wantReason  string
		wantBy      string
	}{
		{name: "revert on input", topic: "in", value: revert, wantReason: ReasonRequestOnInput},
		{name: "retry on input", topic: "in", value: encode(schemas.RetryRequested{RequestID: "q", BatchID: "b", Dataset: "billing", OccurredAt: now}), wantReason: ReasonRequestOnInput},
		{name: "operator cancel on input", topic: "in", value: encode(schemas.BatchCancelled{RequestID: "q", BatchID: "b", Dataset: "billing", OccurredAt: now}), wantReason: ReasonRequestOnInput},
		{name: "requester's cancel on input", topic: "in", value: encode(schemas.BatchCancelled{BatchID: "b", Dataset: "billing", RequestedBy: "x", OccurredAt: now}), wantReason: ReasonRequestOnInput},
		{name: "producer's cancel on input", topic: "in", value: encode(schemas.BatchCancelled{BatchID: "b", Dataset: "billing", OccurredAt: now})},
		{name: "landed on requests", topic: "req", value: encode(schemas.BatchLanded{BatchID: "b", Dataset: "billing", ExpectedWrites: []string{"f"}, OccurredAt: now}), wantReason: ReasonNotARequest},
		{name: "unsigned without operators", topic: "req", value: revert, wantBy: "mallory"},
		{name: "unsigned", topic: "req", value: revert, operators: map[string][]byte{"alice": key}, wantReason: ReasonUnsigned},
		{name: "other key", topic: "req", value: revert, headers: signed("alice", []byte("not-alices-key-01234"), revert), operators: map[string][]byte{"alice": key}, wantReason: ReasonUnsigned},
		{name: "unknown operator", topic: "req", value: revert, headers: signed("bob", key, revert), operators: map[string][]byte{"alice": key}, wantReason: ReasonUnsigned},
		{name: "signed", topic: "req", value: revert, headers: signed("alice", key, revert), operators: map[string][]byte{"alice": key}, wantBy: "alice"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &runner{}
			h := Wrap(Config{Codec: codec, RequestsTopic: "req", Cluster: "c1", Operators: c.operators, Rules: schemas.Rules{}}, r)
			err := h.Handle(context.Background(), kafka.Message{Topic: c.topic, Key: []byte("b"), Value: c.value, Headers: c.headers})
			var p *consumer.PoisonError
			switch {
			case c.wantReason == "" && err != nil:
				t.Fatalf("error %v, want it applied", err)
			case c.wantReason != "" && (!errors.As(err, &p) || p.Reason != c.wantReason):
				t.Fatalf("error %v, want dead letter %s", err, c.wantReason)
			case c.wantReason != "" && len(r.handled) > 0:
				t.Fatalf("dead-lettered and applied")
			}
			if c.wantBy != "" {
				if len(r.handled) != 1 || r.handled[0].(schemas.RevertRequested).RequestedBy != c.wantBy {
					t.Errorf("applied %+v, want requested_by %s", r.handled, c.wantBy)
				}
			}
		})
	}
}

// The W3C trace context of a message reaches the runner with its event; an
// invalid traceparent is no trace, and the event is handled all the same.
func TestStagePassesTraceContext(t *testing.T) {
	codec, err := schemas.NewCodec(schemas.Options{})
	if err != nil {
		t.Fatal(err)
	}
	v, err := codec.Encode(context.Background(), "wap.events", schemas.BatchLanded{BatchID: "b", Dataset: "billing", ExpectedWrites: []string{"x"}, Producer: "p", OccurredAt: time.Now().UTC()})
	if err != nil {
		t.Fatal(err)
	}
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	cases := []struct {
		name    string
		headers []kafka.Header
		want    schemas.TraceContext
	}{
		{"none", nil, schemas.TraceContext{}},
		{"traceparent and tracestate", []kafka.Header{{Key: "traceparent", Value: []byte(tp)}, {Key: "tracestate", Value: []byte("rojo=1")}},
			schemas.TraceContext{Parent: tp, State: "rojo=1"}},
		{"invalid traceparent", []kafka.Header{{Key: "traceparent", Value: []byte("00-zz-00f067aa0ba902b7-01")}, {Key: "tracestate", Value: []byte("rojo=1")}},
			schemas.TraceContext{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := &runner{}
			h := Wrap(Config{Codec: codec}, r)
			if err := h.Handle(context.Background(), kafka.Message{Key: []byte("b"), Value: v, Headers: c.headers}); err != nil {
				t.Fatal(err)
			}
			if len(r.traces) != 1 || r.traces[0] != c.want {
				t.Errorf("runner got traces %+v, want %+v", r.traces, c.want)
			}
		})
	}
}

// TestRequestOnAnotherPartitionIsDeadLettered: requests partition n is
// handled by the owner of input partition n, so a request on another
// partition than its key's reaches a runner that does not hold the batch's
// run. A signed cancel copied there (the signature covers key and value, not
// the partition) made that runner remember the batch as cancelled and send
// BatchAborted for it, while its run went on and could publish. It is
// dead-lettered (wrong_partition), as on the input topic; on its key's
// partition it is applied.
func TestRequestOnAnotherPartitionIsDeadLettered(t *testing.T) {
	codec, encode := testEncoder(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	key := []byte("alice-signing-key-0123")
	cancel := encode(schemas.BatchCancelled{RequestID: "q", BatchID: "b", Dataset: "billing", Reason: "stop", RequestedBy: "alice", OccurredAt: now})
	headers := []kafka.Header{{Key: schemas.HeaderOperator, Value: []byte("alice")}, {Key: schemas.HeaderSignature, Value: []byte(schemas.SignRequest(key, schemas.RequestScope{Cluster: "c1", Topic: "req"}, "b", cancel))}}
	const count = 4
	own := kafka.PartitionOf([]byte("b"), count)
	for _, p := range []int{own, (own + 1) % count} {
		r := &runner{}
		h := Wrap(Config{Codec: codec, RequestsTopic: "req", Cluster: "c1", Operators: map[string][]byte{"alice": key}, Rules: schemas.Rules{},
			Partitions: func(string) int { return count }}, r)
		err := h.Handle(context.Background(), kafka.Message{Topic: "req", Partition: p, Key: []byte("b"), Value: cancel, Headers: headers})
		var poison *consumer.PoisonError
		switch {
		case p == own && (err != nil || len(r.handled) != 1):
			t.Errorf("on its key's partition %d: error %v, %d applied; want it applied", p, err, len(r.handled))
		case p != own && (!errors.As(err, &poison) || poison.Reason != ReasonWrongPartition || len(r.handled) > 0):
			t.Errorf("on partition %d, its key's is %d: error %v, %d applied; want dead letter %s", p, own, err, len(r.handled), ReasonWrongPartition)
		}
	}
}

// TestRequestOnARequestsTopicOfOtherPartitionsIsDeadLettered: requests
// partition n is handled by the owner of input partition n, so a request
// must be on its key's partition of the input topic. With a requests topic
// of another partition count (made by hand, or the input topic given more
// partitions since), a request on its key's partition of the requests
// topic reached the runner of another input partition, which does not hold
// the batch's run: a signed cancel there remembered the batch as cancelled
// and announced BatchAborted while its run went on and could publish. It
// is dead-lettered (wrong_partition), naming both topics' counts.
func TestRequestOnARequestsTopicOfOtherPartitionsIsDeadLettered(t *testing.T) {
	codec, encode := testEncoder(t)
	now := time.Now().UTC().Truncate(time.Millisecond)
	key := []byte("alice-signing-key-0123")
	counts := map[string]int{"in": 4, "req": 1}
	// A batch id whose run lives on input partition 3 (of 4): every
	// request of a one-partition requests topic is on its partition 0.
	batch := ""
	for i := 0; batch == ""; i++ {
		if id := fmt.Sprintf("b%d", i); kafka.PartitionOf([]byte(id), counts["in"]) == 3 {
			batch = id
		}
	}
	cancel := encode(schemas.BatchCancelled{RequestID: "q", BatchID: batch, Dataset: "billing", Reason: "stop", RequestedBy: "alice", OccurredAt: now})
	headers := []kafka.Header{{Key: schemas.HeaderOperator, Value: []byte("alice")}, {Key: schemas.HeaderSignature, Value: []byte(schemas.SignRequest(key, schemas.RequestScope{Cluster: "c1", Topic: "req"}, batch, cancel))}}
	r := &runner{}
	h := Wrap(Config{Codec: codec, RequestsTopic: "req", InputTopic: "in", Cluster: "c1", Operators: map[string][]byte{"alice": key}, Rules: schemas.Rules{},
		Partitions: func(topic string) int { return counts[topic] }}, r)
	err := h.Handle(context.Background(), kafka.Message{Topic: "req", Partition: 0, Key: []byte(batch), Value: cancel, Headers: headers})
	var poison *consumer.PoisonError
	if !errors.As(err, &poison) || poison.Reason != ReasonWrongPartition || len(r.handled) > 0 {
		t.Fatalf("cancel of batch %s (input partition 3 of 4) on partition 0 of a one-partition requests topic: error %v, %d applied; want dead letter %s",
			batch, err, len(r.handled), ReasonWrongPartition)
	}
	for _, want := range []string{"req", "1 partition", "in", "4 partitions", "partition 3"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}
