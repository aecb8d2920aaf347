package audit

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
)

// The change data feed (delta.enableChangeDataFeed). An UPDATE, DELETE or
// MERGE of a table with the feed on writes, beside its data files, change
// data files (under _change_data/) that its commit names in cdc actions:
// the rows it changed, with a _change_type of insert, delete,
// update_preimage or update_postimage. CDF readers (delta-rs load_cdf,
// Spark's table_changes) read a version's changes from its change data
// files when it has any, else from its adds (as inserts) and removes (as
// deletes). So a change data file is rows readers of main read that are in
// no data file's place: the audit compares them with the data.
//
// The change data files of the batch's versions (those after the base's)
// are read, and must be what the version's data files say: each insert and
// update_postimage row a row of a file the version adds, each delete and
// update_preimage row a row of a file it removes (as multisets, partition
// values included), every _change_type one of the four. The row checks
// then judge what the feed says the table holds: the added files that stay
// active are the batch's files. Anything else refuses the table (its
// checks error): a cdc action outside _change_data/, one in a table whose
// configuration does not turn the feed on (deltalake 1.6.6's load_cdf
// reads it all the same, Spark's table_changes refuses a version without
// the feed), a file named twice or named as data too, a file
// missing or of another size than the action says, partition values
// delta-rs cannot parse, a data file of the version no longer in the
// repository (nothing to compare with). A change data file the log does
// not name, or names in a version of the base, is left to
// unaudited_objects.

// deltaCDFKey is the configuration that turns the change data feed on.
const deltaCDFKey = "delta.enableChangeDataFeed"

// deltaChangeDir is where writers keep change data files, under the table.
const deltaChangeDir = "_change_data"

// deltaChangeType is the column of a change data file that says what the
// row is; deltaChangeTypes are its values.
const deltaChangeType = "_change_type"

// deltaChangeTypes are the values of _change_type.
var deltaChangeTypes = []string{"insert", "delete", "update_preimage", "update_postimage"}

// deltaVersion is a commit with cdc actions: the files it adds and
// removes (as they were active) and its change data files.
// cdfArms is how many statement arms cdfCompareSQL makes of versions:
// one a version, kind (change data, added, removed) and partition values.
func cdfArms(versions []deltaVersion) int {
	n := 0
	for _, v := range versions {
		for _, files := range [][]deltaFile{v.cdc, v.added, v.removed} {
			groups := map[string]bool{}
			for _, f := range files {
				groups[strings.Join(f.lits, ", ")] = true
			}
			n += len(groups)
		}
	}
	return n
}

// maxCDFArms bounds the groups of files (by version, kind and partition
// values) a comparison of change data reads, one statement arm each:
// DuckDB's cost grows with the square of the arms (measured in review 15:
// 5,000 arms 1.1 s, 20,000 arms 17.6 s). 10,000 lets a batch touch about
// 3,300 partitions in one version (a backfill MERGE over years of daily
// partitions) for a few seconds of CPU. A var for tests.
var maxCDFArms = 10_000

type deltaVersion struct {
	version        int64
	added, removed []deltaFile
	cdc            []deltaFile
}

// cdc applies a cdc action.
func (s *deltaState) cdc(p string, parts map[string]*string, size *int64) error {
	if s.inCheckpoint {
		return fmt.Errorf("%w: a cdc action in a checkpoint (the protocol keeps them out)", ErrDeltaUnsupported)
	}
	obj, err := s.objectPath(p)
	if err != nil {
		return err
	}
	if !strings.HasPrefix(obj, path.Join(s.table.Path, deltaChangeDir)+"/") {
		return fmt.Errorf("%w: change data file %s (a cdc action) is not under %s/", ErrDeltaUnsupported, p, deltaChangeDir)
	}
	if v, ok := s.cdcSeen[obj]; ok {
		return fmt.Errorf("%w: change data file %s is named in version %d and in version %d", ErrDeltaUnsupported, p, v, s.version)
	}
	s.cdcSeen[obj] = s.version
	s.cur.cdc = append(s.cur.cdc, deltaFile{obj: Object{Path: obj}, parts: parts, size: size})
	return nil
}

