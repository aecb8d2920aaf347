package audit

import (
	"cmp"
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/lakewap/lakewap/schemas"
)

// Datasets publishing into one target may share a table: dataset orders
// reads customers (every order's customer must exist), which dataset
// customers writes. A batch of one is then judged by the other's checks
// too, or it could publish a state of main that fails them (a customers
// batch removing a customer orders reference), after which every batch of
// the other aborts until someone reverts by hand. The pre-merge hook runs
// every guarding suite; the runner's audit and recheck hold this without it.

// neighbor is another dataset of the same repository and target whose
// tables a batch changes, with the checks the change can break: those of
// the tables it touches and every sql and cross_table check (a query may
// read any of the dataset's tables).
type neighbor struct {
	dataset string
	suite   Suite
}

// neighbors are the datasets other than req.Dataset (d) on the same
// repository and target with a table under which req.Changes names a path,
// sorted by name. Nothing is looked at when no other dataset publishes
// there (the common case) or the request carries no diff.
func (s *Service) neighbors(req Request, d Dataset) []neighbor {
	if req.Changes == nil {
		return nil
	}
	var out []neighbor
	for name, e := range s.o.Datasets {
		if name == req.Dataset || e.Repository != d.Repository || e.Target != d.Target {
			continue
		}
		touched := map[string]bool{}
		for _, t := range e.Suite.Tables {
			if changesUnder(req.Changes, t.Path) {
				touched[strings.ToLower(t.Name)] = true
			}
		}
		if len(touched) == 0 {
			continue
		}
		if sub, ok := breakable(e.Suite, touched); ok {
			out = append(out, neighbor{dataset: name, suite: sub})
		}
	}
	slices.SortFunc(out, func(a, b neighbor) int { return strings.Compare(a.dataset, b.dataset) })
	return out
}

// changesUnder reports whether ch adds, changes or removes a path under prefix.
func changesUnder(ch *Changes, prefix string) bool {
	for _, o := range ch.Objects {
		if strings.HasPrefix(o.Path, prefix) {
			return true
		}
	}
	for _, p := range ch.Removed {
		if strings.HasPrefix(p, prefix) {
			return true
		}
	}
	return false
}

// breakable is the part of suite a change of the touched tables can make
// fail: their checks, the checks whose where condition names one of them
// (a subquery reads it), and the custom queries, over the tables those
// read (all of them when a query is kept; for a where, its table and those
// it names, without which it erred at the batch and at the base alike and
// was excused). ok is false when nothing is left.
func breakable(suite Suite, touched map[string]bool) (Suite, bool) {
	var sub Suite
	custom := false
	read := map[string]bool{}
	for _, c := range suite.Checks {
		k := kindOf(c)
		named := whereTables(c, suite.Tables)
		switch {
		case k != nil && k.custom:
			custom = true
		case touched[strings.ToLower(c.Table)]:
		case slices.ContainsFunc(named, func(t string) bool { return touched[t] }):
		default:
			continue
		}
		sub.Checks = append(sub.Checks, c)
		read[strings.ToLower(c.Table)] = true
		for _, t := range named {
			read[t] = true
		}
	}
	for _, t := range suite.Tables {
		if custom || read[strings.ToLower(t.Name)] {
			sub.Tables = append(sub.Tables, t)
		}
	}
	return sub, len(sub.Checks) > 0
}

// neighborName is how a report names check of another dataset.
func neighborName(check, dataset string) string {
	return fmt.Sprintf("%s (dataset %s)", check, dataset)
}

