package audit

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/lakewap/lakewap/schemas"
)

// The batch's intermediate versions. A batch may commit several Delta
// versions (an append then an overwrite, an UPDATE then a DELETE, a write
// then a compaction), and the merge puts every one of them on main:
// delta-rs's time travel (DeltaTable(uri, version=v), load_as_version),
// Spark's VERSION AS OF and TIMESTAMP AS OF, and the change data feed
// read each. A data file one of the batch's versions adds and a later one
// removes is in no view of the last version, yet readers of the earlier
// version read its rows (deltalake 1.6.6 read a NULL id at version 1 of a
// published table whose version 2 overwrote it:
// TestDeltaIntermediateVersionsAreAudited).
//
// Such files are the view "interim" of the table: read with the log's
// schema and partition values, through the same refusals as the table's
// files (column case, types against the log's schema, stats claims,
// numRecords), and counted in the audit's budgets with them. The checks
// judged row by row (interimFailing: not_null, accepted_values, range,
// regex without mostly, with or without a where, and stat's upper bound
// of a max or lower bound of a min) also read its rows: a row that fails
// fails the check, whatever the last version holds, naming the versions.
// Every row any version of the table reads is then a row of the base's
// active files (audited when they were published) or of a file a batch's
// version added (the last version's files or these), so each version
// passes those checks. The checks of the table as a whole (unique,
// row_count, volume_change, stat's other bounds, mostly, schema,
// freshness, cross_table, custom sql) judge the last version, as the
// table's readers read it by default and streaming readers end at it: an
// intermediate version was never main's head (the batch's versions are
// published by one merge) and is read only by asking for it by number or
// time (docs/DESIGN.md).
//
// Refused (the table's checks error): a file the batch adds under a
// version whose schema or partition columns are not the last version's
// (the audit reads these files by the last version's), and one whose size
// is not the one its add action states, and one the batch's versions
// add again (a file is read once, as the last version's or as its first
// intermediate add) with other partition values than another of its
// adds (the base's versions' adds too), or under other partition columns. A file no longer in the
// repository is not read: readers of its version fail to read it, and a
// later batch writing that path is unaudited_objects (a file only the
// base's versions name).

// schemaInterim is the schema of the views of the files a batch's
// versions added and removed.
const schemaInterim = "interim"

// deltaGone is a file a commit removed: as it was active, the version
// adding it (-1: not known, added by a checkpoint), the version removing
// it, and whether the ref's listing has its object (file.obj as listed).
type deltaGone struct {
	file           deltaFile
	added, removed int64
	listed         bool
}

// deltaMetaAt is a metaData action and the version stating it.
type deltaMetaAt struct {
	version int64
	meta    *deltaMetaData
}

// metaOf is the metaData in force at version v, nil if not known.
func (s *deltaSnapshot) metaOf(v int64) *deltaMetaData {
	var m *deltaMetaData
	for _, at := range s.metaAt {
		if at.version <= v {
			m = at.meta
		}
	}
	return m
}

