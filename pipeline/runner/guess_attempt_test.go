package runner

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// tipLake is a lake whose last merge into the target was m0 (the publish
// turn's guess of the head), whose look answers pub, and whose merge
// waits until the recheck beside the look has either begun its recorded
// attempt or returned, then notes how many attempts were open.
type tipLake struct {
	prepLake
	pub          pipeline.Publication
	begun, ended chan struct{}
	mu           sync.Mutex
	merges       int
	openAtMerge  int
	open         *int
	omu          *sync.Mutex
}

func (l *tipLake) MergeTip(string, string) (string, bool) { return "m0", true }

func (l *tipLake) Published(context.Context, string, string, string, time.Time) (pipeline.Publication, error) {
	return l.pub, nil
}

func (l *tipLake) Merge(context.Context, string, string, string, string, map[string]string) (string, error) {
	select {
	case <-l.begun:
	case <-l.ended:
	}
	l.omu.Lock()
	open := *l.open
	l.omu.Unlock()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.merges++
	l.openAtMerge += open
	return "m1", nil
}

// readingAuditor reads bytes at once (BeforeRead), then answers a pass, or
// with block holds on until its recheck is given up.
type readingAuditor struct {
	block    bool
	once     sync.Once
	returned chan struct{}
}

func (a *readingAuditor) Audit(ctx context.Context, req pipeline.AuditRequest) (schemas.AuditReport, error) {
	defer a.once.Do(func() { close(a.returned) })
	if req.BeforeRead != nil {
		if err := req.BeforeRead(ctx); err != nil {
			return schemas.AuditReport{}, err
		}
	}
	if a.block {
		<-ctx.Done()
		return schemas.AuditReport{}, ctx.Err()
	}
	return schemas.AuditReport{Passed: true}, nil
}

// The recheck the publish turn starts beside its look, against its guess,
// records its attempt (AuditBegun) and reads the batch's bytes only once
// the look found the guess: its verdict is then the one that counts. A
// look that finds the target at the batch's foundation (no recheck: the
// guessed head is gone, e.g. the target was put back), or the batch on
// the target already, must not leave a recheck attempt open, nor one
// begun at all: before, the guessed recheck went on beside the merge, so a
// process ending after the merge with that attempt open counted it lost
// (AuditLost, toward audit_crashed: a published batch announced aborted),
// and an already published batch's bytes were read again for nothing.
func TestGuessedRecheckBeginsNoAttemptTheLookMakesNeedless(t *testing.T) {
	for _, tt := range []struct {
		name       string
		pub        pipeline.Publication
		block      bool
		wantBegun  int
		wantMerges int
	}{
		{"the look finds the guess", pipeline.Publication{Head: "m0", Base: "f1"}, false, 1, 1},
		{"the target is at the foundation", pipeline.Publication{Head: "f1", Base: "f1"}, true, 0, 1},
		{"the batch is on the target", pipeline.Publication{OnTarget: true, Merge: "m9", Head: "m9", Base: "s1"}, true, 0, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var omu sync.Mutex
			open, begun := 0, 0
			l := &tipLake{pub: tt.pub, begun: make(chan struct{}), open: &open, omu: &omu}
			aud := &readingAuditor{block: tt.block, returned: make(chan struct{})}
			l.ended = aud.returned
			r := historyRunner(l, aud)
			m, err := newMetrics(prometheus.NewRegistry(), nil, func() []pipeline.Run { return nil }, time.Now)
			if err != nil {
				t.Fatal(err)
			}
			r.metrics = m
			run := historyRun()
			f := &diffFlight{done: make(chan struct{}), base: "f1", changes: []pipeline.Change{{Path: "gold/t/part-0.parquet", Size: 1}}}
			close(f.done)
			r.diffs = map[string]*diffFlight{diffKey(run): f}
			var once sync.Once
			begin := func(context.Context) (func() error, error) {
				omu.Lock()
				open++
				begun++
				omu.Unlock()
				once.Do(func() { close(l.begun) })
				return func() error {
					omu.Lock()
					open--
					omu.Unlock()
					return nil
				}, nil
			}
			in := r.publish(context.Background(), run, begin)
			if _, ok := in.(pipeline.Merged); !ok {
				t.Fatalf("publish = %#v; want Merged", in)
			}
			omu.Lock()
			defer omu.Unlock()
			if l.merges != tt.wantMerges || l.openAtMerge != 0 || begun != tt.wantBegun || open != 0 {
				t.Errorf("%d merges with %d recheck attempts open; %d attempts begun, %d open after; want %d merges with none open, %d begun",
					l.merges, l.openAtMerge, begun, open, tt.wantMerges, tt.wantBegun)
			}
		})
	}
}