// withNeighbors adds to rep, req's passing report of its own suite, the
// verdicts of its neighbors' checks (see neighbors) at the same ref, base
// and mode (req.Onto: onto the target's head). A neighbor's check that
// fails is the batch's doing, and fails rep, only when it passes at the
// base (the target as the batch found it, or the head it is checked onto):
// one failing there already is reported warn, saying so, and does not
// hold the batch back. The neighbors' audits are full (their part of a
// suite is attested by no publish) and change nothing rep's attestation
// reads: the suite's own results keep their places, first. Their results
// about the batch's objects are kept as their checks are.
func (s *Service) withNeighbors(ctx context.Context, req Request, d Dataset, rep schemas.AuditReport) (schemas.AuditReport, error) {
	if !rep.Passed {
		return rep, nil
	}
	ns := s.neighbors(req, d)
	for _, n := range ns {
		after, err := s.o.Engine.Run(ctx, Request{Dataset: n.dataset, Suite: n.suite, Repository: req.Repository,
			Ref: req.Ref, BaseRef: req.BaseRef, BaseName: req.BaseName, BatchTime: req.BatchTime, Changes: req.Changes,
			Full: true, Onto: req.Onto, BeforeRead: req.BeforeRead})
		if err != nil {
			return rep, fmt.Errorf("checks of dataset %s on the tables the batch changes: %w", n.dataset, err)
		}
		rep.DurationMs += after.DurationMs
		var before map[string]schemas.CheckResult // results at the base by name, read when a check fails
		for _, c := range after.Checks {
			// The run's results about the batch's objects under n's tables
			// (unaudited_objects and the like) are kept with its checks: a
			// path the batch writes there is judged by n's rule of what may
			// go unread too (its markers may be narrower than the batch's,
			// and allowed_paths may let the batch write under n's table,
			// where its own audit reads nothing). Checks the report's
			// budget left out are kept, in one entry.
			i := slices.IndexFunc(n.suite.Checks, func(k Check) bool { return k.ID() == c.Name })
			switch {
			case !failing(c.Status):
			case i >= 0 && n.suite.Checks[i].scope() == ScopeBatch:
				// A check of the batch's files alone: at the base there is
				// no batch, and a check failing on no rows (freshness,
				// row_count with a min) fails there always. What it judges
				// is the batch, so its failure is the batch's doing.
				c.Message = joinMessage(fmt.Sprintf("dataset %s's check of the batch's files fails with this batch", n.dataset), c.Message)
			default:
				if before == nil && req.BaseRef != "" {
					if before, err = s.baseStatuses(ctx, req, n, &rep); err != nil {
						return rep, err
					}
				}
				b := before[c.Name]
				own := Request{Dataset: n.dataset, Repository: req.Repository, Ref: req.Ref, BaseRef: req.BaseRef, BaseName: req.BaseName,
					BatchTime: req.BatchTime, Changes: req.Changes, Full: true, Onto: req.Onto, BeforeRead: req.BeforeRead}
				changed := checkChanged(n.suite, c.Name, req.Changes)
				why := ""
				if changed { // a change leaving the tables a check reads leaves its rows as they were
					if why, err = ownRowsFail(ctx, s.o.Engine, own, n.suite, c, b, req.BaseRef); err != nil {
						return rep, err
					}
				}
				c = s.blame(req, n.dataset, n.suite, c, b, changed, why)
			}
			c.Name = neighborName(c.Name, n.dataset)
			rep.Checks = append(rep.Checks, c)
		}
	}
	if len(ns) > 0 {
		rep.Passed = len(rep.Failed()) == 0
		if cl, ok := s.o.Engine.(reportClipper); ok {
			rep = cl.Clip(rep)
		}
	}
	return rep, nil
}

// baseStatuses audits n's checks at req's base (the target as the batch
// found it, or the head a recheck checks onto) and returns each result by
// name; its duration is added to into's.
func (s *Service) baseStatuses(ctx context.Context, req Request, n neighbor, into *schemas.AuditReport) (map[string]schemas.CheckResult, error) {
	base, err := s.o.Engine.Run(ctx, Request{Dataset: n.dataset, Suite: n.suite, Repository: req.Repository,
		Ref: req.BaseRef, BaseRef: req.BaseRef, BaseName: req.BaseName, BatchTime: req.BatchTime,
		Changes: &Changes{Removals: true}, Full: true, BeforeRead: req.BeforeRead})
	if err != nil {
		return nil, fmt.Errorf("checks of dataset %s at %s, before the batch: %w", n.dataset, short(req.BaseRef), err)
	}
	into.DurationMs += base.DurationMs
	return resultsByName(base), nil
}

// resultsByName is each result of rep by name (the first, for a name given
// twice).
func resultsByName(rep schemas.AuditReport) map[string]schemas.CheckResult {
	out := make(map[string]schemas.CheckResult, len(rep.Checks))
	for _, c := range rep.Checks {
		if _, ok := out[c.Name]; !ok {
			out[c.Name] = c
		}
	}
	return out
}

