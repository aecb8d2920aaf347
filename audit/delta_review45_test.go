package audit

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// deltaNanos writes, with delta-rs, a table of ids and a timestamp
// column ts (mode "base": id 1 at the epoch; "ntz": a timestamp_ntz
// column, with the reader feature) on main. "attack" appends version 1,
// a file of ids 2 and 3 whose ts are nanosecond timestamps 1 ns apart
// (2024-01-01 00:00:00.000000001 and .000000002; "ntz": without a zone).
// "read" prints what delta-rs's SQL reads: each row's ts as text and
// how many distinct ts there are.
const deltaNanos = `
import sys, os, json
import pyarrow as pa, pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake, QueryBuilder
out, mode, kind = sys.argv[1], sys.argv[2], sys.argv[3]
tz = None if kind == "ntz" else "UTC"
if mode == "base":
    write_deltalake(out, pa.table({"id": pa.array([1], pa.int64()), "ts": pa.array([0], pa.timestamp("us", tz=tz))}))
elif mode == "read":
    r = QueryBuilder().register("t", DeltaTable(out)).execute("SELECT count(*) AS n, count(DISTINCT ts) AS d FROM t").read_all()
    print(json.dumps({k: v[0] for k, v in pa.table(r).to_pydict().items()}))
else:
    p = os.path.join(out, "part-ns.parquet")
    ts = pa.array([1704067200000000001, 1704067200000000002], pa.timestamp("ns", tz=tz))
    pq.write_table(pa.table({"id": pa.array([2, 3], pa.int64()), "ts": ts}), p, version="2.6")
    with open(os.path.join(out, "_delta_log", "%020d.json" % 1), "w") as f:
        f.write(json.dumps({"commitInfo": {"timestamp": 2, "operation": "WRITE"}}) + "\n")
        f.write(json.dumps({"add": {"path": "part-ns.parquet", "partitionValues": {},
            "size": os.path.getsize(p), "modificationTime": 2, "dataChange": True,
            "stats": json.dumps({"numRecords": 2})}}) + "\n")
    print(json.dumps({"version": DeltaTable(out).version()}))
os._exit(0)  # deltalake's runtime can abort at the interpreter's exit
`

// TestDeltaNanosecondTimestampsAreRefused: a Delta timestamp (or
// timestamp_ntz) column is of microseconds; a data file holding it in
// nanoseconds is read by delta-rs's SQL cast to microseconds, cut (two
// rows 1 ns apart are one timestamp: 3 rows, 2 distinct ts), by pyarrow
// and pandas not at all (the cast would lose data), and by DuckDB in
// nanoseconds. Before, the audit took any timestamp unit for the log's
// type, and unique(ts) passed where delta-rs reads a duplicate.
func TestDeltaNanosecondTimestampsAreRefused(t *testing.T) {
	python, err := testPython()
	if err != nil {
		t.Skipf("delta-rs not at hand: %v", err)
	}
	for _, kind := range []string{"utc", "ntz"} {
		t.Run(kind, func(t *testing.T) {
			src := newDirSource(t)
			py := func(dir string, args ...string) string {
				out, err := exec.Command(python, append([]string{"-c", deltaNanos, dir}, args...)...).CombinedOutput()
				if err != nil {
					t.Fatalf("deltalake: %v\n%s", err, out)
				}
				return string(out)
			}
			py(filepath.Join(src.root, "main", "gold", "events"), "base", kind)
			src.branch(t, "main", "b1")
			if out := py(filepath.Join(src.root, "b1", "gold", "events"), "attack", kind); !strings.Contains(out, `"version": 1`) {
				t.Fatalf("the batch is not version 1: %s", out)
			}
			var read struct{ N, D int }
			out := py(filepath.Join(src.root, "b1", "gold", "events"), "read", kind)
			if err := json.Unmarshal([]byte(out), &read); err != nil || read.N != 3 || read.D != 2 {
				t.Fatalf("delta-rs reads %s, want 3 rows of 2 distinct ts", out)
			}
			rep := deltaAudit(t, src, "b1", FormatDelta,
				Check{Name: "ts", Kind: KindUnique, Table: "events", Column: "ts"})
			wantRefused(t, rep, "part-ns.parquet")
			if kind == "ntz" {
				wantRefused(t, rep, `has column "ts" as TIMESTAMP_NS where the log's schema says TIMESTAMP`)
			}
		})
	}
}

