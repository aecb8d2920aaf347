package audit

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Delta readers (delta-rs, Spark, delta-kernel) read each column in the
// type the log's schema gives it, casting a data file's column to it;
// DuckDB reads the files' own types (their union). A file of another type
// makes the two read other values: text ids '01' and '02' in a long
// column are 1 and 2 to delta-rs, and unique passed on them beside the
// table's 1 and 2 (TestDeltaFileOfAnotherTypeThanTheLogIsRefused). So a
// Delta view whose column reads in another type than the log's is refused,
// naming the first file of that type.

// deltaTypeAgrees: DuckDB reading a column as got is reading it as the
// log's want. Timestamps of a unit down to microseconds and either zone
// annotation pass as either Delta timestamp: Spark writes INT96, which
// DuckDB reads as TIMESTAMP. Nanoseconds do not: Delta timestamps are of
// microseconds, and delta-rs's SQL cuts a file's nanoseconds to them
// (two rows 1 ns apart are one timestamp, where DuckDB reads two and
// unique passed), pyarrow and pandas fail to read them
// (TestDeltaNanosecondTimestampsAreRefused).
func deltaTypeAgrees(want, got string) bool {
	norm := func(t string) string {
		t = strings.ToUpper(strings.TrimSpace(t))
		if t == "TIMESTAMP WITH TIME ZONE" {
			return "TIMESTAMPTZ"
		}
		return t
	}
	want, got = norm(want), norm(got)
	if strings.HasPrefix(want, "TIMESTAMP") {
		return strings.HasPrefix(got, "TIMESTAMP") && !strings.Contains(got, "_NS")
	}
	return want == got
}

// deltaNanoTimes names the first data file of a Delta table holding
// timestamps in nanoseconds adjusted to UTC, at any depth. Delta's
// timestamps are of microseconds: delta-rs's SQL cuts the file's
// nanoseconds to them, pyarrow and pandas fail to read them, and DuckDB
// reads them as a TIMESTAMP WITH TIME ZONE (truncated to microseconds),
// the log's type, so deltaTypeAgrees, which refuses a TIMESTAMP_NS, does
// not see them (TestDeltaNanosecondTimestampsAreRefused). A footer the Go
// reader gives up on is left to readerIndexes, which refuses it.
func deltaNanoTimes(ctx context.Context, files []string, objPath map[string]string) error {
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return err
		}
		ft, err := readFooter(f)
		if err != nil {
			continue
		}
		for _, c := range ft.chunks {
			if t := c.types; t.logical == 8 && t.unit == 3 && t.utc {
				return fmt.Errorf("%w: data file %s has column %q as timestamps in nanoseconds (adjusted to UTC) where Delta's are of microseconds: delta-rs cuts them to microseconds, pyarrow and pandas fail to read them, DuckDB reads them cut (readers disagree)",
					ErrDeltaUnsupported, objPath[f], c.path)
			}
		}
	}
	return nil
}

