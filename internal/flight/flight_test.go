package flight

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
)

// Askers of one key while it is being asked share the first's answer,
// asking nothing themselves; another key is asked apart.
func TestDoSharesAnAnswerInFlight(t *testing.T) {
	var g Group[int]
	var asked atomic.Int32
	started, release := make(chan struct{}), make(chan struct{})
	first := make(chan int)
	go func() {
		v, _ := g.Do(context.Background(), "k", func() (int, error) {
			asked.Add(1)
			close(started)
			<-release
			return 7, nil
		})
		first <- v
	}()
	<-started
	var wg sync.WaitGroup
	got := make([]int, 4)
	for i := range got {
		wg.Go(func() {
			got[i], _ = g.Do(context.Background(), "k", func() (int, error) { asked.Add(1); return 8, nil })
		})
	}
	for waiting(&g, "k") < len(got) {
		runtime.Gosched() // until the four wait for the first's flight
	}
	close(release)
	wg.Wait()
	if v := <-first; v != 7 {
		t.Fatalf("first asker got %d, want 7", v)
	}
	for i, v := range got {
		if v != 7 {
			t.Errorf("waiter %d got %d; want the first's answer 7", i, v)
		}
	}
	if n := asked.Load(); n != 1 {
		t.Errorf("asked %d times; want once", n)
	}
	if v, err := g.Do(context.Background(), "other", func() (int, error) { return 9, nil }); v != 9 || err != nil {
		t.Errorf("another key: %d, %v", v, err)
	}
}

// waiting is how many askers wait for k's flight.
func waiting[V any](g *Group[V], k string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if c, ok := g.m[k]; ok {
		return c.waiters
	}
	return 0
}

// A waiter does not take a failed answer: its own ask answers it.
func TestDoAsksAgainAfterAFailure(t *testing.T) {
	var g Group[int]
	started, release := make(chan struct{}), make(chan struct{})
	go func() {
		_, _ = g.Do(context.Background(), "k", func() (int, error) {
			close(started)
			<-release
			return 0, errors.New("the first asker gave up")
		})
	}()
	<-started
	res := make(chan int)
	go func() {
		v, _ := g.Do(context.Background(), "k", func() (int, error) { return 5, nil })
		res <- v
	}()
	close(release)
	if v := <-res; v != 5 {
		t.Errorf("waiter got %d after the first asker failed; want its own answer 5", v)
	}
}

// A waiter whose context ends stops waiting with its context's error.
func TestDoWaiterGivesUpWithItsContext(t *testing.T) {
	var g Group[int]
	started, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	go func() {
		_, _ = g.Do(context.Background(), "k", func() (int, error) { close(started); <-release; return 1, nil })
	}()
	<-started
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Do(ctx, "k", func() (int, error) { return 2, nil }); !errors.Is(err, context.Canceled) {
		t.Errorf("waiter with an ended context: %v; want context.Canceled", err)
	}
}
