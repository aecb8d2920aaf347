package runner

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/lakewap/lakewap/pipeline"

	"github.com/lakewap/lakewap/schemas"
)

// movingLake is a fakeLake whose target has a head that lakewap's merges
// and reverts move: a sealed commit's snapshot is the head when it was
// sealed, the look reports the head now, and each merge remembers the head
// it landed on.
type movingLake struct {
	*fakeLake
	head     string
	n        int
	snapshot map[string]string // sealed commit -> the target's head when it was sealed
	landedOn map[string]string // sealed commit -> the target's head its merge landed on
}

func newMovingLake() *movingLake {
	return &movingLake{fakeLake: newFakeLake(), head: "c0", snapshot: map[string]string{}, landedOn: map[string]string{}}
}

func (l *movingLake) Seal(_ context.Context, _, branch, _ string, _ map[string]string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sealed := "sealed-" + branch
	l.snapshot[sealed] = l.head
	return sealed, nil
}

func (l *movingLake) Published(_ context.Context, repo, _, sealed string, _ time.Time) (Publication, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if id, ok := l.merged[mergedKey(repo, sealed)]; ok {
		return Publication{OnTarget: true, Merge: id, Head: l.head, Base: sealed}, nil
	}
	return Publication{Head: l.head, Base: l.snapshot[sealed]}, nil
}

func (l *movingLake) Merge(_ context.Context, repo, source, _, _ string, meta map[string]string) (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, ok := l.merged[mergedKey(repo, source)]; ok {
		return "", fmt.Errorf("no changes: %w", ErrNoChanges)
	}
	id := "merge-" + meta[MetaBatchID]
	l.merged[mergedKey(repo, source)] = id
	l.landedOn[source] = l.head
	l.log = append(l.log, Commit{ID: id, Parents: []string{l.head, source}, Metadata: meta, Committer: fakeCommitter})
	l.head = id
	return id, nil
}

func (l *movingLake) Revert(ctx context.Context, repo, branch, commitID string, parent int, msg string, meta map[string]string) error {
	if strings.HasSuffix(branch, revertScratchSuffix) {
		return l.fakeLake.Revert(ctx, repo, branch, commitID, parent, msg, meta) // the revert's audit: not on the target
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	id := fmt.Sprintf("revert-%d", l.n)
	l.log = append(l.log, Commit{ID: id, Parents: []string{l.head}, Metadata: meta, Committer: fakeCommitter, CreationDate: time.Now().UTC()})
	l.head = id
	return nil
}

// queued is how many jobs wait for their turn on (repo, target).
func (r *Runner) queued(repo, target string) int {
	r.qmu.Lock()
	defer r.qmu.Unlock()
	if q := r.queues[targetKey{repo, target}]; q != nil {
		return q.waiting
	}
	return 0
}

// TestRevertDoesNotMoveTheTargetUnderARecheckedPublish: lakewap's own
// revert of a published batch is a commit on the target like a merge. The
// runner's queue keeps the target still between a publish's look and its
// merge only if the revert takes its turn there too: before, the revert
// ran beside the publish turn, landed while batch b was rechecked onto the
// head holding a, and b's merge went onto the revert commit, a state no
// audit had judged (a revert can bring back rows a batch had replaced,
// so main held duplicates a unique check never saw), attested against a
// head that was not its first parent.
func TestRevertDoesNotMoveTheTargetUnderARecheckedPublish(t *testing.T) {
	lake := newMovingLake()
	var mu sync.Mutex
	firstAudit := make(chan struct{}) // releases b's audit
	recheckIn := make(chan struct{})  // b's recheck has started
	recheckGo := make(chan struct{})  // releases b's recheck
	rechecked := map[string]string{}  // sealed commit -> the head its recheck judged it onto
	var inOnce, auditOnce, goOnce sync.Once
	release := func() { auditOnce.Do(func() { close(firstAudit) }) }
	proceed := func() { goOnce.Do(func() { close(recheckGo) }) }
	t.Cleanup(func() { release(); proceed() })
	f := newRunnerFixtureWith(t, func(c *Config) {
		c.Lake = lake
		c.Datasets = func(n string) (DatasetSpec, bool) {
			return DatasetSpec{Repository: "lake", Target: "main", WriteTimeout: time.Hour, KeepBranch: true}, n == "billing"
		}
		c.Auditor = auditFunc(func(ctx context.Context, req AuditRequest) (schemas.AuditReport, error) {
			b := req.Ref == "sealed-wap-billing-b"
			switch {
			case b && !req.Onto:
				select {
				case <-firstAudit:
				case <-ctx.Done():
					return schemas.AuditReport{}, ctx.Err()
				}
			case b:
				mu.Lock()
				rechecked[req.Ref] = req.BaseRef
				mu.Unlock()
				inOnce.Do(func() { close(recheckIn) })
				select {
				case <-recheckGo:
				case <-ctx.Done():
					return schemas.AuditReport{}, ctx.Err()
				}
			}
			return report(true), nil
		})
	})
	f.lake = lake.fakeLake
	go func() {
		for range f.notes.ch {
		}
	}()
	// b is sealed on c0 and held in its audit; a publishes meanwhile.
	f.land(t, "b")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		lake.mu.Lock()
		_, sealed := lake.snapshot["sealed-wap-billing-b"]
		lake.mu.Unlock()
		if r, _ := f.run("billing", "b"); r.State == StateAuditing && sealed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b never reached its audit")
		}
	}
	f.land(t, "a")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if r, _ := f.run("billing", "a"); r.State == StatePublished {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a was never published")
		}
	}
	// b's publish finds the target moved (c0 -> merge-a) and rechecks.
	release()
	select {
	case <-recheckIn:
	case <-time.After(30 * time.Second):
		t.Fatal("b's publish never rechecked it onto the moved target")
	}
	// An operator reverts a while b's recheck runs.
	now := time.Now().UTC().Truncate(time.Millisecond)
	if err := f.r.Handle(context.Background(), 0, schemas.RevertRequested{RequestID: "q1", BatchID: "a", Dataset: "billing",
		Reason: "wrong rows", RequestedBy: "bob", OccurredAt: now}, schemas.TraceContext{}); err != nil {
		t.Fatal(err)
	}
	// The revert is either made, or waiting for the target's turn.
	for deadline := time.Now().Add(30 * time.Second); lake.reverts() == 0 && f.r.queued("lake", "main") == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the revert neither ran nor waited for its turn")
		}
	}
	proceed()
	if _, ok := f.awaitAnswer(t, "a", "q1").(schemas.BatchReverted); !ok {
		t.Fatal("the revert of a was not answered BatchReverted")
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(time.Millisecond) {
		if r, _ := f.run("billing", "b"); r.State == StatePublished {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("b was never published")
		}
	}
	lake.mu.Lock()
	defer lake.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	sealed := "sealed-wap-billing-b"
	if rechecked[sealed] == "" || lake.landedOn[sealed] != rechecked[sealed] {
		t.Fatalf("b was rechecked onto %q but its merge landed on %q (target log %v): main holds a combination no audit judged",
			rechecked[sealed], lake.landedOn[sealed], lake.log)
	}
}
