package pipeline

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// fatLanding is the largest BatchLanded a producer may send: 64
// attributes of a 128-byte key and a 1,024-byte value, 256 expected writes
// of 128-byte names.
func fatLanding(batch string) Landed {
	l := landed(batch)
	l.Event.Attributes = map[string]string{}
	for i := range schemas.MaxAttributes {
		l.Event.Attributes[fmt.Sprintf("k%03d", i)+strings.Repeat("k", schemas.MaxWriteNameLen-4)] = strings.Repeat("v", schemas.MaxTextLen)
	}
	for i := range schemas.MaxExpectedWrites {
		l.Event.ExpectedWrites = append(l.Event.ExpectedWrites, fmt.Sprintf("w%03d", i)+strings.Repeat("w", schemas.MaxWriteNameLen-4))
	}
	return l
}

// TestFinishedRunKeepsNoProducersPayload: whoever writes the input topic
// lands a batch with the largest attributes and expected writes the schema
// allows, completes all its writes but one, and cancels it (or lets its
// deadline pass). The finished run kept all of it, 148 KB a run in its
// record and in memory, and a partition keeps runner.max_finished_runs
// (10,000) finished runs of each dataset: 1.5 GB of a producer's bytes per
// dataset and partition, where docs/limits.md counted about 1 KB a junk
// run. A run that can take no further step (not retryable: cancelled,
// writes timed out, invalid; published) needs little of it: the
// attributes are read by its publish only, the expected and completed
// writes while it waits. A run an operator may retry keeps them (a retry
// publishes).
func TestFinishedRunKeepsNoProducersPayload(t *testing.T) {
	m := NewMachine(DefaultPolicy)
	// The sums of its expected writes (4 bytes a name) stay, so that a late
	// write of another name is still refused (TestUnexpectedWritesAreRefused).
	const budget = 8 << 10
	for _, end := range []struct {
		name  string
		input Input
		at    time.Duration
		shed  bool
	}{
		{"cancelled by its producer", Cancel{Event: schemas.BatchCancelled{BatchID: "b", Dataset: "billing", Reason: "oops", OccurredAt: t0}}, time.Minute, true},
		{"writes timed out", Tick{}, time.Hour, true},
		{"failed making its branch (retryable)", StepFailed{Step: StepBranch, Err: "lakeFS said no", Class: Permanent}, time.Minute, false},
	} {
		t.Run(end.name, func(t *testing.T) {
			l := fatLanding("b")
			r := m.Apply(Run{}, l, t0).Run
			if _, failed := end.input.(StepFailed); !failed {
				r = m.Apply(r, BranchCreated{}, t0).Run
				for _, w := range l.Event.ExpectedWrites[1:] {
					r = m.Apply(r, write("b", w), t0.Add(time.Second)).Run
				}
			}
			r = m.Apply(r, end.input, t0.Add(end.at)).Run
			for len(r.delivery.Outbox) > 0 { // its events were sent, BranchReady (its expected writes) among them
				r = m.Apply(r, Sent{EventID: r.delivery.Outbox[0].EventID}, t0.Add(end.at)).Run
			}
			if !r.State.Terminal() {
				t.Fatalf("the run is %s after %T; want it finished", r.State, end.input)
			}
			b, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s (%s): %d bytes", r.State, r.Reason, len(b))
			if end.shed {
				late := m.Apply(r, write("b", "another"), t0.Add(2*end.at))
				if late.Refused == nil || late.Refused.Reason != RefusedUnexpectedWrite || late.Changed {
					t.Errorf("a late write of another name: refused %+v, changed %v; want refused %s", late.Refused, late.Changed, RefusedUnexpectedWrite)
				}
				if again := m.Apply(r, write("b", l.Event.ExpectedWrites[7]), t0.Add(2*end.at)); again.Refused != nil || again.Changed {
					t.Errorf("a late write of an expected name: refused %+v, changed %v; want a no-op", again.Refused, again.Changed)
				}
			}
			switch {
			case end.shed && len(b) > budget:
				t.Errorf("the %s run (%s) holds %d bytes (attributes %d, expected writes %d, writes %d); want at most %d: it can take no further step",
					r.State, r.Reason, len(b), len(r.Attributes), len(r.ExpectedWrites), len(r.Writes), budget)
			case !end.shed && (len(r.Attributes) != schemas.MaxAttributes || len(r.ExpectedWrites) != schemas.MaxExpectedWrites):
				t.Errorf("the %s run, which a retry may publish, kept %d attributes and %d expected writes; want all", r.State, len(r.Attributes), len(r.ExpectedWrites))
			}
		})
	}
}

// TestOpenRunsHoldBoundedProducerBytes: runner.max_open_runs (10,000) of
// a dataset may be in progress on one instance, each holding its
// BatchLanded's attributes and expected writes (107 KB at the schema's
// limits, 148 KB with its writes): a producer landing that many of the
// largest batches made the instance hold 1.5 GB of its bytes per dataset,
// while the count's bound held. A landing whose attributes and expected
// writes would take the dataset's runs in progress past
// Policy.MaxOpenBytes is aborted too_many_runs before any branch is made,
// as one past the count is; a lean batch still lands.
func TestOpenRunsHoldBoundedProducerBytes(t *testing.T) {
	m := NewMachine(DefaultPolicy)
	fat := fatLanding("b")
	n := LandedBytes(fat.Event)
	if n < 100<<10 {
		t.Fatalf("the largest landing counts %d bytes; want its attributes and expected writes, over 100 KiB", n)
	}
	fat.OpenBytes = DefaultPolicy.MaxOpenBytes - n + 1
	o := m.Apply(Run{}, fat, t0)
	if o.Run.State != StateAborted || o.Run.Reason != schemas.ReasonTooManyRuns || !strings.Contains(o.Run.Detail, "bytes") {
		t.Errorf("a landing past the open runs' bytes: %s (%s: %s); want aborted %s naming the bytes", o.Run.State, o.Run.Reason, o.Run.Detail, schemas.ReasonTooManyRuns)
	}
	if len(o.Run.Attributes) != 0 || len(o.Run.ExpectedWrites) != 0 {
		t.Errorf("the refused landing kept %d attributes, %d expected writes", len(o.Run.Attributes), len(o.Run.ExpectedWrites))
	}
	lean := landed("c", "fact")
	lean.OpenBytes = fat.OpenBytes
	if o := m.Apply(Run{}, lean, t0); o.Run.State != StateLanded {
		t.Errorf("a lean landing beside them: %s (%s); want landed", o.Run.State, o.Run.Detail)
	}
	fat.OpenBytes = DefaultPolicy.MaxOpenBytes - n
	if o := m.Apply(Run{}, fat, t0); o.Run.State != StateLanded {
		t.Errorf("a landing that fills the bytes exactly: %s (%s); want landed", o.Run.State, o.Run.Detail)
	}
}
