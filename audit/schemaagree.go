package audit

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
)

// An incremental audit takes the unchanged rows as they passed the checks
// at the foundation. That holds only if they read the same now: Parquet
// files are read together by column name (union by name), so a column
// whose files differ in type is read in the type of their union (BIGINT
// beside DOUBLE is DOUBLE, beside VARCHAR is VARCHAR), and a batch that
// writes a column in another type, or removes the only file of a wider
// type, changes how every unchanged row reads: a BIGINT 10 read as DOUBLE
// is "10.0" to a regex. Names too: a batch spelling a column "ID" where the
// table's files spell it "id" is one column to DuckDB and two to pyarrow,
// which the full audit refuses (columnCollision) while the incremental
// one, reading only the batch's files, did not see the table's names.
//
// And a column whose files give it several types reads in their union's
// type in the table, but in the batch's own in the batch's view, which
// the row checks of an incremental audit read. So every file of the
// foundation's table and of the audited one (the unchanged files, the
// batch's, and the foundation's files the batch removed or replaced) must
// give each column one type (integers of one signedness count as one,
// unless a where condition, which can tell them apart, is in play), and
// the audited ones spell it alike, by each file's own schema as its
// statistics record it (fileStats.Schema, read from the file alone when
// they were computed). Otherwise, or when a file's schema is not known,
// the audit runs again, full (schemaDisagreement; Engine.Run), with the
// disagreement as its reason. Figures computed in one scan of files of
// several types are in the type of their union, not each file's; they are
// not stored (computeStats).

// errRefull asks Engine.Run to run the audit again, full, for reason.
type errRefull struct{ reason string }

func (e errRefull) Error() string { return "audit: to be run full: " + e.reason }

