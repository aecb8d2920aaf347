package audit

import (
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakewap/lakewap/schemas"
)

// deltaReAdded writes, with delta-rs, a table partitioned by region on
// main (version 0, region "a") and a batch on b1: version 1 appends a file
// of region "evil" (delta-rs), version 2 removes it and version 3 adds the
// same file again with the region given (the log's partition values,
// which readers read, not the path). "read" prints the regions delta-rs reads at
// a version.
const deltaReAdded = `
import sys, os, json, glob
import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
out, mode = sys.argv[1], sys.argv[2]
def rows(ids, region):
    return pa.table({"id": pa.array(ids, pa.int64()), "region": pa.array([region] * len(ids))})
log = os.path.join(out, "_delta_log")
def commit(v, *actions):
    with open(os.path.join(log, "%020d.json" % v), "w") as f:
        f.write("".join(json.dumps(a) + "\n" for a in actions))
if mode == "base":
    write_deltalake(out, rows([1, 2, 3], "a"), partition_by=["region"])
elif mode == "read":
    t = DeltaTable(out, version=int(sys.argv[3])).to_pyarrow_table()
    print(json.dumps({"regions": sorted(set(t.column("region").to_pylist())), "ids": sorted(t.column("id").to_pylist())}))
elif mode == "batch":
    write_deltalake(out, rows([7, 8], "evil"), mode="append")
    add = [json.loads(l)["add"] for l in open(os.path.join(log, "%020d.json" % 1)) if '"add"' in l][0]
    commit(2, {"commitInfo": {"timestamp": 2, "operation": "DELETE"}},
        {"remove": {"path": add["path"], "deletionTimestamp": 2, "dataChange": True, "partitionValues": add["partitionValues"], "size": add["size"]}})
    again = dict(add, partitionValues={"region": sys.argv[3]}, modificationTime=3)
    commit(3, {"commitInfo": {"timestamp": 3, "operation": "WRITE"}}, {"add": again})
    print(json.dumps({"version": DeltaTable(out).version()}))
elif mode == "inplace":
    # main's file of region a is rewritten in place with a negative id, at
    # its size;
    # version 1 removes it, version 2 adds it again with region b.
    add = [json.loads(l)["add"] for l in open(os.path.join(log, "%020d.json" % 0)) if '"add"' in l][0]
    import pyarrow.parquet as pq
    f = os.path.join(out, add["path"])
    # of the old size, which readers of version 0 read its footer by
    def write(k, n):
        pq.write_table(pa.table({"id": pa.array([-1, 2, 3], pa.int64())}).replace_schema_metadata({"p" * k: "x" * n}), f, write_statistics=False, compression="NONE")
        return os.path.getsize(f) == add["size"]
    if not any(write(k, n) for k in range(1, 5) for n in range(64)):
        raise SystemExit("no rewrite of %d bytes" % add["size"])
    size = os.path.getsize(f)
    commit(1, {"commitInfo": {"timestamp": 1, "operation": "DELETE"}},
        {"remove": {"path": add["path"], "deletionTimestamp": 1, "dataChange": True, "partitionValues": add["partitionValues"], "size": add["size"]}})
    commit(2, {"commitInfo": {"timestamp": 2, "operation": "WRITE"}}, {"add": dict(add, partitionValues={"region": "b"}, size=size, stats=None)})
    print(json.dumps({"version": DeltaTable(out).version()}))
elif mode == "old-checkpoint":
    # version 1 appends a file of region evil, checkpoint 1 (delta-rs's)
    # says so, then commit 1 is rewritten to say region a; version 2
    # removes the file, version 3 appends a file of region a, checkpoint
    # 3 (delta-rs's, from checkpoint 1 and commits 2 and 3: the same as
    # the commits say).
    write_deltalake(out, rows([7, 8], "evil"), mode="append")
    DeltaTable(out).create_checkpoint()
    name = os.path.join(log, "%020d.json" % 1)
    lines = [json.loads(l) for l in open(name)]
    add = [l["add"] for l in lines if "add" in l][0]
    commit(1, *[{"add": dict(l["add"], partitionValues={"region": "a"})} if "add" in l else l for l in lines])
    commit(2, {"commitInfo": {"timestamp": 2, "operation": "DELETE"}},
        {"remove": {"path": add["path"], "deletionTimestamp": 2, "dataChange": True, "partitionValues": {"region": "a"}, "size": add["size"]}})
    write_deltalake(out, rows([9], "a"), mode="append")
    DeltaTable(out).create_checkpoint()
    print(json.dumps({"version": DeltaTable(out).version()}))
elif mode == "honest-overwrite":
    write_deltalake(out, rows([10], "a"), mode="append")
    write_deltalake(out, rows([11], "a"), mode="overwrite")
    DeltaTable(out).create_checkpoint()
    write_deltalake(out, rows([12], "a"), mode="append")
    DeltaTable(out).create_checkpoint()
    print(json.dumps({"version": DeltaTable(out).version()}))
elif mode == "base-checkpoint":
    # a checkpoint of main's version 0 saying its file is of region evil
    # (delta-rs's, of commit 0 rewritten for the while), then version 1
    # removes the file, version 2 appends one of region a, checkpoint 2.
    name = os.path.join(log, "%020d.json" % 0)
    orig = open(name, "rb").read()
    lines = [json.loads(l) for l in orig.decode().splitlines()]
    add = [l["add"] for l in lines if "add" in l][0]
    commit(0, *[{"add": dict(l["add"], partitionValues={"region": "evil"})} if "add" in l else l for l in lines])
    DeltaTable(out, version=0).create_checkpoint()
    open(name, "wb").write(orig)
    commit(1, {"commitInfo": {"timestamp": 1, "operation": "DELETE"}},
        {"remove": {"path": add["path"], "deletionTimestamp": 1, "dataChange": True, "partitionValues": add["partitionValues"], "size": add["size"]}})
    write_deltalake(out, rows([9], "a"), mode="append")
    DeltaTable(out).create_checkpoint()
    print(json.dumps({"version": DeltaTable(out).version()}))
elif mode == "honest-checkpoints":
    for i in range(3):
        write_deltalake(out, rows([10 + i], "a"), mode="append")
        if i < 2:
            DeltaTable(out).create_checkpoint()
    print(json.dumps({"version": DeltaTable(out).version()}))
elif mode == "checkpoints":
    # main's file of region a: version 1 removes it, version 2 adds it
    # again with region evil, checkpoint 2, version 3 removes it, version
    # 4 adds it again with region a, checkpoint 4.
    add = [json.loads(l)["add"] for l in open(os.path.join(log, "%020d.json" % 0)) if '"add"' in l][0]
    remove = {"remove": {"path": add["path"], "deletionTimestamp": 2, "dataChange": True, "partitionValues": add["partitionValues"], "size": add["size"]}}
    commit(1, {"commitInfo": {"timestamp": 1, "operation": "DELETE"}}, remove)
    commit(2, {"commitInfo": {"timestamp": 2, "operation": "WRITE"}}, {"add": dict(add, partitionValues={"region": "evil"})})
    DeltaTable(out).create_checkpoint()
    commit(3, {"commitInfo": {"timestamp": 3, "operation": "DELETE"}}, remove)
    commit(4, {"commitInfo": {"timestamp": 4, "operation": "WRITE"}}, {"add": add})
    DeltaTable(out).create_checkpoint()
    print(json.dumps({"version": DeltaTable(out).version()}))
os._exit(0)  # deltalake's runtime can abort at the interpreter's exit
`

