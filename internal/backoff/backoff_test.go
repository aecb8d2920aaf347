package backoff

import (
	"context"
	"math"
	"testing"
	"time"
)

func TestDelayDoublesToTheCap(t *testing.T) {
	p := Policy{Min: 100 * time.Millisecond, Max: time.Second}
	want := []time.Duration{100, 200, 400, 800, 1000, 1000}
	for i, w := range want {
		if got := p.Delay(i + 1); got != w*time.Millisecond {
			t.Errorf("attempt %d: %s, want %s", i+1, got, w*time.Millisecond)
		}
	}
	if got := p.Delay(0); got != 100*time.Millisecond {
		t.Errorf("attempt 0 counts as 1: got %s", got)
	}
	if got := p.Delay(1 << 30); got != time.Second {
		t.Errorf("a huge attempt stays at the cap: %s", got)
	}
}

func TestDelayEdges(t *testing.T) {
	if got := (Policy{Min: time.Second, Max: time.Millisecond}).Delay(5); got != time.Second {
		t.Errorf("Max below Min means Min: %s", got)
	}
	if got := (Policy{Max: time.Second, Jitter: Full}).Delay(3); got != 0 {
		t.Errorf("zero Min: %s", got)
	}
	big := Policy{Min: time.Duration(math.MaxInt64 / 3), Max: time.Duration(math.MaxInt64)}
	if got := big.Delay(10); got != big.Max {
		t.Errorf("doubling near the top must not overflow: %s", got)
	}
}

func TestJitterBounds(t *testing.T) {
	for _, c := range []struct {
		j      Jitter
		lo, hi time.Duration
	}{{Equal, 400, 800}, {Full, 1, 800}} {
		p := Policy{Min: 100, Max: 800, Jitter: c.j}
		seen := map[time.Duration]bool{}
		for range 2000 {
			d := p.Delay(4)
			if d < c.lo || d > c.hi {
				t.Fatalf("jitter %d: %s outside [%s, %s]", c.j, d, c.lo, c.hi)
			}
			seen[d] = true
		}
		if len(seen) < 50 {
			t.Errorf("jitter %d: only %d distinct delays in 2000: not spread", c.j, len(seen))
		}
	}
	// The smallest delay still jitters inside its bounds.
	for range 100 {
		if d := (Policy{Min: 1, Max: 1, Jitter: Equal}).Delay(1); d < 0 || d > 1 {
			t.Fatalf("1ns equal jitter: %s", d)
		}
		if d := (Policy{Min: 1, Max: 1, Jitter: Full}).Delay(1); d != 1 {
			t.Fatalf("1ns full jitter: %s", d)
		}
	}
}

func TestBackoffCountsAndResets(t *testing.T) {
	b := Policy{Min: 10, Max: 1000}.New()
	for i, w := range []time.Duration{10, 20, 40} {
		if got := b.Next(); got != w {
			t.Fatalf("next %d: %s, want %s", i, got, w)
		}
	}
	if b.Attempt() != 3 {
		t.Fatalf("attempt %d, want 3", b.Attempt())
	}
	b.Reset()
	if got := b.Next(); got != 10 {
		t.Fatalf("after reset: %s, want 10ns", got)
	}
}

func TestSleepStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan bool)
	go func() { done <- Sleep(ctx, time.Hour) }()
	cancel()
	if <-done {
		t.Fatal("Sleep reported the hour passed after cancel")
	}
	if Sleep(ctx, 0) {
		t.Fatal("Sleep on a cancelled context reported success")
	}
	if !Sleep(context.Background(), time.Millisecond) {
		t.Fatal("Sleep of 1ms on a live context failed")
	}
	b := Policy{Min: time.Hour, Max: time.Hour}.New()
	if b.Wait(ctx) {
		t.Fatal("Wait on a cancelled context reported success")
	}
}
