package audit

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/lakewap/lakewap/schemas"
)

// Column names that differ only in case. DuckDB binds names without regard
// to case and reads files together by name the same way, so billing_id in
// one file and BILLING_ID in another are one column to the audit; pyarrow,
// pandas, Polars and Delta readers keep them apart (the second file reads
// NULL). lakewap refuses such a table instead of choosing one reading.

// fileColumn is a top-level column of a Parquet file and its direct
// children (the fields of a struct, the key and value of a map).
type fileColumn struct {
	name     string
	children []string
	int96    bool // a top-level leaf of physical type INT96
	// int96Nested: a leaf of physical type INT96 lies below it (a
	// struct's field, a list's element, a map's key or value, at any
	// depth), which int96Range reads in Go (int96Days).
	int96Nested bool
	// sparkSchema is why Spark reads it otherwise than DuckDB by the
	// file's Spark schema (markSparkSchema, sparkschema.go), or "".
	sparkSchema string
	// sparkChar is the DuckDB condition of a value of it shorter than the
	// CHAR(n) its file's Spark schema declares it (or a leaf of it), which
	// Spark pads with spaces when it reads it (markSparkChar,
	// sparkchar.go), or ""; sparkCharType, the declaration, clipped;
	// sparkCharTexts, the whole texts of the declarations giving it, which
	// the file's statistics keep (sparkFacts).
	sparkChar, sparkCharType string
	sparkCharTexts           []string
	// sparkDefault is the EXISTS_DEFAULT its file's Spark schema declares
	// it (clipped), which Spark reads in the rows of a file of the table
	// lacking the column (markSparkDefault, sparkdefault.go), or "".
	sparkDefault string
	// pandas is why pandas.read_parquet reads it otherwise than DuckDB,
	// by the file's pandas metadata (markPandas), or "".
	pandas string
	// arrow is what pyarrow reads it as otherwise than DuckDB by the
	// file's ARROW:schema (markArrow), or ""; arrowFile, on a file's first
	// column, why pyarrow fails on that schema.
	arrow, arrowFile string
	// rebased are the leaves under it Spark reads as written in the Julian
	// calendar, by the file's metadata (markSpark, sparkmeta.go).
	rebased []sparkLeaf
	// nested are the paths of its descendants below it, names joined by
	// "\x00" (a struct's fields at any depth: fieldCase); nestedOver, that
	// some are left out, past the file's maxNestedPathBytes.
	nested     []string
	nestedOver bool
	// enum: it is a leaf of the ENUM type, binary to pyarrow (markEnum).
	enum bool
	// typed is "text" for a leaf DuckDB reads as VARCHAR, else its
	// Parquet type; "" when not known (markText).
	typed string
	// noRows is set on every column of a file of no rows (markText):
	// pyarrow's dataset takes its types first all the same.
	noRows bool
	// temporal: it is a leaf of the DATE or TIMESTAMP type, whose
	// infinities and years beyond 1 to 9999 readers render otherwise
	// (markTemporal, extremetimes.go).
	temporal bool
	// legacyList is the path of a repeated group under it DuckDB reads
	// as its one field where pyarrow and Spark read a struct of it
	// (markLegacyLists, legacylists.go), or "".
	legacyList string
	// wideDecimal describes the first leaf under it of a DECIMAL of more
	// than 38 digits, which DuckDB reads as a DOUBLE (markWideDecimals,
	// decimalwidth.go), or "".
	wideDecimal string
	// sparkInts are its INT32, INT64 and DOUBLE leaves (itself, or nested
	// below it) and the types Spark reads them as (markSparkInts); sparkIntsOver,
	// on a file's first column, that the file has more than are noted.
	sparkInts     []sparkIntLeaf
	sparkIntsOver bool
	// half: it is a leaf of the FLOAT16 logical type, whose values
	// DuckDB renders as FLOAT's and pandas as float16's (markHalf,
	// typeagree.go).
	half bool
	// union is its type as unionValues compares it across files
	// (markUnion, unionvalues.go), or "".
	union string
	// width is, for a union of HUGEINT (an integer), the integer type
	// DuckDB reads it as, which typeof tells (integerWidth), or "".
	width string
	// unionLeaves are its nested leaves unionValues compares across files
	// (markUnion); unionOver, on a file's first column, that the file has
	// more than maxUnionLeaves of them, or some nested deeper than 64.
	unionLeaves []unionLeaf
	unionOver   bool
}

// errTooDeep: a Parquet file's schema nests deeper than DuckDB is given
// (errSchemaTooDeep); no DuckDB read of it is made.
type errTooDeep struct{ file string }

func (e errTooDeep) Error() string {
	return fmt.Sprintf("file %s: its schema nests groups more than %d deep", e.file, maxDuckDBSchemaDepth)
}

