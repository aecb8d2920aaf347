package audit

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// KindUnique: the columns' combination is unique. A single column ignores
// NULLs (they are not_null's business); a combination counts every row,
// NULLs comparing equal. A key with a 64-bit integer column that holds a
// NULL and a value beyond ±2^53 is refused: pandas reads it as float64,
// where ids 1 apart can read as one (readers disagree); so is a JSON lines
// column of strings that are all numbers' text, two of which
// pandas.read_json reads as one number ("01" and "1" as 1), and a JSON
// lines text column named like a date (created_at) whose texts it may
// read as one time ("2024-01-02" and "2024-01-02 00:00:00").
const KindUnique = "unique"

func init() {
	registerKind(&checkKind{
		name:     KindUnique,
		fields:   []string{"column", "mostly", "where"},
		validate: func(c Check, add addFunc) { needColumns(c, add, false) },
		agg: func(c Check) []string {
			// The extra occurrences of a key.
			cols := c.columns()
			if len(cols) == 1 {
				col := quoteIdent(cols[0])
				return append([]string{fmt.Sprintf("count(%s) - count(DISTINCT %s)", col, col)}, uniqueFigures(cols[0])...)
			}
			return []string{fmt.Sprintf("count(*) - count(DISTINCT (%s))", strings.Join(each(cols, quoteIdent), ", "))}
		},
		judge: func(r *run, _ context.Context, c Check, total int64, v []any) schemas.CheckResult {
			dup := asInt(v[0])
			if cols := c.columns(); len(cols) == 1 && (dup == 0 || c.Mostly != nil) && len(v) >= 5 {
				// The figures of uniqueFigures: pandas' reading (pandasfloat.go).
				// With mostly a check with duplicates can pass, so pandas'
				// reading matters then too (TestReview12MostlyUniqueOverPandasFloatIsRefused).
				var in intRange
				in.add(fmt.Sprint(v[2]), fmt.Sprint(v[3]))
				if err := pandasFloat(c.Table, cols[0], fmt.Sprint(v[4]), total-asInt(v[1]), total, in); err != nil {
					return r.errored(c, err, 0)
				}
				if r.table(c.Table).format() == FormatJSONL {
					if err := pyarrowJSONDouble(c.Table, cols[0], fmt.Sprint(v[4]), in); err != nil {
						return r.errored(c, err, 0)
					}
				}
			}
			res := r.judged(c, dup > 0, fmt.Sprintf("%d duplicate rows of %d", dup, total),
				"no duplicates of ("+strings.Join(c.columns(), ", ")+")")
			res.RowsChecked, res.Failures = &total, &dup
			return res
		},
		plan:        (*run).planUnique,
		resample:    (*run).sampleUnique,
		failingRows: uniqueFailingRows,
	})
}

// uniqueFailingRows is the key of each row whose key another row holds too
// (NULLs as KindUnique says): a key held twice fails twice, and a third
// row holding it fails once more.
func uniqueFailingRows(c Check, from string) string {
	cols := c.columns()
	keys := strings.Join(each(cols, quoteIdent), ", ")
	counted := ""
	if len(cols) == 1 {
		counted = " WHERE " + quoteIdent(cols[0]) + " IS NOT NULL"
	}
	return fmt.Sprintf("SELECT %s FROM %s%s QUALIFY count(*) OVER (PARTITION BY %s) > 1", keys, from, counted, keys)
}

// planUnique decides how a unique check is counted. An integer key in a
// small range, of a view of at least bitmapUniqueBytes, is counted with a
// bitmap in the table's one scan; the grouped scan of checkUnique runs only
// when that finds duplicates (for their sample rows). Other keys of a large
// view are counted and sampled by that grouped scan alone; of a small view,
// in the aggregate scan (cheaper to plan), sampled again only when they fail.
func (r *run) planUnique(ctx context.Context, k scanKey, i int, c Check) (schemas.CheckResult, bool) {
	var lo, hi int64
	size := r.viewBytes(k.viewKey)
	ok := size >= r.e.bitmapUniqueBytes
	if ok {
		lo, hi, ok = r.integerBounds(ctx, k, c)
	}
	if !ok && size >= r.e.groupedUniqueBytes {
		return r.checkUnique(ctx, k, c), true
	}
	if ok {
		r.planned[i] = uniqueBitmapExpr(c.columns()[0], lo, hi)
	}
	return schemas.CheckResult{}, false
}

