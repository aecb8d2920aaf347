// Package backoff is lakewap's one exponential backoff. Every retry loop
// speaks the same words: attempt n (the first retry is attempt 1) waits
// Policy.Delay(n), which is Min doubled n-1 times, capped at Max, and then
// jittered as the policy says. A Backoff counts the attempts of one loop, and
// Sleep waits unless the context ends first. The settings that feed it are
// called MinBackoff and MaxBackoff wherever they are configurable
// (consumer.Config, notify.Options, pipeline.Policy); the runner's
// LockBackoff is the Min of its merge-lock retries.
package backoff

import (
	"context"
	"math/rand/v2"
	"time"
)

// Jitter is how a delay is spread so that retriers failing together do not
// come back together.
type Jitter int

const (
	// None waits exactly the doubled delay: for a pure state machine, whose
	// retry times must follow from its inputs alone.
	None Jitter = iota
	// Equal waits uniformly in [d/2, d]: never much less than d.
	Equal
	// Full waits uniformly in (0, d]: for contention, where the retriers
	// are what is in the way.
	Full
)

// Policy is an exponential backoff.
type Policy struct {
	Min    time.Duration // delay of attempt 1
	Max    time.Duration // cap of the doubling; a Max below Min means Min
	Jitter Jitter
}

// Delay is the wait before attempt (counted from 1; less than 1 counts as 1).
func (p Policy) Delay(attempt int) time.Duration {
	d, hi := p.Min, max(p.Max, p.Min)
	if d <= 0 {
		return 0
	}
	for i := 1; i < attempt && d < hi; i++ {
		d += min(d, hi-d) // doubled, capped at hi without overflowing
	}
	switch p.Jitter {
	case Equal:
		return d/2 + rand.N(d-d/2+1)
	case Full:
		return rand.N(d) + 1
	}
	return d
}

// New starts a Backoff at attempt 0.
func (p Policy) New() *Backoff { return &Backoff{p: p} }

// Backoff counts the attempts of one retry loop.
type Backoff struct {
	p       Policy
	attempt int
}

// Next counts an attempt and returns its delay.
func (b *Backoff) Next() time.Duration {
	b.attempt++
	return b.p.Delay(b.attempt)
}

// Attempt is the number of delays Next has handed out since the last Reset.
func (b *Backoff) Attempt() int { return b.attempt }

// Reset starts over at Min, after a success.
func (b *Backoff) Reset() { b.attempt = 0 }

// Wait sleeps the next delay; it reports false when ctx ended first.
func (b *Backoff) Wait(ctx context.Context) bool { return Sleep(ctx, b.Next()) }

// Sleep waits d, or until ctx is done; it reports whether d passed.
func Sleep(ctx context.Context, d time.Duration) bool {
	if ctx.Err() != nil {
		return false
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
