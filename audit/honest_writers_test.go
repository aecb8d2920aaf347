package audit

import (
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// honestChecks are the demo's kinds of checks, each true of every table
// testdata/honest_writers.py writes.
var honestChecks = []Check{
	{Name: "rows", Kind: KindRowCount, Table: "events", Min: f64(1)},
	{Name: "id not null", Kind: KindNotNull, Table: "events", Column: "id"},
	{Name: "id unique", Kind: KindUnique, Table: "events", Column: "id"},
	{Name: "id, s unique", Kind: KindUnique, Table: "events", Columns: []string{"id", "s"}},
	{Name: "id from 1", Kind: KindRange, Table: "events", Column: "id", Min: f64(1)},
	{Name: "cat", Kind: KindAcceptedValues, Table: "events", Column: "cat", Values: []string{"a", "b", "c"}},
	{Name: "s", Kind: KindRegex, Table: "events", Column: "s", Pattern: `^s-(\d+|upd)$`},
	{Name: "batch rows", Kind: KindRowCount, Table: "events", Min: f64(1), Scope: "batch"},
}

// TestHonestWritersPass: tables pandas, pyarrow, DuckDB and delta-rs
// write as users do (testdata/honest_writers.py) pass the demo's kinds of
// checks: a refusal of an ordinary honest batch stops a user's pipeline.
func TestHonestWritersPass(t *testing.T) {
	python, err := testPython()
	if err != nil {
		t.Skipf("pandas and delta-rs not at hand: %v", err)
	}
	extra := map[string][]Check{
		"pyarrow_encodings": {
			{Name: "f range", Kind: KindRange, Table: "events", Column: "f", Min: f64(0), Max: f64(5000)},
			{Name: "dec range", Kind: KindRange, Table: "events", Column: "dec", Min: f64(0.01), Max: f64(330)},
			{Name: "ts not null", Kind: KindNotNull, Table: "events", Column: "ts"},
			{Name: "s unique", Kind: KindUnique, Table: "events", Column: "s"},
		},
		"pandas_big": {
			{Name: "sid unique", Kind: KindUnique, Table: "events", Column: "sid"},
			{Name: "sid, cat unique", Kind: KindUnique, Table: "events", Columns: []string{"sid", "cat"}},
		},
	}
	for _, c := range []struct{ name, format string }{
		{"pandas", FormatParquet}, {"pandas_empty", FormatParquet}, {"pandas_big", FormatParquet}, {"pyarrow_nested", FormatParquet}, {"pyarrow_lists_only", FormatParquet}, {"pyarrow_encodings", FormatParquet}, {"duckdb", FormatParquet},
		{"delta_append", FormatDelta}, {"delta_overwrite", FormatDelta}, {"delta_evolve", FormatDelta}, {"delta_nested", FormatDelta},
		{"delta_cdf", FormatDelta}, {"delta_dml", FormatDelta}, {"delta_optimize", FormatDelta}, {"delta_checkpoint", FormatDelta},
		{"delta_partitioned", FormatDelta}, {"delta_restore", FormatDelta}, {"delta_cdf_evolve", FormatDelta}, {"delta_replace_where", FormatDelta}, {"delta_struct_evolve", FormatDelta}, {"delta_types", FormatDelta},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := newBatchSource(t)
			write := func(ref, stage string) {
				dir := filepath.Join(src.root, ref, "gold", "events")
				if out, err := exec.Command(python, filepath.Join("testdata", "honest_writers.py"), c.name, stage, dir).CombinedOutput(); err != nil {
					t.Fatalf("%s %s: %v\n%s", c.name, stage, err, out)
				}
			}
			write("main", "base")
			src.branch(t, "main", "b1")
			write("b1", "batch")
			checks := append(append([]Check{}, honestChecks...), extra[c.name]...)
			if c.name == "pyarrow_lists_only" {
				checks = []Check{
					{Name: "rows", Kind: KindRowCount, Table: "events", Min: f64(7050), Max: f64(7050)},
					{Name: "batch rows", Kind: KindRowCount, Table: "events", Min: f64(7050), Max: f64(7050), Scope: "batch"},
				}
			}
			rep := deltaAudit(t, src, "b1", c.format, checks...)
			for _, r := range rep.Checks {
				if r.Status != schemas.StatusPass {
					t.Errorf("%s: %s: %s %s", c.name, r.Name, r.Status, r.Message)
				}
			}
		})
	}
}

// TestEmptyRowGroupsDictionaryPageOnly: pyarrow writes a row group of 0
// rows (an empty DataFrame's file) as chunks of one dictionary page each,
// 0 values and data_page_offset 0. Such a hand-made chunk passes (before,
// its dictionary page "after its first data page at 0" refused it); the
// same chunk holding a data page of a value after its dictionary page is
// still refused: its pages hold values its metadata does not count.
func TestEmptyRowGroupsDictionaryPageOnly(t *testing.T) {
	dict := append(tstruct(ti32(1, 2), ti32(2, 4), ti32(3, 4), tst(7, ti32(1, 1), ti32(2, 0))), le32(1000)...)
	data := append(tstruct(ti32(1, 0), ti32(2, 4), ti32(3, 4), tst(5, ti32(1, 1), ti32(2, 0), ti32(3, 3), ti32(4, 3))), le32(66049)...)
	for _, c := range []struct {
		name  string
		chunk []byte
	}{{"dictionary only", dict}, {"a data page after it", append(append([]byte(nil), dict...), data...)}} {
		t.Run(c.name, func(t *testing.T) {
			b := handParquetMeta(0, c.chunk, 0, 4, int64(len(c.chunk)), ptInt32, -1, nil, nil, []int32{0, 8}, nil)
			src := oneFileBatch(t, b)
			for _, unfused := range []bool{false, true} {
				e := newEngine(t, src, "")
				e.unfused = unfused
				rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
					Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{
						{Name: "rows", Kind: KindRowCount, Table: "t", Max: f64(0)},
						{Name: "x from 0", Kind: KindRange, Table: "t", Column: "x", Min: f64(0), Max: f64(2000)},
					}}})
				if err != nil {
					t.Fatal(err)
				}
				if len(c.chunk) == len(dict) {
					if !rep.Passed {
						t.Fatalf("unfused %v: %s", unfused, checkMessages(rep))
					}
					continue
				}
				if m := checkMessages(rep); rep.Passed || !strings.Contains(m, "t/part-0.parquet") {
					t.Fatalf("unfused %v: passed %v (%s), want refused naming the file (its pages hold a value its metadata does not count)", unfused, rep.Passed, m)
				}
			}
		})
	}
}
