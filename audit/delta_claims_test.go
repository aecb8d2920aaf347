package audit

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDeltaStatsThatLieAreRefused: an add action's stats claim the file's
// min, max and null counts, and Delta readers skip whole files by them
// (delta-rs, Spark's data skipping). A log claiming maxValues id 3 over a
// file holding 4, minValues 4 over 3, or nullCount 0 over a NULL made a
// reader's WHERE id = 4 (= 3, amount IS NULL) skip the file the audit
// read; Spark answers max(id) from the stats, so a wider claim of a number
// is a disagreement too. The audit must refuse the table, naming the file,
// the column and the claim; honest stats pass.
func TestDeltaStatsThatLieAreRefused(t *testing.T) {
	add := func(src *dirSource, ref, path, stats string) string {
		info, err := os.Stat(filepath.Join(src.root, ref, "gold", "events", path))
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf(`{"add":{"path":%q,"partitionValues":{},"size":%d,"modificationTime":1,"dataChange":true,"stats":%q}}`, path, info.Size(), stats)
	}
	for _, c := range []struct {
		name, stats string
		filter      string // delta-rs's filter that skips the file by the lie, or ""
		refusal     string
	}{
		{"narrower_max", `{"numRecords":2,"minValues":{"id":3,"amount":1.0},"maxValues":{"id":3,"amount":1.0},"nullCount":{"id":0,"amount":1}}`,
			`[("id", "=", 4)]`, `column "id": the log's stats claim maxValues 3, the file's max is 4`},
		{"narrower_min", `{"numRecords":2,"minValues":{"id":4,"amount":1.0},"maxValues":{"id":4,"amount":1.0},"nullCount":{"id":0,"amount":1}}`,
			`[("id", "=", 3)]`, `column "id": the log's stats claim minValues 4, the file's min is 3`},
		{"no_nulls_claimed", `{"numRecords":2,"minValues":{"id":3,"amount":1.0},"maxValues":{"id":4,"amount":1.0},"nullCount":{"id":0,"amount":0}}`,
			`[("amount", "=", None)]`, `column "amount": the log's stats claim nullCount 0, the file holds 1`},
		{"honest", `{"numRecords":2,"minValues":{"id":3,"amount":1.0},"maxValues":{"id":4,"amount":1.0},"nullCount":{"id":0,"amount":1}}`, "", ""},
		// Spark answers max(id) from the stats: a wider claim of a number is refused too.
		{"wider_number", `{"numRecords":2,"minValues":{"id":3,"amount":1.0},"maxValues":{"id":40},"nullCount":{"id":0}}`,
			"", `column "id": the log's stats claim maxValues 40, the file's max is 4`},
		{"some_claims", `{"numRecords":2,"minValues":{"id":3},"nullCount":{"amount":1}}`, "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := newDirSource(t)
			src.write(t, "main", "gold/events/part-a.parquet", "SELECT * FROM (VALUES (1::BIGINT, 1.0::DOUBLE), (2, 2.0)) v(id, amount)")
			writeDeltaCommit(t, src, "main", "gold/events", 0, deltaProtocol(1), deltaMeta(), add(src, "main", "part-a.parquet", `{"numRecords":2}`))
			src.branch(t, "main", "b1")
			src.write(t, "b1", "gold/events/part-b.parquet", "SELECT * FROM (VALUES (3::BIGINT, 1.0::DOUBLE), (4, NULL)) v(id, amount)")
			writeDeltaCommit(t, src, "b1", "gold/events", 1, add(src, "b1", "part-b.parquet", c.stats))
			if c.filter != "" {
				deltaRSSkips(t, filepath.Join(src.root, "b1", "gold", "events"), c.filter)
			}
			rep := deltaAudit(t, src, "b1", FormatDelta, Check{Name: "rows", Kind: KindRowCount, Table: "events", Max: f64(10)})
			got := rep.Checks[0]
			if c.refusal == "" && !rep.Passed {
				t.Errorf("honest stats: passed %v (%s %s), want pass", rep.Passed, got.Observed, got.Message)
			}
			if c.refusal != "" && (rep.Passed || !strings.Contains(got.Message, "part-b.parquet") || !strings.Contains(got.Message, c.refusal)) {
				t.Errorf("passed %v (%s %s), want refused naming part-b.parquet and: %s", rep.Passed, got.Observed, got.Message, c.refusal)
			}
		})
	}
}

