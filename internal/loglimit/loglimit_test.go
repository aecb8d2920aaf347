package loglimit

import (
	"fmt"
	"testing"
	"time"
)

// TestAllowLetsMaxAMinuteAndCountsTheRest: within a minute a kind gets max
// lines, the rest are counted; the first line of the next minute carries
// the count, and another kind has a window of its own.
func TestAllowLetsMaxAMinuteAndCountsTheRest(t *testing.T) {
	var l Limit
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	let := 0
	for i := range 25 {
		if ok, missed := l.Allow("junk", 10, t0.Add(time.Duration(i)*time.Second)); ok {
			let++
			if missed != 0 {
				t.Fatalf("line %d let through with %d missed inside the first window", i, missed)
			}
		}
	}
	if let != 10 {
		t.Fatalf("let %d lines through in a minute, want 10", let)
	}
	if ok, _ := l.Allow("other", 10, t0.Add(30*time.Second)); !ok {
		t.Fatal("another kind was held back by junk's window")
	}
	ok, missed := l.Allow("junk", 10, t0.Add(time.Minute))
	if !ok || missed != 15 {
		t.Fatalf("first line of the next minute: ok %v missed %d, want true 15", ok, missed)
	}
	if ok, missed := l.Allow("junk", 10, t0.Add(time.Minute+time.Second)); !ok || missed != 0 {
		t.Fatalf("second line of the next minute: ok %v missed %d, want true 0 (the count was told)", ok, missed)
	}
}

// TestAllowBoundsItsKinds: kinds past MaxKinds share one window, so a
// caller choosing kinds cannot grow the map or get more lines through.
func TestAllowBoundsItsKinds(t *testing.T) {
	var l Limit
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for i := range MaxKinds {
		if ok, _ := l.Allow(fmt.Sprint("kind-", i), 1, now); !ok {
			t.Fatalf("kind %d held back", i)
		}
	}
	let := 0
	for i := range 1000 {
		if ok, _ := l.Allow(fmt.Sprint("extra-", i), 1, now); ok {
			let++
		}
	}
	if let != 1 {
		t.Fatalf("1000 kinds past the bound let %d lines through, want 1 (one shared window)", let)
	}
	if n := len(l.windows); n > MaxKinds+1 {
		t.Fatalf("%d windows kept, want at most %d", n, MaxKinds+1)
	}
}

// TestAllowAfterTheClockWentBack: a clock set back starts a new window
// instead of holding a kind back until it catches up.
func TestAllowAfterTheClockWentBack(t *testing.T) {
	var l Limit
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	for range 3 {
		l.Allow("k", 3, now)
	}
	if ok, _ := l.Allow("k", 3, now); ok {
		t.Fatal("a fourth line of 3 a minute was let through")
	}
	if ok, missed := l.Allow("k", 3, now.Add(-time.Hour)); !ok || missed != 1 {
		t.Fatalf("after the clock went back an hour: ok %v missed %d, want true 1", ok, missed)
	}
}