// endVersion keeps the commit's changes when it has cdc actions; the
// table's configuration after the commit must turn the feed on.
func (s *deltaState) endVersion() error {
	c := s.cur
	s.cur = deltaVersion{}
	if len(c.cdc) == 0 {
		return nil
	}
	if s.meta == nil || s.meta.Configuration[deltaCDFKey] != "true" {
		v := "not set"
		if s.meta != nil {
			if x, ok := s.meta.Configuration[deltaCDFKey]; ok {
				v = strconv.Quote(x)
			}
		}
		return fmt.Errorf("%w: version %d names change data file %s, and the table's %s is %s, not \"true\": delta-rs reads it, Spark refuses the version (readers disagree)",
			ErrDeltaUnsupported, c.version, c.cdc[0].obj.Path, deltaCDFKey, v)
	}
	s.changes = append(s.changes, c)
	return nil
}

// cdcObjects are the change data files the audit compared with the data.
func (s *deltaSnapshot) cdcObjects() []Object {
	if s == nil {
		return nil
	}
	return slices.SortedFunc(maps.Values(s.changeData), func(a, b Object) int { return strings.Compare(a.Path, b.Path) })
}

// deltaBaseVersion is the version of the table at the batch's base: the
// batch's versions are those after it. A base the reader refuses is -1
// (every version is the batch's).
func (r *run) deltaBaseVersion(ctx context.Context, dl downloader, t Table) (int64, error) {
	base, err := r.deltaLoad(ctx, dl, r.req.BaseRef, t)
	switch {
	case err == nil:
		return base.version, nil
	case errors.As(err, new(errDeltaTable)):
		return -1, nil
	default:
		return 0, err
	}
}

