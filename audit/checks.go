package audit

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/lakewap/lakewap/schemas"
)

func schemaOf(c Check) string {
	if c.scope() == ScopeBatch {
		return schemaBatch
	}
	return schemaMain
}

// checkAll runs every check and returns their results in suite order.
func (r *run) checkAll(ctx context.Context) []schemas.CheckResult {
	checks := r.req.Suite.Checks
	results := make([]schemas.CheckResult, len(checks))
	var order []scanKey
	groups := map[scanKey][]int{}
	// planFusion ran before (Engine.run, then settleProbation).
	defer func() { r.fused = nil }() // answers no check asked for go with the checks
	r.compareLaterClaims(ctx)
	for i, c := range checks {
		if res, ok := r.runIncremental(ctx, i, c); ok {
			results[i] = res
			continue
		}
		if err := r.preflight(ctx, c); err != nil {
			results[i] = r.errored(c, err, 0)
			continue
		}
		kind := kindOf(c)
		if !kind.aggregated() {
			start := time.Now()
			results[i] = kind.run(r, ctx, c)
			results[i].DurationMs = time.Since(start).Milliseconds()
			continue
		}
		k := scanKey{viewKey{schemaOf(c), strings.ToLower(c.Table)}, strings.TrimSpace(c.Where)}
		if kind.plan != nil {
			if res, done := kind.plan(r, ctx, k, i, c); done {
				results[i] = res
				continue
			}
		}
		if groups[k] == nil {
			order = append(order, k)
		}
		groups[k] = append(groups[k], i)
	}
	for _, k := range order {
		r.checkGroup(ctx, k, groups[k], results)
	}
	r.interimRows(ctx, results)
	r.pandasReadings(ctx, results)
	return append(results, each(r.req.Suite.Skipped, func(s Skipped) schemas.CheckResult {
		return schemas.CheckResult{Name: s.Name, Kind: s.Kind, Table: s.Table, Severity: SeverityWarn,
			Status: schemas.StatusSkipped, Message: s.Reason}
	})...)
}

// scanKey is one aggregate scan: a view, filtered by a where condition.
type scanKey struct {
	viewKey
	where string
}

// preflight finds what keeps a check from running before any scan: no base
// ref, an unreadable table, a column the table does not have.
func (r *run) preflight(ctx context.Context, c Check) error {
	if err := r.baseErr(c); err != nil {
		return err
	}
	if strings.TrimSpace(c.Where) != "" {
		// The condition goes into generated queries as text: it must be
		// one expression, reading nothing but the audit's tables.
		if err := r.confine(ctx, "SELECT 1 WHERE (\n"+c.Where+"\n)"); err != nil {
			return fmt.Errorf("where: %w", err)
		}
	}
	kind := kindOf(c)
	if kind.custom {
		if err := r.confine(ctx, trimQuery(c.SQL)); err != nil {
			return err
		}
		// Custom SQL may read any table: one that cannot be read is an
		// error, not an empty table.
		for k, v := range r.views {
			if v.broken && (k.schema == schemaOf(c) || k.schema == schemaBase) {
				return v.colsErr
			}
		}
		return nil
	}
	if err := r.viewErr(schemaOf(c), c.Table); err != nil {
		return err
	}
	if kind.compares {
		if err := r.viewErr(schemaBase, c.Table); err != nil {
			return err
		}
	}
	if kind.aggregated() && !kind.anyColumns {
		// A DESCRIBE costs about as much as planning the scan: a column the
		// table lacks is looked for only when the scan fails (checkGroup).
		return nil
	}
	return r.missingColumn(ctx, c)
}

// viewErr is why the view of a check's table cannot be read, if it cannot.
func (r *run) viewErr(schema, table string) error {
	v := r.views[viewKey{schema, strings.ToLower(table)}]
	if v == nil {
		return fmt.Errorf("table %s not loaded", table)
	}
	return v.colsErr
}

// missingColumn names a column check c reads that its table lacks (or why
// the table cannot be described).
func (r *run) missingColumn(ctx context.Context, c Check) error {
	cols, err := r.describe(ctx, schemaOf(c), c.Table)
	if err != nil || kindOf(c).anyColumns {
		return err // for anyColumns, a missing column is what it reports
	}
	for _, want := range c.columns() {
		if _, ok := findColumn(cols, want); !ok {
			return fmt.Errorf("table %s has no column %q (columns: %s)", c.Table, want, strings.Join(columnNames(cols), ", "))
		}
	}
	return nil
}

