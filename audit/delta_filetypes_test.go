package audit

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// deltaTextOfATimestamp writes, with delta-rs, a table of ids and regions
// (text) on main (version 0: id 1, region x) and a batch on b1 whose
// version 1 adds a file (pyarrow's) holding region as a timestamp,
// 2024-01-01 00:00:00 ("honest": the text of that). It prints the regions
// deltalake reads.
const deltaTextOfATimestamp = `
import sys, os, json, datetime
import pyarrow as pa, pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake
out, mode = sys.argv[1], sys.argv[2]
if mode == "base":
    write_deltalake(out, pa.table({"id": pa.array([1], pa.int64()), "region": pa.array(["x"])}))
    os._exit(0)
region = pa.array([datetime.datetime(2024, 1, 1)], pa.timestamp("us"))
if mode == "honest":
    region = pa.array(["2024-01-01 00:00:00"])
name = "part-00001-region.parquet"
pq.write_table(pa.table({"id": pa.array([2], pa.int64()), "region": region}), os.path.join(out, name))
with open(os.path.join(out, "_delta_log", "%020d.json" % 1), "w") as f:
    f.write(json.dumps({"commitInfo": {"timestamp": 1, "operation": "WRITE"}}) + "\n")
    f.write(json.dumps({"add": {"path": name, "partitionValues": {}, "size": os.path.getsize(os.path.join(out, name)), "modificationTime": 1, "dataChange": True}}) + "\n")
print("regions read by deltalake:", sorted(DeltaTable(out).to_pyarrow_table().column("region").to_pylist()), flush=True)
os._exit(0)
`

// TestDeltaFileOfAnotherTypeInAViewOfTheLogsTypeIsRefused: a Delta view's
// column was compared with the log's type as DuckDB reads the view, the
// union of its files' types: a file holding a text column as a timestamp
// beside one holding it as text is read as text, DuckDB's of the
// timestamp, '2024-01-01 00:00:00', while deltalake 1.6.6 casts it to
// '2024-01-01 00:00:00.000000'. accepted_values(region: [x, 2024-01-01
// 00:00:00]) passed, and readers of main read a region it does not
// accept. Each file's types are compared with the log's; the same batch
// writing the text passes.
func TestDeltaFileOfAnotherTypeInAViewOfTheLogsTypeIsRefused(t *testing.T) {
	honestAndForgedDelta(t, deltaTextOfATimestamp, Check{Name: "regions", Kind: KindAcceptedValues, Table: "events", Column: "region", Values: []string{"x", "2024-01-01 00:00:00"}},
		"regions read by deltalake:", "['2024-01-01 00:00:00', 'x']", "['2024-01-01 00:00:00.000000', 'x']",
		`data file gold/events/part-00001-region.parquet has column "region" as TIMESTAMP where the log's schema says VARCHAR`)
}

// honestAndForgedDelta is a Delta attack test in two cases: script (a
// deltalake script taking the table's directory and a mode, "base",
// "honest" or "forged") makes main's table, then the batch on branch b1 in
// each case; deltalake's reading, which the script prints after label,
// must be honest or forged; and the audit of b1 with check passes the
// honest batch and refuses the forged one with refusal.
func honestAndForgedDelta(t *testing.T, script string, check Check, label, honest, forged, refusal string) {
	t.Helper()
	python, err := testPython()
	if err != nil {
		t.Skipf("delta-rs not at hand: %v", err)
	}
	for _, mode := range []string{"honest", "forged"} {
		t.Run(mode, func(t *testing.T) {
			src := newDirSource(t)
			main := filepath.Join(src.root, "main", "gold", "events")
			if out, err := exec.Command(python, "-c", script, main, "base").CombinedOutput(); err != nil {
				t.Fatalf("deltalake: %v\n%s", err, out)
			}
			src.branch(t, "main", "b1")
			out, err := exec.Command(python, "-c", script, filepath.Join(src.root, "b1", "gold", "events"), mode).CombinedOutput()
			if err != nil {
				t.Fatalf("deltalake: %v\n%s", err, out)
			}
			want := map[string]string{"honest": honest, "forged": forged}[mode]
			if !strings.Contains(string(out), label+" "+want) {
				t.Fatalf("deltalake reads: %s", out)
			}
			rep := deltaAudit(t, src, "b1", FormatDelta, check)
			if mode == "honest" {
				if !rep.Passed {
					t.Fatalf("the honest batch: %s", checkMessages(rep))
				}
				return
			}
			wantRefused(t, rep, refusal)
		})
	}
}
