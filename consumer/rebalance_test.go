package consumer

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestTwoMembersSplitPartitionsAndSurvivorTakesOver(t *testing.T) {
	const parts = 4
	k := startKafka(t, topic(inTopic, parts), topic(dlqTopic, 1))
	const group = "split"
	produced := map[int]int64{} // per partition: messages produced so far
	produceRound := func(round string) {
		for p := range parts {
			produce(t, k, inTopic, p, values(fmt.Sprintf("%s-p%d-a", round, p), fmt.Sprintf("%s-p%d-b", round, p))...)
			produced[p] += 2
		}
	}
	allCommitted := func() bool {
		got := committed(t, k, group, inTopic, parts)
		for p := range parts {
			if got[p] != produced[p] {
				return false
			}
		}
		return true
	}

	recA, recB := newRecorder(), newRecorder()
	a := startConsumer(t, testConfig(k, group), recA)
	eventually(t, "A owns every partition", func() bool { return len(recA.liveSet()) == parts && a.Ready() })
	produceRound("one")
	eventually(t, "round one committed", allCommitted)

	b := startConsumer(t, testConfig(k, group), recB)
	eventually(t, "A and B split the partitions", func() bool {
		la, lb := recA.liveSet(), recB.liveSet()
		all := append(slices.Clone(la), lb...)
		slices.Sort(all)
		return len(la) > 0 && len(lb) > 0 && slices.Equal(all, []int{0, 1, 2, 3}) && a.Ready() && b.Ready()
	})
	bParts := recB.liveSet()
	produceRound("two")
	eventually(t, "round two committed", allCommitted)
	for _, p := range bParts {
		if got := recB.handledOffsets(p); !slices.Equal(got, []int64{2, 3}) {
			t.Errorf("B handled %v on partition %d, want [2 3] (continuing from A's commit)", got, p)
		}
	}

	assignedBefore := map[int]int{}
	recA.mu.Lock()
	for _, p := range bParts {
		assignedBefore[p] = recA.assigned[p]
	}
	recA.mu.Unlock()

	// B's last messages are produced right before it stops: whatever B handled
	// it commits on the way out, the rest A must pick up.
	produceRound("three")
	b.stop(t)
	afterB := committed(t, k, group, inTopic, parts)
	eventually(t, "A owns every partition again", func() bool { return len(recA.liveSet()) == parts && a.Ready() })
	recA.mu.Lock()
	for _, p := range bParts {
		if recA.assigned[p] <= assignedBefore[p] {
			t.Errorf("Assigned was not called on A for partition %d taken over from B", p)
		}
	}
	recA.mu.Unlock()
	produceRound("four")
	eventually(t, "round four committed", allCommitted)

	for _, p := range bParts {
		// A resumes exactly at B's commit: nothing lost, nothing B finished redone.
		var resumed []int64
		for _, off := range recA.handledOffsets(p) {
			if off >= 2 {
				resumed = append(resumed, off)
			}
		}
		if len(resumed) == 0 || resumed[0] != afterB[p] {
			t.Errorf("partition %d: A resumed at %v, B had committed %d", p, resumed, afterB[p])
		}
	}
	// At-least-once: every produced offset was handled by someone.
	for p := range parts {
		seen := map[int64]bool{}
		for _, off := range append(recA.handledOffsets(p), recB.handledOffsets(p)...) {
			seen[off] = true
		}
		for off := range produced[p] {
			if !seen[off] {
				t.Errorf("partition %d offset %d was never handled", p, off)
			}
		}
	}
	checkLifecycle(t, "B", recB.eventLog(), true)
	checkLifecycle(t, "A", recA.eventLog(), false)
}

// checkLifecycle asserts that, per partition, events go assigned, handled...,
// revoked, again and again: no Handle outside an assignment, and (if closed)
// every assignment ended with Revoked.
func checkLifecycle(t *testing.T, who string, events []string, closed bool) {
	t.Helper()
	live := map[string]bool{}
	for _, e := range events {
		parts := strings.Split(e, ":")
		kind, p := parts[0], parts[1]
		switch kind {
		case "assigned":
			if live[p] {
				t.Errorf("%s: partition %s assigned twice without Revoked", who, p)
			}
			live[p] = true
		case "handled":
			if !live[p] {
				t.Errorf("%s: %s outside an assignment", who, e)
			}
		case "revoked":
			if !live[p] {
				t.Errorf("%s: partition %s revoked without Assigned", who, p)
			}
			live[p] = false
		}
	}
	for p, l := range live {
		if l && closed {
			t.Errorf("%s: partition %s never revoked", who, p)
		}
	}
}
