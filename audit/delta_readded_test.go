package audit

import (
	"encoding/json"
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
    print(json.dumps({"regions": sorted(set(t.column("region").to_pylist()))}))
else:
    write_deltalake(out, rows([7, 8], "evil"), mode="append")
    add = [json.loads(l)["add"] for l in open(os.path.join(log, "%020d.json" % 1)) if '"add"' in l][0]
    commit(2, {"commitInfo": {"timestamp": 2, "operation": "DELETE"}},
        {"remove": {"path": add["path"], "deletionTimestamp": 2, "dataChange": True, "partitionValues": add["partitionValues"], "size": add["size"]}})
    again = dict(add, partitionValues={"region": sys.argv[3]}, modificationTime=3)
    commit(3, {"commitInfo": {"timestamp": 3, "operation": "WRITE"}}, {"add": again})
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
	python, err := testPython()
	if err != nil {
		t.Skipf("delta-rs not at hand: %v", err)
	}
	src := newDirSource(t)
	py := func(dir string, args ...string) string {
		out, err := exec.Command(python, append([]string{"-c", deltaReAdded, dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("deltalake: %v\n%s", err, out)
		}
		return string(out)
	}
	py(filepath.Join(src.root, "main", "gold", "events"), "base")
	src.branch(t, "main", "b1")
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
	src = newDirSource(t)
	py(filepath.Join(src.root, "main", "gold", "events"), "base")
	src.branch(t, "main", "b1")
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