// TestDeltaReAddedFileWithOtherPartitionValuesIsRefused: a file the
// batch's version 1 adds with region "evil", version 2 removes and
// version 3 adds again with region "a" is active at the last version,
// where the audit reads its rows as region "a"; delta-rs reads them as
// region "evil" at version 1 of the published table. Before, the file was
// left out of the intermediate files because it is active (read as the
// last version's file), and accepted_values passed.
func TestDeltaReAddedFileWithOtherPartitionValuesIsRefused(t *testing.T) {
	py := reAddedScript(t)
	src := reAddedBase(t, py)
	if out := py(filepath.Join(src.root, "b1", "gold", "events"), "batch", "a"); !strings.Contains(out, `"version": 3`) {
		t.Fatalf("the batch is not versions 1 to 3: %s", out)
	}
	src.branch(t, "b1", "merged")
	for v, want := range map[string]string{"1": `["a", "evil"]`, "3": `["a"]`} {
		var read struct {
			Regions json.RawMessage `json:"regions"`
		}
		out := py(filepath.Join(src.root, "merged", "gold", "events"), "read", v)
		if err := json.Unmarshal([]byte(out), &read); err != nil || string(read.Regions) != want {
			t.Fatalf("delta-rs at version %s of the published table: %s, want regions %s", v, out, want)
		}
	}
	rep := deltaAudit(t, src, "b1", FormatDelta,
		Check{Name: "regions", Kind: KindAcceptedValues, Table: "events", Column: "region", Values: []string{"a"}})
	wantRefused(t, rep, "version 1 adds data file gold/events/region=evil/")

	// Added again with the same partition values (a restore): read as
	// the last version's file, and judged.
	src = reAddedBase(t, py)
	py(filepath.Join(src.root, "b1", "gold", "events"), "batch", "evil")
	rep = deltaAudit(t, src, "b1", FormatDelta,
		Check{Name: "regions", Kind: KindAcceptedValues, Table: "events", Column: "region", Values: []string{"a"}},
		Check{Name: "all regions", Kind: KindAcceptedValues, Table: "events", Column: "region", Values: []string{"a", "evil"}})
	for _, c := range rep.Checks {
		if want := map[string]string{"regions": schemas.StatusFail, "all regions": schemas.StatusPass}[c.Name]; want != "" && c.Status != want {
			t.Errorf("restore: %s: %s %q %q, want %s", c.Name, c.Status, c.Observed, c.Message, want)
		}
	}
}