// deltaTypeDisagreement is the first column of the Delta view k (made)
// that DuckDB reads in another type than the log's schema gives it, or
// that the schema does not have (delta-rs leaves such a column of a file
// out, DuckDB reads it: TestDeltaProtocolFeaturesAsDeltaRSReadsThem;
// row tracking's materialized columns are left out of the view, as
// readers do: hideMaterialized), with the first of the view's files that
// holds it so, or nil.
func (r *run) deltaTypeDisagreement(ctx context.Context, k viewKey, v *view) error {
	if v.delta == nil || len(v.files) == 0 {
		return nil
	}
	if k.schema == schemaInterim {
		if err := r.interimColumnsOutside(ctx, v); err != nil {
			return err
		}
	}
	// A struct field the log's schema lacks is refused in the files of the
	// last version; a batch's intermediate file is compared with its own
	// version's schema for those (interimColumnsOutside).
	extra := k.schema != schemaInterim
	want, declared := map[string]string{}, map[string]bool{}
	for _, c := range v.delta.schema {
		declared[strings.ToLower(c.Name)] = true
		if c.Type != "" {
			want[strings.ToLower(c.Name)] = c.Type
		}
	}
	got, err := r.describe(ctx, k.schema, v.table.Name)
	if err != nil {
		return err
	}
	var raws map[string]json.RawMessage
	if v.delta.meta != nil {
		raws = deltaRawTypes(v.delta.meta.SchemaString)
	}
	for _, c := range got {
		if !declared[strings.ToLower(c.name)] {
			// Delta readers read the log's columns only (delta-rs leaves a
			// file's other columns out); DuckDB and Parquet readers of the
			// files read them too.
			for i, f := range v.files {
				cols, err := r.queryColumns(ctx, "DESCRIBE SELECT * FROM "+readSQL(FormatParquet, []string{f}))
				if err != nil {
					return err
				}
				if slices.ContainsFunc(cols, func(fc column) bool { return strings.EqualFold(fc.name, c.name) }) {
					return fmt.Errorf("%w: data file %s holds column %q, which is not in the log's schema: Delta readers do not read it, Parquet readers of the file do (readers disagree)",
						ErrDeltaUnsupported, v.objects[i].Path, c.name)
				}
			}
			return fmt.Errorf("%w: column %q is not in the log's schema: Delta readers do not read it (readers disagree)", ErrDeltaUnsupported, c.name)
		}
		if path, typ, w := structLeafDisagreement(c.name, c.typ, v.delta.leaves); path != "" {
			if len(v.files) < 2 {
				return fmt.Errorf("%w: data file %s has field %s as %s where the log's schema says %s: Delta readers cast it to %s their way, DuckDB reads it as it is (readers disagree)",
					ErrDeltaUnsupported, v.objects[0].Path, path, typ, w, w)
			}
			return r.deltaFileTypeDisagreement(ctx, v, want, extra)
		}
		if raw, ok := raws[c.name]; ok && deltaPrimitive(raw) == "" {
			if w, agrees := elementsAgree(raw, c.typ, extra); !agrees {
				if len(v.files) < 2 {
					return fmt.Errorf("%w: data file %s has column %q as %s where the log's schema says %s: Delta readers read its elements, keys, values and fields in the log's types and by its names (casting them their way, a field spelled in another case as NULL, leaving out a field the log lacks), DuckDB as the file holds them (readers disagree)",
						ErrDeltaUnsupported, v.objects[0].Path, c.name, c.typ, w)
				}
				return r.deltaFileTypeDisagreement(ctx, v, want, extra)
			}
		}
		w, ok := want[strings.ToLower(c.name)]
		if !ok || deltaTypeAgrees(w, c.typ) {
			continue
		}
		for i, f := range v.files {
			cols, err := r.queryColumns(ctx, "DESCRIBE SELECT * FROM "+readSQL(FormatParquet, []string{f}))
			if err != nil {
				return err
			}
			for _, fc := range cols {
				if strings.EqualFold(fc.name, c.name) && !deltaTypeAgrees(w, fc.typ) {
					return fmt.Errorf("%w: data file %s has column %q as %s where the log's schema says %s: Delta readers read it as %s, DuckDB as %s (readers disagree)",
						ErrDeltaUnsupported, v.objects[i].Path, fc.name, fc.typ, w, w, c.typ)
				}
			}
		}
		return fmt.Errorf("%w: column %q reads as %s where the log's schema says %s (readers disagree)", ErrDeltaUnsupported, c.name, c.typ, w)
	}
	return r.deltaFileTypeDisagreement(ctx, v, want, extra)
}

// exactlyWidened: every value of DuckDB type from is one of type to, which
// DuckDB and Delta readers alike cast it to (a narrower integer in a long
// column, a float in a double one). A UINTEGER (UINT_32) is not one in a
// double column: delta-spark 4.4.0 reads its INT32 by its signed value,
// 4294967295 as -1.0, where DuckDB reads 4294967295.0 (review 64b,
// TestReader64bDeltaSparkReadsTypesAndStats); in a long column it reads
// 4294967295 as DuckDB does.
func exactlyWidened(from, to string) bool {
	narrower := map[string][]string{
		"BIGINT":   {"TINYINT", "SMALLINT", "INTEGER", "UTINYINT", "USMALLINT", "UINTEGER"},
		"INTEGER":  {"TINYINT", "SMALLINT", "UTINYINT", "USMALLINT"},
		"SMALLINT": {"TINYINT", "UTINYINT"},
		"DOUBLE":   {"FLOAT", "TINYINT", "SMALLINT", "INTEGER", "UTINYINT", "USMALLINT"},
	}
	return slices.Contains(narrower[strings.ToUpper(strings.TrimSpace(to))], strings.ToUpper(strings.TrimSpace(from)))
}

