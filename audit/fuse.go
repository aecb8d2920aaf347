package audit

import (
	"context"
	"database/sql"
	"slices"
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
// (run over the view's own read of Parquet files, SELECT * FROM
// read_parquet(?, ...) with the files as the parameter, which DuckDB binds
// once where it binds a statement over the view twice, and which has the
// view's columns, not read_parquet's virtual ones: readParquetParamSQL)
// and its row is split into each query's answer, by its columns. An
// aggregate without GROUP BY or where over the same rows is the same value
// of the same type in any select list, so each answer is what its own
// query gives. The lists repeat expressions (count(*) in each, the
// statistics' min and max of a column in unique's and range's), and
// DuckDB's cost over a small batch grows with the select list, so the
// statement selects each distinct expression once and every query's
// column maps to it (fusedList). A list split with any doubt (a comment,
// a dollar or escape string, a star, counts that differ) keeps its
// columns as they are (splitList). Each is used once, by the query of that exact text; a
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
		if q, n, ok := r.batchSchemaSQL(v.files); ok {
			f.add(q, n) // the statistics' schema of the batch's one file (fileSchema)
		}
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
		// The row-group claims' figures of its file (compareLaterClaims),
		// last: a leaf whose figures no other query asks is compared in Go
		// where the file is small (settleInGo), the others are free here.
		if p := r.laterClaims[bk.table]; p != nil {
			if !r.e.claimsNotInGo {
				free := map[string]bool{}
				for _, part := range f.parts {
					if exprs, ok := splitList(part.list); ok && len(exprs) == part.n {
						for _, e := range exprs {
							free[e] = true
						}
					}
				}
				p.settleInGo(ctx, free, goClaimsFusedRows)
			}
			if len(p.checked) > 0 {
				f.add(laterClaimsSQL(v.table.Name, p), len(p.exprs))
			}
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
		f.fetch(ctx, r, q)
	}
	delete(r.fused, q)
	vals, ok := f.rows[q]
	delete(f.rows, q)
	return vals, ok && len(vals) == n
}

// fetch runs the fused statement of the parts still to be asked (asking,
// and those whose answers the memo does not hold) and keeps their answers.
func (f *fusion) fetch(ctx context.Context, r *run, asking string) bool {
	f.ran = true
	def, memo := r.memoView(ctx, f.view)
	var parts []fusedPart
	for _, p := range f.parts {
		if p.text != asking && (r.fused[p.text] != f || (memo && r.e.memo.holds(memoKey("row", p.text, def)))) {
			continue
		}
		parts = append(parts, p)
	}
	if len(parts) < 2 {
		return false
	}
	list, cols, width := fusedList(parts)
	var vals []any
	var err error
	if v := r.views[f.view]; v != nil && plainParquet(v) {
		// The view's own read, its files a parameter (the view is exactly
		// that read: viewSQL of Parquet files): the same rows, which DuckDB
		// binds once instead of twice. It names no view, so it runs on the
		// engine's pool, and the run's connection, catalog and views are
		// opened and made only if another query needs them.
		q := "SELECT " + strings.Join(list, ", ") + " FROM " + readParquetParamSQL(len(v.files))
		if err = r.ready(ctx); err == nil {
			r.e.statement(q)
			var st *sql.Stmt
			var release func()
			var kept bool
			if st, release, kept, err = r.duck.kept.prepared(ctx, r.pool(), q); kept {
				vals, err = scanValues(st.QueryRowContext(ctx, slices.Clone(v.files)).Scan, width)
				release()
			} else if err == nil {
				vals, err = scanValues(r.pool().QueryRowContext(ctx, q, slices.Clone(v.files)).Scan, width)
			}
		}
	} else {
		vals, err = scanValues(r.conn.QueryRowContext(ctx, "SELECT "+strings.Join(list, ", ")+" FROM "+f.from).Scan, width)
	}
	if err != nil {
		r.log.Debug("audit: the fused scan failed; its queries run one by one", "view", f.from, "err", err)
		return false
	}
	f.rows = map[string][]any{}
	for i, p := range parts {
		f.rows[p.text] = each(cols[i], func(j int) any { return vals[j] })
	}
	return true
}

// plainParquet: v is a view of Parquet files made by viewSQL, nothing but
// their read (no Delta log, not synthetic, not broken).
func plainParquet(v *view) bool {
	return v.delta == nil && !v.synthetic && !v.broken && v.table.format() == FormatParquet && len(v.files) > 0
}