// excused says whether after, a result failing with a change, is not the
// change's doing: it failed at the base too (before), and the change does
// not make it worse (worse is empty). One orphaned order on main excuses a
// batch that leaves it; it does not excuse one that orphans two more, one
// that mends it and orphans another, or one after which the check cannot
// compare the ids at all (and would never judge the target again).
func excused(after, before schemas.CheckResult, changed bool, suite Suite) bool {
	return failing(before.Status) && worse(after, before, changed, suite) == ""
}

// checkChanged says whether ch changes a table of suite that the check of
// suite named name reads (checkTables); nil changes are taken to change it.
func checkChanged(suite Suite, name string, ch *Changes) bool {
	return slices.ContainsFunc(checkTables(suite, name), func(t Table) bool { return ch == nil || changesUnder(ch, t.Path) })
}

// checkTables are the tables of suite the check of suite named name reads:
// its own, those its where names (whereTables), and for a custom query
// those it names (all of them when it names none). A change leaving them
// leaves the check's rows as they were: its failing rows are not compared
// again (ownRowsFail), and its error at the base and with the change is
// excused (worse).
func checkTables(suite Suite, name string) []Table {
	i := slices.IndexFunc(suite.Checks, func(k Check) bool { return k.ID() == name })
	if i < 0 {
		return nil
	}
	c := suite.Checks[i]
	named := whereTables(c, suite.Tables)
	k := kindOf(c)
	custom := k != nil && k.custom
	if custom {
		named = append(named, namedTables(c.SQL, suite.Tables)...)
	}
	out := slices.DeleteFunc(slices.Clone(suite.Tables), func(t Table) bool {
		return !slices.Contains(named, strings.ToLower(t.Name)) && (c.Table == "" || !strings.EqualFold(t.Name, c.Table))
	})
	if custom && len(out) == 0 {
		return suite.Tables
	}
	return out
}

// worse says how the change made after, a result failing with it, worse
// than before, the result failing at the base; empty when it did not:
//   - a check that ran there and cannot run with the change is worse;
//   - one that cannot run there excuses no failing rows with the change
//     (nothing says they failed before), and when the change changes a
//     table it reads (changed: its own, one its where or custom query
//     names, see checkTables), not its error again either: it judges none of the
//     change's rows there (one file of the table it cannot read stays, or
//     one value its query cannot read, and the change adds rows of any
//     value beside it); an unrunnable check cannot show the change makes
//     it no worse. A check of a table the change leaves that cannot run
//     before nor after is excused, and so is a custom query that cannot
//     run, there and with the change, because a table it names has no
//     file anywhere yet and it cannot bind (unborn; an error of the data
//     while it runs is not excused for it): on a new target a neighbor's
//     join of a table with no file yet cannot run, and that table has no
//     rows to judge;
//   - a check with failing rows counted on both sides is worse with more
//     of them, and, when the base's sample rows are all of its failing
//     rows (no more than audit.sample_rows), with any failing row whose
//     sample is not among them: a change that mends one row and breaks
//     another keeps the count. Beyond audit.sample_rows failing rows at
//     the base, or with a sample clipped to audit.max_sample_value_bytes
//     (two rows may read alike), the samples cannot tell, and ownRowsFail
//     compares the rows themselves: a row-level check runs on the
//     change's files alone, and the failing rows of the others (sql,
//     cross_table, unique, a where holding a query) are compared with the
//     base's as multisets;
//   - a check without failing rows to count is excused when it observes
//     what it did at the base, or, for a kind whose distance from its
//     bounds is told by its observed value (row_count, volume_change,
//     freshness, stat: see beyond), when the change leaves it no farther
//     from them than at the base: a merge deleting five of the rows over a
//     row_count's max makes the target better. A bound exceeded by one row
//     does not excuse a thousand more. Other kinds (schema, ...) are
//     excused only by the same observed value.
//
// suite holds the check (by after.Name), for its bounds.
func worse(after, before schemas.CheckResult, changed bool, suite Suite) string {
	switch {
	case after.Status == schemas.StatusError && before.Status != schemas.StatusError:
		return "it cannot run with this change: the change makes it worse"
	case after.Status == schemas.StatusError && changed && !(unborn(after) && unborn(before)):
		return "it cannot run there nor with this change, which changes a table it reads, so nothing judges the change's rows there: the change is judged alone"
	case after.Status == schemas.StatusError:
		return "" // it cannot run there either, and the change leaves its table
	case before.Status == schemas.StatusError:
		return "it cannot run there, so nothing says the rows failing with this change failed before: the change is judged alone"
	case after.Failures == nil || before.Failures == nil:
		if after.Observed != before.Observed && !nearer(suite, after, before) {
			return fmt.Sprintf("it observes %s there and %s with this change: the change makes it worse or cannot be told not to", cmp.Or(before.Observed, "nothing"), cmp.Or(after.Observed, "nothing"))
		}
		return ""
	case *after.Failures > *before.Failures:
		return fmt.Sprintf("it fails with %d rows there and %d with this change: the change makes it worse", *before.Failures, *after.Failures)
	case int64(len(before.SampleRows)) < *before.Failures:
		return "" // more failing rows there than its samples hold: counts only
	case int64(len(after.SampleRows)) < *after.Failures:
		return "its failing rows with this change are not all reported, so they cannot be compared with those there: the change is judged alone"
	}
	seen := map[string]int{}
	for _, r := range before.SampleRows {
		seen[r]++
	}
	for _, r := range after.SampleRows {
		if seen[r] == 0 {
			return fmt.Sprintf("a row that does not fail there fails with this change (%s): the change makes it worse", clip(r, 200))
		}
		seen[r]--
	}
	return ""
}