// structLeafDisagreement is the first field of the struct column name, of
// DuckDB type typ, that the schema's leaves (deltaLeaves: fields through
// structs, of the types lakewap maps) give another type than typ does,
// with both types; "" when none does. A field typ lacks is not one (NULL
// to every reader), nor is a type that is not a STRUCT alone. Struct
// columns have no type of the log's to compare whole (deltaColumnTypes):
// a text field held as a timestamp read '2024-01-01 00:00:00.000000' in
// deltalake 1.6.6 and a timestamp in DuckDB
// (TestDeltaStructFieldOfAnotherTypeIsRefused).
func structLeafDisagreement(name, typ string, leaves []deltaLeaf) (path, got, want string) {
	if !strings.HasPrefix(strings.TrimSpace(typ), "STRUCT(") {
		return "", "", ""
	}
	tree, rest, err := parseStructType(typ)
	fields, ok := tree.(map[string]any)
	if err != nil || strings.TrimSpace(rest) != "" || !ok {
		return "", "", "" // a list of structs, say: no leaf goes through it
	}
	for _, l := range leaves {
		if len(l.path) < 2 || l.path[0] != name {
			continue
		}
		var at any = fields
		for _, p := range l.path[1:] {
			m, ok := at.(map[string]any)
			if !ok {
				at = nil
				break
			}
			if at, ok = m[p]; !ok {
				break
			}
		}
		switch t := at.(type) {
		case nil:
			// the file lacks the field: NULL to every reader
		case string:
			if !deltaTypeAgrees(l.typ, t) && !exactlyWidened(t, l.typ) {
				return strings.Join(l.path, "."), t, l.typ
			}
		default:
			return strings.Join(l.path, "."), "a STRUCT", l.typ
		}
	}
	return "", "", ""
}

// deltaRawTypes are a Delta schema's top-level columns' types as the log
// states them (JSON), by name.
func deltaRawTypes(schema string) map[string]json.RawMessage {
	var st struct {
		Fields []struct {
			Name string          `json:"name"`
			Type json.RawMessage `json:"type"`
		} `json:"fields"`
	}
	out := map[string]json.RawMessage{}
	if json.Unmarshal([]byte(schema), &st) == nil {
		for _, f := range st.Fields {
			out[f.Name] = f.Type
		}
	}
	return out
}

// elementsAgree says whether DuckDB's type got of a column whose Delta type
// is raw reads the elements of its lists, the keys and values of its maps
// and the fields of its structs (at any depth, through one another) in the
// types raw gives them (deltaTypeAgrees or exactlyWidened) and a struct's
// fields by the names raw gives them, in their case, with the type wanted;
// primitives are compared too, what lakewap does not map is not. Delta
// readers cast a list's elements as they cast a column: a text list held
// as timestamps read '2024-01-01 00:00:00.000000' in deltalake 1.6.6 and
// '2024-01-01 00:00:00' in DuckDB (TestDeltaListOfAnotherTypeIsRefused),
// and so did a text field of a struct in a list or a map, or a list of
// text in a struct; a struct's field "A" in a list, the log's a, read NULL
// in deltalake and as the field in DuckDB, which matches fields in any
// case (TestDeltaStructInListOrMapOfAnotherTypeOrCaseIsRefused). A field
// the file lacks is NULL to every reader; one the log lacks is not
// compared (as a top-level struct's: structLeafDisagreement).
func elementsAgree(raw json.RawMessage, got string, extra bool) (want string, agrees bool) {
	return deltaTypeText(raw), nestedAgrees(raw, strings.TrimSpace(got), extra)
}

// deltaNested is a nested Delta type as the log states it.
type deltaNested struct {
	Type        string          `json:"type"`
	ElementType json.RawMessage `json:"elementType"`
	KeyType     json.RawMessage `json:"keyType"`
	ValueType   json.RawMessage `json:"valueType"`
	Fields      []deltaField    `json:"fields"`
}

// deltaField is a struct field of a Delta type.
type deltaField struct {
	Name string          `json:"name"`
	Type json.RawMessage `json:"type"`
}

