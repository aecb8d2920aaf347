package audit

import (
	"context"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// A JSON lines file is the writer's: one line of an array nested 100,000
// deep (200 KB, within DuckDB's 16 MiB a line) made DuckDB overflow its
// stack while it bound the table's read, and the whole process, every
// audit and run in it, died with a segmentation fault (then again at each
// of the batch's audit attempts). pandas' read_json refuses more than 1,024
// levels, Spark's Jackson more than 1,000: the file is refused, naming it,
// its line and the bound, before DuckDB reads it. A file within the bound
// is read as before.
func TestLimits64DeeplyNestedJSONLineIsRefused(t *testing.T) {
	for _, c := range []struct {
		name    string
		depth   int
		refused bool
	}{{"within", 999, false}, {"past", 100000, true}} {
		t.Run(c.name, func(t *testing.T) {
			src := newDirSource(t)
			deep := `{"id": 2, "a": ` + strings.Repeat("[", c.depth) + strings.Repeat("]", c.depth) + "}\n"
			src.writeRaw(t, "main", "raw/logs/a.jsonl", "{\"id\": 1, \"a\": [\"x\"]}\n"+deep)
			e := newEngine(t, src, "")
			rep, err := e.Run(context.Background(), Request{Repository: "r", Ref: "main", BatchTime: batchTime, Suite: Suite{
				Tables: []Table{{Name: "logs", Path: "raw/logs/", Format: FormatJSONL}},
				Checks: []Check{{Kind: KindRowCount, Table: "logs", Min: f64(1)}}}})
			if err != nil {
				t.Fatal(err)
			}
			res := rep.Checks[0]
			t.Logf("%s %s: %.300s", res.Status, res.Observed, res.Message)
			if !c.refused {
				if res.Status != schemas.StatusPass {
					t.Errorf("a file %d deep: %s %q", c.depth, res.Status, res.Message)
				}
				return
			}
			if res.Status != schemas.StatusError || !strings.Contains(res.Message, "raw/logs/a.jsonl") ||
				!strings.Contains(res.Message, "line 2") || !strings.Contains(res.Message, "1000") {
				t.Errorf("a file 100,000 deep: %s %q, want an error naming the file, its line and the bound", res.Status, res.Message)
			}
		})
	}
}