// checkGroup runs the checks of one view in one aggregate scan. When the
// scan fails (say, a range over a text column) each check is retried alone
// so that only the broken one reports an error.
func (r *run) checkGroup(ctx context.Context, k scanKey, idxs []int, results []schemas.CheckResult) {
	checks := r.req.Suite.Checks
	start := time.Now()
	total, settled := r.fromStatistics(ctx, k, idxs)
	var vals []any
	var offsets map[int]int
	if !settled {
		var exprs []string
		exprs, offsets = r.scanExprs(idxs)
		var err error
		q := aggregateSQL(k.schema, r.views[k.viewKey].table.Name, exprs, k.where)
		if r.e.rowOnly(ctx, k.where) {
			vals, err = r.memoRow(ctx, q, q, len(exprs)+1, k.viewKey)
		} else {
			vals, err = r.queryRow(ctx, q, len(exprs)+1)
		}
		if err != nil && ctx.Err() == nil && r.dropPlanned(idxs) {
			// A planned shortcut failed (say, a value outside the bounds a
			// footer claimed): count those checks their plain way.
			r.checkGroup(ctx, k, idxs, results)
			return
		}
		if err != nil {
			if len(idxs) > 1 && ctx.Err() == nil {
				for _, i := range idxs {
					r.checkGroup(ctx, k, []int{i}, results)
				}
				return
			}
			if missing := r.missingColumn(ctx, checks[idxs[0]]); missing != nil {
				err = missing
			}
			results[idxs[0]] = r.errored(checks[idxs[0]], err, time.Since(start))
			return
		}
		total = asInt(vals[0])
	}
	scan := time.Since(start)
	var want []int // failed row-level checks, for their sample rows
	bad := map[int]int64{}
	for _, i := range idxs {
		c := checks[i]
		n := len(aggExprs(c))
		started := time.Now()
		var v []any // settled checks have no figures of their own
		if !settled {
			v = vals[offsets[i] : offsets[i]+n]
		}
		kind := kindOf(c)
		checkTotal, v, err := r.adjust(ctx, i, c, total, v)
		if err != nil {
			results[i] = r.errored(c, err, time.Since(start))
			continue
		}
		res := kind.judge(r, ctx, c, checkTotal, v)
		if c.Mostly != nil && res.Status != schemas.StatusError {
			res = r.mostly(c, res, asInt(v[0]), asInt(v[n-1]))
		}
		counted(&res, kind, checkTotal, v) // the table's rows, also when incremental
		if kind.resample != nil && res.Status != schemas.StatusPass {
			res = kind.resample(r, ctx, k, c, res)
		} else if res.Status != schemas.StatusPass && res.Status != schemas.StatusError && kind.failing != nil {
			want = append(want, i)
			bad[i] = asInt(v[0])
		}
		// Each check of the scan is charged the whole scan: it is what the
		// check would cost alone.
		res.DurationMs = (scan + time.Since(started)).Milliseconds()
		results[i] = res
	}
	if len(want) > 0 {
		started := time.Now()
		r.sampleTogether(ctx, k, want, bad, results)
		for _, i := range want {
			results[i].DurationMs += time.Since(started).Milliseconds()
		}
	}
}

// scanExprs are the expressions of the aggregate scan of checks idxs (a
// planned expression in place of its check's first), after count(*), and
// where each check's figures start in the scan's row.
func (r *run) scanExprs(idxs []int) ([]string, map[int]int) {
	var exprs []string
	offsets := map[int]int{}
	for _, i := range idxs {
		offsets[i] = len(exprs) + 1
		e := aggExprs(r.req.Suite.Checks[i])
		if o, ok := r.planned[i]; ok {
			e[0] = o
		}
		exprs = append(exprs, e...)
	}
	return exprs, offsets
}