// nestedAgrees is elementsAgree's agreement; with extra, a struct field
// got has and raw does not disagrees too.
func nestedAgrees(raw json.RawMessage, got string, extra bool) bool {
	if t := deltaPrimitive(raw); t != "" {
		return deltaTypeAgrees(t, got) || exactlyWidened(got, t)
	}
	var x deltaNested
	if json.Unmarshal(raw, &x) != nil {
		return true
	}
	switch x.Type {
	case "array":
		inner, ok := strings.CutSuffix(got, "[]")
		return ok && nestedAgrees(x.ElementType, strings.TrimSpace(inner), extra)
	case "map":
		inner, ok := strings.CutPrefix(got, "MAP(")
		if inner, ok = strings.CutSuffix(inner, ")"); !ok || !strings.HasPrefix(got, "MAP(") {
			return false
		}
		k, v, ok := splitTypePair(inner)
		return ok && nestedAgrees(x.KeyType, k, extra) && nestedAgrees(x.ValueType, v, extra)
	case "struct":
		fields, ok := structFieldTypes(got)
		if !ok {
			return false
		}
		for _, f := range x.Fields {
			i := slices.IndexFunc(fields, func(g [2]string) bool { return strings.EqualFold(g[0], f.Name) })
			switch {
			case i < 0:
				// the file lacks the field: NULL to every reader
			case fields[i][0] != f.Name:
				return false // DuckDB reads it, Delta readers read NULL
			case !nestedAgrees(f.Type, fields[i][1], extra):
				return false
			}
		}
		for _, g := range fields {
			if extra && !slices.ContainsFunc(x.Fields, func(f deltaField) bool { return strings.EqualFold(f.Name, g[0]) }) {
				return false // DuckDB reads it, Delta readers leave it out
			}
		}
	}
	return true
}

// deltaTypeText is a Delta type as DuckDB would spell it, for messages:
// its primitives' DuckDB names (the log's names where lakewap maps none).
func deltaTypeText(raw json.RawMessage) string {
	if t := deltaPrimitive(raw); t != "" {
		return t
	}
	var x deltaNested
	if json.Unmarshal(raw, &x) != nil {
		var name string
		json.Unmarshal(raw, &name)
		return name
	}
	switch x.Type {
	case "array":
		return deltaTypeText(x.ElementType) + "[]"
	case "map":
		return "MAP(" + deltaTypeText(x.KeyType) + ", " + deltaTypeText(x.ValueType) + ")"
	case "struct":
		parts := make([]string, 0, len(x.Fields))
		for _, f := range x.Fields {
			parts = append(parts, f.Name+" "+deltaTypeText(f.Type))
		}
		return "STRUCT(" + strings.Join(parts, ", ") + ")"
	}
	return x.Type
}

// structFieldTypes are the fields of DuckDB's STRUCT type got, each its
// name (unquoted) and type, in order; false when got is not one STRUCT.
func structFieldTypes(got string) ([][2]string, bool) {
	inner, ok := strings.CutPrefix(got, "STRUCT(")
	if !ok {
		return nil, false
	}
	if inner, ok = strings.CutSuffix(inner, ")"); !ok {
		return nil, false
	}
	var out [][2]string
	for _, field := range splitTopLevel(inner) {
		field = strings.TrimSpace(field)
		name, typ := "", ""
		if strings.HasPrefix(field, `"`) {
			var ok bool
			if name, typ, ok = cutQuotedIdent(field); !ok {
				return nil, false
			}
		} else {
			var found bool
			if name, typ, found = strings.Cut(field, " "); !found {
				return nil, false
			}
		}
		if typ = strings.TrimSpace(typ); name == "" || typ == "" {
			return nil, false
		}
		out = append(out, [2]string{name, typ})
	}
	return out, true
}

// cutQuotedIdent reads the double-quoted identifier s starts with (a
// doubled quote is a quote inside it), as DuckDB spells a field's name in
// a type: the name, what follows its closing quote, and whether s starts
// with a whole one.
func cutQuotedIdent(s string) (name, rest string, ok bool) {
	if !strings.HasPrefix(s, `"`) {
		return "", s, false
	}
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		if s[i] == '"' {
			if i+1 < len(s) && s[i+1] == '"' {
				b.WriteByte('"')
				i++
				continue
			}
			return b.String(), s[i+1:], true
		}
		b.WriteByte(s[i])
	}
	return "", s, false
}

// splitTopLevel splits s at its commas outside parentheses and quotes.
func splitTopLevel(s string) []string {
	var out []string
	depth, quoted, from := 0, false, 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			quoted = !quoted
		case quoted:
		case c == '(':
			depth++
		case c == ')':
			depth--
		case c == ',' && depth == 0:
			out = append(out, s[from:i])
			from = i + 1
		}
	}
	return append(out, s[from:])
}

// splitTypePair splits "K, V" (a MAP's types as DuckDB spells them) at its
// first comma outside parentheses and quotes.
func splitTypePair(s string) (k, v string, ok bool) {
	parts := splitTopLevel(s)
	if len(parts) < 2 {
		return "", "", false
	}
	return strings.TrimSpace(parts[0]), strings.TrimSpace(strings.Join(parts[1:], ",")), true
}

