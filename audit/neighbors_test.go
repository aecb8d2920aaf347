package audit

import (
	"cmp"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// scriptedRunner answers each audit with the statuses of verdicts[dataset
// at ref] (check name to status; unnamed checks pass) and records the
// requests.
type scriptedRunner struct {
	mu       sync.Mutex
	verdicts map[string]map[string]string
	reqs     []Request
}

func (s *scriptedRunner) Run(_ context.Context, req Request) (schemas.AuditReport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	rep := schemas.AuditReport{Dataset: req.Dataset, Ref: req.Ref, Mode: ModeFull}
	for _, c := range req.Suite.Checks {
		st := s.verdicts[req.Dataset+"@"+req.Ref][c.ID()]
		if st == "" {
			st = schemas.StatusPass
		}
		rep.Checks = append(rep.Checks, schemas.CheckResult{Name: c.ID(), Kind: c.Kind, Table: c.Table, Severity: c.severity(), Status: st})
	}
	st := s.verdicts[req.Dataset+"@"+req.Ref][schemas.KindUnauditedObjects]
	rep.Checks = append(rep.Checks, schemas.CheckResult{Name: schemas.KindUnauditedObjects, Kind: schemas.KindUnauditedObjects,
		Status: cmp.Or(st, schemas.StatusPass)})
	if st := s.verdicts[req.Dataset+"@"+req.Ref]["omitted_checks"]; st != "" {
		rep.Checks = append(rep.Checks, schemas.CheckResult{Name: "omitted_checks", Kind: kindReportBudget, Status: st})
	}
	rep.Passed = len(rep.Failed()) == 0
	return rep, nil
}

func (s *scriptedRunner) runs() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// shopDatasets: customers writes gold/customers/; orders reads it beside
// its own gold/orders/ (unique order ids, and a cross_table check that
// every order's customer exists); billing shares nothing with them; audit
// on another target, the same tables.
func shopDatasets() map[string]Dataset {
	tables := []Table{{Name: "orders", Path: "gold/orders/"}, {Name: "customers", Path: "gold/customers/"}}
	return map[string]Dataset{
		"customers": {Repository: "lake", Target: "main", Suite: Suite{Tables: tables[1:],
			Checks: []Check{{Name: "customer_ids_unique", Kind: KindUnique, Table: "customers", Column: "customer_id"}}}},
		"orders": {Repository: "lake", Target: "main", Suite: Suite{Tables: tables, Checks: []Check{
			{Name: "order_ids_unique", Kind: KindUnique, Table: "orders", Column: "order_id"},
			{Name: "customer_names", Kind: KindNotNull, Table: "customers", Column: "name"},
			{Name: "orders_have_customers", Kind: KindCrossTable, SQL: "SELECT o.* FROM orders o ANTI JOIN customers c USING (customer_id)"}}}},
		"billing": {Repository: "lake", Target: "main", Suite: Suite{Tables: []Table{{Name: "billing_fact", Path: "gold/billing_fact/"}},
			Checks: []Check{{Kind: KindNotNull, Table: "billing_fact", Column: "billing_id"}}}},
		"audit": {Repository: "lake", Target: "audit", Suite: Suite{Tables: tables[1:],
			Checks: []Check{{Name: "customer_ids_unique", Kind: KindUnique, Table: "customers", Column: "customer_id"}}}},
	}
}

const (
	sealedRef = "5ea1ed0000000000000000000000000000000000000000000000000000000000"
	baseRef   = "ba5e000000000000000000000000000000000000000000000000000000000000"
)

func neighborService(t *testing.T, verdicts map[string]map[string]string) (*Service, *scriptedRunner) {
	t.Helper()
	r := &scriptedRunner{verdicts: verdicts}
	s, err := NewService(ServiceOptions{Engine: r, Datasets: shopDatasets(), Concurrency: 1, Budget: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return s, r
}

func changesAt(paths ...string) *Changes {
	c := &Changes{Removals: true}
	for _, p := range paths {
		if rest, ok := strings.CutPrefix(p, "-"); ok {
			c.Removed = append(c.Removed, rest)
		} else {
			c.Objects = append(c.Objects, Object{Path: p, Size: 10})
		}
	}
	return c
}

func statusOf(rep schemas.AuditReport, name string) string {
	for _, c := range rep.Checks {
		if c.Name == name {
			return c.Status
		}
	}
	return ""
}

// A batch changing no table of another dataset of its target is audited
// once, its own suite alone: no neighbor costs anything.
func TestNeighborsCostNothingWhenNoTableIsShared(t *testing.T) {
	s, r := neighborService(t, nil)
	for _, tc := range []struct {
		dataset string
		changes *Changes
	}{
		{"billing", changesAt("gold/billing_fact/batch=1/part-0.parquet")},
		{"orders", changesAt("gold/orders/batch=1/part-0.parquet")}, // customers does not read gold/orders/
		{"customers", nil}, // no diff: nothing to go by
	} {
		before := len(r.runs())
		rep, err := s.Audit(context.Background(), Request{Dataset: tc.dataset, Repository: "lake", Ref: sealedRef, BaseRef: baseRef,
			BatchTime: time.Unix(1, 0), Changes: tc.changes})
		if err != nil || !rep.Passed {
			t.Fatalf("%s: %+v %v", tc.dataset, rep, err)
		}
		if n := len(r.runs()) - before; n != 1 {
			t.Errorf("a %s batch ran %d audits; want 1 (its own)", tc.dataset, n)
		}
		for _, c := range rep.Checks {
			if strings.Contains(c.Name, "(dataset ") {
				t.Errorf("a %s batch's report names another dataset's check %q", tc.dataset, c.Name)
			}
		}
	}
}

// A customers batch (even one that only removes a file) is judged by the
// checks of orders it can break, at its own ref and base: the checks of
// customers and the cross_table check, not unique order ids; the dataset
// of another target is not asked. While they pass, nothing reads the base.
// The neighbor's results about the batch's objects are kept beside its
// checks (TestNeighborJudgesTheBatchsUnreadObjectsByItsOwnMarkers).
func TestNeighborsJudgeTheSharedTablesChecks(t *testing.T) {
	s, r := neighborService(t, nil)
	rep, err := s.Audit(context.Background(), Request{Dataset: "customers", Repository: "lake", Ref: sealedRef, BaseRef: baseRef,
		BaseName: "main", BatchTime: time.Unix(1, 0), Changes: changesAt("-gold/customers/batch=0/part-0.parquet")})
	if err != nil || !rep.Passed {
		t.Fatalf("%+v %v", rep, err)
	}
	runs := r.runs()
	if len(runs) != 2 {
		t.Fatalf("%d audits; want the batch's own and orders' (passing: no look at the base)", len(runs))
	}
	o := runs[1]
	if o.Dataset != "orders" || o.Ref != sealedRef || o.BaseRef != baseRef || !o.Full || o.Onto || o.Changes == nil {
		t.Errorf("orders' audit %+v; want full, at the batch's ref and base, with its diff", o)
	}
	var names []string
	for _, c := range o.Suite.Checks {
		names = append(names, c.ID())
	}
	if got := strings.Join(names, ","); got != "customer_names,orders_have_customers" {
		t.Errorf("orders' checks judged: %s; want customer_names,orders_have_customers", got)
	}
	if len(o.Suite.Tables) != 2 {
		t.Errorf("orders' tables %+v; want both (the cross_table check may read either)", o.Suite.Tables)
	}
	for _, n := range []string{"customer_ids_unique", "customer_names (dataset orders)", "orders_have_customers (dataset orders)"} {
		if st := statusOf(rep, n); st != schemas.StatusPass {
			t.Errorf("%s: %q; want pass", n, st)
		}
	}
	if st := statusOf(rep, schemas.KindUnauditedObjects+" (dataset orders)"); st != schemas.StatusPass {
		t.Errorf("orders' unaudited_objects result: %q; want pass", st)
	}
	if rep.Checks[0].Name != "customer_ids_unique" {
		t.Errorf("the suite's own results are not first: %+v", rep.Checks)
	}
}

// A check of orders that fails with the batch holds it back only when it
// passed at the base; one failing there already is reported warn, says so,
// and the batch passes. The attestation of the batch's suite is the same
// either way.
func TestNeighborsBlameOnlyWhatTheBatchBreaks(t *testing.T) {
	fails := map[string]string{"orders_have_customers": schemas.StatusFail}
	for _, tc := range []struct {
		name       string
		atBase     map[string]string
		wantPassed bool
		wantStatus string
	}{
		{"passed at the base", nil, false, schemas.StatusFail},
		{"failed at the base already", fails, true, schemas.StatusWarn},
		// A check that cannot run at the base says nothing of which rows
		// failed there: failing rows with the batch are the batch's doing
		// (TestExcuseDoesNotHideNewFailingRows).
		{"could not run at the base", map[string]string{"orders_have_customers": schemas.StatusError}, false, schemas.StatusFail},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, r := neighborService(t, map[string]map[string]string{"orders@" + sealedRef: fails, "orders@" + baseRef: tc.atBase})
			rep, err := s.Audit(context.Background(), Request{Dataset: "customers", Repository: "lake", Ref: sealedRef, BaseRef: baseRef,
				BaseName: "main", BatchTime: time.Unix(1, 0), Changes: changesAt("gold/customers/batch=1/part-0.parquet")})
			if err != nil {
				t.Fatal(err)
			}
			runs := r.runs()
			if len(runs) != 3 || runs[2].Ref != baseRef || runs[2].BaseRef != baseRef || runs[2].Onto {
				t.Fatalf("audits %+v; want the batch's, orders' at its ref, orders' at the base", runs)
			}
			if rep.Passed != tc.wantPassed {
				t.Errorf("passed %v; want %v (%+v)", rep.Passed, tc.wantPassed, rep.Checks)
			}
			const name = "orders_have_customers (dataset orders)"
			if st := statusOf(rep, name); st != tc.wantStatus {
				t.Errorf("%s: %q; want %q", name, st, tc.wantStatus)
			}
			for _, c := range rep.Checks {
				if c.Name == name && tc.wantPassed && !strings.Contains(c.Message, "fails on main at "+baseRef[:12]+" already") {
					t.Errorf("message %q does not say it failed on main already", c.Message)
				}
				if c.Name == name && !tc.wantPassed && tc.atBase == nil && !strings.Contains(c.Message, "passes on main") {
					t.Errorf("message %q does not say it passed on main", c.Message)
				}
			}
			a := NewAttestation("customers", shopDatasets()["customers"].Suite, rep, sealedRef, baseRef)
			if len(a.NotPassed) != 0 || a.AllNotPassed {
				t.Errorf("attestation of the customers suite %+v names a check that did not pass", a)
			}
		})
	}
}

// The recheck judges orders onto the head (the head's files with the
// batch's changes), and at the head before; a batch failing its own suite
// asks no neighbor.
func TestNeighborsRecheckOntoTheHead(t *testing.T) {
	const head = "bead000000000000000000000000000000000000000000000000000000000000"
	s, r := neighborService(t, map[string]map[string]string{"orders@" + sealedRef: {"orders_have_customers": schemas.StatusFail}})
	rep, err := s.Recheck(context.Background(), Request{Dataset: "customers", Repository: "lake", Ref: sealedRef, BaseRef: head,
		BaseName: "main", BatchTime: time.Unix(1, 0), Changes: changesAt("gold/customers/batch=1/part-0.parquet")})
	if err != nil {
		t.Fatal(err)
	}
	runs := r.runs()
	if len(runs) != 3 || !runs[1].Onto || runs[1].BaseRef != head || runs[2].Ref != head || runs[2].Onto {
		t.Fatalf("audits %+v; want the batch's, orders' onto the head, orders' at the head", runs)
	}
	if rep.Passed || len(rep.Failed()) != 1 || rep.Failed()[0].Name != "orders_have_customers (dataset orders)" {
		t.Errorf("recheck %+v; want failed by orders' check alone", rep)
	}

	s, r = neighborService(t, map[string]map[string]string{"customers@" + sealedRef: {"customer_ids_unique": schemas.StatusFail}})
	if rep, err := s.Recheck(context.Background(), Request{Dataset: "customers", Repository: "lake", Ref: sealedRef, BaseRef: head,
		BatchTime: time.Unix(1, 0), Changes: changesAt("gold/customers/batch=1/part-0.parquet")}); err != nil || rep.Passed {
		t.Fatalf("%+v %v", rep, err)
	}
	if n := len(r.runs()); n != 1 {
		t.Errorf("a batch failing its own suite ran %d audits; want 1", n)
	}
}

// Checks a neighbor's report left out for its budget, one of them failing,
// hold the batch back unless they failed at the base too: what they were
// is not known.
func TestNeighborsChecksLeftOutOfTheReportAreNotDropped(t *testing.T) {
	left := map[string]string{"omitted_checks": schemas.StatusFail}
	for _, atBase := range []map[string]string{nil, left} {
		s, _ := neighborService(t, map[string]map[string]string{"orders@" + sealedRef: left, "orders@" + baseRef: atBase})
		rep, err := s.Audit(context.Background(), Request{Dataset: "customers", Repository: "lake", Ref: sealedRef, BaseRef: baseRef,
			BatchTime: time.Unix(1, 0), Changes: changesAt("gold/customers/batch=1/part-0.parquet")})
		if err != nil {
			t.Fatal(err)
		}
		want := atBase == nil
		if st := statusOf(rep, "omitted_checks (dataset orders)"); rep.Passed == want || (want && st != schemas.StatusFail) {
			t.Errorf("left out at the base too %v: passed %v, the entry %q", !want, rep.Passed, st)
		}
	}
}
