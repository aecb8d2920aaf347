package audit

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestFirstAuditReadsFootersInGo: the first audit of a batch of one
// Parquet file learns its columns (columnCollision) from its footer in
// Go, with no parquet_schema statement on DuckDB; it ran one before the
// Go reader (the test failed so), and the report is the one the engine
// that reads them with DuckDB gives (fuseRig compares).
func TestFirstAuditReadsFootersInGo(t *testing.T) {
	r := newFuseRig(t)
	rep, fused, single := r.audit(r.batch("b0", demoRows(200)))
	if !rep.Passed {
		t.Fatalf("want a pass: %+v", rep.Checks)
	}
	for _, ran := range [][]string{fused, single} {
		for _, q := range ran {
			if strings.Contains(q, "parquet_schema") {
				t.Fatalf("the first audit ran %s", q)
			}
		}
	}
}

// footerEngine is an engine whose DuckDB reads files under its dir.
func footerEngine(t *testing.T) *Engine {
	t.Helper()
	e, err := New(Options{Source: newDirSource(t), WorkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// duckSchema is parquet_schema's listing of each of files, as
// parquetColumns asks it.
func duckSchema(db *sql.DB, files []string) (map[string][]schemaNode, error) {
	rows, err := db.Query("SELECT file_name, name, coalesce(num_children, 0), coalesce(num_children, 0) = 0 AND coalesce(type = 'INT96', false) FROM parquet_schema(" + literalList(files) + ")")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string][]schemaNode{}
	for rows.Next() {
		var f string
		var n schemaNode
		if err := rows.Scan(&f, &n.name, &n.children, &n.int96); err != nil {
			return nil, err
		}
		out[f] = append(out[f], n)
	}
	return out, rows.Err()
}

// footerCorpus writes Parquet files with DuckDB (and, with the Python
// venv, pyarrow) into dir and returns them, and the names of those the Go
// reader must give to DuckDB.
func footerCorpus(t *testing.T, dir string) (files []string, fallback map[string]bool) {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	duck := map[string]string{
		"flat":      `SELECT 1 AS a, 'x' AS b, 2.5::DOUBLE AS c`,
		"struct":    `SELECT {'x': 1, 'y': {'z': 'q', 'w': [1, 2]}} AS s, 3 AS after`,
		"map":       `SELECT MAP {'k': 1} AS m, MAP {1: {'a': 2}} AS m2`,
		"list":      `SELECT [1, 2] AS l, [{'a': 1, 'b': [[1]]}] AS ls, [1, 2, 3]::INTEGER[3] AS arr`,
		"case":      `SELECT {'v': 1} AS s, 1 AS "Billing_ID"`,
		"case2":     `SELECT {'V': 1} AS "S", 1 AS billing_id`,
		"unicode":   `SELECT 1 AS "名前", 2 AS "ünïcödé", 3 AS "emoji_🦆", 4 AS "sp ace.dot""quote'", 5 AS "` + strings.Repeat("long", 200) + `"`,
		"empty":     `SELECT 1 AS a, {'x': 'y'} AS s WHERE false`,
		"types":     `SELECT 1::HUGEINT AS h, 1::UHUGEINT AS uh, 1.5::DECIMAL(38, 4) AS d, 1.5::DECIMAL(4, 1) AS d4, now() AS ts, now()::TIMESTAMP_NS AS tsn, '12:00'::TIME AS tm, '12:00:00+01'::TIMETZ AS tmz, DATE '2026-01-01' AS dt, INTERVAL 1 DAY AS iv, uuid() AS u, 'x'::BLOB AS bl, '{"a":1}'::JSON AS j, '101'::BIT AS bit, 'a'::ENUM('a', 'b') AS e, union_value(n := 1)::UNION(n INTEGER, s VARCHAR) AS un, 1::UTINYINT AS ut, true AS bo, 1::FLOAT AS f`,
		"rowgroups": `SELECT i, i::VARCHAR AS s, {'k': i} AS st FROM range(20000) t(i)`,
	}
	opts := map[string]string{
		"rowgroups": ", ROW_GROUP_SIZE 1000, COMPRESSION zstd, PARQUET_VERSION V2, KV_METADATA {origin: 'test', n: 'x'}",
	}
	var many []string
	for i := range 600 {
		many = append(many, fmt.Sprintf("%d AS c%d", i, i))
	}
	duck["many"] = "SELECT " + strings.Join(many, ", ")
	for name, q := range duck {
		f := filepath.Join(dir, "duck_"+name+".parquet")
		if _, err := db.Exec(fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet%s)", q, quoteLiteral(f), opts[name])); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		files = append(files, f)
	}
	fallback = map[string]bool{}
	python, err := testPython()
	if err != nil {
		t.Logf("no pyarrow files: %v", err)
	} else {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		script, err := filepath.Abs(filepath.Join("testdata", "pyarrow_footers.py"))
		if err != nil {
			t.Fatal(err)
		}
		pyDir := filepath.Join(dir, "pyarrow")
		if err := os.Mkdir(pyDir, 0o755); err != nil {
			t.Fatal(err)
		}
		cmd := exec.CommandContext(ctx, python, script, pyDir)
		cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("pyarrow_footers.py: %v\n%s", err, out)
		}
		py, err := filepath.Glob(filepath.Join(pyDir, "*.parquet"))
		if err != nil || len(py) < 10 {
			t.Fatalf("pyarrow wrote %d files: %v", len(py), err)
		}
		files = append(files, py...)
		// Two columns named a: which one a reader takes is its own choice.
		fallback[filepath.Join(pyDir, "duplicate.parquet")] = true
	}
	slices.Sort(files)
	return files, fallback
}

// TestFooterSchemaDifferential: for files DuckDB and pyarrow write (nested
// structs, maps, lists, case-colliding, unicode and long names, empty
// files, many columns, many row groups, writer options), the Go reading
// of the footer is parquet_schema's, element by element; the one file it
// gives up on (two columns of one name) still gets parquet_schema's
// columns from parquetColumns.
func TestFooterSchemaDifferential(t *testing.T) {
	e := footerEngine(t)
	files, fallback := footerCorpus(t, e.dir)
	want, err := duckSchema(e.duckDB(), files)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		got, err := footerSchema(f)
		switch {
		case fallback[f]:
			if !errors.Is(err, errFooter) {
				t.Errorf("%s: read in Go (%v, %v), want DuckDB to read it", filepath.Base(f), got, err)
			}
		case err != nil:
			t.Errorf("%s: %v", filepath.Base(f), err)
		case !reflect.DeepEqual(got, want[f]):
			t.Errorf("%s: Go reads\n%v\nparquet_schema\n%v", filepath.Base(f), got, want[f])
		}
	}
	r := &run{e: e}
	cols, err := r.parquetColumns(context.Background(), files)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		for i := range cols[f] {
			if l := cols[f][i].legacyList; l != "" {
				t.Errorf("%s: column %q holds an old list layout (%s) by markLegacyLists, which DuckDB's and pyarrow's lists, maps and structs are not", filepath.Base(f), cols[f][i].name, l)
			}
			// The Go reading's own (markText, markTemporal,
			// markLegacyLists, markHalf, markSparkInts, markUnion): not
			// parquet_schema's listing.
			cols[f][i].typed, cols[f][i].temporal, cols[f][i].legacyList, cols[f][i].half, cols[f][i].noRows = "", false, "", false, false
			cols[f][i].union, cols[f][i].width, cols[f][i].unionLeaves, cols[f][i].unionOver = "", "", nil, false
			cols[f][i].sparkInts, cols[f][i].sparkIntsOver = nil, false
		}
		if w := schemaColumns(want[f]); !reflect.DeepEqual(cols[f], w) {
			t.Errorf("%s: parquetColumns %v, want %v", filepath.Base(f), cols[f], w)
		}
	}
	t.Logf("%d files, %d given to DuckDB", len(files), len(fallback))
}

