package runner

import (
	"context"
	"errors"
	"testing"

	"github.com/lakewap/lakewap/pipeline"
	"github.com/lakewap/lakewap/schemas"
)

// A recheck that the auditor answers without reading (no attempt begun)
// and that fails is bisected; a probe that reads must begin the attempt
// first, and when that cannot be recorded the publish fails (to be
// retried) instead of naming a guessed commit: no Collision, and
// nothing read by the probe. A guard of
// b135e50 (recordedRecheck's lazyAttempt.failed).
func TestProbeThatCannotBeginItsAttemptFailsThePublish(t *testing.T) {
	commits := []string{"c0", "c1", "c2", "c3"}
	head := commits[len(commits)-1]
	injected := errors.New("injected: AuditBegun not stored")
	var probes, read, begins int
	aud := auditFunc(func(ctx context.Context, req pipeline.AuditRequest) (schemas.AuditReport, error) {
		fail := schemas.AuditReport{Ref: req.Ref, Checks: []schemas.CheckResult{{Name: "id_unique", Severity: "error", Status: schemas.StatusFail}}}
		if req.BaseRef == head {
			return fail, nil // answered by lakewap's own records: no BeforeRead
		}
		probes++
		if err := req.BeforeRead(ctx); err != nil {
			return schemas.AuditReport{}, err
		}
		read++
		return fail, nil
	})
	r := historyRunner(&historyLake{commits: commits}, aud)
	begin := func(context.Context) (func() error, error) {
		begins++
		return nil, injected // as recheckAttempt's when AuditBegun is not stored
	}
	rep, err := r.recordedRecheck(context.Background(), r.log, historyRun(), "base", head, begin)
	var coll *Collision
	if !errors.Is(err, injected) || errors.As(err, &coll) || rep != nil {
		t.Fatalf("recordedRecheck = %+v, %v; want the begin's error, no collision named", rep, err)
	}
	if probes == 0 || read != 0 || begins != 1 {
		t.Errorf("%d probes, %d read, %d begins; want a probe, none read, one begin", probes, read, begins)
	}
}