// deltaRSSkips shows, with the interop Python's deltalake, that delta-rs
// reading the table at dir with filter reads no row where its full scan
// reads one (the disagreement the lie makes). Skipped without it.
func deltaRSSkips(t *testing.T, dir, filter string) {
	t.Helper()
	python, err := testPython()
	if err != nil {
		t.Logf("delta-rs not shown: %v", err)
		return
	}
	script := fmt.Sprintf(`
import os, sys, deltalake, pyarrow.compute as pc
dt = deltalake.DeltaTable(sys.argv[1])
f = %s
full = dt.to_pyarrow_table()
col, op, val = f[0]
want = full.filter(pc.is_null(full[col]) if val is None else pc.equal(full[col], val)).num_rows
got = dt.to_pyarrow_table(filters=f).num_rows
print(got, want, flush=True)
os._exit(0)  # deltalake's runtime can abort at the interpreter's exit
`, filter)
	out, err := exec.Command(python, "-c", script, dir).CombinedOutput()
	if err != nil {
		t.Fatalf("deltalake: %v\n%s", err, out)
	}
	var got, want int
	if _, err := fmt.Sscan(string(out), &got, &want); err != nil || want != 1 || got == want {
		t.Fatalf("delta-rs with filter %s reads %d rows, its full scan %d (%s): want them to differ (the attack)", filter, got, want, out)
	}
	t.Logf("delta-rs with filter %s reads %d rows, its full scan %d", filter, got, want)
}

const honestDeltaRS = `
import os, sys, decimal, datetime
import pyarrow as pa
from deltalake import write_deltalake
out = sys.argv[1]
def rows(lo, hi):
    r = range(lo, hi)
    return pa.table({
        "id": pa.array([i - 50 for i in r], pa.int64()),
        "small": pa.array([i % 100 for i in r], pa.int16()),
        "f32": pa.array([i / 3 for i in r], pa.float32()),
        "f64": pa.array([-0.0 if i % 7 == 0 else i / 7 - 3 for i in r], pa.float64()),
        "s": pa.array([None if i % 5 == 0 else ("" if i % 5 == 1 else "é😀 a long text of more than thirty-two characters " + str(i)) for i in r], pa.string()),
        "d": pa.array([decimal.Decimal(i - 50) / 100 for i in r], pa.decimal128(9, 2)),
        "day": pa.array([datetime.date(1960, 1, 1) + datetime.timedelta(days=i * 37) for i in r], pa.date32()),
        "ts": pa.array([datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc) + datetime.timedelta(microseconds=i * 1234567) for i in r], pa.timestamp("us", tz="UTC")),
        "ntz": pa.array([datetime.datetime(1969, 12, 31) + datetime.timedelta(microseconds=i * 7654321) for i in r], pa.timestamp("us")),
        "b": pa.array([i % 2 == 0 for i in r], pa.bool_()),
        "allnull": pa.array([None for i in r], pa.int32()),
        "st": pa.array([{"a": i, "t": "x" + str(i)} for i in r], pa.struct([("a", pa.int64()), ("t", pa.string())])),
    })
write_deltalake(out, rows(0, 40))
write_deltalake(out, rows(40, 100), mode="append")
write_deltalake(out, rows(100, 130), mode="append")
os._exit(0)  # deltalake's runtime can abort at the interpreter's exit
`

// TestHonestDeltaStatsPass: a table delta-rs writes (three commits, no
// checkpoint: TestDeltaRSCheckpointPasses reads one; every
// primitive type, long unicode text, -0.0, nulls,
// microsecond timestamps, a struct) passes the comparison of its stats.
func TestHonestDeltaStatsPass(t *testing.T) {
	src, dir := deltaRSTable(t, honestDeltaRS)
	rep := deltaAudit(t, src, "b1", FormatDelta, Check{Name: "rows", Kind: KindRowCount, Table: "events", Min: f64(130), Max: f64(130)})
	if got := rep.Checks[0]; !rep.Passed {
		t.Errorf("a table delta-rs wrote: passed %v (%s %s), want pass", rep.Passed, got.Observed, got.Message)
	}
	// Each column's maxValues in the last commit, one step narrower, is
	// refused (the comparison is not vacuous).
	commit := filepath.Join(dir, "_delta_log", fmt.Sprintf("%020d.json", 2))
	honest, err := os.ReadFile(commit)
	if err != nil {
		t.Fatal(err)
	}
	for col, step := range map[string][2]string{
		"id": {`79`, `78`}, "small": {`29`, `28`}, "f32": {`43.0`, `42.99`}, "f64": {`15.428571428571427`, `15.428571428571426`},
		"d": {`0.79`, `0.785`}, "day": {`\"1973-01-25`, `\"1973-01-24`}, "ts": {`\"2024-01-01T00:02:39.259Z`, `\"2024-01-01T00:02:39.258Z`},
		"ntz": {`\"1969-12-31 00:16:27.407`, `\"1969-12-31 00:16:27.406`}, "b": {`true`, `false`},
		"s": {`\"é😀 a long text of more than thirty-two characters 129`, `\"é😀 a long text of more than thirty-two characters 128`},
	} {
		key := `\"` + col + `\":`
		at := bytes.Index(honest, []byte(`\"maxValues\":{`))
		from := bytes.Index(honest[at:], []byte(key+step[0]))
		if at < 0 || from < 0 {
			t.Fatalf("no maxValues %s%s in %s", key, step[0], honest)
		}
		forged := slices.Concat(honest[:at+from], []byte(key+step[1]), honest[at+from+len(key)+len(step[0]):])
		if err := os.WriteFile(commit, forged, 0o644); err != nil {
			t.Fatal(err)
		}
		rep := deltaAudit(t, src, "b1", FormatDelta, Check{Name: "rows", Kind: KindRowCount, Table: "events", Min: f64(130), Max: f64(130)})
		want := fmt.Sprintf("column %q: the log's stats claim maxValues", col)
		if got := rep.Checks[0]; rep.Passed || !strings.Contains(got.Message, want) {
			t.Errorf("maxValues of %s forged to %s: passed %v (%s), want refused: %s", col, step[1], rep.Passed, got.Message, want)
		}
	}
}