// footerOf is the FileMetaData bytes of a Parquet file.
func footerOf(t testing.TB, b []byte) []byte {
	t.Helper()
	n := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
	return b[len(b)-8-n : len(b)-8]
}

// withFooter is file b with its FileMetaData replaced by meta.
func withFooter(t testing.TB, b, meta []byte) []byte {
	old := footerOf(t, b)
	out := slices.Clone(b[:len(b)-8-len(old)])
	out = append(out, meta...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(meta)))
	return append(out, "PAR1"...)
}

// TestFooterSchemaCorrupted: truncated and corrupted footers (every
// truncation, random byte changes, insertions and deletions) never panic
// or loop, and whatever the Go reader takes, parquet_schema reads the same
// or refuses the file; a footer the Go reader does not take goes to
// parquet_schema through parquetColumns, whose error is DuckDB's.
func TestFooterSchemaCorrupted(t *testing.T) {
	e := footerEngine(t)
	dir := e.dir
	src := filepath.Join(dir, "src.parquet")
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`COPY (SELECT i AS a, {'x': i, 'Y': [i]} AS s, MAP {'k': i} AS m FROM range(3000) t(i)) TO ` + quoteLiteral(src) + ` (FORMAT parquet, ROW_GROUP_SIZE 1000)`); err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	meta := footerOf(t, orig)
	for n := range len(meta) {
		if _, err := decodeFooterSchema(meta[:n]); !errors.Is(err, errFooter) {
			t.Fatalf("the footer cut at %d of %d bytes read: %v", n, len(meta), err)
		}
	}
	rnd := rand.New(rand.NewSource(1))
	var mutants [][]byte
	for range 1500 {
		m := slices.Clone(meta)
		for range 1 + rnd.Intn(3) {
			i := rnd.Intn(len(m))
			switch rnd.Intn(3) {
			case 0:
				m[i] = byte(rnd.Intn(256))
			case 1:
				m = slices.Insert(m, i, byte(rnd.Intn(256)))
			default:
				m = slices.Delete(m, i, i+1)
			}
		}
		mutants = append(mutants, m)
	}
	taken, agreed, refused := 0, 0, 0
	for i, m := range mutants {
		f := filepath.Join(dir, fmt.Sprintf("m%03d.parquet", i))
		if err := os.WriteFile(f, withFooter(t, orig, m), 0o644); err != nil {
			t.Fatal(err)
		}
		got, gerr := footerSchema(f)
		want, derr := duckSchema(e.duckDB(), []string{f})
		switch {
		case gerr != nil && !errors.Is(gerr, errFooter):
			t.Fatalf("mutant %d: %v", i, gerr)
		case gerr != nil:
		case derr != nil:
			taken++
			refused++
			t.Errorf("mutant %d: Go reads %v, DuckDB refuses: %v", i, got, derr)
		default:
			taken++
			if !reflect.DeepEqual(got, want[f]) {
				t.Errorf("mutant %d: Go reads\n%v\nparquet_schema\n%v", i, got, want[f])
			}
			agreed++
		}
		if gerr != nil {
			// parquetColumns gives it to DuckDB: its error, or its columns.
			cols, err := (&run{e: e}).parquetColumns(context.Background(), []string{f})
			if (err != nil) != (derr != nil) || (err == nil && !reflect.DeepEqual(cols[f], schemaColumns(want[f]))) {
				t.Errorf("mutant %d: parquetColumns %v %v, parquet_schema %v %v", i, cols, err, want, derr)
			}
		}
	}
	t.Logf("%d mutants: %d read in Go (%d as parquet_schema, %d parquet_schema refuses)", len(mutants), taken, agreed, refused)
}

