package audit

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// deltaRSCheckpoint writes a Delta table with delta-rs (two commits, x
// holding 1000 in the first) and its checkpoint of version 1. Its second
// argument, when given, rewrites the checkpoint's add actions:
//   - "forge": a stats_parsed whose maxValues leave 1000 out, the JSON
//     stats kept honest;
//   - "forge_both": that lie in the JSON stats too (the commits honest);
//   - "parsed_only", "parsed_only_forge": an honest (lying) stats_parsed
//     and no JSON stats.
const deltaRSCheckpoint = `
import sys, os, glob, json
import pyarrow as pa, pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake
out = sys.argv[1]
mode = sys.argv[2] if len(sys.argv) > 2 else ""
write_deltalake(out, pa.table({"x": pa.array([1, 2, 1000])}))
write_deltalake(out, pa.table({"x": pa.array([5, 6])}), mode="append")
DeltaTable(out).create_checkpoint()
if mode:
    cp = glob.glob(os.path.join(out, "_delta_log", "*.checkpoint.parquet"))[0]
    t = pq.read_table(cp)
    add = t.column("add").combine_chunks()
    sp, js = [], []
    for r in add.to_pylist():
        if r is None:
            sp.append(None)
            js.append(None)
            continue
        s = json.loads(r["stats"])
        if "forge" in mode:
            s["maxValues"]["x"] = min(s["maxValues"]["x"], 6)
        sp.append(s)
        js.append(None if "parsed_only" in mode else (json.dumps(s) if mode == "forge_both" else r["stats"]))
    st = pa.struct([("numRecords", pa.int64()), ("minValues", pa.struct([("x", pa.int64())])),
                    ("maxValues", pa.struct([("x", pa.int64())])), ("nullCount", pa.struct([("x", pa.int64())]))])
    names = [add.type.field(i).name for i in range(add.type.num_fields)]
    fields = [pa.array(js, pa.string()) if n == "stats" else add.field(i) for i, n in enumerate(names)]
    t = t.set_column(t.schema.get_field_index("add"), "add",
        pa.StructArray.from_arrays(fields + [pa.array(sp, st)], names=names + ["stats_parsed"], mask=add.is_null()))
    pq.write_table(t, cp)
os._exit(0)  # deltalake's runtime can abort at the interpreter's exit
`

