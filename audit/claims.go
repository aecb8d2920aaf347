package audit

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lakewap/lakewap/schemas"
)

// Row-group statistics are the writer's claim, and the readers of main
// believe it: DuckDB with its default settings, Spark, pyarrow.dataset and
// delta-rs skip a row group whose claimed min, max or null count excludes
// a predicate. The audit reads the data (distrustedOptimizers), so a footer
// claiming max 50 over a row holding 1000, or no nulls over a NULL, made a
// reader's WHERE x = 1000 or WHERE y IS NULL on main read other rows than
// the audit did (TestRowGroupStatisticsThatLieAreRefused). So every
// Parquet file a run reads (as int96Range: the batch's and those the memo
// has not seen) is refused when one of its row groups' claims does not hold
// for that row group's data:
//   - the claimed min and max (min_value/max_value and the deprecated
//     min/max, each read in the column's order) must hold every non-null
//     value (a wider claim skips nothing a reader needs);
//   - the claimed null_count must be the data's;
//   - a float row group holding NaN must claim no min or max (DuckDB and
//     Spark order NaN above every number, so WHERE x > 5 skips a row group
//     whose max leaves the NaN out, as pyarrow writes it; DuckDB writes no
//     min or max there);
//   - a min or max claimed for a leaf lakewap does not order (INTERVAL,
//     FLOAT16, ...) is refused: readers that know the type may skip by it.
//
// An INT96 leaf's claims are read as DuckDB 1.5.6 reads them, the only
// reader of main that skips row groups by them: its Julian day and its
// nanoseconds divided toward zero, in microseconds, as it reads the
// values. parquet-mr, which Spark writes with, claims an INT96 min and
// max where they are equal (the type's order is undefined), so a Spark
// row group of one time claimed it, and refusing every INT96 claim
// refused honest Spark tables (TestSparkNestedInt96TimesPass). pyarrow
// 26.0.1 (datasets, filters, pandas), PySpark 4.3.0 (both readers),
// deltalake 1.6.6 and DuckDB 2.0.1 skip by none: a claim of 2030 over a
// row group of 2024 read every row to them, none to DuckDB 1.5.6
// (TestForgedInt96ClaimsAreRefused). A claim outside pandas' nanosecond
// range (int96Within), which DuckDB would compute wrapped, is refused.
//
// Leaves under a list or a map are not compared (their counts are per
// element, and no reader of main skips row groups by them). A leaf whose
// pages the Go reader reads is compared from them first (claimsgo.go);
// the others, and every leaf whose claims do not hold so, in one DuckDB
// scan per file, grouped by row group (file_row_number against the
// footer's row counts); a file that passed is kept in the memo by its
// identity.

// claimsHold checks the row-group claims of each Parquet file of files,
// the files of table. The claims of the batch's one file, when it has one
// row group, are compared after the fused statement fetched its figures
// (laterClaims): the batch's first audit reads its rows once.
func (r *run) claimsHold(ctx context.Context, table string, files []string, objPath, ids map[string]string) error {
	for _, f := range files {
		var key [32]byte
		keyed := false
		if id := ids[f]; id != "" && r.e.memo != nil {
			key, keyed = memoKey("claims", id), true
			if _, ok := r.e.memo.get(key); ok {
				continue
			}
		}
		if err := r.ready(ctx); err != nil {
			return err
		}
		p, err := r.footerClaims(ctx, f, objPath[f])
		if err != nil {
			return err
		}
		if err := p.nanosecondsHold(ctx); err != nil {
			return err
		}
		if p != nil && len(p.groups) == 1 && !r.e.unfused {
			if v := r.views[viewKey{schemaBatch, table}]; v != nil && len(v.files) == 1 && v.files[0] == f && r.batchOfOne(v) {
				p.key, p.keyed = key, keyed
				if r.laterClaims == nil {
					r.laterClaims = map[string]*claimsPlan{}
				}
				r.laterClaims[table] = p
				continue
			}
		}
		if p != nil && !r.e.claimsNotInGo {
			p.settleInGo(ctx, nil, math.MaxInt64) // a statement of its own spared where all settle
		}
		if p != nil && len(p.checked) > 0 {
			if err := r.fileClaimsHold(ctx, f, p); err != nil {
				return err
			}
		}
		if keyed {
			r.e.memo.put(key, true, 48)
		}
	}
	return nil
}

