package audit

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// Readers of main skip data by what a Parquet file says of it besides its
// row-group statistics: DuckDB (1.5.6 here, and 2.0) skips a row group
// whose split-block bloom filter says an equality's constant is absent.
// The writer of a file controls its bloom filters: one whose bits are
// cleared passes every check that reads the file whole, and a reader of
// main running WHERE s = 'v7' reads none of the rows the audit read.

// writeForgedBloom writes a DuckDB Parquet file of 3000 rows (one row
// group; s and k dictionary-encoded, so with bloom filters) at ref/path,
// and clears the bits of the bloom filter of column col. It returns the
// file's local path.
func writeForgedBloom(t *testing.T, src *dirSource, ref, path, col string) string {
	t.Helper()
	src.write(t, ref, path, "SELECT i::BIGINT AS id, 'v' || (i % 50) AS s, (i % 40)::INTEGER AS k FROM range(0, 3000) r(i)")
	f := filepath.Join(src.root, ref, filepath.FromSlash(path))
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var off, n int64
	if err := db.QueryRow("SELECT bloom_filter_offset, bloom_filter_length FROM parquet_metadata(?) WHERE path_in_schema = ? AND row_group_id = 0", f, col).Scan(&off, &n); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	// The bitset is the filter's last power of two bytes (32 or more); its
	// Thrift header the bytes before.
	size := int64(32)
	for size*2 <= n {
		size *= 2
	}
	clear(b[off+n-size : off+n])
	if err := os.WriteFile(f, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var skipped, read int
	cond := map[string]string{"s": "s = 'v7'", "k": "k = 7"}[col]
	if err := db.QueryRow("SELECT count(*) FROM read_parquet(?) WHERE "+cond, f).Scan(&skipped); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow("SELECT count(*) FILTER (WHERE "+cond+") FROM read_parquet(?)", f).Scan(&read); err != nil {
		t.Fatal(err)
	}
	if skipped != 0 || read == 0 {
		t.Fatalf("the forged filter: DuckDB reads %d rows WHERE %s, %d in a full scan; want 0 and more", skipped, cond, read)
	}
	return f
}

// TestForgedBloomFilterIsRefused: a file whose bloom filter excludes a
// value its rows hold is refused, naming the file, the row group and the
// column; the checks read it whole and pass it otherwise.
func TestForgedBloomFilterIsRefused(t *testing.T) {
	for _, col := range []string{"s", "k"} {
		src := newDirSource(t)
		if err := os.MkdirAll(filepath.Join(src.root, "main"), 0o755); err != nil {
			t.Fatal(err)
		}
		writeForgedBloom(t, src, "b1", "t/part-0.parquet", col)
		for _, cache := range []string{"", filepath.Join(t.TempDir(), "cache")} {
			e := newEngine(t, src, cache)
			for range 2 { // the second run of an engine with a cache may take the memo
				rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
					Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{
						{Name: "rows", Kind: KindRowCount, Table: "t", Min: f64(1)},
						{Name: "nn", Kind: KindNotNull, Table: "t", Column: col}}}})
				if err != nil {
					t.Fatal(err)
				}
				msg := checkMessages(rep)
				if rep.Passed || !strings.Contains(msg, "t/part-0.parquet") || !strings.Contains(msg, "row group 0") || !strings.Contains(msg, `column "`+col+`"`) || !strings.Contains(msg, "bloom filter") {
					t.Errorf("column %s, cache %v: passed %v (%s), want refused naming the file, row group 0, the column and its bloom filter", col, cache != "", rep.Passed, msg)
				}
			}
		}
	}
}

func checkMessages(rep schemas.AuditReport) string {
	var s []string
	for _, c := range rep.Checks {
		s = append(s, c.Name+": "+c.Status+" "+c.Message)
	}
	return strings.Join(s, "; ")
}
