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

// deltaHistory writes with delta-rs ("base") a table of ids 0..9 and
// overwrites it with ids 100..109, leaving version 0's file in place, or
// ("forge") rewrites version 0's file in place with 10 NULL ids, of the
// same size (padded with a column the schema does not have, which
// delta-rs leaves out), appends version 2 with ids 200..209 and prints
// what time travel to version 0 reads.
const deltaHistory = `
import sys, os, json
import pyarrow as pa, pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake
out, mode = sys.argv[1], sys.argv[2]
if mode == "base":
    write_deltalake(out, pa.table({"id": pa.array(range(10), pa.int64())}))
    write_deltalake(out, pa.table({"id": pa.array(range(100, 110), pa.int64())}), mode="overwrite")
else:
    log0 = [json.loads(l) for l in open(os.path.join(out, "_delta_log", "%020d.json" % 0))]
    add = [a["add"] for a in log0 if "add" in a][0]
    p, size = os.path.join(out, add["path"]), add["size"]
    k = 0
    for _ in range(20):
        t = pa.table({"id": pa.array([None] * 10, pa.int64()), "pad": pa.array(["x" * k] + [None] * 9)})
        pq.write_table(t, p, store_schema=False, write_statistics=False, compression="none")
        if os.path.getsize(p) == size:
            break
        k += size - os.path.getsize(p)
    assert os.path.getsize(p) == size
    write_deltalake(out, pa.table({"id": pa.array(range(200, 210), pa.int64())}), mode="append")
    print("version 0:", DeltaTable(out, version=0).to_pyarrow_table().column("id").to_pylist(), flush=True)
os._exit(0)  # deltalake's runtime can abort at the interpreter's exit
`

// TestDeltaRemovedFileRewrittenInPlaceIsUnaudited: a batch rewrites, in
// place and at the same size, a file the log names only as removed (the
// base's version 0, which version 1 overwrote), and appends a version.
// Time travel to version 0 (delta-rs's DeltaTable(version=0)), a
// streaming or CDF reader that reads the versions it has not read yet,
// reads the rewritten file's NULL ids from main. lakewap took a changed
// object the log names for one of its files, active or not, and passed
// the batch; a changed object the log names only as removed is read by
// nothing, so it is unaudited unless a commit of the batch added it (a
// file the batch adds and removes again, as before).
func TestDeltaRemovedFileRewrittenInPlaceIsUnaudited(t *testing.T) {
	python, err := testPython()
	if err != nil {
		t.Skipf("delta-rs not at hand: %v", err)
	}
	src := newDirSource(t)
	if out, err := exec.Command(python, "-c", deltaHistory, filepath.Join(src.root, "main", "gold", "events"), "base").CombinedOutput(); err != nil {
		t.Fatalf("deltalake: %v\n%s", err, out)
	}
	src.branch(t, "main", "b1")
	out, err := exec.Command(python, "-c", deltaHistory, filepath.Join(src.root, "b1", "gold", "events"), "forge").CombinedOutput()
	if err != nil {
		t.Fatalf("deltalake: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "version 0: [None, None, None, None, None, None, None, None, None, None]") {
		t.Fatalf("time travel does not read the rewritten file: %s", out)
	}
	// Version 0's file, as its commit names it.
	commit, err := os.ReadFile(filepath.Join(src.root, "main", "gold", "events", "_delta_log", fmt.Sprintf("%020d.json", 0)))
	if err != nil {
		t.Fatal(err)
	}
	var first string
	for _, line := range strings.Split(string(commit), "\n") {
		var a struct {
			Add *struct {
				Path string `json:"path"`
			} `json:"add"`
		}
		if json.Unmarshal([]byte(line), &a) == nil && a.Add != nil {
			first = "gold/events/" + a.Add.Path
		}
	}
	rep := deltaAudit(t, src, "b1", FormatDelta, idsNotNull, Check{Name: "rows", Kind: KindRowCount, Table: "events", Min: f64(20), Max: f64(20)})
	wantUnaudited(t, rep, first)
}