// nanosecondsHold refuses the file of p when a row group's claims of a
// timestamp in nanoseconds adjusted to UTC do not hold to the nanosecond,
// as its pages read in Go show. DuckDB reads such a timestamp cut to
// microseconds, so the comparison of its aggregates (dataExprs) does not
// see a claim off by less, which pyarrow and pandas, reading
// nanoseconds, skip row groups by
// (TestReview46TimestampsInNanosecondsWithAZonePass). A chunk the Go
// reading does not take (an encoding, a codec, past its budget) is left
// to that comparison. p nil: nothing claimed.
func (p *claimsPlan) nanosecondsHold(ctx context.Context) error {
	if p == nil {
		return nil
	}
	var g *goClaims
	defer func() {
		if g != nil {
			g.close()
		}
	}()
	gl := goLeaf{kind: claimInt, width: 8}
	for _, k := range p.checked {
		l := p.leaves[k]
		if l.kind != claimTimestamp || l.readUnit() == l.unit || l.repeated || l.physical != ptInt64 {
			continue
		}
		if g == nil {
			g = newGoClaims(ctx, p.file, p.chunks)
		}
		exact := l // its claims and values as the integers they are
		exact.kind, exact.utc, exact.fullWidth = claimInt, false, true
		for gi, grp := range p.groups {
			i := gi*len(p.leaves) + k
			if i >= len(p.chunks) {
				break
			}
			c := p.chunks[i]
			if c.rowGroup != gi || c.column != k || !slices.Equal(c.parts, l.path) || c.maxRep != 0 || c.physical != ptInt64 {
				break
			}
			pages, ok := g.pageFigures(gl, c)
			if !ok {
				break
			}
			if err := chunkHolds(exact, grp.chunks[k], grp.rows, chunkFigures(gl, pages)); err != nil {
				return fmt.Errorf("file %s, row group %d, column %q: %w, to the nanosecond: pyarrow and pandas, which read its nanoseconds, skip row groups by it, where DuckDB reads them cut to microseconds (readers disagree)",
					p.name, gi, l.name(), err)
			}
		}
	}
	return ctx.Err()
}

// claimsPlan is what a file's footer claims and the aggregates of its data
// they are compared with.
type claimsPlan struct {
	name    string // the file's path in the repository
	leaves  []leafColumn
	groups  []rowGroupClaims
	checked []int    // the leaves with a claim to compare
	exprs   []string // their dataExprs, in order
	key     [32]byte // the memo's, when keyed
	keyed   bool
	file    string      // the local file
	chunks  []chunkMeta // its column chunks (the Go reading's)
}

// settleInGo takes out of p the leaves whose claims its pages, read in
// Go, show to hold (claimsgo.go), but those whose aggregates are all in
// free (another query of the statement asks them) and, when maxRows is
// below the file's rows, every leaf: over a large file DuckDB's
// aggregates in a statement that scans it anyway cost less.
func (p *claimsPlan) settleInGo(ctx context.Context, free map[string]bool, maxRows int64) {
	var rows int64
	for _, g := range p.groups {
		rows += g.rows
	}
	if rows > maxRows {
		return
	}
	inGo := newGoClaims(ctx, p.file, p.chunks)
	defer inGo.close()
	var checked []int
	exprs := []string{"count(*)"}
	for _, k := range p.checked {
		l := p.leaves[k]
		shared := free != nil
		for _, e := range dataExprs(l) {
			shared = shared && free[e]
		}
		if shared || !inGo.settled(p.leaves, k, p.groups) {
			checked = append(checked, k)
			exprs = append(exprs, dataExprs(l)...)
		}
	}
	p.checked, p.exprs = checked, exprs
}