// deltaFileTypeDisagreement is the first of the Delta view v's files with
// a column that DuckDB reads, in that file alone, in another type than the
// log's (want, by lower-case name) and not exactly a narrower one of it
// (exactlyWidened), or nil. The view's types are the union
// of its files': a file of another type beside one of the log's is cast
// to it by DuckDB, its way, and by Delta readers, theirs. A text column
// held as a timestamp in one file read '2024-01-01 00:00:00' in DuckDB and
// '2024-01-01 00:00:00.000000' in deltalake 1.6.6, and accepted_values
// passed on a region readers of main read otherwise
// (TestDeltaFileOfAnotherTypeInAViewOfTheLogsTypeIsRefused). A file that
// agrees is kept in the memo by its identity and the log's types.
func (r *run) deltaFileTypeDisagreement(ctx context.Context, v *view, want map[string]string, extra bool) error {
	if len(v.files) < 2 {
		return nil // a view of one file has its types
	}
	parts := map[string]bool{}
	for _, p := range v.delta.partition {
		parts[strings.ToLower(p.Name)] = true // read from the log's values, not the files
	}
	types := make([]string, 0, len(want))
	for _, k := range slices.Sorted(maps.Keys(want)) {
		types = append(types, k+"="+want[k])
	}
	var raws map[string]json.RawMessage
	if v.delta.meta != nil {
		raws = deltaRawTypes(v.delta.meta.SchemaString)
		types = append(types, v.delta.meta.SchemaString)
	}
	digest := strings.Join(types, "\x00")
	for i, f := range v.files {
		var key [32]byte
		keyed := false
		if i < len(v.objects) && r.e.memo != nil {
			if id, ok := r.fileIdentity(v.objects[i], cmp.Or(v.objects[i].at, v.ref)); ok {
				key, keyed = memoKey("deltafiletypes", id, digest), true
				if _, ok := r.e.memo.get(key); ok {
					continue
				}
			}
		}
		cols, err := r.queryColumns(ctx, "DESCRIBE SELECT * FROM "+readSQL(FormatParquet, []string{f}))
		if err != nil {
			return err
		}
		for _, fc := range cols {
			w, ok := want[strings.ToLower(fc.name)]
			if ok && !parts[strings.ToLower(fc.name)] && !deltaTypeAgrees(w, fc.typ) && !exactlyWidened(fc.typ, w) {
				return fmt.Errorf("%w: data file %s has column %q as %s where the log's schema says %s: Delta readers cast it to %s their way, DuckDB its way (readers disagree)",
					ErrDeltaUnsupported, v.objects[i].Path, fc.name, fc.typ, w, w)
			}
			if path, typ, w := structLeafDisagreement(fc.name, fc.typ, v.delta.leaves); path != "" {
				return fmt.Errorf("%w: data file %s has field %s as %s where the log's schema says %s: Delta readers cast it to %s their way, DuckDB its way (readers disagree)",
					ErrDeltaUnsupported, v.objects[i].Path, path, typ, w, w)
			}
			if raw, ok := raws[fc.name]; ok && deltaPrimitive(raw) == "" {
				if w, agrees := elementsAgree(raw, fc.typ, extra); !agrees {
					return fmt.Errorf("%w: data file %s has column %q as %s where the log's schema says %s: Delta readers read its elements, keys, values and fields in the log's types and by its names (casting them their way, a field spelled in another case as NULL, leaving out a field the log lacks), DuckDB as the file holds them (readers disagree)",
						ErrDeltaUnsupported, v.objects[i].Path, fc.name, fc.typ, w)
				}
			}
		}
		if keyed {
			r.e.memo.put(key, true, 48)
		}
	}
	return nil
}