// deltaChangeData compares the change data files of the batch's versions
// (those after the base's) with the data files of their versions, and
// records them in snap.changeData. An error wrapping errDeltaTable is the
// table's refusal.
func (r *run) deltaChangeData(ctx context.Context, dl downloader, t Table, snap *deltaSnapshot) error {
	var versions []deltaVersion
	for _, v := range snap.changes {
		if v.version > snap.base {
			versions = append(versions, v)
		}
	}
	if len(versions) == 0 {
		return nil
	}
	objects, err := r.listRead(ctx, r.req.Ref, t.Path)
	if err != nil {
		if errors.As(err, new(errOverBudget)) {
			return errDeltaTable{err}
		}
		return fmt.Errorf("list table %s at %s: %w", t.Name, r.req.Ref, err)
	}
	listed := indexPaths(objects)
	// Resolve every file against the listing, once per object.
	var fetches []fetch
	index := map[string]int{}
	var bytes int64
	resolve := func(f *deltaFile, what string, version int64) error {
		o, ok := listed.get(f.obj.Path)
		if !ok {
			return tableErr("%w: version %d's %s %s is not in the repository at this ref: its change data cannot be compared with it", ErrDeltaUnsupported, version, what, f.obj.Path)
		}
		if f.size != nil && *f.size != o.Size {
			return tableErr("%w: the log says %s %s has %d bytes, the repository has %d", ErrDeltaUnsupported, what, o.Path, *f.size, o.Size)
		}
		for k := range f.parts {
			if !slices.ContainsFunc(snap.partition, func(c ColumnType) bool { return c.Name == k }) {
				return tableErr("%w: %s %s has a value for %s, which is not a partition column", ErrDeltaUnsupported, what, o.Path, k)
			}
		}
		f.lits = nil
		for _, pc := range snap.partition {
			v, ok := f.parts[pc.Name]
			if !ok {
				return tableErr("%w: %s %s has no value for partition column %s", ErrDeltaUnsupported, what, o.Path, pc.Name)
			}
			lit, err := partitionLiteral(v, pc.Type)
			if err != nil {
				return tableErr("%w: %s %s: partition column %s: %v", ErrDeltaUnsupported, what, o.Path, pc.Name, err)
			}
			f.lits = append(f.lits, lit)
		}
		f.obj = o
		if _, ok := index[o.Path]; !ok {
			index[o.Path] = len(fetches)
			fetches = append(fetches, fetch{ref: r.req.Ref, obj: o})
			bytes += o.Size
		}
		return nil
	}
	seen := map[string]int64{}
	for i := range versions {
		v := &versions[i]
		v.added, v.removed, v.cdc = slices.Clone(v.added), slices.Clone(v.removed), slices.Clone(v.cdc)
		for j := range v.cdc {
			p := v.cdc[j].obj.Path
			if snap.named[p] {
				return tableErr("%w: the log names %s as a change data file (version %d) and as a data file", ErrDeltaUnsupported, p, v.version)
			}
			if w, ok := seen[p]; ok {
				return tableErr("%w: change data file %s is named in version %d and in version %d", ErrDeltaUnsupported, p, w, v.version)
			}
			seen[p] = v.version
			if err := resolve(&v.cdc[j], "change data file", v.version); err != nil {
				return err
			}
		}
		for j := range v.added {
			if err := resolve(&v.added[j], "added data file", v.version); err != nil {
				return err
			}
		}
		for j := range v.removed {
			if err := resolve(&v.removed[j], "removed data file", v.version); err != nil {
				return err
			}
		}
	}
	if n := cdfArms(versions); n > maxCDFArms {
		return tableErr("%w: the change data of table %s and the data files it is compared with make %d groups of files by version and partition values, over the %d lakewap compares in one audit",
			ErrOverBudget, t.Name, n, maxCDFArms)
	}
	if n, b := r.e.opts.MaxFiles, r.e.opts.MaxBytes; len(fetches) > n || bytes > b {
		return tableErr("%w: the change data of table %s and the data files it is compared with are %d files of %d bytes, over the budget of %d files (audit.max_files) and %d bytes (audit.max_bytes)",
			ErrOverBudget, t.Name, len(fetches), bytes, n, b)
	}
	local, err := dl.fetchAll(ctx, fetches)
	if err != nil {
		return fmt.Errorf("change data of %s at %s: %w", t.Name, r.req.Ref, err)
	}
	at := func(f deltaFile) string { return local[index[f.obj.Path]] }
	cols, err := r.parquetColumns(ctx, local)
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return tableErr("%w: change data of %s: %v", ErrDeltaUnsupported, t.Name, err)
	}
	if err := cdfColumnCase(snap, versions, at, cols); err != nil {
		return err
	}
	if err := r.cdfColumnTypes(ctx, snap, versions, at); err != nil {
		return err
	}
	q := cdfCompareSQL(snap, versions, at, cols)
	var (
		badTypes, extra, missing, unbalanced int64
		badRow, extraRow                     sql.NullString
		missingRow, unbalancedRow, unpaired  sql.NullString
	)
	if err := r.pool().QueryRowContext(ctx, q).Scan(&badTypes, &badRow, &extra, &extraRow, &missing, &missingRow, &unbalanced, &unbalancedRow, &unpaired); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return tableErr("%w: the change data of %s could not be compared with its data files: %v", ErrDeltaUnsupported, t.Name, clip(err.Error(), 600))
	}
	switch {
	case badTypes > 0:
		return tableErr("%w: %d change data rows of %s have a _change_type other than %s, e.g. %s",
			ErrDeltaUnsupported, badTypes, t.Name, strings.Join(deltaChangeTypes, ", "), clip(badRow.String, 300))
	case extra > 0:
		return tableErr("%w: %d insert or update_postimage rows of the change data of %s are in no data file their version adds (CDF readers read rows the table never held), e.g. %s",
			ErrDeltaUnsupported, extra, t.Name, clip(extraRow.String, 300))
	case missing > 0:
		return tableErr("%w: %d delete or update_preimage rows of the change data of %s are in no data file their version removes, e.g. %s",
			ErrDeltaUnsupported, missing, t.Name, clip(missingRow.String, 300))
	case unbalanced > 0:
		return tableErr("%w: the change data of %s and the data files of its versions do not add up: %d rows are counted another number of times by the inserts and post-images with the removed files' rows than by the deletes and pre-images with the added files' rows (a copied row told as inserted, a delete left out: a CDF reader applying the feed ends with another table than the data), e.g. %s",
			ErrDeltaUnsupported, t.Name, unbalanced, clip(unbalancedRow.String, 300))
	case unpaired.Valid:
		return tableErr("%w: the change data of %s has another number of update_preimage rows than of update_postimage rows in a version: %s (a delete told as a pre-image alone, which CDF consumers that apply post-images skip)",
			ErrDeltaUnsupported, t.Name, clip(unpaired.String, 300))
	}
	snap.changeData = map[string]Object{}
	snap.changeCols, snap.changePath = map[string][]fileColumn{}, map[string]string{}
	for _, v := range versions {
		for _, f := range v.cdc {
			snap.changeData[f.obj.Path] = f.obj
			l := at(f)
			snap.changeLocal = append(snap.changeLocal, l)
			snap.changeCols[l], snap.changePath[l] = cols[l], f.obj.Path
		}
	}
	return nil
}

