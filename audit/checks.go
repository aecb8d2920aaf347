package audit

import (
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

// aggregated kinds are answered by the one aggregate scan of their table.
func aggregated(kind string) bool {
	switch kind {
	case KindNotNull, KindUnique, KindAcceptedValues, KindRange, KindRowCount, KindFreshness, KindVolumeChange,
		KindRegex, KindStat:
		return true
	}
	return false
}

// sampled kinds report failing rows.
func sampled(kind string) bool {
	switch kind {
	case KindNotNull, KindUnique, KindAcceptedValues, KindRange, KindRegex:
		return true
	}
	return false
}

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
	for i, c := range checks {
		if err := r.preflight(ctx, c); err != nil {
			results[i] = r.errored(c, err, 0)
			continue
		}
		if !aggregated(c.Kind) {
			results[i] = r.checkOne(ctx, c)
			continue
		}
		k := scanKey{viewKey{schemaOf(c), strings.ToLower(c.Table)}, strings.TrimSpace(c.Where)}
		if c.Kind == KindUnique {
			// An integer key in a small range is counted with a bitmap in
			// the table's one scan; the grouped scan of checkUnique runs
			// only when that finds duplicates (for their sample rows).
			// Other keys of a large view are counted and sampled by that
			// grouped scan alone; of a small view, in the aggregate scan
			// (cheaper to plan), sampled again only when they fail.
			lo, hi, ok := r.integerBounds(ctx, k, c)
			if !ok && r.viewBytes(k.viewKey) >= r.e.groupedUniqueBytes {
				results[i] = r.checkUnique(ctx, k, c)
				continue
			}
			if ok {
				if r.bitmaps == nil {
					r.bitmaps = map[int][2]int64{}
				}
				r.bitmaps[i] = [2]int64{lo, hi}
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
	for _, s := range r.req.Suite.Skipped {
		results = append(results, schemas.CheckResult{Name: s.Name, Kind: s.Kind, Table: s.Table,
			Severity: SeverityWarn, Status: schemas.StatusSkipped, Message: s.Reason})
	}
	return results
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
	if c.Kind == KindSQL || c.Kind == KindCrossTable {
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
	cols, err := r.describe(ctx, schemaOf(c), c.Table)
	if err != nil {
		return err
	}
	if c.Kind == KindVolumeChange || c.Kind == KindSchemaDrift {
		if _, err := r.describe(ctx, schemaBase, c.Table); err != nil {
			return err
		}
	}
	if c.Kind == KindColumns {
		return nil // a missing column is what it reports
	}
	for _, want := range c.columns() {
		found := false
		for _, col := range cols {
			found = found || strings.EqualFold(col.name, want)
		}
		if !found {
			names := make([]string, len(cols))
			for i, col := range cols {
				names[i] = col.name
			}
			return fmt.Errorf("table %s has no column %q (columns: %s)", c.Table, want, strings.Join(names, ", "))
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
	settled, total, haveTotal := r.fromStatistics(ctx, k, idxs)
	var exprs []string
	offsets := map[int]int{}
	for _, i := range idxs {
		if _, ok := settled[i]; ok {
			continue
		}
		offsets[i] = len(exprs) + 1
		e := aggExprs(checks[i])
		if b, ok := r.bitmaps[i]; ok {
			e[0] = uniqueBitmapExpr(checks[i].columns()[0], b[0], b[1])
		}
		exprs = append(exprs, e...)
	}
	var vals []any
	if len(offsets) > 0 || !haveTotal {
		var err error
		vals, err = r.queryRow(ctx, aggregateSQL(k.schema, r.views[k.viewKey].table.Name, exprs, k.where), len(exprs)+1)
		if err != nil && ctx.Err() == nil && r.dropBitmaps(idxs) {
			// A value outside the bounds the footer claimed: count those
			// checks with the hash table.
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
			results[idxs[0]] = r.errored(checks[idxs[0]], err, time.Since(start))
			return
		}
		total = asInt(vals[0])
	}
	scan := time.Since(start)
	for _, i := range idxs {
		c := checks[i]
		n := len(aggExprs(c))
		started := time.Now()
		v, ok := settled[i]
		if !ok {
			v = vals[offsets[i] : offsets[i]+n]
		}
		res := r.judge(ctx, c, total, v)
		if c.Mostly != nil && res.Status != schemas.StatusError {
			res = r.mostly(c, res, asInt(v[0]), asInt(v[n-1]))
		}
		if c.Kind == KindUnique && res.Status != schemas.StatusPass {
			// Counted with a bitmap: the grouped scan gives the sample rows.
			res = r.checkUnique(ctx, k, c)
		} else if res.Status != schemas.StatusPass && res.Status != schemas.StatusError && sampled(c.Kind) {
			var err error
			res.SampleRows, err = r.samples(ctx, sampleSQL(k.schema, c, r.e.opts.SampleRows))
			if err != nil {
				res.Message = "sample rows unavailable: " + err.Error()
			}
		}
		// Each check of the scan is charged the whole scan: it is what the
		// check would cost alone.
		res.DurationMs = (scan + time.Since(started)).Milliseconds()
		results[i] = res
	}
}

// fromStatistics settles the checks that the row count alone decides
// (row_count, volume_change): DuckDB takes it from the files' row-group
// metadata without reading the data, and a file whose metadata lies about
// its row count does not decode. Nothing else is settled from statistics:
// min, max and null counts in a Parquet footer are what the writer claims,
// and a forged footer must not pass a check (TestForgedParquetStatistics).
// It returns the settled checks (with no figures of their own) and the row
// count.
func (r *run) fromStatistics(ctx context.Context, k scanKey, idxs []int) (map[int][]any, int64, bool) {
	v := r.views[k.viewKey]
	if k.where != "" || v == nil || v.synthetic || v.broken ||
		(v.table.format() != FormatParquet && v.table.format() != FormatDelta) {
		return nil, 0, false
	}
	vals, err := r.queryRow(ctx, "SELECT count(*) FROM "+qualified(k.schema, v.table.Name), 1)
	if err != nil {
		return nil, 0, false // the scan reports it
	}
	out := map[int][]any{}
	for _, i := range idxs {
		switch r.req.Suite.Checks[i].Kind {
		case KindRowCount, KindVolumeChange:
			out[i] = nil
		}
	}
	return out, asInt(vals[0]), true
}

// checkUnique answers a unique check with one grouped scan that gives the
// duplicate count and the most duplicated keys at once: counting distinct
// keys needs the same grouping, so a failing check costs no second scan
// for its sample rows.
func (r *run) checkUnique(ctx context.Context, k scanKey, c Check) schemas.CheckResult {
	start := time.Now()
	vals, err := r.queryRow(ctx, uniqueSQL(k.schema, r.views[k.viewKey].table.Name, c, r.e.opts.SampleRows), 4)
	if err != nil {
		return r.errored(c, err, time.Since(start))
	}
	v := []any{vals[1]} // as aggExprs(c) would give it
	if c.Mostly != nil {
		v = append(v, vals[2])
	}
	res := r.judge(ctx, c, asInt(vals[0]), v)
	if c.Mostly != nil && res.Status != schemas.StatusError {
		res = r.mostly(c, res, asInt(v[0]), asInt(v[1]))
	}
	if res.Status != schemas.StatusPass && res.Status != schemas.StatusError {
		var rows []json.RawMessage
		if s, ok := vals[3].(string); ok {
			if err := json.Unmarshal([]byte(s), &rows); err != nil {
				res.Message = "sample rows unavailable: " + err.Error()
			}
		}
		for _, row := range rows {
			res.SampleRows = append(res.SampleRows, string(row))
		}
	}
	res.DurationMs = time.Since(start).Milliseconds()
	return res
}

// maxBitmapBits bounds the bitmap a unique check may count distinct values
// with: 2^27 bits is 16 MiB per DuckDB thread.
const maxBitmapBits = 1 << 27

// integerBounds finds, for a single-column unique check of an integer
// column of a Parquet (or Delta) table, the bounds its files' footers claim
// for the column. Within a small enough range the scan then counts distinct
// values with a bitmap, several times faster than the hash table of
// count(DISTINCT) (docs/benchmarks.md). The footer is the writer's claim,
// used only as a hint: a value outside the bounds makes the bitmap
// aggregate fail (Out of Range), and checkGroup then counts that check with
// the hash table instead (TestForgedStatisticsEveryKind).
func (r *run) integerBounds(ctx context.Context, k scanKey, c Check) (lo, hi int64, ok bool) {
	cols := c.columns()
	v := r.views[k.viewKey]
	if c.Kind != KindUnique || len(cols) != 1 || k.where != "" || v == nil || v.synthetic || len(v.files) == 0 ||
		(v.table.format() != FormatParquet && v.table.format() != FormatDelta) {
		return 0, 0, false
	}
	described, err := r.describe(ctx, k.schema, v.table.Name)
	if err != nil {
		return 0, 0, false
	}
	col, found := findColumn(described, cols[0])
	if !found {
		return 0, 0, false
	}
	switch strings.ToUpper(col.typ) {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "UTINYINT", "USMALLINT", "UINTEGER":
	default:
		return 0, 0, false
	}
	// Every row group of every file must claim both bounds.
	q := fmt.Sprintf(`SELECT min(TRY_CAST(stats_min_value AS BIGINT)), max(TRY_CAST(stats_max_value AS BIGINT)),
		count(*) FILTER (WHERE TRY_CAST(stats_min_value AS BIGINT) IS NULL OR TRY_CAST(stats_max_value AS BIGINT) IS NULL),
		count(DISTINCT file_name)
		FROM parquet_metadata(%s) WHERE lower(path_in_schema) = lower(%s)`, literalList(v.files), quoteLiteral(cols[0]))
	var min, max sql.NullInt64
	var missing, files int64
	if err := r.conn.QueryRowContext(ctx, q).Scan(&min, &max, &missing, &files); err != nil ||
		!min.Valid || !max.Valid || missing > 0 || files != int64(len(uniqueStrings(v.files))) {
		return 0, 0, false
	}
	if max.Int64 < min.Int64 || uint64(max.Int64-min.Int64) >= maxBitmapBits || max.Int64-min.Int64 < 0 {
		return 0, 0, false
	}
	return min.Int64, max.Int64, true
}

func uniqueStrings(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return slices.Compact(out)
}

// dropBitmaps stops counting the checks idxs with a bitmap, and says
// whether any was.
func (r *run) dropBitmaps(idxs []int) bool {
	dropped := false
	for _, i := range idxs {
		if _, ok := r.bitmaps[i]; ok {
			delete(r.bitmaps, i)
			dropped = true
		}
	}
	return dropped
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

// judge turns a check's aggregate figures into its result.
func (r *run) judge(ctx context.Context, c Check, total int64, v []any) schemas.CheckResult {
	switch c.Kind {
	case KindNotNull:
		bad := asInt(v[0])
		what := "null rows"
		if cols := c.columns(); len(cols) > 1 {
			what = "rows with a null in " + strings.Join(cols, ", ")
		}
		return r.judged(c, bad > 0, fmt.Sprintf("%d %s of %d", bad, what, total), "0 nulls")
	case KindUnique:
		dup := asInt(v[0])
		return r.judged(c, dup > 0, fmt.Sprintf("%d duplicate rows of %d", dup, total),
			"no duplicates of ("+strings.Join(c.columns(), ", ")+")")
	case KindAcceptedValues:
		bad := asInt(v[0])
		return r.judged(c, bad > 0, fmt.Sprintf("%d rows with other values of %d", bad, total),
			"one of "+listed(c.Values, 10))
	case KindRange:
		bad := asInt(v[0])
		obs := fmt.Sprintf("%d rows out of range of %d", bad, total)
		if v[1] != nil {
			obs += fmt.Sprintf(" (min %s, max %s)", show(v[1]), show(v[2]))
		}
		return r.judged(c, bad > 0, obs, bounds(c.Min, c.Max))
	case KindRowCount:
		failed := (c.Min != nil && float64(total) < *c.Min) || (c.Max != nil && float64(total) > *c.Max)
		return r.judged(c, failed, fmt.Sprintf("%d rows", total), bounds(c.Min, c.Max)+" rows")
	case KindFreshness:
		maxAge, _ := parseAge(c.MaxAge) // validated
		threshold := "newest " + c.Column + " at most " + maxAge.String() + " before batch time"
		if v[0] == nil {
			return r.judged(c, true, fmt.Sprintf("no %s values in %d rows", c.Column, total), threshold)
		}
		latest, ok := v[0].(time.Time)
		if !ok {
			return r.errored(c, fmt.Errorf("column %q is not a timestamp or date (got %T)", c.Column, v[0]), 0)
		}
		age := r.req.BatchTime.Sub(latest).Round(time.Second)
		return r.judged(c, age > maxAge, fmt.Sprintf("newest %s, %s before batch time",
			latest.UTC().Format(time.RFC3339), age), threshold)
	case KindVolumeChange:
		return r.volume(ctx, c, total)
	case KindRegex:
		bad := asInt(v[0])
		return r.judged(c, bad > 0, fmt.Sprintf("%d rows not matching of %d", bad, total), "matches "+c.Pattern)
	case KindStat:
		threshold := c.Stat + " " + strictBounds(c)
		if v[0] == nil {
			return r.judged(c, true, fmt.Sprintf("no %s values in %d rows", c.Column, total), threshold)
		}
		x, ok := asFloat(v[0])
		if !ok {
			return r.errored(c, fmt.Errorf("%s of column %q is not a number (got %T)", c.Stat, c.Column, v[0]), 0)
		}
		failed := (c.Min != nil && (x < *c.Min || c.StrictMin && x == *c.Min)) ||
			(c.Max != nil && (x > *c.Max || c.StrictMax && x == *c.Max))
		return r.judged(c, failed, fmt.Sprintf("%s %s of %d rows", c.Stat, show(v[0]), total), threshold)
	}
	return r.errored(c, fmt.Errorf("kind %q is not aggregated", c.Kind), 0)
}

// mostly re-judges a row-level check that may fail for some rows: it
// passes while the passing fraction of the counted rows is at least Mostly.
func (r *run) mostly(c Check, res schemas.CheckResult, bad, counted int64) schemas.CheckResult {
	frac := 1.0
	if counted > 0 {
		frac = float64(counted-bad) / float64(counted)
	}
	out := r.judged(c, frac < *c.Mostly, fmt.Sprintf("%s (%.4g%% pass)", res.Observed, frac*100), "")
	out.Threshold = fmt.Sprintf("%s for at least %s%% of rows", res.Threshold, num(*c.Mostly*100))
	if out.Status == schemas.StatusPass {
		return out
	}
	out.SampleRows, out.Message = res.SampleRows, res.Message
	return out
}

func strictBounds(c Check) string {
	lo, hi := "", ""
	if c.Min != nil {
		lo = map[bool]string{false: ">= ", true: "> "}[c.StrictMin] + num(*c.Min)
	}
	if c.Max != nil {
		hi = map[bool]string{false: "<= ", true: "< "}[c.StrictMax] + num(*c.Max)
	}
	switch {
	case lo != "" && hi != "":
		return lo + " and " + hi
	case lo != "":
		return lo
	}
	return hi
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

func (r *run) volume(ctx context.Context, c Check, total int64) schemas.CheckResult {
	var parts []string
	if c.MaxDropPct != nil {
		parts = append(parts, "drop at most "+num(*c.MaxDropPct)+"%")
	}
	if c.MaxGrowthPct != nil {
		parts = append(parts, "growth at most "+num(*c.MaxGrowthPct)+"%")
	}
	threshold := strings.Join(parts, ", ") + " vs " + r.baseName()
	vals, err := r.queryRow(ctx, aggregateSQL(schemaBase, r.table(c.Table).Name, nil), 1)
	if err != nil {
		return r.errored(c, err, 0)
	}
	base := asInt(vals[0])
	if base == 0 {
		return r.judged(c, false, fmt.Sprintf("%d rows; %s has none to compare with", total, r.baseName()), threshold)
	}
	pct := (float64(total) - float64(base)) / float64(base) * 100
	failed := (c.MaxDropPct != nil && -pct > *c.MaxDropPct) || (c.MaxGrowthPct != nil && pct > *c.MaxGrowthPct)
	return r.judged(c, failed, fmt.Sprintf("%d rows vs %d on %s (%+.1f%%)", total, base, r.baseName(), pct), threshold)
}

// checkOne runs a check that is not part of an aggregate scan.
func (r *run) checkOne(ctx context.Context, c Check) schemas.CheckResult {
	start := time.Now()
	var res schemas.CheckResult
	switch c.Kind {
	case KindSchema:
		res = r.schemaContract(ctx, c)
	case KindSchemaDrift:
		res = r.schemaDrift(ctx, c)
	case KindSQL, KindCrossTable:
		res = r.custom(ctx, c)
	case KindColumns:
		res = r.columnsCheck(ctx, c)
	default:
		res = r.errored(c, fmt.Errorf("kind %q has no runner", c.Kind), 0)
	}
	res.DurationMs = time.Since(start).Milliseconds()
	return res
}

func (r *run) schemaContract(ctx context.Context, c Check) schemas.CheckResult {
	schema := schemaOf(c)
	extra := "no other columns"
	if c.AllowExtra {
		extra = "other columns allowed"
	}
	want := make([]string, len(c.Schema))
	for i, ct := range c.Schema {
		want[i] = ct.Name + " " + strings.ToUpper(strings.TrimSpace(ct.Type))
	}
	threshold := listed(want, 20) + "; " + extra
	if r.views[viewKey{schema, strings.ToLower(c.Table)}].synthetic {
		return r.judged(c, true, "table has no files", threshold)
	}
	cols, _ := r.describe(ctx, schema, c.Table) // preflight read them
	var problems []string
	expected := map[string]bool{}
	for _, ct := range c.Schema {
		expected[strings.ToLower(ct.Name)] = true
		typ, err := r.canonicalType(ctx, ct.Type)
		if err != nil {
			return r.errored(c, fmt.Errorf("schema column %s: %w", ct.Name, err), 0)
		}
		got, ok := findColumn(cols, ct.Name)
		switch {
		case !ok:
			problems = append(problems, "missing "+ct.Name)
		case !strings.EqualFold(got.typ, typ):
			problems = append(problems, fmt.Sprintf("%s is %s, not %s", ct.Name, got.typ, typ))
		}
	}
	if !c.AllowExtra {
		for _, col := range cols {
			if !expected[strings.ToLower(col.name)] {
				problems = append(problems, "unexpected "+col.name+" "+col.typ)
			}
		}
	}
	if len(problems) == 0 {
		return r.judged(c, false, fmt.Sprintf("%d columns as expected (%d in table)", len(c.Schema), len(cols)), threshold)
	}
	return r.judged(c, true, strings.Join(problems, "; "), threshold)
}

func (r *run) schemaDrift(ctx context.Context, c Check) schemas.CheckResult {
	threshold := "same columns and types as " + r.baseName()
	if c.AllowExtra {
		threshold += "; new columns allowed"
	}
	if r.views[viewKey{schemaBase, strings.ToLower(c.Table)}].synthetic {
		return r.judged(c, false, "table not on "+r.baseName(), threshold)
	}
	cur, _ := r.describe(ctx, schemaMain, c.Table)
	base, _ := r.describe(ctx, schemaBase, c.Table)
	var problems []string
	for _, b := range base {
		got, ok := findColumn(cur, b.name)
		switch {
		case !ok:
			problems = append(problems, "removed "+b.name+" "+b.typ)
		case !strings.EqualFold(got.typ, b.typ):
			problems = append(problems, fmt.Sprintf("%s changed from %s to %s", b.name, b.typ, got.typ))
		}
	}
	var added []string
	for _, col := range cur {
		if _, ok := findColumn(base, col.name); !ok {
			added = append(added, "added "+col.name+" "+col.typ)
		}
	}
	failed := len(problems) > 0 || (len(added) > 0 && !c.AllowExtra)
	problems = append(problems, added...)
	if len(problems) == 0 {
		return r.judged(c, false, fmt.Sprintf("%d columns unchanged", len(cur)), threshold)
	}
	return r.judged(c, failed, strings.Join(problems, "; "), threshold)
}

// custom runs a sql or cross_table check: every row the query returns is a
// failure. Plain table names resolve to the check's scope.
func (r *run) custom(ctx context.Context, c Check) schemas.CheckResult {
	if schema := schemaOf(c); schema != schemaMain {
		if _, err := r.conn.ExecContext(ctx, "SET search_path = "+quoteLiteral(r.catalog+"."+schema)); err != nil {
			return r.errored(c, err, 0)
		}
		// USE sets the search path back to the catalog's main schema.
		defer r.conn.ExecContext(context.WithoutCancel(ctx), "USE "+quoteIdent(r.catalog))
	}
	q := customSQL(c.SQL, r.e.opts.SampleRows)
	if err := r.confine(ctx, q); err != nil { // what runs is one query too
		return r.errored(c, err, 0)
	}
	rows, err := r.conn.QueryContext(ctx, q)
	if err != nil {
		return r.errored(c, err, 0)
	}
	defer rows.Close()
	var (
		n       int64
		samples []string
	)
	for rows.Next() {
		var s sql.NullString
		if err := rows.Scan(&s, &n); err != nil {
			return r.errored(c, err, 0)
		}
		samples = append(samples, s.String)
	}
	if err := rows.Err(); err != nil {
		return r.errored(c, err, 0)
	}
	res := r.judged(c, n > 0, fmt.Sprintf("%d rows returned", n), "0 rows")
	res.SampleRows = samples
	return res
}

// columnsCheck: the table has the columns (in order with Ordered), and no
// others unless AllowExtra. Names compare case-insensitively, as DuckDB's do.
func (r *run) columnsCheck(ctx context.Context, c Check) schemas.CheckResult {
	want := c.columns()
	threshold := "columns " + listed(want, 20)
	switch {
	case c.Ordered:
		threshold = "exactly the columns, in order: " + listed(want, 20)
	case !c.AllowExtra:
		threshold = "exactly the columns " + listed(want, 20)
	default:
		threshold += "; other columns allowed"
	}
	cols, _ := r.describe(ctx, schemaOf(c), c.Table) // preflight read them
	names := make([]string, len(cols))
	for i, col := range cols {
		names[i] = col.name
	}
	var problems []string
	for _, w := range want {
		if _, ok := findColumn(cols, w); !ok {
			problems = append(problems, "missing "+w)
		}
	}
	if !c.AllowExtra || c.Ordered {
		for _, col := range cols {
			if !slices.ContainsFunc(want, func(w string) bool { return strings.EqualFold(w, col.name) }) {
				problems = append(problems, "unexpected "+col.name)
			}
		}
	}
	if c.Ordered && len(problems) == 0 {
		for i := range want {
			if !strings.EqualFold(want[i], names[i]) {
				problems = append(problems, "order is "+strings.Join(names, ", "))
				break
			}
		}
	}
	if len(problems) == 0 {
		return r.judged(c, false, fmt.Sprintf("%d columns as expected (%d in table)", len(want), len(cols)), threshold)
	}
	return r.judged(c, true, strings.Join(problems, "; "), threshold)
}

func findColumn(cols []column, name string) (column, bool) {
	for _, c := range cols {
		if strings.EqualFold(c.name, name) {
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
	vals := make([]any, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := r.conn.QueryRowContext(ctx, q).Scan(ptrs...); err != nil {
		return nil, err
	}
	return vals, nil
}

func (r *run) samples(ctx context.Context, q string) ([]string, error) {
	rows, err := r.conn.QueryContext(ctx, q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
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
func (r *run) baseName() string {
	if r.req.BaseName != "" {
		return r.req.BaseName
	}
	return r.req.BaseRef
}
