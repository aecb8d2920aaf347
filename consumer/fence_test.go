package consumer

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	kafkago "github.com/segmentio/kafka-go"
)

// An old owner A paused inside its assignment of partition 0 (here: inside
// Assigned, as a frozen VM or a long GC would) while the group rebalances
// the partition to B: A's Fence, a real offset commit with A's old
// generation, is refused by the group coordinator; B's passes. Neither
// moves the committed offset: A's first fence, on a partition with no
// committed offset, commits its first offset, where the group starts it.
func TestFenceFailsForTheOldOwnerAfterARebalance(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	const group = "fence"
	produce(t, k, inTopic, 0, values("m0", "m1")...)
	cfg := testConfig(k, group)
	// A paused member is dropped from the rebalance after this long.
	cfg.RebalanceTimeout = 3 * time.Second

	var (
		mu                   sync.Mutex
		aBefore, aAfter      error
		aFenced, bFenced     = make(chan struct{}), make(chan struct{})
		aDone                = make(chan struct{})
		release              = make(chan struct{})
		bErr                 error
		aCalls, bCalls       int
		consumerA, consumerB = make(chan *Consumer, 1), make(chan *Consumer, 1)
	)
	recA, recB := newRecorder(), newRecorder()
	recA.onAssigned = func(ctx context.Context, p int) error {
		mu.Lock()
		aCalls++
		first := aCalls == 1
		mu.Unlock()
		if !first {
			return nil
		}
		a := <-consumerA
		err := a.Fence(ctx, p)
		mu.Lock()
		aBefore = err
		mu.Unlock()
		close(aFenced)
		<-release // paused: the group goes on without A
		err = a.Fence(context.Background(), p)
		mu.Lock()
		aAfter = err
		mu.Unlock()
		close(aDone)
		return err // as the runner's Load does: A does not take the partition
	}
	recB.onAssigned = func(ctx context.Context, p int) error {
		mu.Lock()
		bCalls++
		first := bCalls == 1
		mu.Unlock()
		if !first {
			return nil
		}
		b := <-consumerB
		err := b.Fence(ctx, p)
		mu.Lock()
		bErr = err
		mu.Unlock()
		close(bFenced)
		return err
	}
	ra := startConsumer(t, cfg, recA)
	consumerA <- ra.Consumer
	select {
	case <-aFenced:
	case <-time.After(45 * time.Second):
		t.Fatal("A was never assigned partition 0")
	}
	mu.Lock()
	if aBefore != nil {
		t.Errorf("A's fence while it owns partition 0: %v, want nil", aBefore)
	}
	mu.Unlock()
	if got, ok := committed(t, k, group, inTopic, 1)[0]; !ok || got != 0 {
		t.Errorf("after A's fence the committed offset is %d (committed: %v), want 0, the partition's first", got, ok)
	}

	rb := startConsumer(t, cfg, recB)
	consumerB <- rb.Consumer
	select {
	case <-bFenced:
	case <-time.After(45 * time.Second):
		close(release)
		t.Fatal("B was never assigned partition 0")
	}
	close(release)
	select {
	case <-aDone:
	case <-time.After(45 * time.Second):
		t.Fatal("A's fence after the rebalance never returned")
	}
	mu.Lock()
	defer mu.Unlock()
	if bErr != nil {
		t.Errorf("B's fence, the partition's owner: %v, want nil", bErr)
	}
	var kerr kafkago.Error
	switch {
	case aAfter == nil:
		t.Errorf("A's fence after the group gave partition 0 to B passed")
	case !errors.As(aAfter, &kerr) || (kerr != kafkago.IllegalGeneration && kerr != kafkago.UnknownMemberId && kerr != kafkago.RebalanceInProgress):
		t.Errorf("A's fence failed with %v, want the coordinator's refusal of its generation", aAfter)
	default:
		t.Logf("A's fence: %v", aAfter)
	}
}