// TestDeltaStatsUpdateOfABaseFileIsCompared: the batch's version 1 adds
// main's file part-a again, the same bytes (a stats update, dataChange
// false), with stats claiming maxValues id 1 over a file holding 2 (or
// numRecords 50 for its 2 rows). The file's rows are not the batch's, but
// delta-rs skips it by the new claim (WHERE id = 2 read no row of main
// after the merge) and counts its rows by it. A suite of batch checks
// read no view holding the file, and its new stats were compared with
// nothing: the batch passed. Honest new stats pass.
func TestDeltaStatsUpdateOfABaseFileIsCompared(t *testing.T) {
	add := func(src *dirSource, ref, path, stats string, change bool) string {
		info, err := os.Stat(filepath.Join(src.root, ref, "gold", "events", path))
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf(`{"add":{"path":%q,"partitionValues":{},"size":%d,"modificationTime":1,"dataChange":%v,"stats":%q}}`, path, info.Size(), change, stats)
	}
	for _, c := range []struct{ name, stats, filter, refusal string }{
		{"max", `{"numRecords":2,"minValues":{"id":1},"maxValues":{"id":1},"nullCount":{"id":0}}`, `[("id", "=", 2)]`,
			`column "id": the log's stats claim maxValues 1, the file's max is 2`},
		{"records", `{"numRecords":50,"minValues":{"id":1},"maxValues":{"id":2},"nullCount":{"id":0}}`, "", "part-a.parquet"},
		{"honest", `{"numRecords":2,"minValues":{"id":1,"amount":1.0},"maxValues":{"id":2,"amount":2.0},"nullCount":{"id":0,"amount":0}}`, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := newDirSource(t)
			src.write(t, "main", "gold/events/part-a.parquet", "SELECT * FROM (VALUES (1::BIGINT, 1.0::DOUBLE), (2, 2.0)) v(id, amount)")
			writeDeltaCommit(t, src, "main", "gold/events", 0, deltaProtocol(1), deltaMeta(),
				add(src, "main", "part-a.parquet", `{"numRecords":2,"minValues":{"id":1},"maxValues":{"id":2},"nullCount":{"id":0}}`, true))
			src.branch(t, "main", "b1")
			src.write(t, "b1", "gold/events/part-b.parquet", "SELECT * FROM (VALUES (3::BIGINT, 1.0::DOUBLE)) v(id, amount)")
			writeDeltaCommit(t, src, "b1", "gold/events", 1,
				add(src, "b1", "part-a.parquet", c.stats, false),
				add(src, "b1", "part-b.parquet", `{"numRecords":1,"minValues":{"id":3},"maxValues":{"id":3},"nullCount":{"id":0}}`, true))
			if c.filter != "" {
				deltaRSSkips(t, filepath.Join(src.root, "b1", "gold", "events"), c.filter)
			}
			rep := deltaAudit(t, src, "b1", FormatDelta,
				Check{Name: "ids", Kind: KindNotNull, Table: "events", Column: "id", Scope: "batch"})
			if c.refusal == "" {
				if !rep.Passed {
					t.Fatalf("honest stats: %s", checkMessages(rep))
				}
				return
			}
			wantRefused(t, rep, c.refusal)
			wantRefused(t, rep, "part-a.parquet")
		})
	}
}

// deltaCheckpointClaims writes, with delta-rs, main's table: part of ids
// 1 and 2 whose add states no stats (they are dropped from the commit);
// "batch" appends ids 3 (version 1) and writes delta-rs's checkpoint of
// version 1 from a log whose version 1 also added main's file again with
// stats claiming maxValues id 1, then puts version 1 back as it was: the
// checkpoint alone states the claim.
const deltaCheckpointClaims = `
import sys, os, json
import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
out, mode = sys.argv[1], sys.argv[2]
log = os.path.join(out, "_delta_log")
def lines(v):
    return [json.loads(l) for l in open(os.path.join(log, "%020d.json" % v))]
def put(v, actions):
    with open(os.path.join(log, "%020d.json" % v), "w") as f:
        f.write("".join(json.dumps(a) + "\n" for a in actions))
if mode == "base":
    write_deltalake(out, pa.table({"id": pa.array([1, 2], pa.int64())}))
    acts = lines(0)
    for a in acts:
        if "add" in a:
            a["add"].pop("stats", None)
    put(0, acts)
else:
    write_deltalake(out, pa.table({"id": pa.array([3], pa.int64())}), mode="append")
    v1 = lines(1)
    base = [a["add"] for a in lines(0) if "add" in a][0]
    lie = dict(base, dataChange=False, stats=json.dumps({"numRecords": 2, "minValues": {"id": 1}, "maxValues": {"id": 1}, "nullCount": {"id": 0}}))
    put(1, v1 + [{"add": lie}])
    DeltaTable(out).create_checkpoint()
    put(1, v1)
    print(json.dumps({"version": DeltaTable(out).version(), "file": base["path"]}))
os._exit(0)  # deltalake's runtime can abort at the interpreter's exit
`