// deltaRecordDisagreement is the first of the Delta view's files whose row
// count is not the numRecords the log's stats state for it. delta-rs
// answers count(*) from those stats (and Spark's metadata-only count), so
// a writer stating 50 records for a file of 2 made them count rows the
// audit did not (TestDeltaStatsRecordCountIsTheFiles). One query counts
// the rows of every file that has a stated count (row group metadata; no
// column is read).
func (r *run) deltaRecordDisagreement(ctx context.Context, v *view) error {
	if v.delta == nil {
		return nil
	}
	stated := map[string]int64{}
	for _, f := range v.delta.active {
		if f.records != nil {
			stated[f.obj.Path] = *f.records
		}
	}
	var files []string
	objPath := map[string]string{}
	for i, o := range v.objects {
		if _, ok := stated[o.Path]; ok && i < len(v.files) {
			files = append(files, v.files[i])
			objPath[v.files[i]] = o.Path
		}
	}
	if len(files) == 0 {
		return nil
	}
	// The file name's column gets a name no file can be counted on to
	// lack otherwise: DuckDB refuses the option over a file that has a
	// column so named, and a table with a column named filename could not
	// be audited (TestReview38DeltaTableWithAFilenameColumn).
	fc := "__lakewap_file_" + strconv.FormatUint(rand.Uint64(), 36)
	rows, err := r.conn.QueryContext(ctx, fmt.Sprintf("SELECT %s, count(*) FROM read_parquet(%s, filename = %s, union_by_name = true%s) GROUP BY %s",
		quoteIdent(fc), literalList(files), quoteLiteral(fc), noHive, quoteIdent(fc)))
	if err != nil {
		return err
	}
	defer rows.Close()
	counted := map[string]int64{}
	for rows.Next() {
		var f string
		var n int64
		if err := rows.Scan(&f, &n); err != nil {
			return err
		}
		counted[f] = n
	}
	if err := rows.Err(); err != nil {
		return err
	}
	for _, f := range files {
		if n, want := counted[f], stated[objPath[f]]; n != want {
			return fmt.Errorf("%w: the log's stats say data file %s has %d records, the file has %d: delta-rs and Spark count %d (readers disagree)",
				ErrDeltaUnsupported, objPath[f], want, n, want)
		}
	}
	return nil
}

// deltaClaimsDisagreement is the first of the Delta view's files whose
// data the log's stats claims do not hold for. Delta readers skip a whole
// file whose minValues, maxValues or nullCount exclude a predicate
// (delta-rs's filters, Spark's data skipping), so a log claiming max 3
// over a file holding 4 made delta-rs's WHERE id = 4 read no row of it
// (TestDeltaStatsThatLieAreRefused). Each claim of a column of the log's
// schema of a primitive type is compared with the file's data, one scan
// per file: the min claimed must be at most the data's, the max at least
// (a timestamp's to the millisecond, as Spark truncates them), and those
// of numbers and dates the data's exactly (Spark answers min and max of
// them from the stats); the null count equal. Claims of nested columns
// are not compared. A checkpoint's claims are known by digest (deltaFile)
// and taken from the commits before it that the replay verifies it with:
// a batch's file whose claims only a checkpoint states is refused, a
// published one left. A file that passed is kept in the memo by its
// identity and its claims.
func (r *run) deltaClaimsDisagreement(ctx context.Context, k viewKey, v *view) error {
	if v.delta == nil {
		return nil
	}
	byObject := map[string]deltaFile{}
	for _, f := range v.delta.active {
		if f.claimsSum != "" {
			byObject[f.obj.Path] = f
		}
	}
	for i, o := range v.objects {
		df, ok := byObject[o.Path]
		if !ok || i >= len(v.files) {
			continue
		}
		var key [32]byte
		keyed := false
		if id, ok := r.fileIdentity(o, cmp.Or(o.at, v.ref)); ok && r.e.memo != nil {
			key, keyed = memoKey("deltaclaims-nested", id, df.claimsSum), true
			if _, ok := r.e.memo.get(key); ok {
				continue
			}
		}
		if df.claims == nil {
			// Only a checkpoint states them, and no commit read: a
			// batch's file is refused, a published one left (it was
			// compared as a batch's).
			if k.schema == schemaBatch {
				return fmt.Errorf("%w: data file %s: the log states its stats in a checkpoint only, with no commit to read them from: they cannot be compared with its data, and Delta readers skip files by them",
					ErrDeltaUnsupported, o.Path)
			}
			continue
		}
		if err := r.fileDeltaClaims(ctx, v.files[i], o.Path, df.claims, v.delta.leaves); err != nil {
			return err
		}
		if keyed {
			r.e.memo.put(key, true, 48)
		}
	}
	return nil
}

// deltaClaim is one claim of a file's stats and the data's figure it is
// compared with.
type deltaClaim struct {
	column, stat, claim string
	figure, broken      string // the data's figure; a boolean, true when the claim does not hold
}