// TestDeltaCheckpointStatsAreCompared: a checkpoint's claims are kept by
// digest and taken from the commits it is verified with, so a batch that
// writes its lie into a checkpoint too is refused as in a commit; a
// checkpoint claiming other stats than its commit is another reading of
// the log and refused; honest stats in both pass.
func TestDeltaCheckpointStatsAreCompared(t *testing.T) {
	honest := `{"numRecords":2,"minValues":{"id":3},"maxValues":{"id":4},"nullCount":{"id":0}}`
	lie := `{"numRecords":2,"minValues":{"id":3},"maxValues":{"id":3},"nullCount":{"id":0}}`
	for _, c := range []struct {
		name, commit, checkpoint, refusal string
	}{
		{"lie_in_both", lie, lie, `column "id": the log's stats claim maxValues 3, the file's max is 4`},
		{"checkpoint_other_stats", honest, lie, "has other stats"},
		{"honest", honest, honest, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := newDirSource(t)
			src.write(t, "main", "gold/events/part-a.parquet", "SELECT * FROM (VALUES (1::BIGINT, 1.0::DOUBLE), (2, 2.0)) v(id, amount)")
			writeDeltaCommit(t, src, "main", "gold/events", 0, deltaProtocol(1), deltaMeta(), deltaAdd("part-a.parquet"))
			src.branch(t, "main", "b1")
			src.write(t, "b1", "gold/events/part-b.parquet", "SELECT * FROM (VALUES (3::BIGINT, 1.0::DOUBLE), (4, 2.0)) v(id, amount)")
			writeDeltaCommit(t, src, "b1", "gold/events", 1,
				fmt.Sprintf(`{"add":{"path":"part-b.parquet","partitionValues":{},"modificationTime":1,"dataChange":true,"stats":%q}}`, c.commit))
			writeCheckpoint(t, src, "b1", "gold/events", 1, nil, cpAction{add: "part-a.parquet"}, cpAction{add: "part-b.parquet", stats: c.checkpoint})
			rep := deltaAudit(t, src, "b1", FormatDelta, Check{Name: "rows", Kind: KindRowCount, Table: "events", Max: f64(10)})
			got := rep.Checks[0]
			if c.refusal == "" && !rep.Passed {
				t.Errorf("passed %v (%s %s), want pass", rep.Passed, got.Observed, got.Message)
			}
			if c.refusal != "" && (rep.Passed || !strings.Contains(got.Message, c.refusal)) {
				t.Errorf("passed %v (%s %s), want refused: %s", rep.Passed, got.Observed, got.Message, c.refusal)
			}
		})
	}
}