// parquetColumns are the top-level columns of each file, as its footer
// names them, in order: read in Go (footerSchema), else, for the files it
// gives up on, with DuckDB's parquet_schema, which fails as it always did
// on a file it cannot read.
func (r *run) parquetColumns(ctx context.Context, files []string) (map[string][]fileColumn, error) {
	out := map[string][]fileColumn{}
	var rest []string
	for _, f := range files {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ft, err := readFooter(f)
		if errors.Is(err, errSchemaTooDeep) {
			return nil, errTooDeep{file: f}
		}
		if err != nil {
			rest = append(rest, f)
			continue
		}
		out[f] = schemaColumns(ft.nodes)
		embedded := markArrow(out[f], ft.arrow, topLevelFields(ft.nodes, ft.types))
		markPandas(out[f], withEmbedded(ft.pandas, embedded), topLevelKinds(ft.nodes, ft.types))
		markSpark(out[f], ft)
		markSparkSchema(out[f], ft.nodes, ft.types, ft.sparkRow)
		markSparkInts(out[f], ft.nodes, ft.types)
		markEnum(out[f], ft.nodes, ft.types)
		markText(out[f], ft.nodes, ft.types, ft.rows)
		markTemporal(out[f], ft.nodes, ft.types)
		markLegacyLists(out[f], ft.nodes, ft.types)
		markWideDecimals(out[f], ft.nodes, ft.types)
		markHalf(out[f], ft.nodes, ft.types)
		markUnion(out[f], ft.nodes, ft.types)
	}
	if len(rest) == 0 {
		return out, nil
	}
	q := "SELECT file_name, name, coalesce(num_children, 0), coalesce(num_children, 0) = 0 AND coalesce(type = 'INT96', false), type, repetition_type, converted_type, logical_type FROM parquet_schema(" + literalList(rest) + ")"
	r.e.statement(q) // on the engine's pool, but tests count it with the run's (onStatement)
	rows, err := r.pool().QueryContext(ctx, q)
	if err != nil {
		if ctx.Err() == nil {
			// parquet_schema fails on fields read_parquet never looks at (a
			// root name or a CRS that is not UTF-8): a file DuckDB reads
			// anyway must not take the table past the check
			// (TestRootNameDuckDBCannotListRefusesTheTable).
			for _, f := range rest {
				if _, serr := r.pool().ExecContext(ctx, "SELECT 1 FROM parquet_schema("+literalList([]string{f})+")"); serr == nil {
					continue
				}
				if ok, _ := r.bindsAlone(ctx, FormatParquet, f); ok {
					return nil, errUnlisted{file: f, err: err}
				}
			}
		}
		return nil, err
	}
	defer rows.Close()
	byFile := map[string][]schemaNode{}
	typesOf := map[string][]nodeTypes{} // by file, as parquet_schema renders them (Spark's rebase)
	for rows.Next() {
		var (
			file                    string
			n                       schemaNode
			typ, rep, conv, logical sql.NullString
		)
		if err := rows.Scan(&file, &n.name, &n.children, &n.int96, &typ, &rep, &conv, &logical); err != nil {
			return nil, err
		}
		byFile[file] = append(byFile[file], n)
		typesOf[file] = append(typesOf[file], duckdbNodeTypes(typ.String, rep.String, conv.String, logical.String))
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	for file, nodes := range byFile {
		if len(nodes) > 0 {
			out[file] = schemaColumns(nodes)
			markHalf(out[file], nodes, typesOf[file])
		}
	}
	// The pandas metadata, ARROW:schema and Spark's calendar keys of the
	// files the Go reader gave to DuckDB, in one query. pandas and pyarrow:
	// DuckDB's reading does not give the field types, so any dtype pandas
	// applies counts, and any duration pyarrow restores.
	kq := "SELECT file_name, key, value FROM parquet_kv_metadata(" + literalList(rest) + ") WHERE key IN ('pandas'::BLOB, 'ARROW:schema'::BLOB, " +
		quoteLiteral(sparkVersionKey) + "::BLOB, " + quoteLiteral(sparkLegacyDateTimeKey) + "::BLOB, " + quoteLiteral(sparkLegacyINT96Key) + "::BLOB, " + quoteLiteral(sparkRowMetadataKey) + "::BLOB)"
	r.e.statement(kq)
	kvs, err := r.pool().QueryContext(ctx, kq)
	if err != nil {
		return nil, err
	}
	defer kvs.Close()
	metas := map[string][][]byte{}
	arrows := map[string][][]byte{}
	spark := map[string]*sparkKeys{}
	sparkRows := map[string][][]byte{}
	for kvs.Next() {
		var file string
		var key, value []byte
		if err := kvs.Scan(&file, &key, &value); err != nil {
			return nil, err
		}
		switch string(key) {
		case "pandas":
			metas[file] = append(metas[file], value)
		case "ARROW:schema":
			arrows[file] = append(arrows[file], value)
		case sparkRowMetadataKey:
			sparkRows[file] = append(sparkRows[file], value)
		default:
			if spark[file] == nil {
				spark[file] = &sparkKeys{}
			}
			spark[file].note(key, value)
		}
	}
	if err := kvs.Err(); err != nil {
		return nil, err
	}
	for file, a := range arrows {
		metas[file] = withEmbedded(metas[file], markArrow(out[file], a, nil))
	}
	for file, m := range metas {
		markPandas(out[file], m, nil)
	}
	for file, v := range sparkRows {
		markSparkSchema(out[file], byFile[file], nil, v)
	}
	for file, k := range spark {
		leaves := sparkLeaves(byFile[file], typesOf[file], *k)
		for i := range out[file] {
			out[file][i].rebased = leaves[out[file][i].name]
		}
	}
	return out, nil
}

// maxNestedPathBytes bounds the bytes of a file's struct fields' paths
// (fileColumn.nested): each repeats its ancestors' names, so 9,970 fields
// under 23 structs of 1,000-byte names made 220 MB of them
// (TestReview33StructPathsOfAFileAreBounded).
const maxNestedPathBytes = 8 << 20

// schemaColumns are the top-level columns of a schema tree in depth-first
// order whose first node is the root, with their direct children.
func schemaColumns(nodes []schemaNode) []fileColumn {
	i, size := 0, 0
	var walk func(prefix string, col *fileColumn)
	walk = func(prefix string, col *fileColumn) {
		n := nodes[i]
		i++
		p := n.name
		if prefix != "" {
			p = prefix + "\x00" + n.name
		}
		col.int96Nested = col.int96Nested || n.int96
		if size += len(p); size > maxNestedPathBytes {
			col.nestedOver = true
		} else {
			col.nested = append(col.nested, p)
		}
		for c := int64(0); c < n.children && i < len(nodes); c++ {
			walk(p, col)
		}
	}
	root := nodes[0]
	i = 1
	var cols []fileColumn
	for c := int64(0); c < root.children && i < len(nodes); c++ {
		col := fileColumn{name: nodes[i].name, int96: nodes[i].int96}
		n := nodes[i].children
		i++
		for k := int64(0); k < n && i < len(nodes); k++ {
			col.children = append(col.children, nodes[i].name)
			walk("", &col)
		}
		cols = append(cols, col)
	}
	return cols
}

// fieldCase names the first field of a struct column of cols (a file's)
// whose path is one of nested's (a Delta schema's struct fields by
// top-level column: deltaStructPaths) in another case, with the schema's
// spelling. DuckDB matches struct fields in any case, Delta readers by
// their exact names: deltalake 1.6.6 read NULL for st.a from a file whose
// field is st.A, which DuckDB read as st.a
// (TestDeltaStructFieldInAnotherCaseIsRefused).
func fieldCase(cols []fileColumn, nested map[string][]string) (column, got, want string) {
	for _, c := range cols {
		paths := nested[c.name]
		if len(paths) == 0 {
			continue
		}
		if c.nestedOver {
			return c.name, fmt.Sprintf("(one of them: its fields' paths pass %d bytes, which the audit does not compare)", maxNestedPathBytes), strings.ReplaceAll(paths[0], "\x00", ".")
		}
		spelled := make(map[string]string, len(paths))
		for _, p := range paths {
			spelled[strings.ToLower(p)] = p
		}
		for _, p := range c.nested {
			if w, ok := spelled[strings.ToLower(p)]; ok && w != p {
				return c.name, strings.ReplaceAll(p, "\x00", "."), strings.ReplaceAll(w, "\x00", ".")
			}
		}
	}
	return "", "", ""
}

// partitionLayout names two files of a table under key=value directories
// of different keys (none for one of them, say): Spark's partition
// discovery reads such a table otherwise than DuckDB (4.3.0 left out the
// files outside the partition directories and read the others; it fails
// on other layouts), while lakewap, which adds no partition columns,
// reads every file (TestTablesSparkReadsOtherwiseAreRefused).
func partitionLayout(order []string, objPath map[string]string, tablePath string) error {
	first, firstKeys := "", ""
	for i, f := range order {
		rel := strings.TrimPrefix(objPath[f], tablePath)
		dirs := strings.Split(rel, "/")
		var keys []string
		for _, seg := range dirs[:len(dirs)-1] {
			if key, _, ok := strings.Cut(seg, "="); ok && key != "" {
				keys = append(keys, key)
			}
		}
		k := strings.Join(keys, "/")
		if i == 0 {
			first, firstKeys = f, k
			continue
		}
		if k != firstKeys {
			return fmt.Errorf("file %s sits under partition directories of keys [%s] and file %s under [%s]: Spark's partition discovery reads such a table otherwise than DuckDB (it leaves out files, or fails): readers disagree on it (partition every file alike, or none)",
				objPath[first], firstKeys, objPath[f], k)
		}
	}
	return nil
}

// csvHeaders names two CSV files of a table whose headers put different
// columns at one position: Spark (header = true) reads every file's fields
// by position under one file's header, DuckDB (union_by_name) and pandas
// by name, so a column's values came from another column
// (TestTablesSparkReadsOtherwiseAreRefused). Headers that are prefixes of
// one another (a file without the last columns) read alike.
func csvHeaders(names map[string][]fileColumn, order []string, objPath map[string]string) error {
	longest := ""
	for _, f := range order {
		if len(names[f]) > len(names[longest]) {
			longest = f
		}
	}
	for _, f := range order {
		for i, c := range names[f] {
			if want := names[longest][i].name; c.name != want {
				return fmt.Errorf("file %s has column %q at position %d of its header, where file %s has %q: Spark reads a CSV file's fields by position under one file's header, DuckDB and pandas by name: readers disagree on it (write every file's columns in one order)",
					objPath[f], c.name, i+1, objPath[longest], want)
			}
		}
	}
	return nil
}

// hiveCollision names the first file that sits under a key=value directory
// (below the table's path) whose key, as a reader of main decodes it
// (partitionKeyReadings), is also a column of the file: pyarrow, pandas
// and Spark read such a table with hive partitioning and take the
// directory's value for every row, DuckDB (as lakewap reads the table)
// the file's (found by TestTextAndParquetDifferentialAgainstPyArrow; an
// escaped key such as %C3%A9 for é by TestEscapedPartitionKeyNamingAColumnIsRefused).
func hiveCollision(names map[string][]fileColumn, order []string, objPath map[string]string, tablePath string) error {
	for _, f := range order {
		rel := strings.TrimPrefix(objPath[f], tablePath)
		dirs := strings.Split(rel, "/")
		for _, seg := range dirs[:len(dirs)-1] {
			key, value, ok := strings.Cut(seg, "=")
			if !ok || key == "" {
				continue
			}
			for _, k := range partitionKeyReadings(key) {
				for _, c := range names[f] {
					if !strings.EqualFold(c.name, k.key) {
						continue
					}
					if k.reader == "" {
						return fmt.Errorf("file %s has a column %q and sits under the partition directory %q: readers disagree on it (pyarrow, pandas and Spark read %q for every row, DuckDB the file's values)",
							objPath[f], c.name, seg, value)
					}
					return fmt.Errorf("file %s has a column %q and sits under the partition directory %q, whose key %s read as %q: readers disagree on it (%s read %q for every row, DuckDB the file's values)",
						objPath[f], c.name, seg, k.reader, k.key, k.reader, k.decode(value))
				}
			}
		}
	}
	return nil
}

// partitionKey is one reading of a partition directory's key: as written
// (reader ""), or as a reader decodes its percent-escapes.
type partitionKey struct {
	key, reader string
	decode      func(string) string
}

// partitionKeyReadings are the names readers of main give a partition
// directory's key: as written; as pyarrow.dataset's hive partitioning
// (and so pandas) reads it, percent-escapes decoded as UTF-8 (a key that
// is then not UTF-8 fails its reading: none); as Spark reads it, each
// %XX one character of that code (unescapePathName: %E9 is é, %C3%A9 is
// Ã©). pyarrow 26.0.1 and Spark 4.3.0 keep an escape that is not one
// (%zz) as written.
func partitionKeyReadings(key string) []partitionKey {
	out := []partitionKey{{key: key}}
	if !strings.Contains(key, "%") {
		return out
	}
	if k := unescapePercents(key, false); k != key && utf8.ValidString(k) {
		out = append(out, partitionKey{key: k, reader: "pyarrow and pandas", decode: func(v string) string { return unescapePercents(v, false) }})
	}
	if k := unescapePercents(key, true); k != key {
		out = append(out, partitionKey{key: k, reader: "Spark", decode: func(v string) string { return unescapePercents(v, true) }})
	}
	return out
}

// unescapePercents decodes each %XX of s (X a hexadecimal digit) to the
// byte of that code, or, with chars, to the character of that code as
// Spark does (Java's Integer.parseInt of XX in base 16, which also takes
// %+X and %-0), and keeps any other % as written.
func unescapePercents(s string, chars bool) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) {
			hex := s[i+1 : i+3]
			if chars && (hex[0] == '+' || hex == "-0") {
				hex = hex[1:]
			}
			if n, err := strconv.ParseUint(hex, 16, 8); err == nil {
				if chars {
					b.WriteRune(rune(n))
				} else {
					b.WriteByte(byte(n))
				}
				i += 2
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// nullSpellings are the texts pandas (read_csv's default na_values) and
// pyarrow (ConvertOptions.null_values, in columns it infers as not text)
// read as NULL in a CSV file, where DuckDB reads a value (text, or NaN in
// a DOUBLE column). The empty field, NULL for DuckDB and pandas, is left
// out: it is how CSV writes NULL.
var nullSpellings = []string{"-1.#IND", "1.#QNAN", "1.#IND", "-1.#QNAN", "#N/A N/A", "#N/A", "N/A", "n/a", "NA", "<NA>",
	"#NA", "NULL", "null", "NaN", "-NaN", "nan", "-nan", "None"}

// nullSpelling names the first field of the CSV files that is one of
// nullSpellings: a not_null check would pass on it while pandas and
// pyarrow readers read NULL (found by TestTextAndParquetDifferentialAgainstPyArrow).
// One scan of each file, every column as text. A file DuckDB cannot read
// is left for the view to report.
func (r *run) nullSpelling(ctx context.Context, files []string, objPath map[string]string) error {
	if err := r.ready(ctx); err != nil {
		return err
	}
	for _, f := range files {
		switch b, err := blankLines(f); {
		case err != nil:
			return fmt.Errorf("file %s: %w", objPath[f], err)
		case b.line == 1:
			return fmt.Errorf("file %s starts with an empty line: Spark skips empty lines and takes the next for the header, DuckDB takes the empty line: readers disagree on it (start the file with its header)",
				objPath[f])
		case b.line > 0 && b.spaces:
			return fmt.Errorf("file %s has a line of only spaces (line %d): pandas and Spark skip it, DuckDB and pyarrow read it as a row (or fail): readers disagree on it (write no blank lines)",
				objPath[f], b.line)
		case b.line > 0:
			return fmt.Errorf("file %s has an empty line (line %d) in a file of one column: pandas, pyarrow and Spark skip it, DuckDB reads it as a row whose value is NULL: readers disagree on it (write NULL as \"\", or no empty lines)",
				objPath[f], b.line)
		}
		q := fmt.Sprintf("SELECT name, value, CASE WHEN list_contains(%[4]s, value) THEN 'null' WHEN regexp_matches(value, '[\r\n]') THEN 'newline' "+
			`WHEN contains(value, '"') THEN 'quote' ELSE 'backslash' END AS why `+
			"FROM (SELECT * FROM read_csv(%[1]s, header = true, all_varchar = true%[2]s%[3]s)) "+
			`UNPIVOT (value FOR name IN (COLUMNS(*))) WHERE list_contains(%[4]s, value) OR regexp_matches(value, '[\r\n"]') OR ends_with(value, '\') LIMIT 1`,
			literalList([]string{f}), csvDialect, noHive, literalList(nullSpellings))
		var name, value, why string
		switch err := r.pool().QueryRowContext(ctx, q).Scan(&name, &value, &why); {
		case errors.Is(err, sql.ErrNoRows):
		case err != nil:
			if err := r.guardFailed(ctx, FormatCSV, f, objPath[f], err); err != nil {
				return err
			}
		case why == "newline":
			return fmt.Errorf("file %s has a line break in a field of column %q: Spark (whose multiLine is off by default) reads the line break as the end of a record, DuckDB and pandas as part of the field: readers disagree on it (write fields without line breaks)",
				objPath[f], name)
		case why == "quote":
			return fmt.Errorf("file %s has a quote in a field of column %q (%q): Spark escapes a quote with a backslash and reads a doubled quote otherwise than DuckDB and pandas: readers disagree on it (write fields without quotes)",
				objPath[f], name, schemas.Clip(value, 64))
		case why == "backslash":
			return fmt.Errorf("file %s has a field of column %q ending in a backslash (%q): Spark reads a backslash before a closing quote as an escaped quote, DuckDB and pandas as the end of the field: readers disagree on it (write fields without a trailing backslash)",
				objPath[f], name, schemas.Clip(value, 64))
		default:
			return fmt.Errorf("file %s has the value %q in column %q, which pandas and pyarrow read as NULL and DuckDB as a value: readers disagree on it (write NULL as an empty field)",
				objPath[f], value, name)
		}
	}
	return nil
}

// blank is the first blank line of a CSV file that readers read
// otherwise (line 0: none).
type blank struct {
	line   int  // 1-based, the header's line being 1
	spaces bool // only spaces or tabs, not empty
}

// blankLines finds the first line of the local CSV file f, outside quoted
// fields, that readers disagree on (TestCSVDialectIsNotSniffed):
//   - an empty or blank first line (after a byte order mark): Spark skips
//     such lines before the header, DuckDB (skip = 0) reads it as the
//     header (TestTablesSparkReadsOtherwiseAreRefused);
//   - a line of only spaces or tabs: pandas and Spark skip it, pyarrow
//     reads it as a row (of one column) or fails (of several), DuckDB
//     reads it as a row;
//   - an empty line in a file whose header names one column: pandas,
//     pyarrow and Spark skip it, DuckDB reads a row whose value is NULL
//     (in a file of several columns all of them skip it).
//
// The empty lines that end the file count too. The whole file is read, in
// one pass over its bytes, decompressed when DuckDB reads it so (.gz,
// .zst); lines end at \n, \r\n or a lone \r.
func blankLines(f string) (blank, error) {
	file, err := os.Open(f)
	if err != nil {
		return blank{}, err
	}
	defer file.Close()
	var in io.Reader = file
	// DuckDB reads a .gz or .zst file decompressed (compression from the
	// extension, as pandas, pyarrow and Spark do): so are its lines here
	// (TestReview12GzippedCSVBlankLinesAreReadDecompressed).
	switch strings.ToLower(filepath.Ext(f)) {
	case ".gz":
		zr, err := gzip.NewReader(file)
		if err != nil {
			return blank{}, fmt.Errorf("gzip: %w", err)
		}
		defer zr.Close()
		in = zr
	case ".zst":
		zr, err := zstd.NewReader(file, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return blank{}, fmt.Errorf("zstd: %w", err)
		}
		defer zr.Close()
		in = zr
	}
	var (
		buf        = make([]byte, 64<<10)
		quoted     bool
		line       = 1
		fields     = 1 // of the header
		lineStart  = true
		onlySpaces = true // the line so far holds only spaces or tabs
		nonEmpty   bool   // and at least one
		first      = true
		start      = true
		cr         bool // the last byte ended a line at \r
	)
	for {
		n, err := in.Read(buf)
		chunk := buf[:n]
		if start && n > 0 {
			chunk, start = bytes.TrimPrefix(chunk, []byte("\ufeff")), false
		}
		for _, c := range chunk {
			if c == '\n' && cr && !quoted {
				cr = false // the second half of \r\n: the line ended at \r
				continue
			}
			cr = false
			switch {
			case c == '"':
				quoted = !quoted
				onlySpaces, lineStart = false, false
			case quoted:
			case c == '\n' || c == '\r':
				// A lone \r ends a line too, to DuckDB, pandas and pyarrow
				// (TestReview12LoneCRLineEndsEndLines).
				cr = c == '\r'
				switch {
				case first && onlySpaces:
					return blank{line: 1}, nil
				case onlySpaces && nonEmpty:
					return blank{line: line, spaces: true}, nil
				case onlySpaces && fields == 1 && !first:
					return blank{line: line}, nil
				}
				first = false
				line++
				lineStart, onlySpaces, nonEmpty = true, true, false
			case c == ' ' || c == '\t':
				nonEmpty, lineStart = true, false
			default:
				if c == ',' && first {
					fields++
				}
				onlySpaces, lineStart = false, false
			}
		}
		switch {
		case errors.Is(err, io.EOF):
			if !lineStart && onlySpaces && nonEmpty && !quoted {
				return blank{line: line, spaces: true}, nil
			}
			return blank{}, nil
		case err != nil:
			return blank{}, err
		}
	}
}

// typedSpelling names the first field of the CSV files that DuckDB reads
// in a type pandas and pyarrow do not infer from it (BOOLEAN, DATE, TIME,
// and BIGINT from text such as 0x10), where the value's text is not the
// field's: they read the field as text, and a check comparing text
// (accepted_values, regex) would judge DuckDB's rendering (t as true,
// 2024/01/02 as 2024-01-02; TestCSVFieldsDuckDBTypesAreTheirText). One
// LIMIT 0 query per file for its types, and one scan of a file that has a
// column of such a type. A file DuckDB cannot read is left for the view.
//
// Under those checks a BOOLEAN, BIGINT or DOUBLE field must be DuckDB's rendering
// of its value too (TRUE is true, " 2" is 2, "1.50" is 1.5): Spark reads a CSV column as
// text unless told to infer (TestTablesSparkReadsOtherwiseAreRefused).
//
// textChecked are the columns (lower case) an accepted_values, regex or
// unique check reads: there an empty field in a column of text, NULL to
// DuckDB and pandas and the empty text to pyarrow (in a file where the
// column is not empty in every row), is refused too: those checks pass
// NULL, or do not count it, while ” is outside the values, does not
// match, or is a duplicate (TestCSVEmptyTextFieldsUnderTextChecks).
//
// JSON lines files (format FormatJSONL) are looked at the same way for the
// types DuckDB takes from JSON strings (DATE, TIME, UUID: 2024-1-2 is
// 2024-01-02 to it, a string to pandas and pyarrow); their empty strings
// are strings to every reader.
//
// A TIMESTAMP column (of either file format) is looked at only where one of
// textChecked's checks reads it: pyarrow types ISO timestamps as DuckDB does
// and pandas keeps the text, so there 2024-01-02T03:04:05, .000 or a zone Z
// (DuckDB's 2024-01-02 03:04:05) is refused (TestTimestampTextUnderTextChecks).
func (r *run) typedSpelling(ctx context.Context, format string, files []string, objPath map[string]string, textChecked map[string]bool) error {
	for _, f := range files {
		rows, err := r.pool().QueryContext(ctx, "SELECT * FROM "+readSQL(format, []string{f})+" LIMIT 0")
		if err != nil {
			if err := r.guardFailed(ctx, format, f, objPath[f], err); err != nil {
				return err
			}
			continue
		}
		types, err := rows.ColumnTypes()
		rows.Close()
		if err != nil {
			return err
		}
		var conds, asText []string
		for _, ct := range types {
			col := quoteIdent(ct.Name())
			asText = append(asText, quoteLiteral(ct.Name())+": 'VARCHAR'")
			typ := ct.DatabaseTypeName()
			if format == FormatJSONL && typ == "JSON" && textChecked[strings.ToLower(ct.Name())] {
				return fmt.Errorf("file %s has values of more than one JSON type (text and numbers, say) in column %q, which DuckDB reads as JSON (text with its quotes) and Spark as text (without them), and an accepted_values, regex or unique check reads the column: readers disagree on it (write the column's values in one JSON type)",
					objPath[f], ct.Name())
			}
			// A timestamp is typed by pyarrow too, so its rendering matters
			// only where a check compares text (TestTimestampTextUnderTextChecks).
			stamp := strings.HasPrefix(typ, "TIMESTAMP") && textChecked[strings.ToLower(ct.Name())]
			if format == FormatJSONL && typ != "DATE" && typ != "TIME" && typ != "UUID" && !stamp {
				continue // the others are JSON's own numbers, booleans and strings
			}
			if stamp {
				conds = append(conds, fmt.Sprintf("SELECT %s AS name, %s AS value, '%s' AS typ FROM raw WHERE %s IS DISTINCT FROM CAST(TRY_CAST(%s AS %s) AS VARCHAR)",
					quoteLiteral(ct.Name()), col, typ, col, col, typ))
				continue
			}
			switch typ {
			case "BOOLEAN": // as pandas and pyarrow infer booleans
				conds = append(conds, fmt.Sprintf("SELECT %s AS name, %s AS value, 'BOOLEAN' AS typ FROM raw WHERE %s NOT IN ('true', 'True', 'TRUE', 'false', 'False', 'FALSE')",
					quoteLiteral(ct.Name()), col, col))
				if textChecked[strings.ToLower(ct.Name())] {
					// Spark reads CSV as text by default: TRUE is not true to it.
					conds = append(conds, fmt.Sprintf("SELECT %s AS name, %s AS value, 'text BOOLEAN' AS typ FROM raw WHERE %s NOT IN ('true', 'false')",
						quoteLiteral(ct.Name()), col, col))
				}
			case "DATE", "TIME", "UUID":
				conds = append(conds, fmt.Sprintf("SELECT %s AS name, %s AS value, '%s' AS typ FROM raw WHERE %s IS DISTINCT FROM CAST(TRY_CAST(%s AS %s) AS VARCHAR)",
					quoteLiteral(ct.Name()), col, typ, col, col, typ))
			case "BIGINT", "DOUBLE":
				if textChecked[strings.ToLower(ct.Name())] {
					// Spark reads CSV as text by default (inferSchema
					// off): a text check must read the field's own text.
					conds = append(conds, fmt.Sprintf("SELECT %s AS name, %s AS value, 'text %s' AS typ FROM raw WHERE %s IS DISTINCT FROM CAST(TRY_CAST(%s AS %s) AS VARCHAR)",
						quoteLiteral(ct.Name()), col, typ, col, col, typ))
				} else if typ == "BIGINT" {
					conds = append(conds, fmt.Sprintf(`SELECT %s AS name, %s AS value, 'BIGINT' AS typ FROM raw WHERE NOT regexp_full_match(%s, '\s*[+-]?[0-9]+\s*')`,
						quoteLiteral(ct.Name()), col, col))
				}
			case "VARCHAR":
				if textChecked[strings.ToLower(ct.Name())] {
					conds = append(conds, fmt.Sprintf("SELECT %s AS name, '' AS value, 'VARCHAR' AS typ FROM (SELECT count(%s) AS n, count(*) - count(%s) AS empty FROM raw) WHERE n > 0 AND empty > 0",
						quoteLiteral(ct.Name()), col, col))
					// A column of numbers DuckDB keeps as text (007 beside
					// 1.0, say) is numbers to Spark's inferSchema and to
					// pandas: a field that is not a number's rendering is
					// another value to them (007 is 7).
					conds = append(conds, fmt.Sprintf("SELECT %s AS name, v AS value, 'NUMBER' AS typ FROM (SELECT count(*) FILTER (WHERE %s IS NOT NULL AND TRY_CAST(%s AS DOUBLE) IS NULL) AS other, "+
						"first(%s) FILTER (WHERE %s IS DISTINCT FROM CAST(TRY_CAST(%s AS BIGINT) AS VARCHAR) AND %s IS DISTINCT FROM CAST(TRY_CAST(%s AS DOUBLE) AS VARCHAR)) AS v FROM raw) WHERE other = 0 AND v IS NOT NULL",
						quoteLiteral(ct.Name()), col, col, col, col, col, col, col))
					// Spark (inferSchema) and pandas read these as a
					// float's infinity: Inf and Infinity are one value.
					conds = append(conds, fmt.Sprintf(`SELECT %s AS name, %s AS value, 'INFINITY' AS typ FROM raw WHERE regexp_full_match(%s, '\s*[+-]?inf(inity)?\s*', 'i')`,
						quoteLiteral(ct.Name()), col, col))
				}
			}
		}
		if len(conds) == 0 {
			continue
		}
		raw := fmt.Sprintf("read_csv(%s, header = true, all_varchar = true%s%s)", literalList([]string{f}), csvDialect, noHive)
		if format == FormatJSONL {
			raw = fmt.Sprintf("read_json(%s, format = 'newline_delimited', columns = {%s}%s%s)", literalList([]string{f}), strings.Join(asText, ", "), jsonRecords, noHive)
		}
		name, value, typ, err := r.typedField(ctx, raw, conds)
		switch {
		case err != nil:
			if err := r.guardFailed(ctx, format, f, objPath[f], err); err != nil {
				return err
			}
		case typ == "":
		case strings.HasPrefix(typ, "text "):
			return fmt.Errorf("file %s has the field %q in column %q, which DuckDB reads as a %s of another text and Spark (its inferSchema off, as by default) as this text, and an accepted_values, regex or unique check reads the column: readers disagree on it (write the value as DuckDB renders it)",
				objPath[f], value, name, strings.TrimPrefix(typ, "text "))
		case typ == "NUMBER":
			return fmt.Errorf("file %s has the field %q in column %q, a column of numbers that DuckDB reads as text and Spark (inferSchema) and pandas as numbers, where this field is another text than its number's, and an accepted_values, regex or unique check reads the column: readers disagree on it (write the numbers as DuckDB renders them)",
				objPath[f], value, name)
		case typ == "INFINITY":
			return fmt.Errorf("file %s has the field %q in column %q of text, which Spark (inferSchema) and pandas read as a float's infinity, and an accepted_values, regex or unique check reads the column: readers disagree on it (write the column as numbers, or without infinity's spellings)",
				objPath[f], value, name)
		case typ == "VARCHAR":
			return fmt.Errorf("file %s has an empty field in column %q of text, which DuckDB and pandas read as NULL and pyarrow as the empty text, and an accepted_values, regex or unique check reads the column: readers disagree on it (write the column without empty fields, or check it otherwise)",
				objPath[f], name)
		default:
			return fmt.Errorf("file %s has the field %q in column %q, which DuckDB reads as a %s of another text and pandas and pyarrow as this text: readers disagree on it (write the value as DuckDB renders it, or the column as text no type takes)",
				objPath[f], value, name, typ)
		}
	}
	return nil
}

// guardBranches is the most branches (conds) of one typedSpelling query:
// DuckDB runs each branch as a scan of its own, and one query of a branch
// per column of a file of 500 columns ran out of 488 MiB
// (TestReview40GuardThatCannotReadAFileRefusesIt).
const guardBranches = 32

// typedField is the first row (name, value, typ) of the conds, queries
// over raw (a read_csv or read_json of one file, every column as text),
// asked guardBranches at a time; typ "" where none has a row.
func (r *run) typedField(ctx context.Context, raw string, conds []string) (name, value, typ string, err error) {
	for chunk := range slices.Chunk(conds, guardBranches) {
		q := fmt.Sprintf("WITH raw AS (SELECT * FROM %s) %s LIMIT 1", raw, strings.Join(chunk, " UNION ALL "))
		err = r.pool().QueryRowContext(ctx, q).Scan(&name, &value, &typ)
		if !errors.Is(err, sql.ErrNoRows) {
			return name, value, typ, err
		}
	}
	return "", "", "", nil
}

// guardFailed is what a reader-fidelity guard does with a file its query
// (err) could not read: a guard that cannot read a file must not pass it,
// or the checks judge DuckDB's reading unseen by it (a NUL in a header
// name, a byte not UTF-8 that only the guard's reading of every column as
// text decodes: TestReview40GuardThatCannotReadAFileRefusesIt). A
// cancelled run and a failure of the machine (out of memory) are returned
// as they are; a file whose own reading by the view's options does not
// bind is left for the view (and columnCollision's listing) to report
// (nil); any other file is refused.
func (r *run) guardFailed(ctx context.Context, format, f, path string, err error) error {
	switch {
	case ctx.Err() != nil:
		return ctx.Err()
	case infrastructure(err):
		return err
	}
	switch ok, berr := r.bindsAlone(ctx, format, f); {
	case berr != nil:
		return berr
	case !ok:
		return nil
	}
	return quote(fmt.Errorf("file %s cannot be read to compare its readers' readings (%s): readers may disagree on it (write UTF-8 text, and header names without NUL)",
		path, schemas.Clip(err.Error(), 256)), err)
}

// textColumns are the columns of each CSV or JSON file as DuckDB reads the
// file alone (its header, its keys), in order: one query per file that
// reads no rows past the sniffer's sample.
func (r *run) textColumns(ctx context.Context, format string, files []string) (map[string][]fileColumn, error) {
	if err := r.ready(ctx); err != nil {
		return nil, err
	}
	out := map[string][]fileColumn{}
	for _, f := range files {
		rows, err := r.pool().QueryContext(ctx, "SELECT * FROM "+readSQL(format, []string{f})+" LIMIT 0")
		if err != nil {
			return nil, err
		}
		names, err := rows.Columns()
		rows.Close()
		if err != nil {
			return nil, err
		}
		for _, n := range names {
			out[f] = append(out[f], fileColumn{name: n})
		}
		if renamedColumns(names) {
			if err := r.writtenNames(ctx, format, f, out[f]); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}

// dedupSuffix is the suffix DuckDB gives a CSV header name or JSON key
// that collides, case ignored, with an earlier one (a and A read as a and
// A_1).
var dedupSuffix = regexp.MustCompile(`_[0-9]+$`)

// renamedColumns reports whether a name of names may be one DuckDB gave
// by dedupSuffix: with the suffix cut off it is, case ignored, another.
func renamedColumns(names []string) bool {
	seen := map[string]bool{}
	for _, n := range names {
		seen[foldName(n)] = true
	}
	for _, n := range names {
		if base := dedupSuffix.ReplaceAllString(n, ""); base != n && seen[foldName(base)] {
			return true
		}
	}
	return false
}

// writtenNames gives the columns cols of the CSV or JSON lines file f
// (DuckDB's names of them) the names the file writes where DuckDB renamed
// one (renamedColumns): caseCollision, given a and A_1, saw no collision
// while a check of A bound to a and pandas reads A's values
// (TestReview40NamesDuckDBRenamesAreRefused). A CSV header is read as a
// row (header = false, the same dialect), its fields matched by position;
// a JSON key DuckDB suffixed is found among the file's keys without its
// suffix, where the suffixed name is not one of them.
func (r *run) writtenNames(ctx context.Context, format, f string, cols []fileColumn) error {
	if format == FormatCSV {
		q := fmt.Sprintf("SELECT * FROM read_csv(%s, header = false, all_varchar = true%s%s) LIMIT 1", literalList([]string{f}), csvDialect, noHive)
		header := make([]sql.NullString, len(cols))
		dst := make([]any, len(cols))
		for i := range header {
			dst[i] = &header[i]
		}
		if err := r.pool().QueryRowContext(ctx, q).Scan(dst...); err != nil {
			return fmt.Errorf("its header: %w", err)
		}
		for i, h := range header {
			if h.Valid && h.String != "" {
				cols[i].name = h.String
			}
		}
		return nil
	}
	q := fmt.Sprintf("SELECT DISTINCT unnest(json_keys(json)) FROM read_json_objects(%s, format = 'newline_delimited'%s)", literalList([]string{f}), noHive)
	rows, err := r.pool().QueryContext(ctx, q)
	if err != nil {
		return fmt.Errorf("its keys: %w", err)
	}
	defer rows.Close()
	keys := map[string]bool{}
	for rows.Next() {
		var k string
		if err := rows.Scan(&k); err != nil {
			return fmt.Errorf("its keys: %w", err)
		}
		keys[k] = true
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("its keys: %w", err)
	}
	for i, c := range cols {
		if base := dedupSuffix.ReplaceAllString(c.name, ""); !keys[c.name] && keys[base] {
			cols[i].name = base
		}
	}
	return nil
}

// caseCollision names the first column of a view's files whose name
// collides, when case is ignored, with another column of the same file,
// with the table's spelling of it (table: the names a Delta log declares,
// else the spelling the first file uses), or with a partition column.
func caseCollision(names map[string][]fileColumn, order []string, objPath map[string]string, table, partitions []string, nested map[string][]string) error {
	spelling := map[string]string{}
	for _, n := range table {
		spelling[foldName(n)] = n
	}
	parts := map[string]string{}
	for _, p := range partitions {
		parts[foldName(p)] = p
	}
	for _, f := range order {
		seen := map[string]string{}
		for _, c := range names[f] {
			low := foldName(c.name)
			if other, ok := seen[low]; ok {
				return fmt.Errorf("file %s has columns %q and %q, which differ only in case: readers disagree on them", objPath[f], other, c.name)
			}
			seen[low] = c.name
			// DuckDB reads a struct's fields s.a and s.A as s.a and s.A_1
			// and binds s.A to s.a: the claims of one would be compared
			// with the other's data.
			fields := map[string]string{}
			for _, ch := range c.children {
				if other, ok := fields[foldName(ch)]; ok {
					return fmt.Errorf("file %s has fields %q and %q of column %q, which differ only in case: readers disagree on them (DuckDB reads the second as %s_1)", objPath[f], other, ch, c.name, ch)
				}
				fields[foldName(ch)] = ch
			}
			if p, ok := parts[low]; ok {
				return fmt.Errorf("file %s has a column %q, and %q is a partition column of the table: readers disagree on it", objPath[f], c.name, p)
			}
			want, ok := spelling[low]
			switch {
			case !ok:
				spelling[low] = c.name
			case want != c.name && asciiLower(want) != asciiLower(c.name):
				// DuckDB folds ASCII letters only: ä is not Ä to it.
				return fmt.Errorf("file %s has a column %q, which the table spells %q: readers disagree on it (Spark takes them as one column, DuckDB and pyarrow as two)", objPath[f], c.name, want)
			case want != c.name:
				return fmt.Errorf("file %s has a column %q, which the table spells %q: readers disagree on it (DuckDB takes them as one column, pyarrow and Delta readers as two)", objPath[f], c.name, want)
			}
		}
		if col, got, want := fieldCase(names[f], nested); col != "" {
			return fmt.Errorf("data file %s has field %q of column %q, which the log's schema spells %q: DuckDB reads it as that field, Delta readers read NULL for it (readers disagree)", objPath[f], got, col, want)
		}
	}
	return nil
}

// asciiLower is name with its ASCII letters lowered, as DuckDB matches
// identifiers: KΣ with the Kelvin sign, and Ä, are other names than kΣ
// and ä to it (Binder Error: column "ä" not found, beside Ä).
func asciiLower(name string) string {
	return strings.Map(func(r rune) rune {
		if 'A' <= r && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}, name)
}

// foldName is a column name as readers that ignore case compare it: lower
// case, and the Greek final sigma as sigma. Spark (caseSensitive false)
// lowers names with Java's String.toLowerCase, which writes a capital
// sigma ending a word as the final sigma: ΑΣ and ας were one column to
// PySpark 4.3.0, two to DuckDB and to Go's strings.ToLower (ασ)
// (TestColumnsSparkFoldsAsOneAreRefused).
func foldName(name string) string {
	return strings.ReplaceAll(strings.ToLower(name), "ς", "σ")
}

// errUnlisted is a file DuckDB reads but whose columns it cannot list:
// readers may disagree on them, and the table is refused.
type errUnlisted struct {
	file string
	err  error
}

func (e errUnlisted) Error() string { return e.file + ": " + e.err.Error() }

// int96Range names the first file of a Parquet (or Delta) table with a
// top-level INT96 column holding a time pyarrow's default reading cannot
// hold: pyarrow and pandas read INT96 in nanoseconds, and a time before
// 1677-09-21 or after 2262-04-11 wraps around (1500-01-01 reads as
// 2084-07-20), while DuckDB reads it as written. A freshness check passed
// on rows pandas reads as dated in the future (TestInt96OutsidePandasRangeIsRefused).
// One scan of such a file's INT96 columns; a file that passed is kept in
// the memo by its identity. A file DuckDB reads whose scan fails is
// refused: pyarrow 26.0.1 reads an INT96 column compressed by the legacy
// LZ4 codec, DuckDB 1.5 fails on it (Unsupported compression codec) while
// a check of another column reads the file, and a time pandas wraps passed
// unseen (TestReview42Int96GuardThatCannotScanAFileRefusesIt).
func (r *run) int96Range(ctx context.Context, cols map[string][]fileColumn, files []string, objPath, ids map[string]string) error {
	for _, f := range files {
		var names, conds, nested []string
		for _, c := range cols[f] {
			if c.int96 {
				q := quoteIdent(c.name)
				names = append(names, c.name)
				conds = append(conds, fmt.Sprintf("count(*) FILTER (WHERE %s < TIMESTAMP '1677-09-21 00:12:43.145225' OR %s > TIMESTAMP '2262-04-11 23:47:16.854775')", q, q))
			}
			if c.int96Nested {
				nested = append(nested, c.name)
			}
		}
		if len(conds) > 0 {
			err := r.guardScan(ctx, "int96", f, ids, conds, func(err error) error {
				return fmt.Errorf("file %s: column %q is of INT96 times, which pyarrow and pandas read in nanoseconds, wrapping around those before 1677-09-21 or after 2262-04-11, and lakewap could not look for such times (%v): readers may disagree on them (write the column as TIMESTAMP_MICROS)",
					objPath[f], names[0], schemas.Clip(err.Error(), 256))
			}, func(i int, n int64) error {
				return fmt.Errorf("file %s has %d INT96 times in column %q before 1677-09-21 or after 2262-04-11, which pyarrow and pandas read in nanoseconds, wrapped around to other times, and DuckDB as written: readers disagree on them (write the column as TIMESTAMP_MICROS)",
					objPath[f], n, names[i])
			})
			if err != nil {
				return err
			}
			if err := r.int96Days(ctx, f, names, false, objPath, ids); err != nil {
				return err
			}
		}
		// INT96 leaves inside structs, lists and maps: pyarrow and pandas
		// wrap them as they do top-level ones, DuckDB and Spark read them
		// as written (TestReview55NestedInt96OutsidePandasRangeIsRefused).
		if len(nested) > 0 {
			if err := r.int96Days(ctx, f, nested, true, objPath, ids); err != nil {
				return err
			}
		}
	}
	return nil
}

// fileScan is one scan of a Parquet file counting the rows that match each
// of a reader check's conditions (scanFile).
type fileScan struct {
	counts []int64 // by condition
	seen   bool    // the memo holds the file as passed: not scanned
	err    error   // the scan's error: the caller decides
	key    [32]byte
	keyed  bool
}

// scanFile counts the rows of Parquet file f matching each of conds
// ("count(*) FILTER (WHERE ...)"), unless the memo holds the file, by its
// identity in ids, as passed the check named tag. The returned error is
// the run's (not ready, or ctx ended); the scan's own is s.err.
func (r *run) scanFile(ctx context.Context, tag, f string, ids map[string]string, conds []string) (s fileScan, err error) {
	if id := ids[f]; id != "" && r.e.memo != nil {
		s.key, s.keyed = memoKey(tag, id), true
		if _, ok := r.e.memo.get(s.key); ok {
			s.seen = true
			return s, nil
		}
	}
	if err := r.ready(ctx); err != nil {
		return s, err
	}
	s.counts = make([]int64, len(conds))
	ptrs := make([]any, len(conds))
	for i := range s.counts {
		ptrs[i] = &s.counts[i]
	}
	q := fmt.Sprintf("SELECT %s FROM %s", strings.Join(conds, ", "), readSQL(FormatParquet, []string{f}))
	serr := r.pool().QueryRowContext(ctx, q).Scan(ptrs...)
	if r.e.scanFault != nil && serr == nil {
		serr = r.e.scanFault(tag)
	}
	if serr != nil {
		if ctx.Err() != nil {
			return s, ctx.Err()
		}
		s.err = serr
	}
	return s, nil
}

// guardScan is a reader guard's scan of Parquet file f (scanFile): nil
// when the memo holds the file as passed, or no row matches a condition
// (then the memo keeps it); found's error for the first condition some
// rows match (i, their count); cannot's for a scan that failed on a file
// DuckDB reads on its own (one it cannot read is left for the view, which
// reports why). A scan that failed for the run's sake (ctx ended, the
// machine failed: infrastructure) returns that error as it is.
func (r *run) guardScan(ctx context.Context, tag, f string, ids map[string]string, conds []string,
	cannot func(err error) error, found func(i int, n int64) error) error {
	s, err := r.scanFile(ctx, tag, f, ids, conds)
	switch {
	case err != nil:
		return err
	case s.seen:
		return nil
	case s.err != nil:
		// A failure of the machine ends the run as one (errclass.go),
		// not as a verdict on the file.
		if infrastructure(s.err) {
			return s.err
		}
		switch ok, err := r.bindsAlone(ctx, FormatParquet, f); {
		case err != nil:
			return err
		case !ok:
			return nil
		}
		return quote(cannot(s.err), s.err)
	}
	for i, n := range s.counts {
		if n > 0 {
			return found(i, n)
		}
	}
	s.passed(r)
	return nil
}

// passed keeps the file of s in the memo as passed its check.
func (s fileScan) passed(r *run) {
	if s.keyed {
		r.e.memo.put(s.key, true, 48)
	}
}