// cdfCompareSQL counts, over the versions' change data files (c) and
// their added (a) and removed (d) data files, each row a version and the
// table's columns (partition columns from the log), the change rows of an
// unknown _change_type, the insert and update_postimage rows that are not
// rows of the added files and the delete and update_preimage rows that
// are not rows of the removed files (EXCEPT ALL: as multisets), each with
// one such row as JSON. A column of the schema that a file lacks is NULL,
// as Delta readers read it; columns of a file the schema lacks are left
// out, as they leave them out.
func cdfCompareSQL(snap *deltaSnapshot, versions []deltaVersion, local func(deltaFile) string, cols map[string][]fileColumn) string {
	parts := map[string]bool{}
	for _, p := range snap.partition {
		parts[strings.ToLower(p.Name)] = true
	}
	var dataCols []string // the schema's columns the files hold
	for _, c := range snap.schema {
		if !parts[strings.ToLower(c.Name)] {
			dataCols = append(dataCols, c.Name)
		}
	}
	all := each(snap.schema, func(c ColumnType) string { return quoteIdent(c.Name) })
	group := func(v int64, files []deltaFile, changes bool) []string {
		type lits struct {
			lits  []string
			files []string
		}
		byLits := map[string]*lits{}
		for _, f := range files {
			k := strings.Join(f.lits, ", ")
			if byLits[k] == nil {
				byLits[k] = &lits{lits: f.lits}
			}
			byLits[k].files = append(byLits[k].files, local(f))
		}
		var out []string
		for _, k := range slices.Sorted(maps.Keys(byLits)) {
			fs := byLits[k].files
			have := map[string]bool{}
			for _, f := range fs {
				for _, c := range cols[f] {
					have[strings.ToLower(c.name)] = true
				}
			}
			sel := []string{strconv.FormatInt(v, 10) + " AS _commit_version"}
			for _, c := range dataCols {
				if have[strings.ToLower(c)] {
					sel = append(sel, quoteIdent(c))
				} else {
					sel = append(sel, "NULL AS "+quoteIdent(c))
				}
			}
			for i, pc := range snap.partition {
				sel = append(sel, byLits[k].lits[i]+" AS "+quoteIdent(pc.Name))
			}
			if changes {
				sel = append(sel, "_change_type")
			}
			out = append(out, fmt.Sprintf("SELECT %s FROM read_parquet(%s, union_by_name = true%s)", strings.Join(sel, ", "), literalList(fs), noHive))
		}
		return out
	}
	var c, a, d []string
	for _, v := range versions {
		c = append(c, group(v.version, v.cdc, true)...)
		a = append(a, group(v.version, v.added, false)...)
		d = append(d, group(v.version, v.removed, false)...)
	}
	order := "_commit_version, " + strings.Join(all, ", ")
	union := func(qs []string, empty string) string {
		// The first arm fixes the types: each side is read as the change
		// data's columns (an empty side reads none of its rows).
		return strings.Join(append([]string{empty}, qs...), " UNION ALL BY NAME ")
	}
	noRows := "SELECT " + order + " FROM c WHERE false"
	types := literalList(deltaChangeTypes)
	// One aggregation counts, for each row (a struct of the version and
	// the columns, so that no column name meets the counts'), its inserts
	// and post-images (p), deletes and pre-images (n), and its rows in the
	// added (a) and removed (r) files.
	return fmt.Sprintf(`WITH c AS (SELECT %s, CAST(_change_type AS VARCHAR) AS _change_type FROM (%s)),
	a AS (SELECT %s FROM (%s)),
	d AS (SELECT %s FROM (%s)),
	bad AS (SELECT * FROM c WHERE _change_type IS NULL OR NOT list_contains(%s, _change_type)),
	u AS (SELECT x AS k, 1 AS p, 0 AS n, 0 AS a, 0 AS r FROM (SELECT %s FROM c WHERE _change_type IN ('insert', 'update_postimage')) x
		UNION ALL SELECT x, 0, 1, 0, 0 FROM (SELECT %s FROM c WHERE _change_type IN ('delete', 'update_preimage')) x
		UNION ALL SELECT x, 0, 0, 1, 0 FROM (SELECT %s FROM a) x
		UNION ALL SELECT x, 0, 0, 0, 1 FROM (SELECT %s FROM d) x),
	g AS (SELECT k, sum(p) AS p, sum(n) AS n, sum(a) AS a, sum(r) AS r FROM u GROUP BY k),
	t AS (SELECT CAST(coalesce(sum(p - a) FILTER (WHERE p > a), 0) AS BIGINT) AS extra, any_value(k) FILTER (WHERE p > a) AS extra_row,
		CAST(coalesce(sum(n - r) FILTER (WHERE n > r), 0) AS BIGINT) AS missing, any_value(k) FILTER (WHERE n > r) AS missing_row,
		count(*) FILTER (WHERE p + r <> a + n) AS unbalanced, any_value(k) FILTER (WHERE p + r <> a + n) AS unbalanced_row FROM g),
	unpaired AS (SELECT _commit_version, count(*) FILTER (WHERE _change_type = 'update_preimage') AS update_preimages,
		count(*) FILTER (WHERE _change_type = 'update_postimage') AS update_postimages FROM c GROUP BY _commit_version
		HAVING update_preimages <> update_postimages)
	SELECT (SELECT count(*) FROM bad), (SELECT CAST(to_json(x) AS VARCHAR) FROM bad x LIMIT 1),
		extra, CAST(to_json(extra_row) AS VARCHAR), missing, CAST(to_json(missing_row) AS VARCHAR),
		unbalanced, CAST(to_json(unbalanced_row) AS VARCHAR),
		(SELECT CAST(to_json(x) AS VARCHAR) FROM unpaired x ORDER BY _commit_version LIMIT 1)
	FROM t`,
		order, strings.Join(c, " UNION ALL BY NAME "),
		order, union(a, noRows),
		order, union(d, noRows),
		types, order, order, order, order)
}