// TestDeltaNestedStatsAreCompared: the stats of a struct's fields are
// claims readers skip files by too. deltalake's QueryBuilder (DataFusion)
// read count(*) 0 WHERE st.a = 4 of a file holding one, whose stats
// claimed maxValues {"st": {"a": 3}}; lakewap compared top-level columns
// only and passed it. Such a file is refused, naming st.a; the honest
// table passes.
func TestDeltaNestedStatsAreCompared(t *testing.T) {
	for _, forge := range []bool{false, true} {
		t.Run(fmt.Sprintf("forged_%v", forge), func(t *testing.T) {
			src := newBatchSource(t)
			dir := filepath.Join(src.root, "b1", "gold", "events")
			script := `
import json
write_deltalake(out, pa.table({"id": pa.array([3, 4], pa.int64()),
    "st": pa.array([{"a": 3, "in": {"b": "x"}}, {"a": 4, "in": {"b": "y"}}], pa.struct([("a", pa.int64()), ("in", pa.struct([("b", pa.string())]))]))}))
if len(sys.argv) > 2:
    log = os.path.join(out, "_delta_log", "%020d.json" % 0)
    lines = []
    for l in open(log).read().splitlines():
        j = json.loads(l)
        if "add" in j:
            s = json.loads(j["add"]["stats"])
            assert s["maxValues"]["st"]["a"] == 4 and s["maxValues"]["st"]["in"]["b"] == "y", s
            s["maxValues"]["st"]["a"] = 3
            j["add"]["stats"] = json.dumps(s)
        lines.append(json.dumps(j))
    open(log, "w").write("\n".join(lines) + "\n")
from deltalake import QueryBuilder
n = QueryBuilder().register("t", DeltaTable(out)).execute("SELECT count(*) AS n FROM t WHERE st.a = 4").read_all()
print(n.to_pylist() if hasattr(n, "to_pylist") else n.column("n").to_pylist(), flush=True)
`
			if forge {
				script = strings.Replace(script, "if len(sys.argv) > 2:", "if True:", 1)
			}
			out := deltaRSRun(t, dir, script)
			if want := map[bool]string{false: "[1]", true: "[0]"}[forge]; out != want {
				t.Fatalf("deltalake's QueryBuilder: count(*) WHERE st.a = 4: %s, want %s", out, want)
			}
			t.Logf("deltalake's QueryBuilder: count(*) WHERE st.a = 4: %s", out)
			rep := deltaAudit(t, src, "b1", FormatDelta, Check{Name: "rows", Kind: KindRowCount, Table: "events", Min: f64(2), Max: f64(2)})
			if !forge {
				if !rep.Passed {
					t.Fatalf("honest nested stats: %s", checkMessages(rep))
				}
				return
			}
			wantRefused(t, rep, `column "st.a": the log's stats claim maxValues 3, the file's max is 4`)
		})
	}
}

// TestDeltaNestedStatsKeysInOtherCase: delta-rs matches a top-level stats
// key to its column in any case ({"ID": 3} skipped a file holding id 4),
// and the audit refuses such a key. Inside a struct it does not: with a
// file holding st.a = 4 whose stats claimed maxValues {"st": {"A": 3}}
// (the key "a" dropped, or kept as 4 beside it), or minValues {"st":
// {"A": 5}}, deltalake 1.6.6's QueryBuilder read 1 row WHERE st.a = 4, as
// with honest stats (0 with {"st": {"a": 3}}: TestDeltaNestedStatsAreCompared).
// The audit reads no claim of such a key either (claimAt takes the exact
// name), so it passes: the readers agree. Should delta-rs start skipping by
// them, this test fails and the audit must compare or refuse them.
func TestDeltaNestedStatsKeysInOtherCase(t *testing.T) {
	for name, forge := range map[string]string{
		"max_A_only":   `s["maxValues"]["st"]["A"] = 3; del s["maxValues"]["st"]["a"]`,
		"max_A_beside": `s["maxValues"]["st"]["A"] = 3`,
		"min_A_only":   `s["minValues"]["st"]["A"] = 5; del s["minValues"]["st"]["a"]`,
	} {
		t.Run(name, func(t *testing.T) {
			src := newBatchSource(t)
			dir := filepath.Join(src.root, "b1", "gold", "events")
			script := `
import json
write_deltalake(out, pa.table({"id": pa.array([3, 4], pa.int64()),
    "st": pa.array([{"a": 3}, {"a": 4}], pa.struct([("a", pa.int64())]))}))
log = os.path.join(out, "_delta_log", "%020d.json" % 0)
lines = []
for l in open(log).read().splitlines():
    j = json.loads(l)
    if "add" in j:
        s = json.loads(j["add"]["stats"])
        assert s["maxValues"]["st"]["a"] == 4 and s["minValues"]["st"]["a"] == 3, s
        FORGE
        j["add"]["stats"] = json.dumps(s)
    lines.append(json.dumps(j))
open(log, "w").write("\n".join(lines) + "\n")
from deltalake import QueryBuilder
n = QueryBuilder().register("t", DeltaTable(out)).execute("SELECT count(*) AS n FROM t WHERE st.a = 4").read_all()
print(n.to_pylist() if hasattr(n, "to_pylist") else n.column("n").to_pylist(), flush=True)
`
			out := deltaRSRun(t, dir, strings.Replace(script, "FORGE", forge, 1))
			if out != "[1]" {
				t.Fatalf("deltalake's QueryBuilder: count(*) WHERE st.a = 4: %s, want [1]: delta-rs skips by a struct field's stats key in another case, which the audit does not compare", out)
			}
			rep := deltaAudit(t, src, "b1", FormatDelta, Check{Name: "rows", Kind: KindRowCount, Table: "events", Min: f64(2), Max: f64(2)})
			if !rep.Passed {
				t.Fatalf("refused, though delta-rs reads the file whole: %s", checkMessages(rep))
			}
		})
	}
}
