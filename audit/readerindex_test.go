package audit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// duckdbIndexedRows: every type DuckDB writes a dictionary (and so a bloom
// filter) for, NULLs, nested leaves, several row groups.
const duckdbIndexedRows = `SELECT i::BIGINT AS id, (i % 300 - 150)::INTEGER AS i32, (i % 7)::TINYINT AS i8, (i % 60000)::USMALLINT AS u16,
	(i % 1000)::UBIGINT AS u64, CASE WHEN i % 7 = 3 THEN NULL ELSE 'v' || (i % 20) END AS low,
	CASE WHEN i % 11 = 0 THEN NULL ELSE 'tëxt-' || (i * 7919 % 5000) END AS text,
	((i % 100) / 8 - 4)::DOUBLE AS f64, ((i % 50) / 4)::FLOAT AS f32,
	DATE '2020-01-01' + (i % 900)::INTEGER AS d, TIMESTAMP '2024-01-01' + to_seconds((i % 500) * 37) AS ts,
	(i % 2000 / 100)::DECIMAL(10, 2) AS dec4, (i % 2000 / 100)::DECIMAL(18, 3) AS dec8, (i % 2000 / 100)::DECIMAL(30, 3) AS dec16,
	('\x01\x02'::BLOB || (i % 40)::VARCHAR::BLOB) AS bin, uuid_extract_version(gen_random_uuid()) AS uv,
	('00000000-0000-0000-0000-' || lpad((i % 30)::VARCHAR, 12, '0'))::UUID AS u,
	{'a': 'x' || (i % 9), 'b': CASE WHEN i % 5 = 0 THEN NULL ELSE i % 13 END} AS st,
	CASE WHEN i % 4 = 0 THEN NULL ELSE ['l' || (i % 6), NULL, 'm'] END AS li,
	i % 3 = 0 AS flag, (i % 17)::VARCHAR::ENUM('0','1','2','3','4','5','6','7','8','9','10','11','12','13','14','15','16') AS en
	FROM range(0, 10000) r(i)`

// honestIndexes checks the bloom filters and page indexes of the Parquet
// file f and returns how many bloom filters it checked and how many pages
// it compared with their ColumnIndex.
func honestIndexes(t *testing.T, e *Engine, f string) (blooms, pages int) {
	t.Helper()
	ft, err := readFooter(f)
	if err != nil {
		t.Fatalf("%s: %v", f, err)
	}
	for _, c := range ft.chunks {
		if c.bloomOffset >= 0 {
			blooms++
		}
	}
	claims, err := checkReaderIndexes(context.Background(), f, ft.chunks)
	if err == nil {
		err = (&run{e: e}).columnIndexDisagreement(context.Background(), f, ft.chunks, claims)
	}
	if err != nil {
		t.Errorf("%s: an honest file refused: %v", filepath.Base(f), err)
	}
	return blooms, len(claims)
}

// TestHonestBloomFiltersPass: the bloom filters DuckDB writes (each
// dictionary-encoded chunk, every codec, V1 and V2 pages, nested leaves)
// pass readerIndexes, and a table of them passes an audit.
func TestHonestBloomFiltersPass(t *testing.T) {
	src := newBatchSource(t)
	e := newEngine(t, src, "")
	for _, codec := range []string{"snappy", "zstd", "gzip", "uncompressed", "lz4", "brotli"} {
		for _, v := range []string{"V1", "V2"} {
			name := fmt.Sprintf("t/%s_%s.parquet", codec, v)
			dst := filepath.Join(src.root, "b1", filepath.FromSlash(name))
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				t.Fatal(err)
			}
			copySQL(t, fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet, COMPRESSION %s, PARQUET_VERSION %s, ROW_GROUP_SIZE 3000)", duckdbIndexedRows, quoteLiteral(dst), codec, v))
			if n, _ := honestIndexes(t, e, dst); n < 3*11 { // three row groups, eleven dictionary-encoded leaves or more
				t.Errorf("%s: %d bloom filters checked", name, n)
			}
		}
	}
	rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{
			{Name: "rows", Kind: KindRowCount, Table: "t", Min: f64(1)},
			{Name: "nn", Kind: KindNotNull, Table: "t", Column: "id"}}}})
	if err != nil || !rep.Passed {
		t.Fatalf("honest DuckDB files: %v %s", err, checkMessages(rep))
	}
}

// TestHonestPyArrowBloomFiltersPass: the bloom filters and page indexes
// pyarrow writes when asked, and the page statistics it writes by default
// (testdata/pyarrow_indexes.py: every column, dictionary and PLAIN pages, a
// dictionary's fallback to PLAIN, V2 pages, every codec, structs, lists,
// times) pass readerIndexes.
func TestHonestPyArrowBloomFiltersPass(t *testing.T) {
	if testing.Short() {
		t.Skip("runs pyarrow in Python; skipped with -short")
	}
	python, err := testPython()
	if err != nil {
		t.Skipf("skipped: %v; scripts/pyenv.sh installs pyarrow (./test.sh runs it)", err)
	}
	e := newEngine(t, newDirSource(t), "")
	dir := filepath.Join(e.dir, "pyarrow") // where the engine's DuckDB reads
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, filepath.Join("testdata", "pyarrow_indexes.py"), dir)
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pyarrow_indexes.py: %v\n%s", err, out)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if err != nil || len(files) < 10 {
		t.Fatal(err, files)
	}
	for _, f := range files {
		// Three row groups of twelve columns with a bloom filter (all but
		// the BOOLEAN one).
		name := strings.TrimSuffix(filepath.Base(f), ".parquet")
		n, pages := honestIndexes(t, e, f)
		want := 3 * 12
		if name == "defaults" {
			want = 0
		}
		if n != want || pages == 0 {
			t.Errorf("%s: %d bloom filters checked, want %d; %d pages compared", name, n, want, pages)
		}
		if strings.HasPrefix(name, "page_index") && pages < 3*17 { // every leaf but the list's, each page
			t.Errorf("%s: %d pages compared with their column index", name, pages)
		}
		t.Logf("%s: %d bloom filters, %d pages compared", name, n, pages)
	}
}