// TestDeltaVersionsBeforeTheBatchsCheckpointsAreReplayed: a batch that
// writes two checkpoints (versions 2 and 4) has versions before the older
// one (1 and 2) that the reading from it (checkpoint 2, commits 3 and 4)
// does not replay: there main's file of region a is added again with
// region evil, which deltalake 1.6.6 reads at version 2 of the published
// table. Before, the audit replayed from checkpoint 2 and passed
// accepted_values(region: [a]).
func TestDeltaVersionsBeforeTheBatchsCheckpointsAreReplayed(t *testing.T) {
	py := reAddedScript(t)
	src := reAddedBase(t, py)
	if out := py(filepath.Join(src.root, "b1", "gold", "events"), "checkpoints"); !strings.Contains(out, `"version": 4`) {
		t.Fatalf("the batch is not versions 1 to 4: %s", out)
	}
	src.branch(t, "b1", "merged")
	if out := py(filepath.Join(src.root, "merged", "gold", "events"), "read", "2"); !strings.Contains(out, `"evil"`) {
		t.Fatalf("delta-rs at version 2 of the published table: %s, want region evil", out)
	}
	rep := deltaAudit(t, src, "b1", FormatDelta,
		Check{Name: "regions", Kind: KindAcceptedValues, Table: "events", Column: "region", Values: []string{"a"}})
	wantRefused(t, rep, "version 2 adds data file gold/events/region=a/")

	// An honest batch of three appends and two checkpoints passes.
	src = reAddedBase(t, py)
	py(filepath.Join(src.root, "b1", "gold", "events"), "honest-checkpoints")
	rep = deltaAudit(t, src, "b1", FormatDelta,
		Check{Name: "regions", Kind: KindAcceptedValues, Table: "events", Column: "region", Values: []string{"a"}},
		Check{Name: "rows", Kind: KindRowCount, Table: "events", Min: f64(6), Max: f64(6)})
	if !rep.Passed {
		t.Fatalf("an honest batch with two checkpoints: %s", checkMessages(rep))
	}
}

