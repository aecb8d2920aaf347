package audit

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// deltaReAddedSize writes, with delta-rs, a table of ids and n on main
// (version 0: ids 1, 2, 3) and a batch on b1 whose file holds two footers:
// its column chunks, then the footer of a file naming them n and id (ids
// -1 and -2), then its own footer naming them id and n (ids 7 and 8).
// Version 1 adds it with the size of the first footer's end, version 2
// removes it, version 3 adds it again with its size ("replaced": version 2
// adds it again with its size, removing nothing). A reader of a version
// reads the footer where that version's size puts it. "read" prints the
// ids deltalake reads at a version. With "honest", version 1 states the
// file's size as well.
const deltaReAddedSize = `
import sys, os, json, struct, io
import pyarrow as pa, pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake
out, mode = sys.argv[1], sys.argv[2]
log = os.path.join(out, "_delta_log")
def commit(v, *actions):
    with open(os.path.join(log, "%020d.json" % v), "w") as f:
        f.write("".join(json.dumps(a) + "\n" for a in actions))
def rows(ids, ns):
    return pa.table({"id": pa.array(ids, pa.int64()), "n": pa.array(ns, pa.int64())})
def parquet(t):
    b = io.BytesIO()
    pq.write_table(t, b, compression="NONE")
    return b.getvalue()
if mode == "base":
    write_deltalake(out, rows([1, 2, 3], [0, 0, 0]))
elif mode == "read":
    t = DeltaTable(out, version=int(sys.argv[3])).to_pyarrow_table()
    print(json.dumps(sorted(t.column("id").to_pylist())), flush=True)
else:
    b = parquet(rows([7, 8], [-1, -2]))
    a = parquet(pa.table({"n": pa.array([7, 8], pa.int64()), "id": pa.array([-1, -2], pa.int64())}))
    la, lb = struct.unpack("<I", a[-8:-4])[0], struct.unpack("<I", b[-8:-4])[0]
    ca, cb = a[:len(a) - 8 - la], b[:len(b) - 8 - lb]
    if ca != cb:
        raise SystemExit("the column chunks differ")
    f = cb + a[len(ca):] + b[len(cb):]
    name = "part-00000-two-footers.parquet"
    open(os.path.join(out, name), "wb").write(f)
    first = len(f) if mode.startswith("honest") else len(a)
    add = {"path": name, "partitionValues": {}, "size": first, "modificationTime": 1, "dataChange": True}
    commit(1, {"commitInfo": {"timestamp": 1, "operation": "WRITE"}}, {"add": add})
    if mode in ("checkpoint", "honest-checkpoint"):
        # version 2 appends (delta-rs), checkpoint 2 (delta-rs's, of commit
        # 1 stating the file's size for the while)
        commit(1, {"commitInfo": {"timestamp": 1, "operation": "WRITE"}}, {"add": dict(add, size=len(f))})
        write_deltalake(out, rows([9], [0]), mode="append")
        DeltaTable(out).create_checkpoint()
        if mode == "checkpoint":
            commit(1, {"commitInfo": {"timestamp": 1, "operation": "WRITE"}}, {"add": add})
        os._exit(0)
    if mode == "replaced":
        # no remove: version 2's add of the active path replaces version 1's
        commit(2, {"commitInfo": {"timestamp": 2, "operation": "WRITE"}}, {"add": dict(add, size=len(f), modificationTime=2, dataChange=False)})
        os._exit(0)
    commit(2, {"commitInfo": {"timestamp": 2, "operation": "DELETE"}},
        {"remove": {"path": name, "deletionTimestamp": 2, "dataChange": True, "partitionValues": {}, "size": first}})
    commit(3, {"commitInfo": {"timestamp": 3, "operation": "WRITE"}}, {"add": dict(add, size=len(f), modificationTime=3)})
os._exit(0)
`

