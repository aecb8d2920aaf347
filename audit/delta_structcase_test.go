package audit

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// deltaStructFieldCase writes, with delta-rs, a table of ids and a struct
// st {a long} on main (version 0: id 1, st.a 1) and a batch on b1 whose
// version 1 adds a file (pyarrow's) holding st's field as "A" (st.A 5;
// "honest": as "a"). It prints the st.a deltalake reads.
const deltaStructFieldCase = `
import sys, os, json
import pyarrow as pa, pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake
out, mode = sys.argv[1], sys.argv[2]
def st(name, vals):
    return pa.array([{name: v} for v in vals], pa.struct([(name, pa.int64())]))
if mode == "base":
    write_deltalake(out, pa.table({"id": pa.array([1], pa.int64()), "st": st("a", [1])}))
    os._exit(0)
name = "part-00001-st.parquet"
pq.write_table(pa.table({"id": pa.array([2], pa.int64()), "st": st("a" if mode == "honest" else "A", [5])}), os.path.join(out, name))
with open(os.path.join(out, "_delta_log", "%020d.json" % 1), "w") as f:
    f.write(json.dumps({"commitInfo": {"timestamp": 1, "operation": "WRITE"}}) + "\n")
    f.write(json.dumps({"add": {"path": name, "partitionValues": {}, "size": os.path.getsize(os.path.join(out, name)), "modificationTime": 1, "dataChange": True}}) + "\n")
print("st.a read by deltalake:", sorted([r["st"]["a"] for r in DeltaTable(out).to_pyarrow_table().to_pylist()], key=str), flush=True)
os._exit(0)
`

// TestDeltaStructFieldInAnotherCaseIsRefused: a data file whose struct
// column's field is the log's in another case ("A" for st.a) was read by
// DuckDB as st.a (it matches struct fields in any case, and the type
// check compared types in upper case), and by deltalake 1.6.6 as NULL: a
// custom check refusing a NULL st.a passed while readers of main read one.
// The table is refused naming the file and both spellings; the batch
// spelling it as the log does passes.
func TestDeltaStructFieldInAnotherCaseIsRefused(t *testing.T) {
	python, err := testPython()
	if err != nil {
		t.Skipf("delta-rs not at hand: %v", err)
	}
	check := Check{Name: "st.a set", Kind: KindSQL, Table: "events", SQL: "SELECT * FROM events WHERE st.a IS NULL"}
	for _, mode := range []string{"honest", "forged"} {
		t.Run(mode, func(t *testing.T) {
			src := newDirSource(t)
			main := filepath.Join(src.root, "main", "gold", "events")
			if out, err := exec.Command(python, "-c", deltaStructFieldCase, main, "base").CombinedOutput(); err != nil {
				t.Fatalf("deltalake: %v\n%s", err, out)
			}
			src.branch(t, "main", "b1")
			out, err := exec.Command(python, "-c", deltaStructFieldCase, filepath.Join(src.root, "b1", "gold", "events"), mode).CombinedOutput()
			if err != nil {
				t.Fatalf("deltalake: %v\n%s", err, out)
			}
			want := "[1, 5]"
			if mode == "forged" {
				want = "[1, None]"
			}
			if !strings.Contains(string(out), "st.a read by deltalake: "+want) {
				t.Fatalf("deltalake reads: %s", out)
			}
			rep := deltaAudit(t, src, "b1", FormatDelta, check)
			if mode == "honest" {
				if !rep.Passed {
					t.Fatalf("the honest batch: %s", checkMessages(rep))
				}
				return
			}
			wantRefused(t, rep, `data file gold/events/part-00001-st.parquet has field "A" of column "st", which the log's schema spells "a"`)
		})
	}
}