// footerClaims reads the claims of the local Parquet file f (name is its
// path in the repository), refusing the ones no data can settle; nil when
// it claims nothing to compare.
func (r *run) footerClaims(ctx context.Context, f, name string) (*claimsPlan, error) {
	buf, err := footerBytes(f)
	p := &claimsPlan{name: name}
	var ft parquetFooter
	if err == nil {
		ft, err = decodeFooter(buf)
	}
	if err == nil {
		p.leaves, p.groups, err = decodeFooterClaims(buf)
	}
	if err != nil {
		return nil, r.unreadClaims(ctx, f, name, err)
	}
	p.file, p.chunks = f, ft.chunks
	for k, l := range p.leaves {
		if l.repeated {
			continue
		}
		claims, minMax := false, false
		for _, g := range p.groups {
			c := g.chunks[k]
			claims = claims || c.hasNullCount || c.min != nil || c.max != nil || c.minValue != nil || c.maxValue != nil
			minMax = minMax || c.min != nil || c.max != nil || c.minValue != nil || c.maxValue != nil
		}
		if minMax && l.kind == claimUnchecked {
			return nil, fmt.Errorf("file %s, column %q: its footer claims a min or max for a type lakewap does not order (physical type %d): readers that skip row groups by it may read other rows than a full scan (write it without statistics)",
				name, l.name(), l.physical)
		}
		if claims {
			p.checked = append(p.checked, k)
			p.exprs = append(p.exprs, dataExprs(l)...)
		}
	}
	if len(p.checked) == 0 {
		return nil, nil
	}
	p.exprs = append([]string{"count(*)"}, p.exprs...)
	return p, nil
}

// fileClaimsHold compares p's claims with the data of the local file f:
// one scan, grouped by row group.
func (r *run) fileClaimsHold(ctx context.Context, f string, p *claimsPlan) error {
	from, row := "read_parquet("+quoteLiteral(f)+noHive+")", ""
	if len(p.groups) > 1 {
		from, row = rowNumbered(f, p.chunks)
	}
	q := "SELECT " + rowGroupExpr(p.groups, row) + " AS g, " + strings.Join(p.exprs, ", ") + " FROM " + from
	if len(p.groups) > 1 {
		q += " GROUP BY g"
	}
	uncompared := func(err error) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return p.uncompared(err)
	}
	rows, err := r.pool().QueryContext(ctx, q)
	if err != nil {
		return uncompared(err)
	}
	defer rows.Close()
	data := make([][]any, len(p.groups))
	for rows.Next() {
		vals, err := scanValues(rows.Scan, 1+len(p.exprs))
		if err != nil {
			return uncompared(err)
		}
		g, ok := vals[0].(int64)
		if !ok || g < 0 || g >= int64(len(p.groups)) {
			return fmt.Errorf("file %s: rows outside its row groups (%v)", p.name, vals[0])
		}
		data[g] = vals[1:]
	}
	if err := rows.Err(); err != nil {
		return uncompared(err)
	}
	return p.compare(data)
}

// uncompared is the error of a file whose claims could not be compared
// with its data (err, DuckDB's): the machine's as it is (out of memory:
// infrastructure, by its type), else the file's refusal quoting it, which
// err's text (it may quote the data) does not make the machine's
// (TestReview46DataSpellingOutOfMemoryIsRefused).
func (p *claimsPlan) uncompared(err error) error {
	if infrastructure(err) {
		return err
	}
	return quote(fmt.Errorf("file %s: its row groups' statistics cannot be compared with its data (%v): readers that skip row groups by them may read other rows than a full scan", p.name, err), err)
}

// compare compares the claims with data, each row group's aggregates (nil
// for a row group without rows).
func (p *claimsPlan) compare(data [][]any) error {
	for g, grp := range p.groups {
		at := 1 // after count(*)
		var rows int64
		if data[g] != nil {
			n, ok := data[g][0].(int64)
			if !ok {
				return fmt.Errorf("file %s: its row count reads as %T", p.name, data[g][0])
			}
			rows = n
		}
		for _, k := range p.checked {
			l := p.leaves[k]
			n := len(dataExprs(l))
			var vals []any
			if data[g] != nil {
				vals = data[g][at : at+n]
			}
			at += n
			if err := chunkHolds(l, grp.chunks[k], rows, vals); err != nil {
				readers := "DuckDB, Spark, pyarrow, delta-rs"
				if l.kind == claimInt96 {
					readers = "DuckDB 1.5; pyarrow, Spark and delta-rs skip by no INT96 claim"
				}
				return fmt.Errorf("file %s, row group %d, column %q: %w: readers that skip row groups by it (%s) read other rows than a full scan (readers disagree)",
					p.name, g, l.name(), err, readers)
			}
		}
	}
	return nil
}