// TestFooterSchemaBounds: a footer over the reader's bounds, encrypted, or
// in a file too short for its length, goes to DuckDB.
func TestFooterSchemaBounds(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	tail := func(n uint32, magic string) []byte {
		return append(binary.LittleEndian.AppendUint32(nil, n), magic...)
	}
	// A schema of footerMaxElements leaves under one root.
	leaves := footerMaxElements
	big := []byte{0x15, 0x02, 0x19, 0xfc}             // version 1; schema: a list of structs
	big = binary.AppendUvarint(big, uint64(leaves+1)) // of leaves+1 elements:
	big = append(big, 0x48, 0x01, 'r', 0x15)          // the root, with
	big = binary.AppendUvarint(big, uint64(2*leaves)) // leaves children,
	big = append(big, 0x00)                           //
	for range leaves {                                // and the leaves:
		big = append(big, 0x15, 0x02, 0x38, 0x01, 'c', 0x00) // type INT32, name c
	}
	big = append(big, 0x16, 0x00, 0x19, 0x0c, 0x00) // num_rows 0, no row groups
	if _, err := decodeFooterSchema(big); !errors.Is(err, errFooter) || !strings.Contains(err.Error(), "schema list of") {
		t.Errorf("%d schema elements: %v", leaves+1, err)
	}
	cases := map[string]string{
		"short":     write("short.parquet", []byte("PAR1PAR1")),
		"no_magic":  write("no_magic.parquet", append([]byte("PAR1xxxx"), tail(4, "PAR2")...)),
		"encrypted": write("encrypted.parquet", append([]byte("PAR1xxxx"), tail(4, "PARE")...)),
		"too_long":  write("too_long.parquet", append([]byte("PAR1xxxx"), tail(5, "PAR1")...)),
		"zero":      write("zero.parquet", append([]byte("PAR1xxxx"), tail(0, "PAR1")...)),
		"huge":      write("huge.parquet", append(append([]byte("PAR1"), make([]byte, footerMaxBytes+1)...), tail(footerMaxBytes+1, "PAR1")...)),
		"elements":  write("elements.parquet", append(append([]byte("PAR1"), big...), tail(uint32(len(big)), "PAR1")...)),
		"glob":      write("glob[1].parquet", []byte("PAR1")),
		"relative":  "x.parquet",
		"missing":   filepath.Join(dir, "missing.parquet"),
	}
	for name, f := range cases {
		if _, err := footerSchema(f); !errors.Is(err, errFooter) {
			t.Errorf("%s: %v, want errFooter", name, err)
		}
	}
	// The name bound.
	long := []byte{0x15, 0x02, 0x19, 0x1c, 0x48} // version 1; schema: one element, its name
	long = binary.AppendUvarint(long, footerMaxName+1)
	long = append(long, bytes.Repeat([]byte("n"), footerMaxName+1)...)
	if _, err := decodeFooterSchema(append(long, 0, 0)); !errors.Is(err, errFooter) || !strings.Contains(err.Error(), "binary of") {
		t.Errorf("a long name: %v", err)
	}
}

