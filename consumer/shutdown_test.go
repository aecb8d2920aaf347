package consumer

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/lakewap/lakewap/kafka"
)

func TestShutdownLetsRunningHandleFinishAndCommits(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	produce(t, k, inTopic, 0, values("slow", "next")...)
	started, release := make(chan struct{}), make(chan struct{})
	rec := newRecorder()
	rec.onHandle = func(ctx context.Context, m kafka.Message) error {
		if string(m.Value) == "slow" {
			close(started)
			<-release
			return ctx.Err() // nil: the grace period has not run out
		}
		return nil
	}
	c := startConsumer(t, testConfig(k, "shutdown"), rec)
	<-started
	c.cancel()
	eventually(t, "generation ended", func() bool { return !c.Ready() })
	close(release)
	c.stop(t)

	if got := committed(t, k, "shutdown", inTopic, 1)[0]; got != 1 {
		t.Errorf("committed %d after shutdown, want 1 (the finished message, not the unfetched one)", got)
	}
	if got := rec.handleCalls(0); !slices.Equal(got, []int64{0}) {
		t.Errorf("Handle calls %v, want [0]: no fetching after shutdown began", got)
	}
	if got, want := rec.eventLog(), []string{"assigned:0", "handled:0:0", "revoked:0"}; !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

func TestShutdownGraceBoundsHandleAndLeavesMessageUncommitted(t *testing.T) {
	k := startKafka(t, topic(inTopic, 1), topic(dlqTopic, 1))
	produce(t, k, inTopic, 0, values("stuck")...)
	started := make(chan struct{})
	var handleErr error
	rec := newRecorder()
	rec.onHandle = func(ctx context.Context, m kafka.Message) error {
		close(started)
		<-ctx.Done()
		handleErr = ctx.Err()
		return handleErr
	}
	cfg := testConfig(k, "grace")
	cfg.ShutdownGrace = 50 * time.Millisecond
	c := startConsumer(t, cfg, rec)
	<-started
	c.stop(t)
	if !errors.Is(handleErr, context.Canceled) {
		t.Errorf("Handle's context ended with %v, want context.Canceled", handleErr)
	}
	if got, ok := committed(t, k, "grace", inTopic, 1)[0]; ok {
		t.Errorf("committed %d for an unfinished message", got)
	}
	if got, want := rec.eventLog(), []string{"assigned:0", "revoked:0"}; !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}

	// The next member of the group gets the message again: at-least-once.
	again := newRecorder()
	startConsumer(t, cfg, again)
	eventually(t, "message redelivered and committed", func() bool {
		return committed(t, k, "grace", inTopic, 1)[0] == 1
	})
	if got := again.handledOffsets(0); !slices.Equal(got, []int64{0}) {
		t.Errorf("redelivered offsets %v, want [0]", got)
	}
}

func TestReadyOnlyAfterEveryPartitionRestored(t *testing.T) {
	k := startKafka(t, topic(inTopic, 2), topic(dlqTopic, 1))
	produce(t, k, inTopic, 0, values("p0")...)
	produce(t, k, inTopic, 1, values("p1")...)
	restoring, release := make(chan struct{}), make(chan struct{})
	failures := 2
	rec := newRecorder()
	rec.onAssigned = func(ctx context.Context, p int) error {
		if p != 1 {
			return nil
		}
		if failures > 0 {
			failures--
			return errors.New("changelog unavailable")
		}
		close(restoring)
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	cfg := testConfig(k, "ready")
	c := startConsumer(t, cfg, rec)
	<-restoring
	eventually(t, "partition 0 handled", func() bool { return len(rec.handledOffsets(0)) == 1 })
	if c.Ready() {
		t.Errorf("Ready() = true while partition 1 is still restoring")
	}
	if got := rec.handleCalls(1); len(got) != 0 {
		t.Errorf("partition 1 handled %v before Assigned succeeded", got)
	}
	if got := value(t, c.m.retries.WithLabelValues(opAssign)); got != 2 {
		t.Errorf("retries_total{operation=assign} = %v, want 2", got)
	}
	// What the LakewapPartitionsNotRestored alert watches: one assigned
	// partition not restored.
	eventually(t, "partition 0 counted restored", func() bool { return value(t, c.m.restored) >= 1 })
	if a, r := value(t, c.m.assigned), value(t, c.m.restored); a-r != 1 {
		t.Errorf("assigned_partitions %v, restored_partitions %v while partition 1 restores; want one short", a, r)
	}
	close(release)
	eventually(t, "ready", c.Ready)
	if a, r := value(t, c.m.assigned), value(t, c.m.restored); a != r || r == 0 {
		t.Errorf("assigned_partitions %v, restored_partitions %v once ready; want equal", a, r)
	}
	eventually(t, "partition 1 handled", func() bool { return len(rec.handledOffsets(1)) == 1 })
}