// schemaDisagreement is why the incremental audit's tables do not read as
// at the foundation ("" when they do); err is a failure to find out (a
// listing or a download), which the run reports as its own.
func (r *run) schemaDisagreement(ctx context.Context) (string, error) {
	names := make([]string, 0, len(r.inc.tables))
	for name := range r.inc.tables {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		it, err := r.incTableOf(ctx, name)
		if err != nil {
			continue // its checks errored, naming why
		}
		t := r.table(name)
		batchStats := it.batchStats
		if len(it.batch) > 0 && len(batchStats) != len(it.batch) {
			// Their figures could not be computed (a column a check
			// needs is missing): their schemas alone.
			if batchStats, err = r.batchSchemas(ctx, name, it); err != nil {
				return "", err
			}
		}
		if why := layoutDisagreement(t, it.old, it.batch); why != "" {
			return why, nil
		}
		removed, err := r.removedFiles(ctx, t, it)
		if err != nil {
			return "", err
		}
		removedStats, err := r.statsOf(ctx, t, removed, it.need)
		if err != nil {
			return "", err
		}
		// Per column (by lower-case name): its spelling in the audited
		// files, and the types the foundation's files and the audited
		// files give it, with a file of each.
		// A where condition can tell integer widths apart (typeof, hex
		// or bit_count of a negative value): then each type counts.
		exact := !it.need.plain()
		spelled := map[string][2]string{}                // name, path
		types := [2]map[string]map[string]string{{}, {}} // [foundation, audited] column -> type -> path
		int32s := map[string][][2]string{}               // column -> INT32 integer types (type, path), first of each
		var why string
		add := func(o Object, st fileStats, in ...int) bool {
			if len(st.Schema) == 0 {
				why = fmt.Sprintf("the columns of %s are not known", o.Path)
				return false
			}
			for _, c := range st.Schema {
				k := strings.ToLower(c[0])
				for _, side := range in {
					if types[side][k] == nil {
						types[side][k] = map[string]string{}
					}
					if _, ok := types[side][k][typeFamily(c[1], exact)]; !ok {
						types[side][k][typeFamily(c[1], exact)] = o.Path
					}
				}
				// The removed files too: a full audit comparing with the
				// target reads them beside the batch's (review 61).
				if int32Integer(c[1]) && !slices.ContainsFunc(int32s[k], func(e [2]string) bool { return e[0] == c[1] }) {
					int32s[k] = append(int32s[k], [2]string{c[1], o.Path})
				}
				if !slices.Contains(in, 1) {
					continue
				}
				if s, ok := spelled[k]; !ok {
					spelled[k] = [2]string{c[0], o.Path}
				} else if s[0] != c[0] {
					why = fmt.Sprintf("table %s's column %q in %s is %q in %s: one column to DuckDB, two to pyarrow", t.Name, s[0], s[1], c[0], o.Path)
					return false
				}
			}
			return true
		}
		// A file whose schema is the one added just before (most of a
		// table's files) adds nothing: add records first occurrences only.
		each := func(objs []Object, sts []fileStats, in ...int) bool {
			var last [][2]string
			for i, o := range objs {
				if len(sts[i].Schema) > 0 && sameSchema(sts[i].Schema, last) {
					continue
				}
				if !add(o, sts[i], in...) {
					return false
				}
				last = sts[i].Schema
			}
			return true
		}
		if !each(it.old, it.oldStats, 0, 1) || !each(removed, removedStats, 0) || !each(it.batch, batchStats, 1) {
			return why, nil
		}
		if why := r.batchLacks(t, it, batchStats); why != "" {
			return why, nil
		}
		// One type per column over all of them: then the batch's view
		// reads its rows in the table's type, and the unchanged rows read
		// as they did.
		for _, side := range types {
			for _, k := range slices.Sorted(maps.Keys(side)) {
				if len(side[k]) == 1 {
					continue
				}
				var ts []string
				for _, typ := range slices.Sorted(maps.Keys(side[k])) {
					ts = append(ts, typ+" in "+side[k][typ])
				}
				return fmt.Sprintf("table %s's column %q is %s: read together, every file's values take the type of their union", t.Name, k, strings.Join(ts, " and ")), nil
			}
		}
		for _, k := range slices.Sorted(maps.Keys(types[1])) {
			for typ, p := range types[1][k] {
				for ft, fp := range types[0][k] {
					if ft != typ {
						return fmt.Sprintf("table %s's column %q is %s in %s and %s in %s: read together, every file's values take the type of their union", t.Name, k, typ, p, ft, fp), nil
					}
				}
			}
		}
		// Spark reads every file of the table by one file's types: a
		// plain INT32 300 by an INT(8)'s as 44, which the full audit
		// refuses (sparkIntsApart), though DuckDB reads both as integers
		// alike (review 60).
		for _, k := range slices.Sorted(maps.Keys(int32s)) {
			if ts := int32s[k]; len(ts) > 1 {
				return fmt.Sprintf("table %s's column %q is %s in %s and %s in %s: Spark reads every file of the table by one file's integer type", t.Name, k, ts[0][0], ts[0][1], ts[1][0], ts[1][1]), nil
			}
		}
		if why := r.sparkIntsUntold(t, it, batchStats, removed, removedStats); why != "" {
			return why, nil
		}
		if why, err := r.sparkCharDeclared(ctx, t, it, removed, removedStats); why != "" || err != nil {
			return why, err
		}
	}
	return "", nil
}

// int32Integer: DuckDB reads a Parquet INT32 as typ, an integer type;
// files of one such column in two of them are two types to Spark (INT(8)
// byte, INT(16) short, INT32 integer, UINT(8) short, UINT(16) integer,
// UINT(32) long), which reads the table's files by one file's
// (sparkIntsApart). INT64 columns (BIGINT, UBIGINT) are another Parquet
// type, which Spark reads an INT32's beside.
func int32Integer(typ string) bool {
	switch typ {
	case "TINYINT", "SMALLINT", "INTEGER", "UTINYINT", "USMALLINT", "UINTEGER":
		return true
	}
	return false
}