// laterClaimsSQL is the query of the aggregates of p, the claims of the
// one file of table's batch view, over that view.
func laterClaimsSQL(table string, p *claimsPlan) string {
	return "SELECT " + strings.Join(p.exprs, ", ") + " FROM " + qualified(schemaBatch, table)
}

// compareLaterClaims compares the claims claimsHold left for the fused
// statement (planFusion asks their aggregates with the others; without a
// fusion they are asked alone, over the batch view). A table whose claims
// do not hold is refused as columnCollision refuses one.
func (r *run) compareLaterClaims(ctx context.Context) {
	for table, p := range r.laterClaims {
		v := r.views[viewKey{schemaBatch, table}]
		if v == nil || v.colsErr != nil {
			continue
		}
		if len(p.checked) == 0 { // all settled in Go (planFusion)
			if p.keyed {
				r.e.memo.put(p.key, true, 48)
			}
			continue
		}
		vals, err := r.queryRow(ctx, laterClaimsSQL(v.table.Name, p), len(p.exprs))
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			err = p.uncompared(err)
		} else {
			err = p.compare([][]any{vals})
		}
		if err != nil {
			r.collisions[table] = err
			for _, s := range []string{schemaMain, schemaBase, schemaBatch} {
				if w := r.views[viewKey{s, table}]; w != nil && w.colsErr == nil {
					w.colsErr = fmt.Errorf("cannot read table %s (%s): %w", w.table.Name, w.ref, err)
				}
			}
			continue
		}
		if p.keyed {
			r.e.memo.put(p.key, true, 48)
		}
	}
	r.laterClaims = nil
}

// unreadClaims: the Go reader could not read f's footer (why). When
// DuckDB finds no statistics in it, there is nothing to check; when it
// finds some, they cannot be checked and the file is refused; when it
// cannot read the footer either, the file is refused too, unless DuckDB
// cannot read it at all: then the view reports the file (footerCount).
func (r *run) unreadClaims(ctx context.Context, f, name string, why error) error {
	n, found, err := r.footerCount(ctx, f, "stats_min IS NOT NULL OR stats_max IS NOT NULL OR stats_min_value IS NOT NULL OR stats_max_value IS NOT NULL OR stats_null_count IS NOT NULL",
		func(merr error) error {
			return fmt.Errorf("file %s: its footer, which lakewap cannot read (%v), DuckDB's parquet_metadata cannot read either (%s): readers that skip row groups by its statistics may read other rows than a full scan",
				name, why, schemas.Clip(merr.Error(), 256))
		})
	switch {
	case err != nil:
		return err
	case !found || n == 0:
		return nil
	}
	return fmt.Errorf("file %s: its footer holds statistics lakewap cannot read (%v): readers that skip row groups by them may read other rows than a full scan", name, why)
}

// leafExpr is the leaf l as a DuckDB expression over the file's columns.
func leafExpr(l leafColumn) string {
	e := quoteIdent(l.path[0])
	for _, p := range l.path[1:] {
		e = "struct_extract(" + e + ", " + quoteLiteral(p) + ")"
	}
	return e
}

// dataExprs are the aggregates of l compared with its claims: its count
// of values (the row count, asked once per file, less it is its null
// count), and its min and max in the claims' terms (and, for a float, its
// NaN count, the min and max leaving NaN out). Where text serves, they are
// the texts the statistics and the checks select (CAST(min(c) AS
// VARCHAR)), which the fused statement then selects once.
func dataExprs(l leafColumn) []string {
	e := leafExpr(l)
	values := "count(" + e + ")"
	agg := func(f string) string { return f + "(" + e + ")" }
	text := func(f string) string { return "CAST(" + agg(f) + " AS VARCHAR)" }
	switch l.kind {
	case claimBool, claimInt, claimUint, claimUUID, claimDecimal:
		return []string{values, text("min"), text("max")}
	case claimBytes:
		if l.text {
			return []string{values, text("min"), text("max")}
		}
		return []string{values, agg("min"), agg("max")}
	case claimFloat, claimDouble:
		num := " FILTER (WHERE NOT isnan(" + e + "))"
		return []string{values, "CAST(" + agg("min") + num + " AS DOUBLE)", "CAST(" + agg("max") + num + " AS DOUBLE)",
			"count(*) FILTER (WHERE isnan(" + e + "))"}
	case claimDate:
		return []string{values, "date_diff('day', DATE '1970-01-01', " + agg("min") + ")", "date_diff('day', DATE '1970-01-01', " + agg("max") + ")"}
	case claimTimestamp:
		f := []string{"", "epoch_ms", "epoch_us", "epoch_ns"}[l.readUnit()]
		return []string{values, f + "(" + agg("min") + ")", f + "(" + agg("max") + ")"}
	case claimInt96: // DuckDB reads INT96 as a TIMESTAMP of microseconds
		return []string{values, "epoch_us(" + agg("min") + ")", "epoch_us(" + agg("max") + ")"}
	case claimTime:
		us := func(a string) string { return "date_diff('microsecond', TIME '00:00:00', CAST(" + a + " AS TIME))" }
		return []string{values, us(agg("min")), us(agg("max"))}
	}
	return []string{values}
}