// TestDeltaReAddedFileOfAnotherSizeIsRefused: a file the batch's versions
// add, remove and add again is read once, as the last version's file, and
// only its partition values were compared with its other adds: version 1
// stated a size that ends at a footer inside the file, naming its column
// chunks the other way round, and deltalake 1.6.6 read ids -1 and -2 at
// version 1 of the published table while the audit read 7 and 8 and
// passed range(id >= 0); so did a version 2 adding the still active file
// again, which replaced version 1's add without a remove. Each add of a
// file read once must state the file's size (and no numRecords or claims
// but those of the add read); the same batch with version 1 stating the
// file's size passes.
func TestDeltaReAddedFileOfAnotherSizeIsRefused(t *testing.T) {
	python, err := testPython()
	if err != nil {
		t.Skipf("delta-rs not at hand: %v", err)
	}
	checks := []Check{idsNotNull, {Name: "ids from 0", Kind: KindRange, Table: "events", Column: "id", Min: f64(0)}}
	for _, mode := range []string{"honest", "forged", "replaced"} {
		t.Run(mode, func(t *testing.T) {
			src := newDirSource(t)
			main := filepath.Join(src.root, "main", "gold", "events")
			if out, err := exec.Command(python, "-c", deltaReAddedSize, main, "base").CombinedOutput(); err != nil {
				t.Fatalf("deltalake: %v\n%s", err, out)
			}
			src.branch(t, "main", "b1")
			dir := filepath.Join(src.root, "b1", "gold", "events")
			if out, err := exec.Command(python, "-c", deltaReAddedSize, dir, mode).CombinedOutput(); err != nil {
				t.Fatalf("deltalake: %v\n%s", err, out)
			}
			read := func(v string) []int64 {
				out, err := exec.Command(python, "-c", deltaReAddedSize, dir, "read", v).CombinedOutput()
				var ids []int64
				if err == nil {
					err = json.Unmarshal(out, &ids)
				}
				if err != nil {
					t.Fatalf("deltalake: %v\n%s", err, out)
				}
				return ids
			}
			want1, last := "[-2 -1 1 2 3]", "3"
			switch mode {
			case "honest":
				want1 = "[1 2 3 7 8]"
			case "replaced":
				last = "2"
			}
			if got := jsonInts(read("1")); got != want1 {
				t.Fatalf("deltalake reads ids %s at version 1, want %s", got, want1)
			}
			if got := jsonInts(read(last)); got != "[1 2 3 7 8]" {
				t.Fatalf("deltalake reads ids %s at version %s", got, last)
			}
			rep := deltaAudit(t, src, "b1", FormatDelta, checks...)
			if mode == "honest" {
				if !rep.Passed {
					t.Fatalf("the honest batch: %s", checkMessages(rep))
				}
				return
			}
			wantRefused(t, rep, "version 1 adds data file gold/events/part-00000-two-footers.parquet, which version 2 removes or adds again: that add says it has 769 bytes, the repository has 1330")
		})
	}
}

func jsonInts(ids []int64) string {
	s := make([]string, len(ids))
	for i, id := range ids {
		s[i] = strconv.FormatInt(id, 10)
	}
	return "[" + strings.Join(s, " ") + "]"
}

// TestDeltaCheckpointOfAnotherSizeThanTheCommitsIsRefused: the batch's
// version 1 adds the file of two footers (deltaReAddedSize) with the size
// of the first's end, version 2 appends, and checkpoint 2 (delta-rs's)
// states the file's size. Readers of version 1 replay the commits and
// read ids -1 and -2, those of version 2 start at the checkpoint; the
// audit read the file by the checkpoint's size, and a checkpoint and the
// commits before it were compared for their files, partition values and
// stats, not their sizes. A checkpoint that states another size than the
// commits refuses the table; the same batch whose commit states the
// file's size passes.
func TestDeltaCheckpointOfAnotherSizeThanTheCommitsIsRefused(t *testing.T) {
	python, err := testPython()
	if err != nil {
		t.Skipf("delta-rs not at hand: %v", err)
	}
	checks := []Check{idsNotNull, {Name: "ids from 0", Kind: KindRange, Table: "events", Column: "id", Min: f64(0)}}
	for _, mode := range []string{"honest-checkpoint", "checkpoint"} {
		t.Run(mode, func(t *testing.T) {
			src := newDirSource(t)
			main := filepath.Join(src.root, "main", "gold", "events")
			if out, err := exec.Command(python, "-c", deltaReAddedSize, main, "base").CombinedOutput(); err != nil {
				t.Fatalf("deltalake: %v\n%s", err, out)
			}
			src.branch(t, "main", "b1")
			dir := filepath.Join(src.root, "b1", "gold", "events")
			if out, err := exec.Command(python, "-c", deltaReAddedSize, dir, mode).CombinedOutput(); err != nil {
				t.Fatalf("deltalake: %v\n%s", err, out)
			}
			read := func(v string) string {
				out, err := exec.Command(python, "-c", deltaReAddedSize, dir, "read", v).CombinedOutput()
				var ids []int64
				if err == nil {
					err = json.Unmarshal(out, &ids)
				}
				if err != nil {
					t.Fatalf("deltalake: %v\n%s", err, out)
				}
				return jsonInts(ids)
			}
			want1 := "[-2 -1 1 2 3]"
			if mode == "honest-checkpoint" {
				want1 = "[1 2 3 7 8]"
			}
			if got := read("1"); got != want1 {
				t.Fatalf("deltalake reads ids %s at version 1, want %s", got, want1)
			}
			if got := read("2"); got != "[1 2 3 7 8 9]" {
				t.Fatalf("deltalake reads ids %s at version 2", got)
			}
			rep := deltaAudit(t, src, "b1", FormatDelta, checks...)
			if mode == "honest-checkpoint" {
				if !rep.Passed {
					t.Fatalf("the honest batch: %s", checkMessages(rep))
				}
				return
			}
			wantRefused(t, rep, "file part-00000-two-footers.parquet has another size")
		})
	}
}