// sparkIntsUntold is why the audited files of t, which give each column
// one DuckDB type, may still give an integer or timestamp leaf two types
// to Spark, which reads every file of the table by one file's, and the
// full audit refuses (sparkIntsApart), or "". The records keep the leaves
// whose Spark type their DuckDB type does not tell (sparkFacts.Ints,
// sparkIntTold): each such leaf must be one Spark type in every audited
// file holding its column, not told there too; a file holding the column
// where it is told reads as another Spark type (DuckDB's is the same).
// Before, a batch's TIMESTAMP of the legacy ConvertedType beside a
// table's timestamp_ntz, and a TIMESTAMP(NANOS) UTC-adjusted beside a
// TIMESTAMP WITH TIME ZONE of micros, passed incrementally, DuckDB
// reading both alike (review 61). The files the batch removes (removed,
// of statistics removedStats) count too: a full audit comparing with the
// target reads them beside the batch's (columnCollision over the base
// view). A file whose facts are not known, or the batch's files' footers,
// runs the audit full.
func (r *run) sparkIntsUntold(t Table, it *incTable, batchStats []fileStats, removed []Object, removedStats []fileStats) string {
	bv := r.views[viewKey{schemaBatch, strings.ToLower(t.Name)}]
	if len(it.batch) > 0 && (bv == nil || len(bv.files) != len(it.batch) || len(batchStats) != len(it.batch)) {
		return fmt.Sprintf("the Spark schemas of the batch's files of table %s are not known", t.Name)
	}
	type leaf struct {
		column, path string // lower case
		physical     int32
	}
	type file struct {
		path   string
		facts  *sparkFacts
		schema [][2]string
	}
	files := make([]file, 0, len(it.old)+len(it.batch)+len(removed))
	for i, o := range it.old {
		if i >= len(it.oldStats) {
			return fmt.Sprintf("the Spark schema of %s is not known", o.Path)
		}
		files = append(files, file{o.Path, it.oldStats[i].Spark, it.oldStats[i].Schema})
	}
	for i, o := range removed {
		if i >= len(removedStats) {
			return fmt.Sprintf("the Spark schema of %s is not known", o.Path)
		}
		files = append(files, file{o.Path, removedStats[i].Spark, removedStats[i].Schema})
	}
	for i, o := range it.batch {
		cols, ok := r.footerCols[bv.files[i]]
		if !ok {
			return fmt.Sprintf("the Spark schema of %s is not known", o.Path)
		}
		files = append(files, file{o.Path, sparkFactsOf(cols), batchStats[i].Schema})
	}
	untold := map[leaf][2]string{}     // Spark's type, a file's path
	columns := map[string][]leaf{}     // the leaves not told, by lower-case column
	defaults := map[string][3]string{} // by lower-case column: its name, default and a file declaring it
	for _, f := range files {
		if !f.facts.current() || f.facts.Unknown {
			return fmt.Sprintf("the integer leaves of the Parquet schema of %s are not known", f.path)
		}
		for _, d := range f.facts.Defaults {
			if _, ok := defaults[strings.ToLower(d.Column)]; !ok {
				defaults[strings.ToLower(d.Column)] = [3]string{d.Column, d.Default, f.path}
			}
		}
		for _, l := range f.facts.Ints {
			k := leaf{strings.ToLower(l.Column), strings.ToLower(l.Path), l.Physical}
			was, ok := untold[k]
			if !ok {
				untold[k] = [2]string{l.Type, f.path}
				columns[k.column] = append(columns[k.column], k)
				continue
			}
			if was[0] != l.Type {
				return fmt.Sprintf("table %s's column %q is %s to Spark in %s and %s in %s, whose Spark type DuckDB's type does not tell: Spark reads every file of the table by one file's type", t.Name, l.Column, was[0], was[1], l.Type, f.path)
			}
		}
	}
	// Spark reads a column's EXISTS_DEFAULT in the rows of a file lacking
	// it, which the full audit refuses (sparkDefaultsMissing).
	if len(defaults) > 0 {
		for _, f := range files {
			if len(f.schema) == 0 {
				return fmt.Sprintf("the columns of %s are not known", f.path)
			}
			has := make(map[string]bool, len(f.schema))
			for _, c := range f.schema {
				has[strings.ToLower(c[0])] = true
			}
			for _, k := range slices.Sorted(maps.Keys(defaults)) {
				if d := defaults[k]; !has[k] {
					return fmt.Sprintf("table %s's file %s declares column %q the default %q (%s) in its Spark schema, and %s lacks it: Spark reads that default in its rows", t.Name, d[2], d[0], d[1], sparkExistsDefaultKey, f.path)
				}
			}
		}
	}
	if len(untold) == 0 {
		return ""
	}
	for _, f := range files {
		for _, c := range f.schema {
			for _, k := range columns[strings.ToLower(c[0])] {
				if !slices.ContainsFunc(f.facts.Ints, func(l sparkIntFact) bool {
					return strings.EqualFold(l.Column, k.column) && strings.EqualFold(l.Path, k.path) && l.Physical == k.physical
				}) {
					return fmt.Sprintf("table %s's column %q is %s to Spark in %s, whose Spark type DuckDB's type does not tell, and another in %s: Spark reads every file of the table by one file's type", t.Name, c[0], untold[k][0], untold[k][1], f.path)
				}
			}
		}
	}
	return ""
}

