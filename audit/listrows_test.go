package audit

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRowCountsOfListOnlyFilesAreCountedFromTheirPages: a file whose only
// columns are lists or maps has no flat column whose values count its
// rows. Its footer claimed 5 rows (num_rows of the file and of its one row
// group) where its pages hold 3 records (repetition levels of 0): DuckDB's
// count(*) (and pyarrow's count_rows) give the claim, 5, without reading
// the pages; pyarrow's read_table and pandas read 3 (deltalake's and
// Spark 4.3.0 read 5 rows: the 3 and two empty lists it made up). The
// audit passed row_count of 5. A claim of 2 is read as 2 by all of them,
// the third record dropped; it is refused alike (the footer says
// otherwise than the pages).
func TestRowCountsOfListOnlyFilesAreCountedFromTheirPages(t *testing.T) {
	cases := []struct {
		name, query string
	}{
		{"list", "SELECT * FROM (VALUES ([1, 2]), ([3]), ([4, 5, 6])) v(l)"},
		{"map", "SELECT * FROM (VALUES (MAP {'a': 1}), (MAP {'b': 2, 'c': 3}), (MAP {})) v(l)"},
		{"two_lists", "SELECT * FROM (VALUES ([1, 2], ['x']), ([3], []), ([4, 5, 6], ['y', 'z'])) v(l, m)"},
	}
	if python, err := sparkPython(); err == nil && !testing.Short() {
		// Spark's reading of each forged file, in one session.
		dir := t.TempDir()
		var want strings.Builder
		for _, c := range cases {
			for _, claim := range []int64{5, 2} {
				name := fmt.Sprintf("%s_%d.parquet", c.name, claim)
				writeQuery(t, filepath.Join(dir, name), c.query)
				forgeRowCount(t, filepath.Join(dir, name), 3, claim)
				fmt.Fprintf(&want, "%s %d %d\n", name, claim, claim)
			}
		}
		script := `import sys, glob, os
from pyspark.sql import SparkSession
s = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").config("spark.driver.bindAddress", "127.0.0.1").getOrCreate()
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.parquet"))):
    print(os.path.basename(f), s.read.parquet(f).count(), len(s.read.parquet(f).collect()))
s.stop()`
		out, err := exec.Command(python, "-c", script, dir).Output()
		if err != nil {
			t.Fatalf("Spark: %v: %s", err, out)
		}
		lines := strings.Split(strings.TrimSpace(want.String()), "\n")
		slices.Sort(lines)
		if got := strings.TrimSpace(string(out)); got != strings.Join(lines, "\n") {
			t.Errorf("Spark read (file, count(), rows):\n%s\nwant\n%s", got, strings.Join(lines, "\n"))
		}
	}
	for _, c := range cases {
		for _, claim := range []int64{3, 5, 2} {
			t.Run(fmt.Sprintf("%s_%d", c.name, claim), func(t *testing.T) {
				src := newBatchSource(t)
				src.write(t, "b1", "t/part-0.parquet", c.query)
				dst := filepath.Join(src.root, "b1", "t", "part-0.parquet")
				if claim != 3 {
					forgeRowCount(t, dst, 3, claim)
				}
				if python, err := testPython(); err == nil && !testing.Short() {
					out, err := exec.Command(python, "-c", "import sys, pyarrow.parquet as pq, pyarrow.dataset as ds, pandas as pd; print(ds.dataset(sys.argv[1]).count_rows(), pq.read_table(sys.argv[1]).num_rows, len(pd.read_parquet(sys.argv[1])))", dst).CombinedOutput()
					want := fmt.Sprintf("%d %d %d", claim, min(claim, 3), min(claim, 3))
					if err != nil || strings.TrimSpace(string(out)) != want {
						t.Errorf("pyarrow's count_rows, read_table and pandas read %s rows (%v), want %s", out, err, want)
					}
				}
				for _, unfused := range []bool{false, true} {
					e := newEngine(t, src, "")
					e.unfused = unfused
					rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
						Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{{Name: "rows", Kind: KindRowCount, Table: "t", Min: f64(float64(claim)), Max: f64(float64(claim))}}}})
					if err != nil {
						t.Fatal(err)
					}
					m := checkMessages(rep)
					if claim == 3 {
						if !rep.Passed {
							t.Errorf("unfused %v: the honest file is refused: %s", unfused, m)
						}
						continue
					}
					if rep.Passed || !strings.Contains(m, "t/part-0.parquet") || !strings.Contains(m, `row group 0, column "l`) ||
						!strings.Contains(m, fmt.Sprintf("%d rows", claim)) || !strings.Contains(m, "3 records") {
						t.Errorf("unfused %v: passed %v (%s), want refused naming the file, row group 0, column l and both counts", unfused, rep.Passed, m)
					}
				}
			})
		}
	}
}

// forgeRowCount rewrites the file's and its one row group's num_rows
// (Thrift compact: an i64 field after the field before it, header 0x16,
// zigzag varint) from rows to claim, both of one byte, and checks with the
// Go footer reader that both now say claim.
func forgeRowCount(t *testing.T, path string, rows, claim int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := footer(t, b)
	from, to := []byte{0x16, byte(rows * 2)}, []byte{0x16, byte(claim * 2)}
	if n := bytes.Count(b[lo:hi], from); n != 2 {
		t.Fatalf("the footer holds %d copies of %x, want 2 (the file's and the row group's num_rows)", n, from)
	}
	copy(b[lo:hi], bytes.ReplaceAll(b[lo:hi], from, to))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ft, err := readFooter(path)
	if err != nil {
		t.Fatal(err)
	}
	if ft.rows != claim || len(ft.chunks) == 0 || ft.chunks[0].rows != claim {
		t.Fatalf("forged footer: file rows %d, row group rows %v, want %d", ft.rows, ft.chunks, claim)
	}
}

// writeQuery writes the rows of query to a Parquet file at path.
func writeQuery(t *testing.T, path, query string) {
	t.Helper()
	copySQL(t, fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet)", query, quoteLiteral(path)))
}