// TestDeltaCheckpointClaimsOfABaseFileAreCompared: main's file has no
// stats; the batch's checkpoint (delta-rs's) states claims of it
// (maxValues id 1 over a file holding 2) that no commit states. Readers
// of main after the merge start from the checkpoint and skip the file for
// id = 2. The commits state no claims for it, so the checkpoint was taken
// to agree with them, and its claims, known only by digest, were compared
// with nothing: a table's view leaves a published file's checkpoint-only
// claims, and the batch view did not hold main's file.
func TestDeltaCheckpointClaimsOfABaseFileAreCompared(t *testing.T) {
	python, err := testPython()
	if err != nil {
		t.Skipf("delta-rs not at hand: %v", err)
	}
	for _, scope := range []string{"table", "batch"} {
		t.Run(scope, func(t *testing.T) {
			src := newDirSource(t)
			py := func(dir string, args ...string) string {
				out, err := exec.Command(python, append([]string{"-c", deltaCheckpointClaims, dir}, args...)...).CombinedOutput()
				if err != nil {
					t.Fatalf("deltalake: %v\n%s", err, out)
				}
				return string(out)
			}
			py(filepath.Join(src.root, "main", "gold", "events"), "base")
			src.branch(t, "main", "b1")
			var batch struct {
				Version int
				File    string
			}
			if out := py(filepath.Join(src.root, "b1", "gold", "events"), "batch"); json.Unmarshal([]byte(out), &batch) != nil || batch.Version != 1 {
				t.Fatalf("the batch is not version 1: %s", out)
			}
			deltaRSSkips(t, filepath.Join(src.root, "b1", "gold", "events"), `[("id", "=", 2)]`)
			rep := deltaAudit(t, src, "b1", FormatDelta,
				Check{Name: "ids", Kind: KindNotNull, Table: "events", Column: "id", Scope: scope})
			wantRefused(t, rep, batch.File)
			wantRefused(t, rep, "that the log before it does not")
		})
	}
}

// TestDeltaNanosecondTimestampFieldsAreRefused: as
// TestDeltaNanosecondTimestampsAreRefused, for a struct's field and a
// list's elements: the log's timestamp (microseconds) held in
// nanoseconds, which Delta readers cast their way, DuckDB reads as held.
func TestDeltaNanosecondTimestampFieldsAreRefused(t *testing.T) {
	for _, c := range []struct{ name, typ, value string }{
		{"struct", `{"type":"struct","fields":[{"name":"t","type":"timestamp","nullable":true,"metadata":{}}]}`,
			`{'t': '2024-01-01 00:00:00.000000001'::TIMESTAMP_NS}`},
		{"list", `{"type":"array","elementType":"timestamp","containsNull":true}`,
			`['2024-01-01 00:00:00.000000001'::TIMESTAMP_NS]`},
	} {
		t.Run(c.name, func(t *testing.T) {
			schema := fmt.Sprintf(`{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"st","type":%s,"nullable":true,"metadata":{}}]}`, c.typ)
			meta := fmt.Sprintf(`{"metaData":{"id":"t1","format":{"provider":"parquet","options":{}},"schemaString":%q,"partitionColumns":[],"configuration":{},"createdTime":1}}`, schema)
			src := newDirSource(t)
			src.write(t, "main", "gold/events/part-a.parquet", "SELECT 1::BIGINT AS id, "+strings.ReplaceAll(c.value, "::TIMESTAMP_NS", "::TIMESTAMPTZ")+" AS st")
			writeDeltaCommit(t, src, "main", "gold/events", 0, deltaProtocol(1), meta, deltaAdd("part-a.parquet"))
			src.branch(t, "main", "b1")
			src.write(t, "b1", "gold/events/part-b.parquet", "SELECT 2::BIGINT AS id, "+c.value+" AS st")
			writeDeltaCommit(t, src, "b1", "gold/events", 1, deltaAdd("part-b.parquet"))
			rep := deltaAudit(t, src, "b1", FormatDelta, Check{Name: "ids", Kind: KindNotNull, Table: "events", Column: "id"})
			wantRefused(t, rep, "TIMESTAMP_NS")
			wantRefused(t, rep, "part-b.parquet")
		})
	}
}