// sparkCharDeclared is why the audited files of t cannot be judged by the
// batch's alone ("" when they can). Spark pads the values of a column that
// any file of the table declares a CHAR(n) in its Spark schema in every
// file of the table, which the full audit refuses by scanning every file
// by every file's declarations (sparkChars; review 60: a batch declaring
// char(5) beside an unchanged `ab`, and a batch's `ab` beside unchanged
// files declaring char(5), passed incrementally). The unchanged files
// passed that scan at the foundation by the declarations of its files,
// which hold theirs (each file's statistics record keep them:
// sparkFacts). So:
//   - a batch's file declaring a column's CHAR as no unchanged file does
//     needs the unchanged files scanned by it: the audit runs full;
//   - else the batch's files, scanned by their own declarations when
//     their view was made (columnCollision), are scanned by the
//     unchanged files' here, and one holding a value Spark pads runs the
//     audit full, which refuses it naming the file (the report is then
//     the full audit's, check by check);
//   - a file whose declarations are not known (its record does not hold
//     them, or holds more than it keeps: Unknown) runs the audit full.
//
// The files the batch removes (removed, of statistics removedStats)
// count as unchanged ones: they passed at the foundation beside the
// unchanged files, scanned by their declarations too, and a full audit
// comparing with the target reads them beside the batch's (columnCollision
// over the base view; review 61). Scanning the batch by their
// declarations costs a full run at most: the full audit's verdict is the
// one that counts.
//
// The cost follows the batch: the unchanged files' records are read from
// the statistics, and only the batch's files are scanned (review 61).
// err is the run's own (the machine failed the scan).
func (r *run) sparkCharDeclared(ctx context.Context, t Table, it *incTable, removed []Object, removedStats []fileStats) (string, error) {
	old := map[string][]sparkCharWant{} // by lower-case column: the unchanged and removed files' declarations
	type parsed struct {
		cond, declared string
		ok             bool
	}
	seen := map[string]parsed{} // a declaration's condition, by column and texts
	objs := slices.Concat(it.old, removed)
	for i, o := range objs {
		st := fileStats{}
		if i < len(it.old) && i < len(it.oldStats) {
			st = it.oldStats[i]
		} else if j := i - len(it.old); i >= len(it.old) && j < len(removedStats) {
			st = removedStats[j]
		}
		if !st.Spark.current() || st.Spark.Unknown {
			return fmt.Sprintf("the CHAR declarations of the Spark schema of %s are not known", o.Path), nil
		}
		for _, c := range st.Spark.Chars {
			k := c.Column + "\x00" + strings.Join(c.Declared, "\x00")
			p, ok := seen[k]
			if !ok {
				p.cond, p.declared, p.ok = sparkCharCondOfTexts(c.Column, c.Declared)
				seen[k] = p
			}
			if !p.ok {
				return fmt.Sprintf("the CHAR declarations of the Spark schema of %s are not known", o.Path), nil
			}
			w := sparkCharWant{p.cond, p.declared, fmt.Sprintf("the Spark schema of file %s (%s)", o.Path, sparkCharKey)}
			if err := addSparkCharWant(old, c.Column, w); err != nil {
				return fmt.Sprintf("table %s: %v", t.Name, err), nil
			}
		}
	}
	if len(it.batch) == 0 {
		return "", nil
	}
	bv := r.views[viewKey{schemaBatch, strings.ToLower(t.Name)}]
	if bv == nil || len(bv.files) != len(it.batch) {
		return fmt.Sprintf("the Spark schemas of the batch's files of table %s are not known", t.Name), nil
	}
	cols := make(map[string][]fileColumn, len(it.batch))
	objPath := make(map[string]string, len(it.batch))
	ids := map[string]string{}
	for i, o := range it.batch {
		f := bv.files[i]
		fc, ok := r.footerCols[f]
		if !ok {
			return fmt.Sprintf("the Spark schema of %s is not known", o.Path), nil
		}
		cols[f], objPath[f] = fc, o.Path
		if id, ok := r.fileIdentity(o, cmp.Or(o.at, bv.ref)); ok && r.e.memo != nil {
			ids[f] = id
		}
		for _, c := range fc {
			if c.sparkChar == "" {
				continue
			}
			if !slices.ContainsFunc(old[strings.ToLower(c.name)], func(w sparkCharWant) bool { return w.cond == c.sparkChar }) {
				return fmt.Sprintf("table %s's file %s declares column %q %q in its Spark schema, which no unchanged file of the table declares: Spark pads every file's values of it, and the unchanged files were not scanned by it", t.Name, o.Path, c.name, c.sparkCharType), nil // nor a removed one
			}
		}
	}
	// The batch's declarations are the unchanged files' (above): their
	// union is old.
	err := r.scanSparkChars(ctx, old, cols, bv.files, objPath, ids)
	switch {
	case err == nil:
		return "", nil
	case ctx.Err() != nil, errors.Is(err, ErrInfrastructure), infrastructure(err):
		return "", err
	}
	return fmt.Sprintf("table %s: %v", t.Name, err), nil
}

