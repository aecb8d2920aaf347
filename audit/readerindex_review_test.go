package audit

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// endsAfter is a context that ends after its Err was asked n times: where
// a long piece of work asks it.
type endsAfter struct {
	context.Context
	n atomic.Int64
}

func (c *endsAfter) Err() error {
	if c.n.Add(-1) < 0 {
		return context.Canceled
	}
	return nil
}

// TestReaderIndexesStopWhenTheRunEnds: the Go page reader reads a file's
// pages (up to 1,048,576 per chunk, each up to 256 MiB uncompressed) for a
// run that may end (a shutdown, a revoked partition): it must stop between
// pages rather than read the file to its end. Before, once a file's
// reading began it went on to the end whatever the run's context said.
func TestReaderIndexesStopWhenTheRunEnds(t *testing.T) {
	e := newEngine(t, newDirSource(t), "")
	// DuckDB's bloom filters over three row groups' dictionaries.
	f := filepath.Join(e.dir, "blooms.parquet")
	copySQL(t, "COPY ("+duckdbIndexedRows+") TO "+quoteLiteral(f)+" (FORMAT parquet, ROW_GROUP_SIZE 3000)")
	r := &run{e: e}
	if err := r.readerIndexes(context.Background(), []string{f}, map[string]string{f: "p.parquet"}, nil); err != nil {
		t.Fatalf("the honest file: %v", err)
	}
	ctx := &endsAfter{Context: context.Background()}
	ctx.n.Store(1) // the run ends once its file's reading began
	if err := r.readerIndexes(ctx, []string{f}, map[string]string{f: "p.parquet"}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("the run ended while its file was read: %v, want the reading stopped (context canceled)", err)
	}
}

// TestSparkBooleanBloomFilterPasses: Spark with
// parquet.bloom.filter.enabled writes a bloom filter for every chunk it
// does not dictionary-encode, a BOOLEAN one too
// (testdata/spark_bloom_bool.parquet: Spark 4.3.0, parquet-mr 1.17.0, 300
// rows; b is id % 3 = 0). The format hashes no BOOLEAN value, and no
// reader skips by it (DuckDB 1.5 here; DuckDB 2.0 and Spark measured by
// hand: WHERE b = true and b = false read every matching row), so the
// file passes. Before, it was refused as unverifiable (physical type 0).
func TestSparkBooleanBloomFilterPasses(t *testing.T) {
	src := newBatchSource(t)
	dst := filepath.Join(src.root, "b", "t", "part-0.parquet")
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join("testdata", "spark_bloom_bool.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ft, err := readFooter(dst)
	if err != nil {
		t.Fatal(err)
	}
	boolBloom := false
	for _, c := range ft.chunks {
		boolBloom = boolBloom || (c.physical == ptBoolean && c.bloomOffset >= 0)
	}
	if !boolBloom {
		t.Fatal("no BOOLEAN chunk with a bloom filter: not Spark's file")
	}
	for q, want := range map[string]int64{"b = true": 100, "b = false": 200, "b": 100, "NOT b": 200} {
		query := "SELECT count(*) FROM FILE WHERE " + q
		if pruned, scanned := readerCount(t, dst, query, true), readerCount(t, dst, query, false); pruned != want || scanned != want {
			t.Fatalf("%s: DuckDB with default settings counts %d, the full scan %d, want %d: a reader skips by the BOOLEAN filter", query, pruned, scanned, want)
		}
	}
	e := newEngine(t, src, "")
	rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "r", Ref: "b", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{
			{Name: "rows", Kind: KindRowCount, Table: "t", Min: f64(300), Max: f64(300)}}}})
	if err != nil || !rep.Passed {
		t.Fatalf("Spark's honest file: %v %s", err, checkMessages(rep))
	}
}

// FuzzReaderIndexes: no file makes the Go readers of a footer's claims
// and of its pages' indexes and statistics (and their Go comparison,
// claimsgo.go) panic or allocate past their
// limits (docs/limits.md); a file they take is checked or refused.
func FuzzReaderIndexes(f *testing.F) {
	for _, name := range []string{"page_index.parquet", "page_stats.parquet", "spark_bloom_bool.parquet"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, file []byte) {
		p := filepath.Join(dir, "f.parquet")
		if err := os.WriteFile(p, file, 0o644); err != nil {
			t.Fatal(err)
		}
		if buf, err := footerBytes(p); err == nil {
			if ft, err := decodeFooter(buf); err == nil {
				if leaves, groups, err := decodeFooterClaims(buf); err == nil {
					g := newGoClaims(context.Background(), p, ft.chunks) // claimsgo.go's reading
					for k := range leaves {
						g.settled(leaves, k, groups)
					}
					g.close()
				}
			}
		}
		ft, err := readFooter(p)
		if err != nil {
			return
		}
		claims, err := checkReaderIndexes(context.Background(), p, ft.chunks)
		if err == nil {
			settlePageClaims(context.Background(), p, ft.chunks, claims)
		}
	})
}

// TestStructFieldsDifferingInCaseAreRefused: DuckDB reads a struct whose
// fields differ only in case (pyarrow writes one: s.a and s.A) as s.a and
// s.A_1, and binds s.A to s.a, so every claim of s.A (row-group and page
// statistics, page index) was compared with s.a's data: this honest file
// was refused for s.A's true statistics, and a file forging s.A's within
// s.a's values passed while a reader of s.A_1 skipped by them. Such a file
// is refused as one with top-level columns differing in case is, naming
// the fields.
func TestStructFieldsDifferingInCaseAreRefused(t *testing.T) {
	python, err := testPython()
	if err != nil {
		t.Skipf("skipped: %v; scripts/pyenv.sh installs pyarrow (./test.sh runs it)", err)
	}
	src := newDirSource(t)
	for _, d := range []string{"main", filepath.Join("b", "t")} {
		if err := os.MkdirAll(filepath.Join(src.root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dst := filepath.Join(src.root, "b", "t", "a.parquet")
	script := `import sys, pyarrow as pa, pyarrow.parquet as pq
st = pa.StructArray.from_arrays([pa.array([1, 2, 3]), pa.array([2, 3, 1000])], names=["a", "A"])
pq.write_table(pa.table({"s": st}), sys.argv[1])`
	if out, err := exec.Command(python, "-c", script, dst).CombinedOutput(); err != nil {
		t.Fatalf("pyarrow: %v\n%s", err, out)
	}
	e := newEngine(t, src, "")
	rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "r", Ref: "b", BaseRef: "main", BatchTime: batchTime,
		Suite: Suite{Tables: []Table{{Name: "t", Path: "t/"}}, Checks: []Check{{Name: "rows", Kind: KindRowCount, Table: "t", Min: f64(0)}}}})
	if err != nil {
		t.Fatal(err)
	}
	if msg := checkMessages(rep); rep.Passed || !strings.Contains(msg, `fields "a" and "A" of column "s"`) {
		t.Fatalf("passed %v: %s; want refused naming the fields of s that differ only in case", rep.Passed, msg)
	}
}