// rowGroupExpr is each row's row group (from 0) by its number in the file
// (column row: rowNumbered) and the row groups' row counts: a division
// where the groups but the last are of one size, a binary search of the
// groups' first rows otherwise.
func rowGroupExpr(groups []rowGroupClaims, row string) string {
	if len(groups) <= 1 {
		return "0::BIGINT"
	}
	row = quoteIdent(row)
	n := groups[0].rows
	even := n > 0
	for _, g := range groups[1 : len(groups)-1] {
		even = even && g.rows == n
	}
	if even {
		return fmt.Sprintf("least(%s // %d, %d)::BIGINT", row, n, len(groups)-1)
	}
	first := make([]int64, len(groups)) // each group's first row
	for i := 1; i < len(groups); i++ {
		first[i] = first[i-1] + groups[i-1].rows
	}
	var search func(lo, hi int) string // the group among lo..hi
	search = func(lo, hi int) string {
		if lo == hi {
			return strconv.Itoa(lo)
		}
		mid := (lo + hi + 1) / 2
		return fmt.Sprintf("CASE WHEN %s < %d THEN %s ELSE %s END", row, first[mid], search(lo, mid-1), search(mid, hi))
	}
	return "(" + search(0, len(groups)-1) + ")::BIGINT"
}

// rowNumbered is a read of the local Parquet file f, of column chunks
// chunks, whose rows carry their number in the file (from 0) in the
// column named row: read_parquet's file_row_number option, unless the file
// has a top-level column so named (in any case), over which DuckDB refuses
// the option (Binder Error), so an honest table with such a column was
// refused as one whose claims cannot be compared
// (TestReview42TablesWithAFileRowNumberColumnAreAudited). Such a file's
// rows are numbered by row_number() OVER () instead, which DuckDB keeps in
// the file's order while insertion order is preserved (setupSQL sets it,
// and locks the configuration), named by a name no column of the file
// has. Either way the read's other columns are the file's own:
// read_parquet's virtual columns are not read (review 38).
func rowNumbered(f string, chunks []chunkMeta) (from, row string) {
	taken := func(name string) bool {
		return slices.ContainsFunc(chunks, func(c chunkMeta) bool { return len(c.parts) > 0 && strings.EqualFold(c.parts[0], name) })
	}
	if !taken("file_row_number") {
		return "read_parquet(" + literalList([]string{f}) + ", file_row_number = true" + noHive + ")", "file_row_number"
	}
	row = "lakewap_row_number"
	for i := 1; taken(row); i++ {
		row = "lakewap_row_number_" + strconv.Itoa(i)
	}
	return "(SELECT *, row_number() OVER () - 1 AS " + quoteIdent(row) + " FROM read_parquet(" + literalList([]string{f}) + noHive + "))", row
}

