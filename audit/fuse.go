package audit

import (
	"context"
	"strings"
)

// Fused aggregates. A batch's first incremental audit asks DuckDB several
// single-row aggregates of the same batch view, each with no where: the
// statistics of the batch's file (computeStats), unique's batch keys
// (uniqueIncremental), the row checks' scan (checkGroup), the batch's min
// and max of a range or stat column (batchMinMax), its row count
// (volume_change, fromStatistics). Over a small batch each statement
// costs more to prepare, bind and set up than to scan (issue 21's
// throughput benchmark spent half its CPU so). Before the checks run,
// planFusion builds the texts those consumers will ask, with the builders
// they use themselves (aggregateSQL, scanExprs, uniqueBatchSQL,
// batchMinMaxSQL, batchStatsSQL), so the texts are the same by
// construction. When one of them is first asked (queryRow, and so memoRow
// on a miss), one statement computes them all:
//
//	SELECT <list 1>, <list 2>, ... FROM "batch"."t"
//
// and its row is split into each query's answer, by its columns. An
// aggregate without GROUP BY or where over the same rows is the same value
// of the same type in any select list, so each answer is what its own
// query gives. Each is used once, by the query of that exact text; a
// prediction that turns out wrong (a plan chose another expression, a
// check did not reach its scan) is a few wasted columns, and its consumer
// runs what it runs as before. Queries whose answers the memo holds are
// left out (their consumers will not ask). When the fused statement
// fails, nothing is fetched: each consumer runs its own query and reports
// its own error, as without the fusion (TestFusedComponentErrors).
//
// The statistics of a batch of one Parquet file (a plan without where
// conditions) are the batch view's figures: the view reads that file
// alone, as computeStats's grouped scan does (batchFileStats). They are
// taken from the fused statement only; otherwise computeStats scans the
// file as before.

// fusedPart is one query of a fusion: its text, its select list and the
// number of its columns.
type fusedPart struct {
	text, list string
	n          int
}

// fusion is the queries over one view expected to be asked, and their
// answers once fetched (by text).
type fusion struct {
	view  viewKey
	from  string
	parts []fusedPart
	ran   bool
	rows  map[string][]any
}

// add makes q (of n columns) a part, when it is a select list over the
// fusion's view alone.
func (f *fusion) add(q string, n int) {
	list, ok := strings.CutPrefix(q, "SELECT ")
	if !ok {
		return
	}
	if list, ok = strings.CutSuffix(list, " FROM "+f.from); !ok || list == "" {
		return
	}
	for _, p := range f.parts {
		if p.text == q {
			return
		}
	}
	f.parts = append(f.parts, fusedPart{text: q, list: list, n: n})
}

// planFusion predicts the aggregates with no where that the checks will
// ask of each table's batch view (see above). It runs nothing.
func (r *run) planFusion(ctx context.Context) {
	if r.e.unfused {
		return
	}
	checks := r.req.Suite.Checks
	for _, t := range r.req.Suite.Tables {
		bk := viewKey{schemaBatch, strings.ToLower(t.Name)}
		v := r.views[bk]
		if v == nil || v.broken || v.colsErr != nil {
			continue
		}
		f := &fusion{view: bk, from: qualified(schemaBatch, v.table.Name)}
		if it := r.incTable(bk.table); it != nil && !it.done && it.need.plain() && r.batchOfOne(v) {
			f.add(batchStatsSQL(v.table.Name, it.need), len(statsExprs(it.need)))
		}
		// The incremental plans' own queries (runIncremental, adjust).
		for i, c := range checks {
			if !strings.EqualFold(c.Table, t.Name) || r.inc == nil || !r.inc.planned[i] {
				continue
			}
			name := r.table(c.Table).Name
			switch {
			case !r.inc.rows[i] && c.Kind == KindUnique:
				f.add(uniqueBatchSQL(name, c), 6)
			case !r.inc.rows[i] && c.Kind == KindVolumeChange:
				f.add(aggregateSQL(schemaBatch, name, nil), 1)
			case r.inc.rows[i] && (c.Kind == KindRange || c.Kind == KindStat) && strings.TrimSpace(c.Where) == "" && r.e.memo != nil:
				f.add(batchMinMaxSQL(name, c), 5)
			}
		}
		// The scan of the checks over the view with no where, as checkAll
		// groups them. A plan that may choose another expression or take
		// its check out of the scan (unique's, over a view that is not
		// small) leaves the scan unpredicted.
		var idxs []int
		predicted := true
		size := r.viewBytes(bk)
		for i, c := range checks {
			kind := kindOf(c)
			if !strings.EqualFold(c.Table, t.Name) || schemaOf(c) != schemaBatch || strings.TrimSpace(c.Where) != "" ||
				!kind.aggregated() || (r.inc != nil && r.inc.planned[i] && !r.inc.rows[i]) {
				continue
			}
			if kind.anyColumns || (kind.plan != nil && (size >= r.e.bitmapUniqueBytes || size >= r.e.groupedUniqueBytes)) {
				predicted = false
				break
			}
			if r.preflight(ctx, c) == nil { // no query for these kinds without where
				idxs = append(idxs, i)
			}
		}
		if predicted && len(idxs) > 0 {
			exprs, _ := r.scanExprs(idxs)
			f.add(aggregateSQL(schemaBatch, v.table.Name, exprs), len(exprs)+1)
		}
		if len(f.parts) < 2 {
			continue
		}
		if r.fused == nil {
			r.fused = map[string]*fusion{}
		}
		for _, p := range f.parts {
			r.fused[p.text] = f
		}
	}
}