// partitionKeys is the keys of the partition directories of dir (a
// table-relative folder ending in "/"), joined by "/": "a=1/x/b=2/" is "a/b".
func partitionKeys(dir string) string {
	var keys []string
	for _, seg := range strings.Split(strings.TrimSuffix(dir, "/"), "/") {
		if key, _, ok := strings.Cut(seg, "="); ok && key != "" {
			keys = append(keys, key)
		}
	}
	return strings.Join(keys, "/")
}

// samePartitionKeys is partitionKeys(dir) == keys without building it
// (layoutDisagreement runs it for every folder of a table at every audit).
func samePartitionKeys(dir, keys string) bool {
	dir = strings.TrimSuffix(dir, "/")
	first := true
	for {
		seg, rest, more := strings.Cut(dir, "/")
		if key, _, ok := strings.Cut(seg, "="); ok && key != "" {
			if !first {
				if !strings.HasPrefix(keys, "/") {
					return false
				}
				keys = keys[1:]
			}
			if !strings.HasPrefix(keys, key) {
				return false
			}
			keys, first = keys[len(key):], false
		}
		if !more {
			return keys == ""
		}
		dir = rest
	}
}

// removedFiles are the files of t at the foundation that the audited
// state does not hold (by path and physical address): removed or
// replaced by the batch, or, onto a head, by what the merge leaves.
func (r *run) removedFiles(ctx context.Context, t Table, it *incTable) ([]Object, error) {
	f := r.inc.foundation
	found, err := r.tableListing(ctx, f, t)
	if err != nil {
		return nil, fmt.Errorf("audit: list table %s at %s: %w", t.Name, f, err)
	}
	var out []Object
	if pathOrdered(found) && pathOrdered(it.old) {
		// Both in path order, as listed: one walk, no index of the
		// table's files (this runs at every audit).
		batch := map[[2]string]bool{}
		for _, o := range it.batch {
			batch[[2]string{o.Path, o.Address}] = true
		}
		j := 0
		for _, o := range found {
			for j < len(it.old) && it.old[j].Path < o.Path {
				j++
			}
			if j < len(it.old) && it.old[j].Path == o.Path && it.old[j].Address == o.Address || batch[[2]string{o.Path, o.Address}] {
				continue
			}
			o.at = f
			out = append(out, o)
		}
		return out, nil
	}
	held := map[[2]string]bool{}
	for _, part := range [][]Object{it.old, it.batch} {
		for _, o := range part {
			held[[2]string{o.Path, o.Address}] = true
		}
	}
	for _, o := range found {
		if !held[[2]string{o.Path, o.Address}] {
			o.at = f
			out = append(out, o)
		}
	}
	return out, nil
}

// pathOrdered: objs's paths ascend strictly (a listing's order).
func pathOrdered(objs []Object) bool {
	for i := 1; i < len(objs); i++ {
		if objs[i-1].Path >= objs[i].Path {
			return false
		}
	}
	return true
}

// batchSchemas are the schemas of the batch's files of table name, as
// statistics holding only them.
func (r *run) batchSchemas(ctx context.Context, name string, it *incTable) ([]fileStats, error) {
	bv := r.views[viewKey{schemaBatch, strings.ToLower(name)}]
	out := make([]fileStats, len(it.batch))
	if bv == nil || len(bv.files) != len(it.batch) {
		return out, nil // not known: the disagreement says so
	}
	if err := r.ready(ctx); err != nil {
		return nil, err
	}
	for i, f := range bv.files {
		s, err := r.fileSchema(ctx, f)
		if err != nil {
			return out, nil // DuckDB cannot read it alone: not known
		}
		out[i].Schema = s
	}
	return out, nil
}

