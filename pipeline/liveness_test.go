package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// Deadlines are judged on event time. While the partition lags behind the
// deadline, the run waits (checking again every LagRecheck, for at most
// MaxLagWait); a write that happened before the deadline still counts when
// it is handled after it, and one that happened after it ends the run.
func TestDeadlinesOnEventTime(t *testing.T) {
	m := NewMachine(policy(func(p *Policy) { p.MaxLagWait, p.LagRecheck = time.Hour, 10*time.Second }))
	deadline := t0.Add(10 * time.Minute)
	start := func() Run {
		l := landed("lag-1", "fact", "dim")
		l.Event.WriteDeadline = &deadline
		r, _ := transition(t, m, Run{}, l, t0)
		r, _ = transition(t, m, r, BranchCreated{}, t0)
		return r
	}
	late := deadline.Add(20 * time.Minute) // handled 20 minutes after the deadline
	r := start()
	r, effects := transition(t, m, r, Tick{Lagging: true}, late)
	if r.State != StateAwaitingWrites {
		t.Fatalf("lagging tick after the deadline: %s, want still awaiting writes", r.State)
	}
	if w := wakeAt(effects); !w.Equal(late.Add(10 * time.Second)) {
		t.Errorf("wake at %s, want LagRecheck after now (%s)", w, late.Add(10*time.Second))
	}
	// Writes from the backlog: both happened before the deadline.
	for _, w := range []string{"fact", "dim"} {
		wd := write("lag-1", w)
		wd.Event.OccurredAt = deadline.Add(-time.Minute)
		r, _ = transition(t, m, r, wd, late)
	}
	if r.State != StateAuditing {
		t.Errorf("after the backlog's writes: %s (%s), want auditing", r.State, r.Detail)
	}

	// Caught up: the deadline ends the run.
	r = start()
	if r, _ = transition(t, m, r, Tick{}, late); r.State != StateAborted || r.Reason != schemas.ReasonWriteTimeout {
		t.Errorf("tick when caught up: %s %s, want aborted write_timeout", r.State, r.Reason)
	}
	// Lagging for longer than MaxLagWait: ended anyway.
	r = start()
	if r, _ = transition(t, m, r, Tick{Lagging: true}, deadline.Add(time.Hour)); r.State != StateAborted {
		t.Errorf("lagging past MaxLagWait: %s, want aborted", r.State)
	}
	// A write that happened after the deadline ends the run, whenever it is handled.
	r = start()
	wd := write("lag-1", "fact")
	wd.Event.OccurredAt = deadline.Add(time.Second)
	r, _ = transition(t, m, r, wd, deadline.Add(-time.Minute))
	if r.State != StateAborted || r.Reason != schemas.ReasonWriteTimeout || !strings.Contains(r.Detail, "after the deadline") {
		t.Errorf("write after the deadline: %s %s %q, want aborted write_timeout", r.State, r.Reason, r.Detail)
	}
}

func wakeAt(effects []Effect) time.Time {
	for _, e := range effects {
		if e.Kind == DoWake {
			return e.At
		}
	}
	return time.Time{}
}