// fileDeltaClaims compares claims with the local data file f (name is its
// path in the repository), those of every leaf of the schema, nested
// struct fields too (deltalake's QueryBuilder skipped a file holding
// st.a = 4 by maxValues {"st": {"a": 3}}: TestDeltaNestedStatsAreCompared).
func (r *run) fileDeltaClaims(ctx context.Context, f, name string, claims *deltaClaims, leaves []deltaLeaf) error {
	// delta-rs takes a claim of "ID" for column id (it skipped a file
	// holding 4 by maxValues {"ID": 3}); only exact names are compared.
	top := map[string]bool{}
	for _, l := range leaves {
		top[l.path[0]] = true
	}
	for stat, m := range map[string]map[string]json.RawMessage{"minValues": claims.Min, "maxValues": claims.Max, "nullCount": claims.Nulls} {
		for k := range m {
			if top[k] {
				continue
			}
			for col := range top {
				if strings.EqualFold(k, col) {
					return fmt.Errorf("%w: data file %s: the log's stats claim %s of %q, which is column %q in another case: delta-rs skips the file by it (readers disagree)",
						ErrDeltaUnsupported, name, stat, k, col)
				}
			}
		}
	}
	var list []deltaClaim
	for _, l := range leaves {
		col := strings.Join(l.path, ".")
		e := quoteIdent(l.path[0])
		for _, p := range l.path[1:] {
			e = "struct_extract(" + e + ", " + quoteLiteral(p) + ")"
		}
		if raw, ok := claimAt(claims.Nulls, l.path); ok {
			var n int64
			if err := json.Unmarshal(raw, &n); err == nil {
				list = append(list, deltaClaim{col, "nullCount", strconv.FormatInt(n, 10), "CAST(count(*) - count(" + e + ") AS VARCHAR)",
					"count(*) - count(" + e + ") <> " + strconv.FormatInt(n, 10)})
			}
		}
		for _, stat := range []string{"minValues", "maxValues"} {
			m := claims.Min
			if stat == "maxValues" {
				m = claims.Max
			}
			raw, _ := claimAt(m, l.path)
			if err := ntzClaimForm(raw, l.typ); err != nil {
				return fmt.Errorf("%w: data file %s, column %q: the log's stats claim %s %s: %v (readers disagree)", ErrDeltaUnsupported, name, col, stat, clip(string(raw), 100), err)
			}
			lit, ok := deltaLiteral(raw, l.typ)
			if !ok {
				continue
			}
			agg := "min(" + e + ")"
			broken := agg + " < " + lit
			if stat == "maxValues" {
				agg = "max(" + e + ")"
				broken = agg + " > " + lit
				if strings.HasPrefix(l.typ, "TIMESTAMP") { // Spark truncates to the millisecond
					broken = "date_trunc('millisecond', " + agg + ") > " + lit
				}
			}
			if deltaExactStats(l.typ) {
				broken = agg + " IS DISTINCT FROM " + lit
			}
			list = append(list, deltaClaim{col, stat, string(raw), "CAST(" + agg + " AS VARCHAR)", "coalesce(" + broken + ", false)"})
		}
	}
	if len(list) == 0 {
		return nil
	}
	var exprs []string
	for _, c := range list {
		exprs = append(exprs, c.figure, c.broken)
	}
	if err := r.conn.open(ctx); err != nil {
		return err
	}
	// The file's own columns (SELECT *): read_parquet alone also has
	// virtual columns (file_row_number, file_index), which stood for a
	// column of the schema so named that the file lacks, and a claim of
	// no NULLs in it held where Delta readers skip the file for IS NULL
	// (TestReview38DeltaClaimsOfAColumnTheFileLacks). A claim of a column
	// the file lacks cannot be compared: the table is refused.
	vals, err := scanValues(r.conn.QueryRowContext(ctx, "SELECT "+strings.Join(exprs, ", ")+" FROM (SELECT * FROM "+readSQL(FormatParquet, []string{f})+")").Scan, len(exprs))
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return quote(fmt.Errorf("%w: the log's stats of data file %s cannot be compared with its data (%v): Delta readers skip files by them (readers may disagree)", ErrDeltaUnsupported, name, err), err)
	}
	for i, c := range list {
		if broken, _ := vals[2*i+1].(bool); !broken {
			continue
		}
		figure := "NULL"
		if s, ok := vals[2*i].(string); ok {
			figure = s
		}
		what := map[string]string{"minValues": "the file's min is ", "maxValues": "the file's max is ", "nullCount": "the file holds "}[c.stat]
		return fmt.Errorf("%w: data file %s, column %q: the log's stats claim %s %s, %s%s: Delta readers (delta-rs, Spark) skip the file by it and read other rows than a full scan (readers disagree)",
			ErrDeltaUnsupported, name, c.column, c.stat, c.claim, what, figure)
	}
	return nil
}