// TestDeltaPlanReplaysTheBatchsVersions: the second reading of a batch's
// newest checkpoint starts at or before the base's version; one the log's
// commits do not allow is refused for a batch (the table at other refs is
// read as before).
func TestDeltaPlanReplaysTheBatchsVersions(t *testing.T) {
	l := deltaLog{commits: map[int64]Object{}, checkpoints: map[int64][]Object{2: {{Path: "c2"}}, 4: {{Path: "c4"}}}}
	for _, v := range []int64{0, 1, 2, 3, 4, 5} {
		l.commits[v] = Object{Path: fmt.Sprint(v)}
	}
	if _, verify, err := l.plan(0); err != nil || verify == nil || verify.checkpoint != -1 || len(verify.commits) != 5 {
		t.Errorf("base 0: %v %v, want commits 0 to 4", verify, err)
	}
	if _, verify, err := l.plan(math.MaxInt64); err != nil || verify == nil || verify.checkpoint != 2 {
		t.Errorf("no base: %v %v, want checkpoint 2 and commits 3, 4", verify, err)
	}
	delete(l.commits, 1)
	if _, _, err := l.plan(0); err == nil || !strings.Contains(err.Error(), "the batch's versions before the checkpoint") {
		t.Errorf("base 0 without commit 1: %v, want a refusal", err)
	}
	if _, verify, err := l.plan(2); err != nil || verify == nil || verify.checkpoint != 2 {
		t.Errorf("base 2 without commit 1: %v %v, want checkpoint 2 and commits 3, 4", verify, err)
	}
}

// TestDeltaBaseFileRewrittenAndAddedAgainIsRefused: the batch rewrites
// main's file of region a in place (an id of -1), version 1 removes it and
// version 2 adds it again with region b. The audit reads the new bytes as
// region b; deltalake 1.6.6 reads them as region a at version 0 of the
// published table, where ids of region a must not be negative. Before, the
// range with that where passed.
func TestDeltaBaseFileRewrittenAndAddedAgainIsRefused(t *testing.T) {
	py := reAddedScript(t)
	src := reAddedBase(t, py)
	if out := py(filepath.Join(src.root, "b1", "gold", "events"), "inplace"); !strings.Contains(out, `"version": 2`) {
		t.Fatalf("the batch is not versions 1 and 2: %s", out)
	}
	src.branch(t, "b1", "merged")
	if out := py(filepath.Join(src.root, "merged", "gold", "events"), "read", "0"); !strings.Contains(out, `"regions": ["a"], "ids": [-1, 2, 3]`) {
		t.Fatalf("delta-rs at version 0 of the published table: %s, want region a and id -1", out)
	}
	rep := deltaAudit(t, src, "b1", FormatDelta,
		Check{Name: "ids of a", Kind: KindRange, Table: "events", Column: "id", Min: f64(0), Where: "region = 'a'"})
	wantRefused(t, rep, "with partition values 'a'")
}