// typeFamily is typ, with the signed integers as one, and the unsigned as
// another: a union of them is an integer type that holds every value,
// spelled the same, to the checks' own expressions. Any other change of
// type changes a value's text, order or equality (DOUBLE 10.0, VARCHAR
// '10'). exact (the figures or checks have a where condition, the user's
// SQL, which can tell widths apart: typeof(id) = 'BIGINT') keeps typ.
func typeFamily(typ string, exact bool) string {
	if exact {
		return typ
	}
	switch typ {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT":
		return "a signed integer"
	case "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT":
		return "an unsigned integer"
	}
	return typ
}

// layoutDisagreement is why the audited state's files of t (old, the
// unchanged ones, and batch) cannot be judged by the batch's files alone
// against how Spark reads the table as a whole: files under key=value
// directories of other keys than the others' (partitionLayout). The full
// audit that follows refuses the table, naming both files; read alone, the
// batch's files agreed with one another
// (TestIncrementalAuditSeesTheTablesLayout). Each directory is looked at
// once. (CSV tables, whose headers Spark reads by position, are audited
// full: csvHeaders sees every file.)
func layoutDisagreement(t Table, old, batch []Object) string {
	if t.format() == FormatDelta {
		return ""
	}
	first, firstKeys, lastDir := "", "", "\x00"
	for _, part := range [][]Object{old, batch} {
		for _, o := range part {
			rel := strings.TrimPrefix(o.Path, t.Path)
			dir := rel[:strings.LastIndex(rel, "/")+1]
			if dir == lastDir {
				continue
			}
			lastDir = dir
			if first == "" {
				first, firstKeys = o.Path, partitionKeys(dir)
			} else if !samePartitionKeys(dir, firstKeys) {
				return fmt.Sprintf("table %s's file %s sits under partition directories of keys [%s] and %s under [%s]", t.Name, first, firstKeys, o.Path, partitionKeys(dir))
			}
		}
	}
	return ""
}

// batchLacks is why the batch's view does not read the batch's rows as the
// table does ("" when it does): a column that an unchanged file has and
// no file of the batch has is NULL in the batch's rows to the full audit,
// which reads the table's files together (union by name), while the
// batch's view, which the moved row checks and unique's plan read, has no
// such column, and a check naming it errs (accepted_values or regex over
// a column the batch's writer stopped writing passed full and erred
// incrementally: TestReview53BatchWithoutATablesColumnIsAuditedAsFull).
// Only the columns a planned check of t names count (its column or
// columns, or a where condition whose text holds the name: more than it
// reads, never less), so a table that lost a column no check reads stays
// incremental. A batch without files has the columns of a file of the
// table (schemaFiles).
func (r *run) batchLacks(t Table, it *incTable, batchStats []fileStats) string {
	if len(it.batch) == 0 {
		return ""
	}
	inBatch := map[string]bool{}
	var last [][2]string
	for _, st := range batchStats {
		if sameSchema(st.Schema, last) {
			continue
		}
		last = st.Schema
		for _, c := range st.Schema {
			inBatch[strings.ToLower(c[0])] = true
		}
	}
	// readBy is a planned check of t that may read column k (lower case).
	readBy := func(k string) (string, bool) {
		for i, c := range r.req.Suite.Checks {
			if !r.inc.planned[i] || !strings.EqualFold(c.Table, t.Name) {
				continue
			}
			if slices.ContainsFunc(c.columns(), func(col string) bool { return strings.EqualFold(col, k) }) ||
				strings.Contains(strings.ToLower(c.Where), k) {
				return c.ID(), true
			}
		}
		return "", false
	}
	last = nil
	for j, st := range it.oldStats {
		if sameSchema(st.Schema, last) {
			continue
		}
		last = st.Schema
		for _, c := range st.Schema {
			k := strings.ToLower(c[0])
			if inBatch[k] {
				continue
			}
			if check, ok := readBy(k); ok {
				return fmt.Sprintf("table %s's column %q, which %s reads, is in %s and in no file of the batch: read with the table's files, the batch's rows hold NULL there", t.Name, c[0], check, it.old[j].Path)
			}
		}
	}
	return ""
}