// checkUnique answers a unique check with one grouped scan that gives the
// duplicate count and the most duplicated keys at once: counting distinct
// keys needs the same grouping, so a failing check costs no second scan
// for its sample rows.
func (r *run) checkUnique(ctx context.Context, k scanKey, c Check) schemas.CheckResult {
	start := time.Now()
	vals, err := r.queryRow(ctx, uniqueSQL(k.schema, r.views[k.viewKey].table.Name, c, r.e.opts.SampleRows), 7)
	if err != nil {
		if missing := r.missingColumn(ctx, c); missing != nil {
			err = missing
		}
		return r.errored(c, err, time.Since(start))
	}
	v := []any{vals[1]} // as aggExprs(c) would give it
	if len(c.columns()) == 1 {
		v = append(v, vals[2], vals[4], vals[5], vals[6])
	}
	if c.Mostly != nil {
		v = append(v, vals[2])
	}
	res := checkKinds[KindUnique].judge(r, ctx, c, asInt(vals[0]), v)
	if c.Mostly != nil && res.Status != schemas.StatusError {
		res = r.mostly(c, res, asInt(v[0]), asInt(v[len(v)-1]))
	}
	if res.Status != schemas.StatusPass && res.Status != schemas.StatusError {
		var err error
		if res.SampleRows, err = jsonRows(vals[3]); err != nil {
			res.Message = "sample rows unavailable: " + err.Error()
		}
	}
	res.DurationMs = time.Since(start).Milliseconds()
	return res
}

// sampleUnique gives a unique check that failed in the aggregate scan its
// sample rows. An integer key with bounds (the bitmap's) is sampled from
// the key ranges that hold duplicates (uniqueBucketsSQL, then
// uniqueSampleSQL), without grouping the whole table; otherwise the
// grouped scan of checkUnique answers the check again.
func (r *run) sampleUnique(ctx context.Context, k scanKey, c Check, res schemas.CheckResult) schemas.CheckResult {
	if lo, hi, ok := r.integerBounds(ctx, k, c); ok && res.Status != schemas.StatusError && hi < math.MaxInt64-sampleBucket(lo, hi) {
		table, col, n := r.views[k.viewKey].table.Name, c.columns()[0], r.e.opts.SampleRows
		w := sampleBucket(lo, hi)
		buckets, err := firstColumn[int64](ctx, r.conn, uniqueBucketsSQL(k.schema, table, col, lo, w, n))
		var s any
		if err == nil && len(buckets) > 0 && r.conn.QueryRowContext(ctx, uniqueSampleSQL(k.schema, table, col, lo, w, buckets, n)).Scan(&s) == nil {
			if rows, err := jsonRows(s); err == nil {
				res.SampleRows = rows
				return res
			}
		}
		if ctx.Err() != nil {
			return res
		}
		// Keys outside the bounds the footer claimed: group them all.
	}
	return r.checkUnique(ctx, k, c)
}

// jsonRows are the objects of a JSON array (text) as sample rows.
func jsonRows(v any) ([]string, error) {
	var rows []json.RawMessage
	if s, ok := v.(string); ok {
		if err := json.Unmarshal([]byte(s), &rows); err != nil {
			// DuckDB's to_json writes NaN and the infinities bare, which
			// JSON has no word for: they are given as strings.
			q, changed := quoteNonFinite(s)
			if !changed || json.Unmarshal([]byte(q), &rows) != nil {
				return nil, err
			}
		}
	}
	var out []string
	for _, row := range rows {
		out = append(out, string(row))
	}
	return out, nil
}

// finiteSamples rewrites each sample row that is not JSON because DuckDB's
// to_json wrote a NaN or an infinity bare (quoteNonFinite).
func finiteSamples(checks []schemas.CheckResult) {
	for i := range checks {
		for j, row := range checks[i].SampleRows {
			if json.Valid([]byte(row)) {
				continue
			}
			if q, changed := quoteNonFinite(row); changed && json.Valid([]byte(q)) {
				checks[i].SampleRows[j] = q
			}
		}
	}
}

// quoteNonFinite is s (DuckDB's to_json text) with each bare NaN,
// Infinity and -Infinity outside strings written as a JSON string, and
// whether there was one.
func quoteNonFinite(s string) (string, bool) {
	var b strings.Builder
	changed, inString := false, false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if inString {
			b.WriteByte(c)
			switch c {
			case '\\':
				if i+1 < len(s) {
					i++
					b.WriteByte(s[i])
				}
			case '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
		}
		matched := false
		for _, w := range []string{"NaN", "Infinity", "-Infinity"} {
			if strings.HasPrefix(s[i:], w) {
				b.WriteString(`"` + w + `"`)
				i += len(w) - 1
				changed, matched = true, true
				break
			}
		}
		if !matched {
			b.WriteByte(c)
		}
	}
	return b.String(), changed
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
		!min.Valid || !max.Valid || missing > 0 || files != int64(len(slices.Compact(slices.Sorted(slices.Values(v.files))))) {
		return 0, 0, false
	}
	if max.Int64 < min.Int64 || uint64(max.Int64-min.Int64) >= maxBitmapBits || max.Int64-min.Int64 < 0 {
		return 0, 0, false
	}
	return min.Int64, max.Int64, true
}