// TestDeltaOlderCheckpointsOfTheBatchAreVerified: a batch's checkpoint 1
// says its file is of region evil, its commit 1 says region a; its newest
// checkpoint (3) agrees with the commits. deltalake 1.6.6 reads version 1
// of the published table from checkpoint 1 (region evil). Before, only
// the newest checkpoint was compared with the commits, and
// accepted_values(region: [a]) passed.
func TestDeltaOlderCheckpointsOfTheBatchAreVerified(t *testing.T) {
	py := reAddedScript(t)
	src := reAddedBase(t, py)
	if out := py(filepath.Join(src.root, "b1", "gold", "events"), "old-checkpoint"); !strings.Contains(out, `"version": 3`) {
		t.Fatalf("the batch is not versions 1 to 3: %s", out)
	}
	src.branch(t, "b1", "merged")
	if out := py(filepath.Join(src.root, "merged", "gold", "events"), "read", "1"); !strings.Contains(out, `"evil"`) {
		t.Fatalf("delta-rs at version 1 of the published table: %s, want region evil", out)
	}
	rep := deltaAudit(t, src, "b1", FormatDelta,
		Check{Name: "regions", Kind: KindAcceptedValues, Table: "events", Column: "region", Values: []string{"a"}})
	wantRefused(t, rep, "checkpoint 1 disagrees")

	// An honest batch: an append, an overwrite, checkpoint 2, an append,
	// checkpoint 3, passes. The appended file that the overwrite removed
	// is read as an intermediate file.
	src = reAddedBase(t, py)
	py(filepath.Join(src.root, "b1", "gold", "events"), "honest-overwrite")
	rep = deltaAudit(t, src, "b1", FormatDelta,
		Check{Name: "regions", Kind: KindAcceptedValues, Table: "events", Column: "region", Values: []string{"a"}})
	if !rep.Passed || !strings.Contains(rep.Checks[0].Observed, "0 failing of 1 rows in files the batch's versions added and removed") {
		t.Fatalf("an honest batch with an overwrite and two checkpoints: %s %+v", checkMessages(rep), rep.Checks)
	}
}

// TestDeltaBatchCheckpointOfABaseVersionIsRefused: a batch writes a
// checkpoint of main's version 0 that says its file is of region evil;
// its commits remove the file, and its own checkpoint (2) agrees with
// them, as does the reading from checkpoint 0. deltalake 1.6.6 reads
// version 0 of the published table from the new checkpoint (region evil).
// Before, the audit passed accepted_values(region: [a]).
func TestDeltaBatchCheckpointOfABaseVersionIsRefused(t *testing.T) {
	py := reAddedScript(t)
	src := reAddedBase(t, py)
	if out := py(filepath.Join(src.root, "b1", "gold", "events"), "base-checkpoint"); !strings.Contains(out, `"version": 2`) {
		t.Fatalf("the batch is not versions 1 and 2: %s", out)
	}
	src.branch(t, "b1", "merged")
	if out := py(filepath.Join(src.root, "merged", "gold", "events"), "read", "0"); !strings.Contains(out, `"evil"`) {
		t.Fatalf("delta-rs at version 0 of the published table: %s, want region evil", out)
	}
	rep := deltaAudit(t, src, "b1", FormatDelta,
		Check{Name: "regions", Kind: KindAcceptedValues, Table: "events", Column: "region", Values: []string{"a"}})
	wantRefused(t, rep, "checkpoint of version 0")
}

// reAddedScript runs deltaReAdded with deltalake on a table directory and
// its arguments, returning what it prints; the test is skipped without
// delta-rs.
func reAddedScript(t *testing.T) func(dir string, args ...string) string {
	t.Helper()
	python, err := testPython()
	if err != nil {
		t.Skipf("delta-rs not at hand: %v", err)
	}
	return func(dir string, args ...string) string {
		t.Helper()
		out, err := exec.Command(python, append([]string{"-c", deltaReAdded, dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("deltalake: %v\n%s", err, out)
		}
		return string(out)
	}
}

// reAddedBase is a source whose main holds the script's base table, with
// branch b1 made from it for the batch.
func reAddedBase(t *testing.T, py func(dir string, args ...string) string) *dirSource {
	t.Helper()
	src := newDirSource(t)
	py(filepath.Join(src.root, "main", "gold", "events"), "base")
	src.branch(t, "main", "b1")
	return src
}