// deltaRSTable runs script with the interop Python's deltalake, its
// arguments the directory of table events on branch b1 of a new
// dirSource (returned with it) and then args. Skipped without delta-rs.
func deltaRSTable(t *testing.T, script string, args ...string) (*dirSource, string) {
	t.Helper()
	python, err := testPython()
	if err != nil {
		t.Skipf("delta-rs not at hand: %v", err)
	}
	src := newBatchSource(t)
	dir := filepath.Join(src.root, "b1", "gold", "events")
	if out, err := exec.Command(python, append([]string{"-c", script, dir}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("deltalake: %v\n%s", err, out)
	}
	return src, dir
}

// TestDeltaRSCheckpointPasses: delta-rs 1.6.6's create_checkpoint writes
// a classic checkpoint whose schema has a sidecar column, null in every
// row. It was refused as a V2 checkpoint ("it has sidecar actions"),
// blocking every batch of a table delta-rs had checkpointed; a row with a
// sidecar action is still refused.
func TestDeltaRSCheckpointPasses(t *testing.T) {
	src, _ := deltaRSTable(t, deltaRSCheckpoint)
	rep := deltaAudit(t, src, "b1", FormatDelta, Check{Name: "rows", Kind: KindRowCount, Table: "events", Min: f64(5), Max: f64(5)})
	if !rep.Passed {
		t.Fatalf("delta-rs's checkpointed table: %s", checkMessages(rep))
	}
}

// TestDeltaCheckpointStatsParsed: delta-rs reads a checkpoint's
// add.stats_parsed before its JSON stats, and Databricks writes it by
// default (delta.checkpoint.writeStatsAsStruct). A stats_parsed is compared
// as the JSON stats are: with the JSON stats of the same add where both are
// there (refused naming both when they differ), else as the add's stats
// (with the commits' and the data). With stats_parsed claiming max 6 over
// the file holding 1000, delta-rs's filter x = 1000 reads no row where its
// full scan reads one. Such checkpoints were all refused before, the
// honest ones too.
func TestDeltaCheckpointStatsParsed(t *testing.T) {
	rows := Check{Name: "rows", Kind: KindRowCount, Table: "events", Min: f64(5), Max: f64(5)}
	for _, c := range []struct{ mode, refusal string }{
		{"forge", "its stats_parsed"},
		{"forge_both", "has other stats"},
		{"parsed_only", ""},
		{"parsed_only_forge", "has other stats"},
	} {
		t.Run(c.mode, func(t *testing.T) {
			src, dir := deltaRSTable(t, deltaRSCheckpoint, c.mode)
			if strings.Contains(c.mode, "forge") {
				deltaRSSkips(t, dir, `[("x", "=", 1000)]`)
			}
			rep := deltaAudit(t, src, "b1", FormatDelta, rows)
			if c.refusal == "" {
				if !rep.Passed {
					t.Fatalf("an honest stats_parsed: %s", checkMessages(rep))
				}
				return
			}
			wantRefused(t, rep, c.refusal)
		})
	}
}

// TestDeltaRSStatsParsedPasses: a table delta-rs writes with
// delta.checkpoint.writeStatsAsStruct (every primitive type, a struct,
// microsecond timestamps, NULLs) and checkpoints passes: its stats_parsed
// agree with its JSON stats. It was refused before ("carry stats_parsed").
func TestDeltaRSStatsParsedPasses(t *testing.T) {
	script := strings.Replace(honestDeltaRS, "write_deltalake(out, rows(0, 40))",
		`write_deltalake(out, rows(0, 40), configuration={"delta.checkpoint.writeStatsAsStruct": "true"})`, 1)
	script = strings.Replace(script, "os._exit(0)", "from deltalake import DeltaTable\nDeltaTable(out).create_checkpoint()\nos._exit(0)", 1)
	src, dir := deltaRSTable(t, script)
	cps, _ := filepath.Glob(filepath.Join(dir, "_delta_log", "*.checkpoint.parquet"))
	if len(cps) != 1 {
		t.Fatalf("checkpoints: %v", cps)
	}
	if b, err := os.ReadFile(cps[0]); err != nil || !strings.Contains(string(b), "stats_parsed") {
		t.Fatalf("the checkpoint has no stats_parsed (%v)", err)
	}
	rep := deltaAudit(t, src, "b1", FormatDelta, Check{Name: "rows", Kind: KindRowCount, Table: "events", Min: f64(130), Max: f64(130)})
	if !rep.Passed {
		t.Fatalf("a table delta-rs checkpointed with stats_parsed: %s", checkMessages(rep))
	}
}

// TestDuckDBStructure: the type of a stats_parsed as typeof spells it
// becomes from_json's structure; quoted names, parameters and lists of
// STRUCT are read whole, and what is not a STRUCT is refused.
func TestDuckDBStructure(t *testing.T) {
	for typ, want := range map[string]string{
		`STRUCT(numRecords BIGINT, minValues STRUCT("a b" INTEGER, "x""y" DECIMAL(9,2), ts TIMESTAMP WITH TIME ZONE, st STRUCT(a BIGINT), l STRUCT(a INTEGER, b VARCHAR)[], m MAP(VARCHAR, INTEGER)), "É" UTINYINT)`: `{"minValues":{"a b":"INTEGER","l":"STRUCT(a INTEGER, b VARCHAR)[]","m":"MAP(VARCHAR, INTEGER)","st":{"a":"BIGINT"},"ts":"TIMESTAMP WITH TIME ZONE","x\"y":"DECIMAL(9,2)"},"numRecords":"BIGINT","É":"UTINYINT"}`,
		`BIGINT`:                     "",
		`STRUCT(a BIGINT`:            "",
		`STRUCT(a BIGINT, a BIGINT)`: "",
		`STRUCT(a BIGINT) x`:         "",
		`STRUCT("a BIGINT)`:          "",
	} {
		got, err := duckdbStructure(typ)
		if want == "" {
			if err == nil {
				t.Errorf("%s: %s, want an error", typ, got)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("%s:\n got %s (%v)\nwant %s", typ, got, err, want)
		}
	}
}