// claimAt is the claim of m at a leaf's path (through the objects of its
// structs), if there is one.
func claimAt(m map[string]json.RawMessage, path []string) (json.RawMessage, bool) {
	raw, ok := m[path[0]]
	for _, p := range path[1:] {
		if !ok {
			return nil, false
		}
		var sub map[string]json.RawMessage
		if json.Unmarshal(raw, &sub) != nil {
			return nil, false
		}
		raw, ok = sub[p]
	}
	return raw, ok
}

// deltaExactStats: Spark answers min and max of a column of DuckDB type
// typ from the stats (its metadata-only query, for numbers and dates,
// whose stats writers do not truncate), so they must be the data's.
func deltaExactStats(typ string) bool {
	switch typ {
	case "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "FLOAT", "DOUBLE", "DATE":
		return true
	}
	return strings.HasPrefix(typ, "DECIMAL")
}

// deltaLiteral is the SQL literal of a stats claim raw for a column of
// DuckDB type typ, ok false for none (absent, null, nested). A number is
// left to DuckDB's exact comparison of numbers; text is cast to the type.
func deltaLiteral(raw json.RawMessage, typ string) (string, bool) {
	if len(raw) == 0 {
		return "", false
	}
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return "", false
	}
	switch x := v.(type) {
	case json.Number:
		if _, err := strconv.ParseFloat(x.String(), 64); err != nil && !errors.Is(err, strconv.ErrRange) {
			return "", false
		}
		return x.String(), true
	case string:
		return "CAST(" + quoteLiteral(x) + " AS " + typ + ")", true
	case bool:
		return strconv.FormatBool(x), true
	}
	return "", false
}

// The forms of a stats claim of a timestamp_ntz (ntzPlain), a timestamp
// (tsPlain) and a date (datePlain) column that delta-rs and DuckDB read as
// the same value: a date, a time with its seconds, a fraction, and for a
// timestamp an offset (for timestamp_ntz a trailing Z alone, UTC, which
// changes nothing). A timestamp's claim must name its offset: delta-spark
// 4.4.0 reads one without (2024-01-01T01:00:00.000) in the reader's
// session time zone, 06:00 UTC in America/New_York, where DuckDB read
// 01:00 UTC, and skipped a file holding 02:00 UTC under x < 04:00 UTC
// (review 64b, TestReader64bDeltaSparkReadsTimestampClaimsByZone).
var (
	ntzPlain  = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?Z?)?$`)
	tsPlain   = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}(:?\d{2})?)$`)
	datePlain = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}$`)
)

// ntzClaimForm refuses a stats claim of a timestamp_ntz, timestamp or
// date column (DuckDB type typ TIMESTAMP, TIMESTAMPTZ or DATE) in another
// form than those: DuckDB's CAST drops a timestamp_ntz's offset
// ("01:00:00.000-05:00" is 01:00) where delta-rs converts it (06:00)
// (TestReview10NtzStatsNamingAnOffsetAreRefused), drops a date's time
// ("2024-01-02T23:00:00-05:00" is 2024-01-02) where delta-rs took a later
// day (TestReview10DateStatsWithATimeAreRefused), and reads a time
// without seconds ("2024-01-01T01:00") by which delta-rs skipped the file
// holding it (TestReview10TimestampStatsWithoutSecondsAreRefused).
func ntzClaimForm(raw json.RawMessage, typ string) error {
	re := map[string]*regexp.Regexp{"TIMESTAMP": ntzPlain, "TIMESTAMPTZ": tsPlain, "DATE": datePlain}[typ]
	if re == nil || len(raw) == 0 || raw[0] != '"' {
		return nil
	}
	var v string
	if json.Unmarshal(raw, &v) != nil || re.MatchString(v) {
		return nil
	}
	switch typ {
	case "DATE":
		return errors.New("a date claim that is not a date alone (yyyy-mm-dd), which DuckDB and delta-rs read as different days")
	case "TIMESTAMP":
		return errors.New("a timestamp_ntz claim not of the form yyyy-mm-dd hh:mm:ss[.fraction]: naming an offset or a zone, or a time without seconds, which DuckDB and delta-rs read otherwise")
	}
	return errors.New("a timestamp claim not of the form yyyy-mm-dd hh:mm:ss[.fraction]offset: a time without seconds or a zone name, which DuckDB and delta-rs read otherwise, or without an offset, which delta-spark reads in its session's time zone")
}