// ownRowsFail is, for after, a result failing with a change that worse
// excuses by its count of failing rows alone (the base fails more rows
// than its samples hold, or one clipped, so which rows fail is not told
// apart: countsOnly), why the change adds failing rows after all. For a
// check judging each row by its own values (a row-level kind whose where
// reads no table), a row failing with the change and not before is a row
// of a file the change adds or rewrites, so the check is run on those
// files alone (scope: batch, with req, the change's audit) and any failing
// row there is the change's doing. A change rewriting a file with rows
// failing before is held back too: its rows cannot be told from new ones.
// For the others (sql, cross_table, unique, a where holding a query: a
// change can make a row of a file it leaves fail) the failing rows with
// the change are compared with those at base, the ref before was judged
// at, as multisets (newFailingRows). Empty when the change adds no
// failing row.
func ownRowsFail(ctx context.Context, r Runner, req Request, suite Suite, after, before schemas.CheckResult, base string) (string, error) {
	if !failing(before.Status) || worse(after, before, true, suite) != "" || !countsOnly(after, before) {
		return "", nil
	}
	i := slices.IndexFunc(suite.Checks, func(k Check) bool { return k.ID() == after.Name })
	if i < 0 {
		return "", nil
	}
	if !rowLocal(suite.Checks[i]) {
		return newFailingRows(ctx, r, req, suite, suite.Checks[i], base)
	}
	c := suite.Checks[i]
	c.Name, c.Scope, c.Severity = c.ID(), ScopeBatch, SeverityError
	req.Suite, req.part = Suite{Checks: []Check{c}}, "own rows of "+c.Name
	for _, t := range suite.Tables {
		if strings.EqualFold(t.Name, c.Table) {
			req.Suite.Tables = append(req.Suite.Tables, t)
		}
	}
	rep, err := r.Run(ctx, req)
	if err != nil {
		return "", fmt.Errorf("check %s on the change's files alone: %w", c.Name, err)
	}
	res, ok := resultsByName(rep)[c.Name]
	switch {
	case !ok || res.Status == schemas.StatusError:
		return fmt.Sprintf("it fails with more rows there than its samples hold whole (audit.sample_rows, audit.max_sample_value_bytes), and cannot run on the change's files alone (%s): the change is judged alone", clip(res.Message, 300)), nil
	case res.Failures != nil && *res.Failures > 0 || res.Status == schemas.StatusFail:
		n := "some"
		if res.Failures != nil {
			n = fmt.Sprint(*res.Failures)
		}
		return fmt.Sprintf("it fails with more rows there than its samples hold whole (audit.sample_rows, audit.max_sample_value_bytes), and %s rows of the files this change adds or rewrites fail it: the change is judged alone", n), nil
	}
	return "", nil
}