// uniqueBitmapExpr counts the extra occurrences of an integer column's
// values, all within [lo, hi], with a bitmap of that range instead of a hash
// table: the same figure as count(col) - count(DISTINCT col).
func uniqueBitmapExpr(col string, lo, hi int64) string {
	c := quoteIdent(col)
	return fmt.Sprintf("count(%s) - coalesce(bit_count(bitstring_agg(%s::BIGINT, %d, %d)), 0)", c, c, lo, hi)
}

// uniqueSQL is a unique check's one grouped scan. Its row: all rows, the
// extra occurrences of keys (NULLs as KindUnique says), the rows counted for
// mostly, and up to limit duplicated keys with their duplicate_count as a
// JSON array, most duplicated first, then by key; then the first column's
// min and max as text, and its type (uniqueFigures).
func uniqueSQL(schema, table string, c Check, limit int) string {
	cols := c.columns()
	q := each(cols, quoteIdent)
	fields := each(cols, func(col string) string { return quoteLiteral(col) + ": " + quoteIdent(col) })
	keys := strings.Join(q, ", ")
	counted, order := "true", "row("+keys+")"
	if len(cols) == 1 {
		counted, order = q[0]+" IS NOT NULL", q[0]
	}
	sample := fmt.Sprintf("{%s, 'duplicate_count': n}", strings.Join(fields, ", "))
	return fmt.Sprintf("SELECT CAST(coalesce(sum(n), 0) AS BIGINT), CAST(coalesce(sum(n - 1) FILTER (WHERE %s), 0) AS BIGINT), "+
		"CAST(coalesce(sum(n) FILTER (WHERE %s), 0) AS BIGINT), "+
		"coalesce(CAST(to_json(min_by(%s, {'o': -n, 'k': %s}, %d) FILTER (WHERE n > 1 AND %s)) AS VARCHAR), '[]'), "+
		"CAST(min(%s) AS VARCHAR), CAST(max(%s) AS VARCHAR), typeof(min(%s)) "+
		"FROM (SELECT %s, count(*) AS n FROM %s GROUP BY %s) g",
		counted, counted, sample, order, limit, counted, q[0], q[0], q[0], keys, filtered(schema, table, c.Where), keys)
}

// minSampleBucket is the narrowest key range the sample of a unique check
// groups at a time: a table whose keys span no more is grouped whole, and
// its sample is exactly uniqueSQL's.
const minSampleBucket = 1 << 16

// sampleBucket is the width of the key ranges (buckets) a unique check
// over keys in [lo, hi] is sampled by: at most 256 of them, each of at
// least minSampleBucket keys.
func sampleBucket(lo, hi int64) int64 { return max((hi-lo)/256+1, minSampleBucket) }

// uniqueBucketsSQL lists the first limit buckets (of w keys from lo) that
// hold a duplicated value of an integer column, in one scan of the column
// that counts distinct values per bucket with a bitmap (the memory of the
// bitmap count over [lo, hi]). Each holds a duplicated key, so the first
// limit of them hold limit keys to show when the table has that many. A
// value below lo fails the bitmap (Out of Range).
func uniqueBucketsSQL(schema, table, col string, lo, w int64, limit int) string {
	q := quoteIdent(col)
	return fmt.Sprintf(`SELECT (%s - %d) // %d AS b FROM %s WHERE %s IS NOT NULL GROUP BY b
		HAVING count(*) > bit_count(bitstring_agg((%s - %d) %% %d, 0, %d)) ORDER BY b LIMIT %d`,
		q, lo, w, qualified(schema, table), q, q, lo, w, w-1, limit)
}

// uniqueSampleSQL is uniqueSQL's sample (the most duplicated keys first,
// then by key, with their duplicate_count) drawn from the keys of the
// given buckets only: a scan of the column that groups a few hundred
// thousand rows of a 5M-row table instead of all of them
// (docs/benchmarks.md, issue 13). The sample comes from the lowest keys
// that are duplicated, not from the most duplicated of the whole table.
func uniqueSampleSQL(schema, table, col string, lo, w int64, buckets []int64, limit int) string {
	q := quoteIdent(col)
	ranges := each(buckets, func(b int64) string { return fmt.Sprintf("%s BETWEEN %d AND %d", q, lo+b*w, lo+(b+1)*w-1) })
	return fmt.Sprintf(`SELECT coalesce(CAST(to_json(min_by({%s: k, 'duplicate_count': n}, {'o': -n, 'k': k}, %d)) AS VARCHAR), '[]')
		FROM (SELECT %s AS k, count(*) AS n FROM %s WHERE %s GROUP BY k HAVING count(*) > 1) g`,
		quoteLiteral(col), limit, q, qualified(schema, table), strings.Join(ranges, " OR "))
}
