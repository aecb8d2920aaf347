// Package flight shares the answer of a question being asked now among
// those who ask it meanwhile: a second asker of the same key waits for the
// first's answer instead of asking again.
package flight

import (
	"context"
	"sync"
)

// Group is a set of questions being asked now, by key. At most one flight
// a key, gone when answered, so a Group holds only the questions in
// flight. The zero Group is ready to use.
type Group[V any] struct {
	mu sync.Mutex
	m  map[string]*call[V]
}

type call[V any] struct {
	done    chan struct{}
	v       V
	err     error
	waiters int // askers waiting for it (under Group.mu)
}

// Do answers k with ask, or with the answer of the ask for k under way. A
// failed answer of another asker is not taken (its failure may be its own:
// a context given up): ask is called again. ask runs under the caller's
// own context, which it captures.
func (g *Group[V]) Do(ctx context.Context, k string, ask func() (V, error)) (V, error) {
	g.mu.Lock()
	if c, ok := g.m[k]; ok {
		c.waiters++
		g.mu.Unlock()
		select {
		case <-c.done:
		case <-ctx.Done():
			var zero V
			return zero, ctx.Err()
		}
		if c.err == nil {
			return c.v, nil
		}
		return ask()
	}
	if g.m == nil {
		g.m = map[string]*call[V]{}
	}
	c := &call[V]{done: make(chan struct{})}
	g.m[k] = c
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		delete(g.m, k)
		g.mu.Unlock()
		close(c.done)
	}()
	c.v, c.err = ask()
	return c.v, c.err
}