// chunkHolds compares one chunk's claims with its data's aggregates: the
// row group's rows and the leaf's dataExprs (vals, nil for a row group
// without rows).
func chunkHolds(l leafColumn, c chunkClaims, rows int64, vals []any) error {
	var nulls int64
	if vals != nil {
		n, ok := vals[0].(int64)
		if !ok {
			return fmt.Errorf("its count of values reads as %T", vals[0])
		}
		nulls = rows - n
	}
	if c.hasNullCount && c.nullCount != nulls {
		return fmt.Errorf("its footer claims a null_count of %d, the data holds %d nulls", c.nullCount, nulls)
	}
	if l.kind == claimUnchecked || len(vals) < 3 {
		return nil
	}
	type claim struct {
		name string
		b    []byte
		max  bool
	}
	var claims []claim
	for _, cl := range []claim{{"min_value", c.minValue, false}, {"max_value", c.maxValue, true}, {"min", c.min, false}, {"max", c.max, true}} {
		if cl.b != nil {
			claims = append(claims, cl)
		}
	}
	if len(claims) == 0 {
		return nil
	}
	if (l.kind == claimFloat || l.kind == claimDouble) && len(vals) == 4 {
		if nan, _ := vals[3].(int64); nan > 0 {
			return fmt.Errorf("its footer claims a %s, the data holds %d NaN: DuckDB and Spark order NaN above every number and skip the row group for x > c or x = 'NaN' (write NaN as NULL, or the column without statistics)", claims[0].name, nan)
		}
	}
	lo, err := dataValue(l, vals[1])
	if err != nil {
		return err
	}
	hi, err := dataValue(l, vals[2])
	if err != nil {
		return err
	}
	if lo == nil || hi == nil {
		return nil // no value but nulls (and NaN): a claimed min or max skips nothing that matches
	}
	for _, cl := range claims {
		v, err := claimValue(l, cl.b, cl.max)
		if err != nil {
			return fmt.Errorf("its footer claims a %s of %d bytes lakewap cannot read: %v", cl.name, len(cl.b), err)
		}
		if cl.max && compareValues(v, hi) < 0 {
			return fmt.Errorf("its footer claims a %s of %s, the data's greatest value is %s", cl.name, showValue(l, v), showValue(l, hi))
		}
		if !cl.max && compareValues(v, lo) > 0 {
			return fmt.Errorf("its footer claims a %s of %s, the data's least value is %s", cl.name, showValue(l, v), showValue(l, lo))
		}
	}
	return nil
}

// A value in a leaf's order: *big.Int (integers, decimals unscaled, dates,
// times, timestamps, booleans), float64 or []byte (unsigned bytewise).

// claimValue reads a claim's bytes (PLAIN encoded, a decimal's big-endian
// for the byte array types) in l's order; max: a max claim, rounded up
// where the data is read rounded.
func claimValue(l leafColumn, b []byte, max bool) (any, error) {
	le := func(n int) (int64, error) {
		if len(b) != n {
			return 0, fmt.Errorf("%d bytes, want %d", len(b), n)
		}
		if n == 4 {
			return int64(int32(binary.LittleEndian.Uint32(b))), nil
		}
		return int64(binary.LittleEndian.Uint64(b)), nil
	}
	width := 8
	if l.physical == ptInt32 {
		width = 4
	}
	switch l.kind {
	case claimBool:
		if len(b) != 1 || b[0] > 1 {
			return nil, errors.New("not a PLAIN boolean")
		}
		return big.NewInt(int64(b[0])), nil
	case claimInt, claimDate:
		v, err := le(width)
		return big.NewInt(v), err
	case claimTimestamp: // in the unit DuckDB reads it in
		v, err := le(width)
		if l.readUnit() != l.unit {
			v /= 1000 // toward zero, as DuckDB truncates nanoseconds
		}
		return big.NewInt(v), err
	case claimInt96: // in microseconds, as DuckDB reads it
		return int96Micros(b)
	case claimUint:
		if len(b) != width {
			return nil, fmt.Errorf("%d bytes, want %d", len(b), width)
		}
		if width == 4 {
			return new(big.Int).SetUint64(uint64(binary.LittleEndian.Uint32(b))), nil
		}
		return new(big.Int).SetUint64(binary.LittleEndian.Uint64(b)), nil
	case claimTime: // in microseconds, as DuckDB reads a time
		v, err := le(width)
		switch l.unit {
		case 1:
			v *= 1000
		case 3: // DuckDB reads nanoseconds rounded to the microsecond
			v /= 1000
			if max {
				v++
			}
		}
		return big.NewInt(v), err
	case claimFloat, claimDouble:
		var f float64
		switch {
		case l.kind == claimFloat && len(b) == 4:
			f = float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		case l.kind == claimDouble && len(b) == 8:
			f = math.Float64frombits(binary.LittleEndian.Uint64(b))
		default:
			return nil, fmt.Errorf("%d bytes for a float", len(b))
		}
		if math.IsNaN(f) {
			return nil, errors.New("NaN")
		}
		return f, nil
	case claimBytes:
		return b, nil
	case claimUUID:
		if len(b) != 16 {
			return nil, errors.New("not 16 bytes")
		}
		return b, nil
	case claimDecimal:
		if l.physical == ptInt32 || l.physical == ptInt64 {
			v, err := le(width)
			return big.NewInt(v), err
		}
		if len(b) == 0 || len(b) > 32 {
			return nil, errors.New("not a decimal's bytes")
		}
		v := new(big.Int).SetBytes(b)
		if b[0]&0x80 != 0 { // two's complement
			v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
		}
		return v, nil
	}
	return nil, errors.New("no order")
}

