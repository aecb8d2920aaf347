package audit

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// deltaRSCheckpoint writes a Delta table with delta-rs (two commits, x
// holding 1000 in the first) and its checkpoint of version 1; with
// "forge", the checkpoint's add actions get a stats_parsed whose maxValues
// leave 1000 out (the JSON stats kept honest).
const deltaRSCheckpoint = `
import sys, os, glob, json
import pyarrow as pa, pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake
out = sys.argv[1]
write_deltalake(out, pa.table({"x": pa.array([1, 2, 1000])}))
write_deltalake(out, pa.table({"x": pa.array([5, 6])}), mode="append")
DeltaTable(out).create_checkpoint()
if len(sys.argv) > 2:
    cp = glob.glob(os.path.join(out, "_delta_log", "*.checkpoint.parquet"))[0]
    t = pq.read_table(cp)
    add = t.column("add").combine_chunks()
    sp = []
    for r in add.to_pylist():
        if r is None:
            sp.append(None)
            continue
        s = json.loads(r["stats"])
        s["maxValues"]["x"] = min(s["maxValues"]["x"], 6)
        sp.append(s)
    st = pa.struct([("numRecords", pa.int64()), ("minValues", pa.struct([("x", pa.int64())])),
                    ("maxValues", pa.struct([("x", pa.int64())])), ("nullCount", pa.struct([("x", pa.int64())]))])
    fields = [add.field(i) for i in range(add.type.num_fields)] + [pa.array(sp, st)]
    names = [add.type.field(i).name for i in range(add.type.num_fields)] + ["stats_parsed"]
    t = t.set_column(t.schema.get_field_index("add"), "add", pa.StructArray.from_arrays(fields, names=names, mask=add.is_null()))
    pq.write_table(t, cp)
os._exit(0)  # deltalake's runtime can abort at the interpreter's exit
`

func deltaRSCheckpointTable(t *testing.T, forge bool) *dirSource {
	t.Helper()
	python, err := testPython()
	if err != nil {
		t.Skipf("delta-rs not at hand: %v", err)
	}
	src := newDirSource(t)
	if err := os.MkdirAll(filepath.Join(src.root, "main"), 0o755); err != nil {
		t.Fatal(err)
	}
	args := []string{"-c", deltaRSCheckpoint, filepath.Join(src.root, "b1", "gold", "events")}
	if forge {
		args = append(args, "forge")
	}
	if out, err := exec.Command(python, args...).CombinedOutput(); err != nil {
		t.Fatalf("deltalake: %v\n%s", err, out)
	}
	return src
}

// TestDeltaRSCheckpointPasses: delta-rs 1.6.6's create_checkpoint writes
// a classic checkpoint whose schema has a sidecar column, null in every
// row. It was refused as a V2 checkpoint ("it has sidecar actions"),
// blocking every batch of a table delta-rs had checkpointed; a row with a
// sidecar action is still refused.
func TestDeltaRSCheckpointPasses(t *testing.T) {
	src := deltaRSCheckpointTable(t, false)
	rep := deltaAudit(t, src, "b1", FormatDelta, Check{Name: "rows", Kind: KindRowCount, Table: "events", Min: f64(5), Max: f64(5)})
	if !rep.Passed {
		t.Fatalf("delta-rs's checkpointed table: %s", checkMessages(rep))
	}
}

// TestDeltaCheckpointStatsParsedIsRefused: delta-rs reads a checkpoint's
// add.stats_parsed before its JSON stats: with stats_parsed claiming max 6
// over the file holding 1000, DeltaTable.to_pyarrow_table(filters=[("x",
// "=", 1000)]) read 0 rows (1 with the honest checkpoint). lakewap
// compares the JSON stats only, so such a checkpoint is refused.
func TestDeltaCheckpointStatsParsedIsRefused(t *testing.T) {
	src := deltaRSCheckpointTable(t, true)
	wantRefused(t, deltaAudit(t, src, "b1", FormatDelta, Check{Name: "rows", Kind: KindRowCount, Table: "events", Min: f64(5), Max: f64(5)}), "stats_parsed")
}