// sampleTogether gives the failed row-level checks want of one scan their
// sample rows: one query whose LIMIT stops at the first rows failing any of
// them, enough for all when their failing rows are mixed, then a query of
// its own for each check that still has fewer rows than it failed (up to
// SampleRows). bad is each check's count of failing rows.
func (r *run) sampleTogether(ctx context.Context, k scanKey, want []int, bad map[int]int64, results []schemas.CheckResult) {
	n := r.e.opts.SampleRows
	table := r.views[k.viewKey].table.Name
	need := func(i int) int { return int(min(int64(n), bad[i])) }
	if len(want) > 1 {
		preds := each(want, func(i int) string { return failPredicate(r.req.Suite.Checks[i]) })
		rows, err := r.conn.QueryContext(ctx, samplesSQL(k.schema, table, k.where, preds, n*len(want)))
		if err == nil {
			err = func() error {
				defer rows.Close()
				for rows.Next() {
					row, err := scanValues(rows.Scan, len(want)+1) // the row, then whether it fails each check
					if err != nil {
						return err
					}
					for j, i := range want {
						if row[j+1] == true && len(results[i].SampleRows) < need(i) {
							results[i].SampleRows = append(results[i].SampleRows, row[0].(string))
						}
					}
				}
				return rows.Err()
			}()
		}
		if err != nil {
			for _, i := range want {
				results[i].SampleRows = nil
			}
		}
	}
	for _, i := range want {
		if len(results[i].SampleRows) >= need(i) {
			continue
		}
		var err error
		results[i].SampleRows, err = firstColumn[string](ctx, r.conn, sampleSQL(k.schema, r.req.Suite.Checks[i], n))
		if err != nil {
			results[i].Message = "sample rows unavailable: " + err.Error()
		}
	}
}

// fromStatistics settles the checks that the row count alone decides
// (row_count, volume_change), when the scan holds nothing else: DuckDB
// takes the count from the files' row-group metadata without reading the
// data, and a file whose metadata lies about its row count does not
// decode. With other checks the aggregate scan counts the rows anyway.
// Nothing else is settled from statistics: min, max and null counts in a
// Parquet footer are what the writer claims, and a forged footer must not
// pass a check (TestForgedParquetStatistics). It returns the row count and
// whether it settled the checks idxs (all of them, or none).
func (r *run) fromStatistics(ctx context.Context, k scanKey, idxs []int) (int64, bool) {
	v := r.views[k.viewKey]
	if k.where != "" || v == nil || v.synthetic || v.broken ||
		(v.table.format() != FormatParquet && v.table.format() != FormatDelta) ||
		slices.ContainsFunc(idxs, func(i int) bool { return !kindOf(r.req.Suite.Checks[i]).countOnly }) {
		return 0, false
	}
	q := "SELECT count(*) FROM " + qualified(k.schema, v.table.Name)
	vals, err := r.memoRow(ctx, q, q, 1, k.viewKey)
	if err != nil {
		return 0, false // the scan reports it
	}
	return asInt(vals[0]), true
}

// dropPlanned drops the planned expressions of the checks idxs, and says
// whether any had one.
func (r *run) dropPlanned(idxs []int) bool {
	n := len(r.planned)
	for _, i := range idxs {
		delete(r.planned, i)
	}
	return len(r.planned) < n
}

// viewBytes is the size of a view's files.
func (r *run) viewBytes(k viewKey) int64 {
	var n int64
	if v := r.views[k]; v != nil {
		for _, o := range v.objects {
			n += o.Size
		}
	}
	return n
}

// mostly re-judges a row-level check that may fail for some rows: it
// passes while the passing fraction of the counted rows is at least Mostly.
func (r *run) mostly(c Check, res schemas.CheckResult, bad, counted int64) schemas.CheckResult {
	frac := 1.0
	if counted > 0 {
		frac = float64(counted-bad) / float64(counted)
	}
	out := r.judged(c, frac < *c.Mostly, fmt.Sprintf("%s (%.4g%% pass)", res.Observed, frac*100),
		fmt.Sprintf("%s for at least %s%% of rows", res.Threshold, num(*c.Mostly*100)))
	if out.Status != schemas.StatusPass {
		out.SampleRows, out.Message = res.SampleRows, res.Message
	}
	return out
}

func strictBounds(c Check) string {
	var parts []string
	if c.Min != nil {
		parts = append(parts, map[bool]string{false: ">= ", true: "> "}[c.StrictMin]+num(*c.Min))
	}
	if c.Max != nil {
		parts = append(parts, map[bool]string{false: "<= ", true: "< "}[c.StrictMax]+num(*c.Max))
	}
	return strings.Join(parts, " and ")
}