// probe is a batch view on probation: its key and its definition.
type probe struct {
	key viewKey
	sql string
}

// provable: openDB may leave batch view k on probation instead of making
// it now (settleProbation). Only a plain Parquet view of the batch whose
// connection is not open yet, on an engine that fuses.
func (r *run) provable(k viewKey, v *view) bool {
	return !r.e.unfused && k.schema == schemaBatch && plainParquet(v) && r.conn.conn == nil
}

// settleProbation decides each batch view openDB left on probation, before
// any check runs. A view DuckDB may refuse is made at once so that its
// checks report why (openDB); here the fused statement of the view's
// checks (planFusion) runs first, over the view's own read
// (readParquetParamSQL) on the engine's pool. When it succeeds, DuckDB read
// exactly the view's files with the view's options, so the view's
// definition is one DuckDB takes: the view waits for the connection to
// open (lazyConn.deferred), as a view the memo knows as good does, and a
// batch whose every query the fused statement and the memo answer opens
// no connection, takes no catalog and makes no view at all. Otherwise
// (no fused statement for the view, it failed, or the connection is open
// already) the view is made now, as openDB would have made it; a view
// DuckDB then refuses takes its fusion with it, so that its checks report
// the view's error.
func (r *run) settleProbation(ctx context.Context) error {
	probes := r.probation
	r.probation = nil
	for _, p := range probes {
		v := r.views[p.key]
		if f := r.fusionOf(p.key); f != nil && r.conn.conn == nil && !f.ran && f.fetch(ctx, r, "") {
			r.conn.deferred = append(r.conn.deferred, p.sql)
			if good, memo := r.goodView(ctx, p.key); memo {
				r.e.memo.put(good, true, int64(len(p.sql)))
			}
			continue
		}
		if err := r.createView(ctx, p.key, v, p.sql); err != nil {
			return err
		}
		if v.colsErr != nil {
			for q, f := range r.fused {
				if f.view == p.key {
					delete(r.fused, q)
				}
			}
		}
	}
	return nil
}

// fusionOf is the fusion over view k, if planFusion made one.
func (r *run) fusionOf(k viewKey) *fusion {
	for _, f := range r.fused {
		if f.view == k {
			return f
		}
	}
	return nil
}

// fusedList is the select list of the fused statement of parts, each
// distinct expression once; the columns of its row each part's answer is
// made of, in order; and the row's width. A part whose list splitList
// cannot split into its n expressions keeps its list whole as one entry,
// its n columns its own.
func fusedList(parts []fusedPart) (list []string, cols [][]int, width int) {
	at := map[string]int{} // an expression's column
	for _, p := range parts {
		exprs, ok := splitList(p.list)
		var mine []int
		if !ok || len(exprs) != p.n {
			list = append(list, p.list)
			for k := range p.n {
				mine = append(mine, width+k)
			}
			width += p.n
			cols = append(cols, mine)
			continue
		}
		for _, e := range exprs {
			key := typeKey(e)
			j, seen := at[key]
			if !seen {
				j = width
				at[key] = j
				list = append(list, e)
				width++
			}
			mine = append(mine, j)
		}
		cols = append(cols, mine)
	}
	return list, cols, width
}

// typeKey is the expression fusedList selects e as: the type of a column's
// min or max, typeof(min("c")) or typeof(max("c")), is the type of the
// column itself, typeof(any_value("c")) (for every type DuckDB has, the
// same text, and where min or max does not bind for a type, neither does
// the statement: TestTypeOfMinIsTheColumnsType); any other e is itself.
// The statistics ask the one, the batch's schema the other.
func typeKey(e string) string {
	for _, f := range []string{"typeof(min(", "typeof(max("} {
		if inner, ok := strings.CutPrefix(e, f); ok {
			if col, ok := strings.CutSuffix(inner, "))"); ok && quotedIdent(col) {
				return "typeof(any_value(" + col + "))"
			}
		}
	}
	return e
}

// quotedIdent: s is one identifier as quoteIdent quotes it.
func quotedIdent(s string) bool {
	if len(s) < 2 || s[0] != '"' || s[len(s)-1] != '"' {
		return false
	}
	return !strings.Contains(strings.ReplaceAll(s[1:len(s)-1], `""`, ""), `"`)
}

