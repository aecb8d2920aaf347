package audit

import (
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// deltaMetaVersions writes, with delta-rs, a table of ids and regions on
// main (version 0, no partition columns) and a batch on b1 whose version
// 1 states the table's metaData with the given change (partition: region
// is a partition column; case: the column is Region; key: the column is
// Region in the schema's "fields", and a second key "Fields" (delta-rs
// ignores it, a case-blind reader takes it for "fields") lists region) and whose version 2
// states main's metaData again. "read" prints the regions delta-rs reads
// at a version. "merge" is an honest batch: version 1 appends, version 2
// appends with a new column (schema_mode="merge").
const deltaMetaVersions = `
import sys, os, json
import pyarrow as pa
from deltalake import DeltaTable, write_deltalake
out, mode = sys.argv[1], sys.argv[2]
log = os.path.join(out, "_delta_log")
def commit(v, *actions):
    with open(os.path.join(log, "%020d.json" % v), "w") as f:
        f.write("".join(json.dumps(a) + "\n" for a in actions))
if mode == "base":
    write_deltalake(out, pa.table({"id": pa.array([1, 2], pa.int64()), "region": pa.array(["a", "b"])}))
elif mode == "read":
    t = DeltaTable(out, version=int(sys.argv[3])).to_pyarrow_table()
    print(json.dumps({"regions": t.column(sys.argv[4]).to_pylist()}))
elif mode == "merge":
    write_deltalake(out, pa.table({"id": pa.array([3], pa.int64()), "region": pa.array(["c"])}), mode="append")
    write_deltalake(out, pa.table({"id": pa.array([4], pa.int64()), "region": pa.array(["d"]), "note": pa.array(["x"])}), mode="append", schema_mode="merge")
    print(json.dumps({"version": DeltaTable(out).version()}))
else:
    meta = [json.loads(l)["metaData"] for l in open(os.path.join(log, "%020d.json" % 0)) if '"metaData"' in l][0]
    if mode == "partition":
        m1 = dict(meta, partitionColumns=["region"])
    elif mode == "key":
        fields = json.loads(meta["schemaString"])["fields"]
        cased = json.loads(meta["schemaString"].replace('"region"', '"Region"'))["fields"]
        m1 = dict(meta, schemaString='{"type":"struct","fields":%s,"Fields":%s}' % (json.dumps(cased), json.dumps(fields)))
    else:
        m1 = dict(meta, schemaString=meta["schemaString"].replace('"region"', '"Region"'))
    commit(1, {"commitInfo": {"timestamp": 2, "operation": "SET TBLPROPERTIES"}}, {"metaData": m1})
    commit(2, {"commitInfo": {"timestamp": 3, "operation": "SET TBLPROPERTIES"}}, {"metaData": meta})
    print(json.dumps({"version": DeltaTable(out).version()}))
os._exit(0)  # deltalake's runtime can abort at the interpreter's exit
`

// TestDeltaIntermediateMetadataIsRefused: a batch whose version 1 makes
// region a partition column (the files have no value for it) or spells it
// Region, and whose version 2 states main's metaData again, leaves the
// files and the last version as they were; delta-rs reads every region
// NULL at version 1 of the published table. Before, the audit read the
// files by the last version's metaData and not_null passed.
func TestDeltaIntermediateMetadataIsRefused(t *testing.T) {
	python, err := testPython()
	if err != nil {
		t.Skipf("delta-rs not at hand: %v", err)
	}
	for _, how := range []string{"partition", "case", "key"} {
		t.Run(how, func(t *testing.T) {
			src := newDirSource(t)
			py := func(dir string, args ...string) string {
				out, err := exec.Command(python, append([]string{"-c", deltaMetaVersions, dir}, args...)...).CombinedOutput()
				if err != nil {
					t.Fatalf("deltalake: %v\n%s", err, out)
				}
				return string(out)
			}
			py(filepath.Join(src.root, "main", "gold", "events"), "base")
			src.branch(t, "main", "b1")
			if out := py(filepath.Join(src.root, "b1", "gold", "events"), how); !strings.Contains(out, `"version": 2`) {
				t.Fatalf("the batch is not versions 1 and 2: %s", out)
			}
			src.branch(t, "b1", "merged")
			col := map[string]string{"partition": "region", "case": "Region", "key": "Region"}[how]
			var read struct {
				Regions json.RawMessage `json:"regions"`
			}
			out := py(filepath.Join(src.root, "merged", "gold", "events"), "read", "1", col)
			if err := json.Unmarshal([]byte(out), &read); err != nil || string(read.Regions) != "[null, null]" {
				t.Fatalf("delta-rs at version 1 of the published table: %s, want NULL regions", out)
			}
			rep := deltaAudit(t, src, "b1", FormatDelta,
				Check{Name: "regions", Kind: KindNotNull, Table: "events", Column: "region"})
			wantRefused(t, rep, "version 1")
		})
	}
	t.Run("merge", func(t *testing.T) {
		src := newDirSource(t)
		for _, step := range []struct{ ref, mode string }{{"main", "base"}, {"b1", "merge"}} {
			if step.ref == "b1" {
				src.branch(t, "main", "b1")
			}
			if out, err := exec.Command(python, "-c", deltaMetaVersions, filepath.Join(src.root, step.ref, "gold", "events"), step.mode).CombinedOutput(); err != nil {
				t.Fatalf("deltalake: %v\n%s", err, out)
			}
		}
		rep := deltaAudit(t, src, "b1", FormatDelta,
			Check{Name: "regions", Kind: KindNotNull, Table: "events", Column: "region"},
			Check{Name: "rows", Kind: KindRowCount, Table: "events", Min: f64(4), Max: f64(4)})
		if !rep.Passed {
			t.Fatalf("a batch adding a column after an append: %s", checkMessages(rep))
		}
	})
}
