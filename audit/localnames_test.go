package audit

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// TestUnreadableFileIsNamedByItsPath: a file DuckDB cannot read (a CSV row
// of too many fields, malformed JSON, a Parquet file that is not one)
// errors its table's checks, and the message names the object as the
// lakeFS ref has it, not the engine's local copy (a run directory's
// "files/1.csv", the cache's "<hash>-15.csv"), which tells an operator
// nothing and is not theirs to read. The local directories appear nowhere
// in the report.
func TestUnreadableFileIsNamedByItsPath(t *testing.T) {
	src := newBatchSource(t)
	files := map[string]string{
		"csv/part-0.csv":     "id,v\n1,a\n2,b,c,d\n",
		"json/part-0.jsonl":  "{\"id\": 1}\n{id\n",
		"pq/part-0.parquet":  "PAR1 not a footer PAR1",
		"two/part-0.csv":     "id,v\n1,a\n",
		"two/part-1-bad.csv": "id,v\n1,a,b,c\n",
	}
	for p, b := range files {
		dst := filepath.Join(src.root, "b1", p)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, []byte(b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tables := []struct {
		t    Table
		want string
	}{
		{Table{Name: "t", Path: "csv/", Format: FormatCSV}, "csv/part-0.csv"},
		{Table{Name: "t", Path: "json/", Format: FormatJSONL}, "json/part-0.jsonl"},
		{Table{Name: "t", Path: "pq/", Format: FormatParquet}, "pq/part-0.parquet"},
		{Table{Name: "t", Path: "two/", Format: FormatCSV}, "two/part-1-bad.csv"},
	}
	for _, cache := range []string{"", filepath.Join(t.TempDir(), "cache")} {
		work := t.TempDir()
		e, err := New(Options{Source: src, WorkDir: work, CacheDir: cache, MemoryLimit: "512MB", Threads: 2, SampleRows: 3})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Close() })
		for _, tb := range tables {
			rep, err := e.Run(context.Background(), Request{Dataset: "d", Repository: "repo", Ref: "b1", BaseRef: "main", BatchTime: batchTime,
				Suite: Suite{Tables: []Table{tb.t}, Checks: []Check{{Name: "c", Kind: KindNotNull, Table: "t", Column: "id"}}}})
			if err != nil {
				t.Fatal(err)
			}
			c := rep.Checks[0]
			if c.Status != schemas.StatusError {
				t.Errorf("cache %v, %s: %s %q, want error", cache != "", tb.want, c.Status, c.Observed)
				continue
			}
			if !strings.Contains(c.Message, tb.want) {
				t.Errorf("cache %v: the error does not name %s: %q", cache != "", tb.want, c.Message)
			}
			for _, dir := range []string{work, cache} {
				for _, ch := range rep.Checks {
					if dir != "" && (strings.Contains(ch.Message, dir) || strings.Contains(ch.Observed, dir)) {
						t.Errorf("cache %v, %s: check %s names the local directory %s: %q", cache != "", tb.want, ch.Name, dir, ch.Message)
					}
				}
			}
		}
	}
}