// FuzzFooterSchema: no footer makes the Go reader panic or loop; one it
// takes is a schema tree.
func FuzzFooterSchema(f *testing.F) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	dir := f.TempDir()
	for i, q := range []string{`SELECT 1 AS a`, `SELECT {'x': [1], 'y': MAP {'k': 2}} AS s, 'v' AS "V"`} {
		p := filepath.Join(dir, fmt.Sprintf("%d.parquet", i))
		if _, err := db.Exec(fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet)", q, quoteLiteral(p))); err != nil {
			f.Fatal(err)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(footerOf(f, b))
	}
	f.Fuzz(func(t *testing.T, meta []byte) {
		nodes, err := decodeFooterSchema(meta)
		if err != nil {
			if !errors.Is(err, errFooter) {
				t.Fatal(err)
			}
			return
		}
		if err := checkSchemaTree(nodes); err != nil {
			t.Fatal(err)
		}
		schemaColumns(nodes)
	})
}

// BenchmarkParquetColumns: a 100-row file's columns (parquetColumns), from
// its footer in Go and with parquet_schema on the engine's DuckDB.
func BenchmarkParquetColumns(b *testing.B) {
	src := &dirSource{root: b.TempDir(), downloads: map[string]int{}, sums: map[string]string{}}
	e, err := New(Options{Source: src, WorkDir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	f := filepath.Join(e.dir, "demo.parquet")
	copySQL(b, fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet)", demoRows(0), quoteLiteral(f)))
	r := &run{e: e}
	b.Run("go", func(b *testing.B) {
		for b.Loop() {
			if cols, err := r.parquetColumns(context.Background(), []string{f}); err != nil || len(cols[f]) != 4 {
				b.Fatal(err, cols)
			}
		}
	})
	b.Run("duckdb", func(b *testing.B) {
		for b.Loop() {
			if nodes, err := duckSchema(e.duckDB(), []string{f}); err != nil || len(nodes[f]) != 5 {
				b.Fatal(err, nodes)
			}
		}
	})
}