// cdfColumnTypes refuses a compared file (change data, added or removed)
// with a column of the schema that DuckDB reads in another type than the
// log's (deltaTypeAgrees) and not exactly a narrower one of it
// (exactlyWidened), naming the first. The comparison reads each
// column in the union of its files' types: one change data file of 32-bit
// floats in a long column had every change data row and every data row
// compared as floats, so a post-image of id 123456792 in another version's
// file (a long, read by deltalake 1.6.6's load_cdf as it is) was taken for
// the data's 123456789 (TestDeltaChangeDataOfAnotherTypeIsRefused). Each
// file is described apart: a union that comes out in the log's type may
// still have cast a file's column to it otherwise than Delta readers do
// (numbers to text).
func (r *run) cdfColumnTypes(ctx context.Context, snap *deltaSnapshot, versions []deltaVersion, local func(deltaFile) string) error {
	want := map[string]string{}
	for _, c := range snap.schema {
		if c.Type != "" {
			want[strings.ToLower(c.Name)] = c.Type
		}
	}
	for _, pc := range snap.partition {
		delete(want, strings.ToLower(pc.Name)) // read from the log's values, not the files
	}
	var raws map[string]json.RawMessage
	if snap.meta != nil {
		raws = deltaRawTypes(snap.meta.SchemaString)
	}
	done := map[string]bool{}
	for _, v := range versions {
		for _, set := range []struct {
			what  string
			files []deltaFile
		}{{"change data file", v.cdc}, {"added data file", v.added}, {"removed data file", v.removed}} {
			for _, f := range set.files {
				file := local(f)
				if done[file] {
					continue
				}
				done[file] = true
				q := "DESCRIBE SELECT * FROM " + readSQL(FormatParquet, []string{file})
				r.e.statement(q)
				cols, err := queryColumnsOn(ctx, r.pool(), q)
				if err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					return tableErr("%w: %s %s: %v", ErrDeltaUnsupported, set.what, f.obj.Path, clip(err.Error(), 300))
				}
				for _, c := range cols {
					if w, ok := want[strings.ToLower(c.name)]; ok && !deltaTypeAgrees(w, c.typ) && !exactlyWidened(c.typ, w) {
						return tableErr("%w: %s %s of version %d has column %q as %s where the log's schema says %s, so its change data would be compared in another type than Delta readers read (a column of another type in one file is of another type for the whole comparison)",
							ErrDeltaUnsupported, set.what, f.obj.Path, v.version, c.name, c.typ, w)
					}
					// A struct's fields likewise (TestDeltaChangeDataStructFieldOfAnotherTypeIsRefused).
					if path, typ, w := structLeafDisagreement(c.name, c.typ, snap.leaves); path != "" {
						return tableErr("%w: %s %s of version %d has field %s as %s where the log's schema says %s, so its change data would be compared in another type than Delta readers read",
							ErrDeltaUnsupported, set.what, f.obj.Path, v.version, path, typ, w)
					}
					if raw, ok := raws[c.name]; ok && deltaPrimitive(raw) == "" {
						if w, agrees := elementsAgree(raw, c.typ, false); !agrees {
							return tableErr("%w: %s %s of version %d has column %q as %s where the log's schema says %s, so its change data would be compared in another type than Delta readers read",
								ErrDeltaUnsupported, set.what, f.obj.Path, v.version, c.name, c.typ, w)
						}
					}
				}
			}
		}
	}
	return nil
}