// splitList splits a select list at its top-level commas (outside
// parentheses, brackets, braces and quotes), each expression trimmed.
// ok is false where the split could be wrong or an expression might not
// be one column: a comment, a dollar-quoted or prefixed string (E'..',
// U&".."), a parameter, a statement separator, unbalanced brackets or
// quotes, an empty expression, a star or COLUMNS/UNPACK expansion
// (count(*) and a product are none).
func splitList(list string) (exprs []string, ok bool) {
	var stack []byte
	start := 0
	for i := 0; i < len(list); i++ {
		c := list[i]
		switch c {
		case '\'', '"':
			if i > 0 && identByte(list[i-1]) || i > 0 && list[i-1] == '&' {
				return nil, false // a prefixed string or identifier: E'\'', U&"..."
			}
			end := closingQuote(list, i)
			if end < 0 {
				return nil, false
			}
			i = end
		case '(', '[', '{':
			if c == '(' && expands(list[start:i]) {
				return nil, false
			}
			stack = append(stack, c)
		case ')', ']', '}':
			if len(stack) == 0 || stack[len(stack)-1] != map[byte]byte{')': '(', ']': '[', '}': '{'}[c] {
				return nil, false
			}
			stack = stack[:len(stack)-1]
		case '-', '/':
			if i+1 < len(list) && (list[i+1] == '-' && c == '-' || list[i+1] == '*' && c == '/') {
				return nil, false // a comment
			}
		case '$', '?', ';':
			return nil, false
		case '*':
			if i == 0 || list[i-1] != '(' || i+1 >= len(list) || list[i+1] != ')' {
				if !multiplies(list[start:i]) {
					return nil, false
				}
			}
		case ',':
			if len(stack) == 0 {
				exprs = append(exprs, strings.TrimSpace(list[start:i]))
				start = i + 1
			}
		}
	}
	if len(stack) > 0 {
		return nil, false
	}
	exprs = append(exprs, strings.TrimSpace(list[start:]))
	if slices.Contains(exprs, "") {
		return nil, false
	}
	return exprs, true
}

// expands: a parenthesis after before (the expression so far) calls
// COLUMNS or UNPACK, which expand to any number of columns.
func expands(before string) bool {
	b := strings.TrimRight(before, " \t\n\r")
	k := len(b)
	for k > 0 && identByte(b[k-1]) {
		k--
	}
	w := strings.ToLower(b[k:])
	return w == "columns" || w == "unpack"
}

// closingQuote is the index of the quote closing the one at list[i] (a
// doubled quote is one of its characters), or -1.
func closingQuote(list string, i int) int {
	q := list[i]
	for j := i + 1; j < len(list); j++ {
		if list[j] != q {
			continue
		}
		if j+1 < len(list) && list[j+1] == q {
			j++
			continue
		}
		return j
	}
	return -1
}

// multiplies: a star after before (the expression so far) is a product:
// it follows an operand (a name, a number, a closing bracket or quote).
func multiplies(before string) bool {
	b := strings.TrimRight(before, " \t\n\r")
	if b == "" {
		return false
	}
	c := b[len(b)-1]
	return identByte(c) || c == ')' || c == ']' || c == '}' || c == '"' || c == '\''
}

func identByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c >= 0x80
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

// batchSchemaSQL is the query of the types of the columns of files, a
// batch view's one Parquet file, as its footer names them (typeof of any
// value of each: a column's type, rows or none), with the number of its
// columns; ok is false for any other view. Over the view, which reads
// that file alone as fileSchema's DESCRIBE does, it gives DESCRIBE's
// types (TestFusedFirstAuditReadsTheBatchSchema).
func (r *run) batchSchemaSQL(files []string) (q string, n int, ok bool) {
	if len(files) != 1 {
		return "", 0, false
	}
	cols, ok := r.footerCols[files[0]]
	if !ok || len(cols) == 0 {
		return "", 0, false
	}
	for k, v := range r.views {
		if k.schema == schemaBatch && v.table.format() == FormatParquet && v.delta == nil && len(v.files) == 1 && v.files[0] == files[0] {
			exprs := each(cols, func(c fileColumn) string { return "typeof(any_value(" + quoteIdent(c.name) + "))" })
			return "SELECT " + strings.Join(exprs, ", ") + " FROM " + qualified(schemaBatch, v.table.Name), len(cols), true
		}
	}
	return "", 0, false
}
