package audit

import (
	"testing"
)

// deltaListType writes, with delta-rs, a table of ids and a list of text l
// on main (version 0: id 1, l [x]) and a batch on b1 whose version 1 adds
// a file (pyarrow's) holding l as a list of timestamps, [2024-01-01
// 00:00:00] ("honest": as that text). It prints the lists deltalake reads.
const deltaListType = `
import sys, os, json, datetime
import pyarrow as pa, pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake
out, mode = sys.argv[1], sys.argv[2]
if mode == "base":
    write_deltalake(out, pa.table({"id": pa.array([1], pa.int64()), "l": pa.array([["x"]], pa.list_(pa.string()))}))
    os._exit(0)
name = "part-00001-l.parquet"
l = pa.array([["2024-01-01 00:00:00"]], pa.list_(pa.string())) if mode == "honest" else pa.array([[datetime.datetime(2024, 1, 1)]], pa.list_(pa.timestamp("us")))
pq.write_table(pa.table({"id": pa.array([2], pa.int64()), "l": l}), os.path.join(out, name))
with open(os.path.join(out, "_delta_log", "%020d.json" % 1), "w") as f:
    f.write(json.dumps({"commitInfo": {"timestamp": 1, "operation": "WRITE"}}) + "\n")
    f.write(json.dumps({"add": {"path": name, "partitionValues": {}, "size": os.path.getsize(os.path.join(out, name)), "modificationTime": 1, "dataChange": True}}) + "\n")
print("l read by deltalake:", sorted(r["l"][0] for r in DeltaTable(out).to_pyarrow_table().to_pylist()), flush=True)
os._exit(0)
`

// TestDeltaListOfAnotherTypeIsRefused: list and map columns had no type
// of the log's to compare, so a batch file holding a list of text as a
// list of timestamps, beside main's text, was read by DuckDB as
// ['2024-01-01 00:00:00'] (the view's union is VARCHAR[]) and by deltalake
// 1.6.6 as ['2024-01-01 00:00:00.000000']: a custom check accepting only x
// and '2024-01-01 00:00:00' passed while readers of main read another
// value. A list's elements (a map's keys and values) of the types lakewap
// maps are compared with the log's; the batch writing the text passes.
func TestDeltaListOfAnotherTypeIsRefused(t *testing.T) {
	honestAndForgedDelta(t, deltaListType, Check{Name: "l known", Kind: KindSQL, Table: "events", SQL: "SELECT * FROM events WHERE CAST(l[1] AS VARCHAR) NOT IN ('x', '2024-01-01 00:00:00')"},
		"l read by deltalake:", "['2024-01-01 00:00:00', 'x']", "['2024-01-01 00:00:00.000000', 'x']",
		`data file gold/events/part-00001-l.parquet has column "l" as TIMESTAMP[] where the log's schema says VARCHAR[]`)
}