// dataValue is an aggregate of dataExprs in l's order, nil for NULL.
func dataValue(l leafColumn, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	switch x := v.(type) {
	case bool:
		if x {
			return big.NewInt(1), nil
		}
		return big.NewInt(0), nil
	case int64:
		return big.NewInt(x), nil
	case uint64:
		return new(big.Int).SetUint64(x), nil
	case float64:
		return x, nil
	case []byte:
		return x, nil
	case string:
		switch l.kind {
		case claimBool:
			switch x {
			case "false":
				return big.NewInt(0), nil
			case "true":
				return big.NewInt(1), nil
			}
		case claimInt, claimUint:
			if v, ok := new(big.Int).SetString(x, 10); ok {
				return v, nil
			}
		case claimBytes:
			return []byte(x), nil
		case claimUUID:
			b, err := hex.DecodeString(strings.ReplaceAll(x, "-", ""))
			if err != nil || len(b) != 16 {
				return nil, fmt.Errorf("its data's UUID %q unread", x)
			}
			return b, nil
		case claimDecimal:
			r, ok := new(big.Rat).SetString(x)
			if !ok {
				return nil, fmt.Errorf("its data's decimal %q unread", x)
			}
			r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(l.scale)), nil)))
			if !r.IsInt() {
				return nil, fmt.Errorf("its data's decimal %q has more than %d decimals", x, l.scale)
			}
			return r.Num(), nil
		}
	}
	return nil, fmt.Errorf("its data reads as %T", v)
}

// compareValues orders two values of one leaf (of the same Go type).
func compareValues(a, b any) int {
	switch x := a.(type) {
	case *big.Int:
		y, _ := b.(*big.Int)
		if y == nil {
			return 0
		}
		return x.Cmp(y)
	case float64:
		y, _ := b.(float64)
		switch {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0 // -0 and +0 are one value to every reader
	case []byte:
		y, _ := b.([]byte)
		return bytes.Compare(x, y)
	}
	return 0
}

// showValue is v as a message shows it.
func showValue(l leafColumn, v any) string {
	switch x := v.(type) {
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case []byte:
		if l.kind == claimUUID {
			return hex.EncodeToString(x)
		}
		if len(x) > 64 {
			return strconv.Quote(string(x[:64])) + "..."
		}
		return strconv.Quote(string(x))
	case *big.Int:
		switch l.kind {
		case claimDecimal:
			r := new(big.Rat).SetFrac(x, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(l.scale)), nil))
			return r.FloatString(int(l.scale))
		case claimDate:
			if x.IsInt64() && x.Int64() > -1e8 && x.Int64() < 1e8 {
				return time.Unix(x.Int64()*86400, 0).UTC().Format(time.DateOnly)
			}
		case claimTimestamp:
			if x.IsInt64() {
				n := x.Int64()
				var t time.Time
				switch l.readUnit() {
				case 1:
					t = time.UnixMilli(n)
				case 2:
					t = time.UnixMicro(n)
				default:
					t = time.Unix(0, n)
				}
				return t.UTC().Format(time.RFC3339Nano)
			}
		case claimInt96:
			if x.IsInt64() {
				return time.UnixMicro(x.Int64()).UTC().Format(time.RFC3339Nano)
			}
		case claimTime:
			return x.String() + " µs after midnight"
		case claimBool:
			return strconv.FormatBool(x.Sign() != 0)
		}
		return x.String()
	}
	return fmt.Sprint(v)
}
