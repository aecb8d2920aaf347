package runner

import (
	"context"
	"sync"
)

// auditGate admits the audit attempts of the process (audits, and the
// rechecks of publishes) by run key. Attempts of ordinary runs run side by
// side; an attempt of a suspect run (pipeline.Run.AuditSuspect: it lost an
// attempt beside others) runs alone, so that if the process ends in it,
// the loss is its own (pipeline.AuditBegun.Solo). An attempt waiting to
// run alone goes before ordinary attempts that come after it, so that a
// steady stream of them cannot starve it.
//
// A run holds the gate from before its attempt is stored as begun until
// the run's stored AuditOpen goes false (applyLocked releases it there),
// or its partition is revoked.
type auditGate struct {
	mu      sync.Mutex
	changed chan struct{} // closed and replaced whenever the gate frees up
	shared  map[string]bool
	solo    string // the run whose attempt runs alone, if any
	waiting int    // attempts waiting to run alone
}

func newAuditGate() *auditGate {
	return &auditGate{changed: make(chan struct{}), shared: map[string]bool{}}
}

// acquire waits until the attempt of the run under key may start (alone,
// or beside others) and takes the gate for it; an error only when ctx
// ends first. A run that holds the gate already keeps its hold.
func (g *auditGate) acquire(ctx context.Context, key string, alone bool) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.solo == key || g.shared[key] {
		return nil
	}
	if alone {
		g.waiting++
		defer func() {
			g.waiting--
			g.wake() // ordinary attempts may have waited behind this one
		}()
	}
	for {
		switch {
		case g.solo != "":
		case alone && len(g.shared) == 0:
			g.solo = key
			return nil
		case !alone && g.waiting == 0:
			g.shared[key] = true
			return nil
		}
		changed := g.changed
		g.mu.Unlock()
		select {
		case <-changed:
			g.mu.Lock()
		case <-ctx.Done():
			g.mu.Lock()
			return ctx.Err()
		}
	}
}

// release gives up the hold of the run under key, if it has one.
func (g *auditGate) release(key string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	switch {
	case g.solo == key:
		g.solo = ""
	case g.shared[key]:
		delete(g.shared, key)
	default:
		return
	}
	g.wake()
}

// wake tells the waiters the gate changed. Called with g.mu held.
func (g *auditGate) wake() {
	close(g.changed)
	g.changed = make(chan struct{})
}