// prefetched is the answer of q (n columns) from its fusion: the fused
// statement runs when the first of its queries is asked.
func (r *run) prefetched(ctx context.Context, q string, n int) ([]any, bool) {
	f := r.fused[q]
	if f == nil {
		return nil, false
	}
	if !f.ran {
		f.ran = true
		f.fetch(ctx, r, q)
	}
	delete(r.fused, q)
	vals, ok := f.rows[q]
	delete(f.rows, q)
	return vals, ok && len(vals) == n
}

// fetch runs the fused statement of the parts still to be asked (asking,
// and those whose answers the memo does not hold) and keeps their answers.
func (f *fusion) fetch(ctx context.Context, r *run, asking string) {
	def, memo := r.memoView(ctx, f.view)
	var parts []fusedPart
	total := 0
	for _, p := range f.parts {
		if p.text != asking && (r.fused[p.text] != f || (memo && r.e.memo.holds(memoKey("row", p.text, def)))) {
			continue
		}
		parts = append(parts, p)
		total += p.n
	}
	if len(parts) < 2 {
		return
	}
	q := "SELECT " + strings.Join(each(parts, func(p fusedPart) string { return p.list }), ", ") + " FROM " + f.from
	vals, err := r.queryRow(ctx, q, total)
	if err != nil {
		r.log.Debug("audit: the fused scan failed; its queries run one by one", "view", f.from, "err", err)
		return
	}
	f.rows = map[string][]any{}
	j := 0
	for _, p := range parts {
		f.rows[p.text] = vals[j : j+p.n : j+p.n]
		j += p.n
	}
}

// incTable is the incremental plan of table (lower case), if any.
func (r *run) incTable(table string) *incTable {
	if r.inc == nil {
		return nil
	}
	return r.inc.tables[table]
}

// plain: no figure over a where condition.
func (n statsNeed) plain() bool {
	if len(n.wheres) > 0 {
		return false
	}
	for _, c := range n.cols {
		if strings.TrimSpace(c.where) != "" {
			return false
		}
	}
	return true
}

// batchOfOne: v reads one Parquet file, plainly.
func (r *run) batchOfOne(v *view) bool {
	return len(v.files) == 1 && v.table.format() == FormatParquet && !v.synthetic && v.delta == nil && !v.broken && v.colsErr == nil
}

// batchStatsSQL is the statistics' figures (need, without where) over the
// batch view of table.
func batchStatsSQL(table string, need statsNeed) string {
	return "SELECT " + strings.Join(statsExprs(need), ", ") + " FROM " + qualified(schemaBatch, table)
}

// batchFileStats are the statistics of files, when they are the one file a
// batch view reads and the fused statement fetched its figures (see above).
func (r *run) batchFileStats(ctx context.Context, format string, files []string, need statsNeed) (fileStats, bool) {
	if format != FormatParquet || len(files) != 1 || !need.plain() || len(r.fused) == 0 {
		return fileStats{}, false
	}
	for k, v := range r.views {
		if k.schema != schemaBatch || !r.batchOfOne(v) || v.files[0] != files[0] {
			continue
		}
		vals, ok := r.prefetched(ctx, batchStatsSQL(v.table.Name, need), len(statsExprs(need)))
		if !ok {
			return fileStats{}, false
		}
		if asInt(vals[0]) == 0 {
			return emptyStats(need), true // the grouped scan has no group for a file without rows
		}
		return statsOfRow(vals, need), true
	}
	return fileStats{}, false
}