// cdfColumnCase refuses a compared file with a column that is the
// schema's (or _change_type) in another case: DuckDB binds the schema's
// name to it, delta-rs reads NULL for it (deltalake 1.6.6's load_cdf read
// NULL ids from a change data file's column "ID";
// TestDeltaChangeDataFilesAreComparedWithTheData).
func cdfColumnCase(snap *deltaSnapshot, versions []deltaVersion, local func(deltaFile) string, cols map[string][]fileColumn) error {
	want := map[string]string{strings.ToLower(deltaChangeType): deltaChangeType}
	for _, c := range snap.schema {
		want[strings.ToLower(c.Name)] = c.Name
	}
	var nested map[string][]string
	if snap.meta != nil {
		nested = deltaStructPaths(snap.meta.SchemaString)
	}
	for _, v := range versions {
		for _, set := range []struct {
			what  string
			files []deltaFile
		}{{"change data file", v.cdc}, {"added data file", v.added}, {"removed data file", v.removed}} {
			for _, f := range set.files {
				if col, got, w := fieldCase(cols[local(f)], nested); col != "" {
					return tableErr("%w: field %q of column %q of %s %s is %q in another case: DuckDB reads it as %s, delta-rs reads NULL (readers disagree)",
						ErrDeltaUnsupported, got, col, set.what, f.obj.Path, w, w)
				}
				for _, c := range cols[local(f)] {
					if name, ok := want[strings.ToLower(c.name)]; ok && name != c.name {
						return tableErr("%w: column %q of %s %s is %q in another case: DuckDB reads it as %s, delta-rs reads NULL (readers disagree)",
							ErrDeltaUnsupported, c.name, set.what, f.obj.Path, name, name)
					}
				}
			}
		}
	}
	return nil
}