func asFloat(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case int16:
		return float64(n), true
	case int8:
		return float64(n), true
	case uint64:
		return float64(n), true
	case uint32:
		return float64(n), true
	case uint16:
		return float64(n), true
	case uint8:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case *big.Int:
		f, _ := new(big.Float).SetInt(n).Float64()
		return f, true
	case duckdb.Decimal:
		return n.Float64(), true
	}
	return 0, false
}

func columnNames(cols []column) []string { return each(cols, func(c column) string { return c.name }) }

func findColumn(cols []column, name string) (column, bool) {
	for _, c := range cols {
		if strings.EqualFold(c.name, name) {
			return c, true
		}
	}
	return column{}, false
}

// counted gives a judged result of an aggregated check its counts as
// numbers: the rows its scan read (after its where), and for the kinds that
// judge rows one at a time the failing rows (the first figure of its scan).
// A check settled from the row-group row counts (v nil) has its row count
// only; one that could not run has no counts.
func counted(res *schemas.CheckResult, kind *checkKind, total int64, v []any) {
	if res.Status == schemas.StatusError || res.Status == schemas.StatusSkipped {
		return
	}
	res.RowsChecked = &total
	if kind.failing != nil && len(v) > 0 {
		bad := asInt(v[0])
		res.Failures = &bad
	}
}

// findColumnExact finds a column by its exact name.
func findColumnExact(cols []column, name string) (column, bool) {
	for _, c := range cols {
		if c.name == name {
			return c, true
		}
	}
	return column{}, false
}

func (r *run) base(c Check) schemas.CheckResult {
	return schemas.CheckResult{Name: c.ID(), Kind: c.Kind, Table: c.Table, Severity: c.severity()}
}

// judged is a check that ran: pass, or fail/warn by severity.
func (r *run) judged(c Check, failed bool, observed, threshold string) schemas.CheckResult {
	res := r.base(c)
	res.Status, res.Observed, res.Threshold = schemas.StatusPass, observed, threshold
	if failed {
		res.Status = schemas.StatusFail
		if c.severity() == SeverityWarn {
			res.Status = schemas.StatusWarn
		}
		if len(c.Meta) > 0 {
			// Imported suites keep notes for people in meta.
			if b, err := json.Marshal(c.Meta); err == nil {
				res.Message = "meta: " + clip(string(b), 500)
			}
		}
	}
	return res
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// errored is a check that could not run. It blocks publishing whatever its
// severity: a check that cannot run checks nothing.
func (r *run) errored(c Check, err error, d time.Duration) schemas.CheckResult {
	if r.infra == nil && infrastructure(err) {
		r.infra = fmt.Errorf("%w: check %s: %w", ErrInfrastructure, c.ID(), err)
	}
	res := r.base(c)
	res.Status, res.Message, res.DurationMs = schemas.StatusError, err.Error(), d.Milliseconds()
	return res
}

func (r *run) queryRow(ctx context.Context, q string, n int) ([]any, error) {
	if vals, ok := r.prefetched(ctx, q, n); ok {
		return vals, nil
	}
	return scanValues(r.conn.QueryRowContext(ctx, q).Scan, n)
}

// scanValues scans a row of n columns as the driver gives them.
func scanValues(scan func(...any) error, n int) ([]any, error) {
	vals := make([]any, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	return vals, scan(ptrs...)
}

// querier is the run's connection or the engine's pool.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// firstColumn is the first column of q's rows.
func firstColumn[T any](ctx context.Context, db querier, q string) ([]T, error) {
	rows, err := db.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		var v T
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

func asInt(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case int32:
		return int64(n)
	case uint64:
		return int64(n)
	case float64:
		return int64(n)
	}
	return 0
}

// show formats an observed value for a report.
func show(v any) string {
	switch x := v.(type) {
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case float64:
		if math.Trunc(x) == x && math.Abs(x) < 1e15 {
			return fmt.Sprintf("%.0f", x)
		}
		return fmt.Sprint(x)
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v)
}

func bounds(min, max *float64) string {
	switch {
	case min != nil && max != nil:
		return "between " + num(*min) + " and " + num(*max)
	case min != nil:
		return "at least " + num(*min)
	case max != nil:
		return "at most " + num(*max)
	}
	return "any"
}

// listed joins up to n items and says how many more there are.
func listed(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return strings.Join(items[:n], ", ") + fmt.Sprintf(" and %d more", len(items)-n)
}

// baseName is how reports name the base ref.
func (r *run) baseName() string { return cmp.Or(r.req.BaseName, r.req.BaseRef) }
