package pipeline

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// A BatchLanded no run answers is refused beyond_horizon exactly when its
// occurred_at is at or before the dedupe horizon: now - terminal_retention
// + 24h (half the retention when shorter than two days), raised by the
// partition's floor. A run that exists answers its duplicate as before.
func TestBatchLandedBeyondTheDedupeHorizon(t *testing.T) {
	spec := DatasetSpec{Repository: "lake", Target: "main", WriteTimeout: time.Hour}
	landed := func(occurred, floor time.Time) Landed {
		return Landed{Event: schemas.BatchLanded{BatchID: "b", Dataset: "billing", ExpectedWrites: []string{"fact"}, OccurredAt: occurred},
			Spec: spec, Branch: "wap-billing-b", Floor: floor}
	}
	week := 7 * 24 * time.Hour
	pending := Run{BatchID: "b", Dataset: "billing", State: StatePending, Writes: map[string]time.Time{"fact": t0}}
	published := Run{BatchID: "b", Dataset: "billing", State: StatePublished, StateSince: t0}
	for _, c := range []struct {
		name      string
		retention time.Duration
		run       Run
		occurred  time.Time
		floor     time.Time
		refused   bool
	}{
		{"a batch of now", week, Run{}, t0, time.Time{}, false},
		{"six days old and a minute", week, Run{}, t0.Add(-6*24*time.Hour - time.Minute), time.Time{}, true},
		{"six days old less a minute", week, Run{}, t0.Add(-6*24*time.Hour + time.Minute), time.Time{}, false},
		{"exactly at the horizon", week, Run{}, t0.Add(-6 * 24 * time.Hour), time.Time{}, true},
		{"old, with the writes that came first", week, pending, t0.Add(-6*24*time.Hour - time.Minute), time.Time{}, true},
		{"old, a duplicate the run answers", week, published, t0.Add(-6*24*time.Hour - time.Minute), time.Time{}, false},
		{"at the floor", week, Run{}, t0.Add(-time.Hour), t0.Add(-time.Hour), true},
		{"after the floor", week, Run{}, t0.Add(-time.Hour + time.Millisecond), t0.Add(-time.Hour), false},
		{"a short retention: half of it", 10 * time.Hour, Run{}, t0.Add(-5*time.Hour - time.Second), time.Time{}, true},
		{"a short retention, within half of it", 10 * time.Hour, Run{}, t0.Add(-5*time.Hour + time.Second), time.Time{}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := NewMachine(policy(func(p *Policy) { p.TerminalRetention = c.retention }))
			o := m.Apply(c.run, landed(c.occurred, c.floor), t0)
			got := o.Refused != nil && o.Refused.Reason == RefusedBeyondHorizon
			if got != c.refused {
				t.Fatalf("refused=%v (%+v), want %v", got, o.Refused, c.refused)
			}
			if got && (o.Changed || o.Run.State != c.run.State) {
				t.Errorf("a refused BatchLanded changed the run: %s, changed=%v", o.Run.State, o.Changed)
			}
		})
	}
}

// A run record over its budget even after trim keeps the partition's floor
// (Run.Floor): the runner stores it on a finished run before a published
// run is forgotten over max_finished_runs, and a restart restores it from
// the records. A finished run whose record sat just under the budget (a
// producer's long attributes or write names) went over it with the floor
// added, and overBudget's record dropped the floor: after a restart the
// forgotten batch's BatchLanded sent again started a new run.
func TestOverBudgetRunKeepsTheFloor(t *testing.T) {
	const budget = 1500
	m := NewMachine(policy(func(p *Policy) { p.MaxRunBytes = budget }))
	attrs := map[string]string{}
	for i := range 20 {
		attrs[fmt.Sprintf("k%02d", i)] = strings.Repeat("v", 60)
	}
	floor := t0.Add(-time.Hour)
	run := Run{BatchID: "b", Dataset: "billing", State: StatePublished, StateSince: t0, UpdatedAt: t0,
		BatchTime: t0, LandedAt: t0, Attributes: attrs, Floor: floor}
	o, b, err := m.Fit(Outcome{Run: run, Changed: true}, t0)
	if err != nil {
		t.Fatal(err)
	}
	if o.Refused == nil || o.Refused.Reason != RefusedOverBudget {
		t.Fatalf("refused %+v; the test needs the record over budget after trim", o.Refused)
	}
	var stored Run
	if err := json.Unmarshal(b, &stored); err != nil {
		t.Fatal(err)
	}
	if !stored.Floor.Equal(floor) || !o.Run.Floor.Equal(floor) {
		t.Errorf("the record over budget holds floor %v (outcome %v); want %v", stored.Floor, o.Run.Floor, floor)
	}
	if len(b) > budget {
		t.Errorf("record of %d bytes, budget %d", len(b), budget)
	}
}