// deltaInterim records in s (the table at the batch's ref, its base
// version known) the files the batch's versions added and later removed.
func (s *deltaSnapshot) deltaInterim(t Table) error {
	s.interim = map[string]deltaFile{}
	if err := s.interimMeta(); err != nil {
		return err
	}
	active := map[string]deltaFile{}
	for _, f := range s.active {
		active[f.obj.Path] = f
	}
	for _, g := range s.gone {
		p := g.file.obj.Path
		if g.added <= s.base || g.added < 0 || !g.listed {
			continue
		}
		m := s.metaOf(g.added)
		if m == nil || s.meta == nil || !slices.Equal(m.PartitionColumns, s.meta.PartitionColumns) {
			return tableErr("%w: version %d adds data file %s, which version %d removes, under other partition columns than the last version's: its readers read it by those, the audit would read it by the last version's",
				ErrDeltaUnsupported, g.added, p, g.removed)
		}
		f := g.file
		var err error
		if f.lits, err = s.goneLits(g); err != nil {
			return err
		}
		// A file added again is read once, as the last version's file or
		// as the first of its intermediate adds: its other adds must give
		// its rows the same partition values (readers of each version read
		// them with that version's; TestDeltaReAddedFileWithOtherPartitionValuesIsRefused).
		read, again := active[p]
		if !again {
			read, again = s.interim[p]
		}
		if again {
			if !slices.Equal(read.lits, f.lits) {
				return tableErr("%w: version %d adds data file %s with partition values %s, and a later version adds it again with %s: readers of each version read its rows with that version's, the audit reads them once",
					ErrDeltaUnsupported, g.added, p, strings.Join(f.lits, ", "), strings.Join(read.lits, ", "))
			}
			// So must its size and stats: readers of that version read the
			// footer where its size puts it (deltalake 1.6.6 read ids -1
			// and -2 from a footer inside the file at the version whose add
			// said so, the audit 7 and 8 from the file's own:
			// TestDeltaReAddedFileOfAnotherSizeIsRefused), count its rows
			// by its numRecords and skip it by its claims.
			if why := sameAdd(f, read); why != "" {
				return tableErr("%w: version %d adds data file %s, which version %d removes or adds again: %s; readers of each version read the file by that version's add, the audit reads it once",
					ErrDeltaUnsupported, g.added, p, g.removed, why)
			}
			continue
		}
		if m.SchemaString != s.meta.SchemaString && !deltaSchemaWithin(m.SchemaString, s.meta.SchemaString) {
			return tableErr("%w: version %d adds data file %s, which version %d removes, under another schema or other partition columns than the last version's: its readers read it by those, the audit would read it by the last version's",
				ErrDeltaUnsupported, g.added, p, g.removed)
		}
		if f.size != nil && *f.size != f.obj.Size {
			return tableErr("%w: the log says data file %s (version %d) has %d bytes, the repository has %d", ErrDeltaUnsupported, p, g.added, *f.size, f.obj.Size)
		}
		f.interim = [2]int64{g.added, g.removed}
		if m.SchemaString != s.meta.SchemaString {
			f.schema = m.SchemaString // its columns are checked against it: interimColumnsOutside
		}
		s.interim[p] = f
	}
	// A file of the base's versions that the batch's versions add again,
	// its bytes perhaps rewritten in place: readers of the base's versions
	// read its bytes with the partition values of those
	// (TestDeltaBaseFileRewrittenAndAddedAgainIsRefused).
	for _, g := range s.gone {
		p := g.file.obj.Path
		if g.added > s.base || !g.listed {
			continue
		}
		read, again := active[p]
		if !again {
			read, again = s.interim[p]
		}
		if !again {
			continue
		}
		lits, err := s.goneLits(g)
		if err == nil && !slices.Equal(lits, read.lits) {
			err = tableErr("%w: data file %s, which version %d removes, was read with partition values %s, and the batch adds it again with %s: readers of the versions before read its bytes with theirs, the audit with the batch's",
				ErrDeltaUnsupported, p, g.removed, strings.Join(lits, ", "), strings.Join(read.lits, ", "))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// sameAdd is why the add of f (a file the batch's versions add again,
// removed in between or not) does not read as read's, the add the audit
// reads the file by: a size other than the object's, a numRecords or
// claims (minValues, maxValues, nullCount) other than read's; "" when it
// reads the same. An add without numRecords or claims reads the file's
// rows as they are (a stats update adds them later).
func sameAdd(f, read deltaFile) string {
	switch {
	case f.size != nil && *f.size != f.obj.Size:
		return fmt.Sprintf("that add says it has %d bytes, the repository has %d", *f.size, f.obj.Size)
	case f.records != nil && (read.records == nil || *f.records != *read.records):
		return "that add states another numRecords than the add the audit reads it by"
	case f.claimsSum != "" && f.claimsSum != read.claimsSum:
		return "that add states other stats (minValues, maxValues or nullCount) than the add the audit reads it by"
	}
	return ""
}

// goneLits are the partition values, as SQL literals in the last version's
// partition column order, of a file a commit removed.
func (s *deltaSnapshot) goneLits(g deltaGone) ([]string, error) {
	p, f := g.file.obj.Path, g.file
	for k := range f.parts {
		if !slices.Contains(s.meta.PartitionColumns, k) {
			return nil, tableErr("%w: file %s (version %d) has a value for %s, which is not a partition column", ErrDeltaUnsupported, p, g.added, k)
		}
	}
	var lits []string
	for _, pc := range s.partition {
		v, ok := f.parts[pc.Name]
		if !ok {
			return nil, tableErr("%w: file %s (version %d) has no value for partition column %s", ErrDeltaUnsupported, p, g.added, pc.Name)
		}
		lit, err := partitionLiteral(v, pc.Type)
		if err != nil {
			return nil, tableErr("%w: file %s (version %d): partition column %s: %v", ErrDeltaUnsupported, p, g.added, pc.Name, err)
		}
		lits = append(lits, lit)
	}
	return lits, nil
}

// interimMeta refuses a metaData in force at one of the batch's versions
// (stated by one, or the base's before the batch's first) that reads the
// files active then otherwise than the last version's does: other
// partition columns (a file without a value for one is read with NULL
// there), or a column of the last version's schema in another case or of
// another type (deltalake 1.6.6 read NULL for every region at a version
// whose schema spelled it Region, and NULL for every region at one that
// made it a partition column, while the versions before and after read
// the files' values: TestDeltaIntermediateMetadataIsRefused). A column the
// last version does not have is no check's column; one the last version
// adds is not read at the earlier versions.
func (s *deltaSnapshot) interimMeta() error {
	type field struct {
		Name string          `json:"name"`
		Type json.RawMessage `json:"type"`
	}
	fields := func(schema string) ([]field, error) {
		var st struct {
			Fields []field `json:"fields"`
		}
		if err := json.Unmarshal([]byte(schema), &st); err != nil {
			return nil, err
		}
		for i, f := range st.Fields {
			var b bytes.Buffer
			if err := json.Compact(&b, f.Type); err != nil {
				return nil, err
			}
			st.Fields[i].Type = b.Bytes()
		}
		return st.Fields, nil
	}
	if s.meta == nil {
		return nil
	}
	last, err := fields(s.meta.SchemaString)
	if err != nil {
		return tableErr("schema of the last version: %v", err)
	}
	lastBy := map[string][]field{} // by the lower-case name: linear in the schemas' columns
	for _, l := range last {
		lastBy[strings.ToLower(l.Name)] = append(lastBy[strings.ToLower(l.Name)], l)
	}
	metas := s.metaAt
	if first := slices.IndexFunc(metas, func(at deltaMetaAt) bool { return at.version > s.base }); first < 0 || metas[first].version > s.base+1 {
		if m := s.metaOf(s.base); m != nil {
			metas = append([]deltaMetaAt{{s.base + 1, m}}, metas...)
		}
	}
	for _, at := range metas {
		m := at.meta
		if at.version <= s.base || m == s.meta || (m.SchemaString == s.meta.SchemaString && slices.Equal(m.PartitionColumns, s.meta.PartitionColumns)) {
			continue
		}
		if !slices.Equal(m.PartitionColumns, s.meta.PartitionColumns) {
			return tableErr("%w: at version %d the table's partition columns are [%s], at the last version [%s]: readers of that version read the files active then by those (a file without a value for one with NULL), the audit reads them by the last version's",
				ErrDeltaUnsupported, at.version, strings.Join(m.PartitionColumns, ", "), strings.Join(s.meta.PartitionColumns, ", "))
		}
		fs, err := fields(m.SchemaString)
		if err != nil {
			return tableErr("%w: the schema at version %d: %v", ErrDeltaUnsupported, at.version, err)
		}
		for _, f := range fs {
			for _, l := range lastBy[strings.ToLower(f.Name)] {
				switch {
				case l.Name == f.Name && !deltaTypeWithin(f.Type, l.Type):
					return tableErr("%w: at version %d column %s is of type %s, at the last version %s: readers of that version read the files active then by that type, the audit reads them by the last version's",
						ErrDeltaUnsupported, at.version, f.Name, clip(string(f.Type), 200), clip(string(l.Type), 200))
				case l.Name != f.Name && strings.EqualFold(l.Name, f.Name):
					return tableErr("%w: at version %d the schema has column %s, the last version's %s: readers of that version read NULL for it from files that have %s, the audit reads their values",
						ErrDeltaUnsupported, at.version, f.Name, l.Name, l.Name)
				}
			}
		}
	}
	return nil
}

// deltaSchemaWithin says whether the rows of a file written under Delta
// schema old read the same by schema new: each column of old is one of
// new's, by its exact name, of a type within new's (deltaTypeWithin).
// Columns new adds, as a schema evolution does (write_deltalake's
// schema_mode="merge", ALTER TABLE ADD COLUMNS), are NULL in such a file,
// as in the table's other files written before them; readers of old's
// versions do not read them. A column old has and new does not is not
// within (TestHonestWritersPass/delta_cdf_evolve,
// TestDeltaIntermediateFilesAreRefusedOrBudgeted).
func deltaSchemaWithin(old, new string) bool {
	type field struct {
		Name string          `json:"name"`
		Type json.RawMessage `json:"type"`
	}
	var a, b struct {
		Fields []field `json:"fields"`
	}
	if json.Unmarshal([]byte(old), &a) != nil || json.Unmarshal([]byte(new), &b) != nil {
		return false
	}
	by := make(map[string]json.RawMessage, len(b.Fields))
	for _, f := range b.Fields {
		if _, dup := by[f.Name]; dup {
			return false
		}
		by[f.Name] = f.Type
	}
	for _, f := range a.Fields {
		t, ok := by[f.Name]
		if !ok || !deltaTypeWithin(f.Type, t) {
			return false
		}
	}
	return true
}

// deltaTypeWithin says whether a column of Delta type old (JSON) reads
// the same values as one of type new: the same type, or structs whose
// fields old has are new's fields (by exact name) of such types (a field
// added by a schema evolution is NULL at the versions before it), and
// arrays and maps of such types.
func deltaTypeWithin(old, new json.RawMessage) bool {
	var a, b any
	if json.Unmarshal(old, &a) != nil || json.Unmarshal(new, &b) != nil {
		return false
	}
	var within func(a, b any) bool
	within = func(a, b any) bool {
		x, ok1 := a.(map[string]any)
		y, ok2 := b.(map[string]any)
		if !ok1 || !ok2 || x["type"] != y["type"] {
			return reflect.DeepEqual(a, b)
		}
		switch x["type"] {
		case "array":
			return within(x["elementType"], y["elementType"])
		case "map":
			return within(x["keyType"], y["keyType"]) && within(x["valueType"], y["valueType"])
		case "struct":
			xs, _ := x["fields"].([]any)
			ys, _ := y["fields"].([]any)
			by := map[string][]map[string]any{} // by the lower-case name
			for _, yf := range ys {
				ym, _ := yf.(map[string]any)
				yn, _ := ym["name"].(string)
				by[strings.ToLower(yn)] = append(by[strings.ToLower(yn)], ym)
			}
			for _, xf := range xs {
				xm, _ := xf.(map[string]any)
				xn, _ := xm["name"].(string)
				for _, ym := range by[strings.ToLower(xn)] {
					yn, _ := ym["name"].(string)
					switch {
					case xn == yn && !within(xm["type"], ym["type"]):
						return false
					case xn != yn && strings.EqualFold(xn, yn):
						return false
					}
				}
			}
			return true
		}
		return reflect.DeepEqual(a, b)
	}
	return within(a, b)
}

// interimSnapshot is s with the batch's intermediate files as its active
// ones, for the view of them.
func (s *deltaSnapshot) interimSnapshot() *deltaSnapshot {
	c := *s
	c.active = s.interim
	return &c
}

// interimFailing is the condition a row of a batch's intermediate file
// fails check c by, "" when c is not judged row by row.
func interimFailing(c Check) string {
	if c.Mostly != nil {
		return "" // a share of the table's rows
	}
	if k := kindOf(c); k != nil && k.failing != nil {
		return k.failing(c)
	}
	if c.Kind != KindStat {
		return ""
	}
	col := quoteIdent(c.Column)
	switch {
	case c.Stat == StatMax && c.Max != nil:
		// DuckDB orders NaN above +inf: a NaN row fails, as its max does.
		return fmt.Sprintf("%s %s %s", col, map[bool]string{false: ">", true: ">="}[c.StrictMax], num(*c.Max))
	case c.Stat == StatMin && c.Min != nil:
		return fmt.Sprintf("%s %s %s", col, map[bool]string{false: "<", true: "<="}[c.StrictMin], num(*c.Min))
	}
	return ""
}

// interimRows judges the row checks of Delta tables again over the rows
// of the files the batch's versions added and removed (the view
// interim): a passing check with a failing row there fails, naming the
// versions; the observed value says what was read.
func (r *run) interimRows(ctx context.Context, results []schemas.CheckResult) {
	for i, c := range r.req.Suite.Checks {
		cond := interimFailing(c)
		v := r.views[viewKey{schemaInterim, strings.ToLower(c.Table)}]
		if cond == "" || v == nil || i >= len(results) || results[i].Status == schemas.StatusError {
			continue
		}
		if r.inc != nil && r.inc.planned[i] {
			continue // not a Delta table's check
		}
		if err := v.colsErr; err != nil {
			results[i] = r.errored(c, fmt.Errorf("the files the batch's versions added and removed: %w", err), 0)
			continue
		}
		q := fmt.Sprintf("SELECT count(*), count(*) FILTER (WHERE %s), CAST(to_json(any_value(x) FILTER (WHERE %s)) AS VARCHAR) FROM (SELECT * FROM %s) x",
			cond, cond, filtered(schemaInterim, v.table.Name, c.Where))
		var total, bad int64
		var row sql.NullString
		if err := r.conn.QueryRowContext(ctx, q).Scan(&total, &bad, &row); err != nil {
			if ctx.Err() != nil {
				return
			}
			results[i] = r.errored(c, fmt.Errorf("the files the batch's versions added and removed: %w", err), 0)
			continue
		}
		observed := fmt.Sprintf("%s; %d failing of %d rows in files the batch's versions added and removed", results[i].Observed, bad, total)
		if bad == 0 || results[i].Status != schemas.StatusPass {
			results[i].Observed = observed
			continue
		}
		res := r.judged(c, true, observed, results[i].Threshold)
		res.DurationMs = results[i].DurationMs
		files := slices.SortedFunc(maps.Values(v.delta.active), func(a, b deltaFile) int { return strings.Compare(a.obj.Path, b.obj.Path) })
		var named []string
		for _, f := range files[:min(len(files), 3)] {
			named = append(named, fmt.Sprintf("version %d adds %s, version %d removes it", f.interim[0], f.obj.Path, f.interim[1]))
		}
		if len(files) > 3 {
			named = append(named, fmt.Sprintf("and %d more", len(files)-3))
		}
		msg := fmt.Sprintf("rows of the batch's earlier versions fail it (%s): readers of main read them at those versions (time travel, the change data feed); e.g. %s",
			strings.Join(named, "; "), clip(row.String, 300))
		res.Message = strings.TrimSpace(msg + " " + res.Message)
		results[i] = res
	}
}

// interimColumnsOutside names the first file of the Delta view v of the
// batch's intermediate files that holds a column, or a struct field (at
// any depth, through structs), that the schema of the version adding it
// does not have, where that schema is not the last version's: readers of
// that version leave it out (delta-rs reads a version's columns only:
// TestDeltaProtocolFeaturesAsDeltaRSReadsThem), the audit reads the file
// by the last version's schema, which has it. A column the last version
// adds is NULL in such a file only if the file does not hold it: one
// holding note 'x' on rows of NULL ids left them out of a where on note
// that readers of its version read them in
// (TestDeltaIntermediateFileHoldingALaterColumnIsRefused). And one holding
// a column in another type than that schema's (elementsAgree): a struct
// field the last version drops is read in the file's type, not compared
// with the last version's schema.
func (r *run) interimColumnsOutside(ctx context.Context, v *view) error {
	parts := map[string]bool{}
	for _, p := range v.delta.partition {
		parts[strings.ToLower(p.Name)] = true // read from the log's values, not the files
	}
	for i, o := range v.objects {
		f, ok := v.delta.active[o.Path]
		if !ok || f.schema == "" || i >= len(v.files) {
			continue
		}
		cols, err := deltaColumnTypes(f.schema)
		if err != nil {
			return tableErr("%w: the schema at version %d: %v", ErrDeltaUnsupported, f.interim[0], err)
		}
		declared := map[string]bool{}
		for _, c := range cols {
			declared[strings.ToLower(c.Name)] = true
		}
		paths := map[string]bool{}
		for top, ps := range deltaStructPaths(f.schema) {
			for _, p := range ps {
				paths[strings.ToLower(top+"\x00"+p)] = true
			}
		}
		got, err := r.queryColumns(ctx, "DESCRIBE SELECT * FROM "+readSQL(FormatParquet, []string{v.files[i]}))
		if err != nil {
			return err
		}
		outside := func(name string) error {
			return fmt.Errorf("%w: version %d adds data file %s, which version %d removes, holding %s, which the schema of version %d does not have: its readers leave it out, the audit would read it by the last version's schema",
				ErrDeltaUnsupported, f.interim[0], o.Path, f.interim[1], name, f.interim[0])
		}
		raws := deltaRawTypes(f.schema)
		for _, c := range got {
			if !declared[strings.ToLower(c.name)] {
				return outside(fmt.Sprintf("column %q", c.name))
			}
			// Its version's readers read it in that version's types, a
			// struct field a later schema drops too, which the last
			// version's comparison does not see
			// (TestDeltaStructFieldDroppedBetweenVersionsIsReadInItsVersionsType).
			if raw, ok := raws[c.name]; ok && !parts[strings.ToLower(c.name)] {
				if w, agrees := elementsAgree(raw, c.typ, false); !agrees {
					return fmt.Errorf("%w: version %d adds data file %s, which version %d removes, holding column %q as %s where the schema of version %d says %s: its readers read it in that version's types, the audit as the file holds it (readers disagree)",
						ErrDeltaUnsupported, f.interim[0], o.Path, f.interim[1], c.name, c.typ, f.interim[0], w)
				}
			}
			tree, _, err := parseStructType(c.typ)
			if err != nil {
				continue
			}
			var walk func(prefix string, t any) string
			walk = func(prefix string, t any) string {
				m, ok := t.(map[string]any)
				if !ok {
					return ""
				}
				for name, sub := range m {
					p := prefix + "\x00" + name
					if !paths[strings.ToLower(p)] {
						return p
					}
					if bad := walk(p, sub); bad != "" {
						return bad
					}
				}
				return ""
			}
			if bad := walk(c.name, tree); bad != "" {
				return outside(fmt.Sprintf("field %q", strings.ReplaceAll(bad, "\x00", ".")))
			}
		}
	}
	return nil
}