// countsOnly says whether worse cannot tell after's failing rows from
// before's by their samples: the base fails more rows than its samples
// hold (worse compares the counts alone), or one of its samples is clipped
// (clipped).
func countsOnly(after, before schemas.CheckResult) bool {
	return after.Status != schemas.StatusError && before.Status != schemas.StatusError && after.Failures != nil && before.Failures != nil &&
		(int64(len(before.SampleRows)) < *before.Failures || clipped(before.SampleRows))
}

// clipped says whether a sample row of rows is clipped
// (audit.max_sample_value_bytes, a row's budget: clipRow marks a clipped
// value or column with "…"). Two failing rows that differ only past a
// clipped value's first bytes read alike: a change swapping one for the
// other keeps the samples as they were. A value holding "…" itself is
// taken for clipped: the stricter way.
func clipped(rows []string) bool {
	return slices.ContainsFunc(rows, func(row string) bool { return strings.Contains(row, "…") })
}

// rowLocal says whether c judges each row by its own values alone: a
// row-level kind whose where condition reads no table.
func rowLocal(c Check) bool {
	k := kindOf(c)
	return k != nil && k.failing != nil && !readsTable.MatchString(c.Where)
}

// readsTable finds a query's SELECT or FROM (DuckDB takes FROM first) in a where condition.
var readsTable = regexp.MustCompile(`(?i)\b(select|from)\b`)

// failing says whether a result with status holds a publish back.
func failing(status string) bool {
	return status == schemas.StatusFail || status == schemas.StatusError
}

// batchScoped says whether name is a check of suite that judges the
// batch's files alone (scope: batch), whose failure is the batch's doing
// whatever the base says: the base has no batch.
func batchScoped(suite Suite, name string) bool {
	i := slices.IndexFunc(suite.Checks, func(k Check) bool { return k.ID() == name })
	return i >= 0 && suite.Checks[i].scope() == ScopeBatch
}

// blame is c, a check of dataset that fails with the batch, as the batch's
// report tells it: failing when it passed at the base (before) or the
// batch makes it worse, warn when it failed there already (excused).
func (s *Service) blame(req Request, dataset string, suite Suite, c, before schemas.CheckResult, changed bool, ownRows string) schemas.CheckResult {
	at := fmt.Sprintf("%s at %s", cmp.Or(req.BaseName, "the base"), short(req.BaseRef))
	if failing(before.Status) && (!excused(c, before, changed, suite) || ownRows != "") {
		c.Message = joinMessage(fmt.Sprintf("dataset %s's check fails on %s already, and %s", dataset, at, cmp.Or(worse(c, before, changed, suite), ownRows)), c.Message)
		return c
	}
	if failing(before.Status) {
		c.Status = schemas.StatusWarn
		c.Message = joinMessage(fmt.Sprintf("dataset %s's check fails on %s already, before this batch: not this batch's doing, "+
			"it does not hold the batch back", dataset, at), c.Message)
		if s.o.Logger != nil {
			s.o.Logger.Warn("another dataset's check fails on the target already; the batch is not held back for it",
				"dataset", req.Dataset, "other_dataset", dataset, "check", c.Name, "ref", req.Ref, "base", req.BaseRef)
		}
		return c
	}
	if req.BaseRef != "" {
		c.Message = joinMessage(fmt.Sprintf("dataset %s's check passes on %s and fails with this batch", dataset, at), c.Message)
	}
	return c
}

func joinMessage(head, rest string) string {
	if rest == "" {
		return head
	}
	return head + "; " + rest
}

// reportClipper is an engine that bounds a report to its budgets (*Engine).
type reportClipper interface {
	Clip(rep schemas.AuditReport) schemas.AuditReport
}

// Clip bounds rep to the engine's report budgets (audit.max_report_bytes,
// audit.max_sample_value_bytes), as its own reports are.
func (e *Engine) Clip(rep schemas.AuditReport) schemas.AuditReport {
	return clipReport(rep, e.opts.MaxSampleValueBytes, e.opts.MaxReportBytes)
}
