package audit

import (
	"testing"
)

// deltaStructFieldCase writes, with delta-rs, a table of ids and a struct
// st {a long} on main (version 0: id 1, st.a 1) and a batch on b1 whose
// version 1 adds a file (pyarrow's) holding st's field as "A" (st.A 5;
// "honest": as "a"). It prints the st.a deltalake reads.
const deltaStructFieldCase = `
import sys, os, json
import pyarrow as pa, pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake
out, mode = sys.argv[1], sys.argv[2]
def st(name, vals):
    return pa.array([{name: v} for v in vals], pa.struct([(name, pa.int64())]))
if mode == "base":
    write_deltalake(out, pa.table({"id": pa.array([1], pa.int64()), "st": st("a", [1])}))
    os._exit(0)
name = "part-00001-st.parquet"
pq.write_table(pa.table({"id": pa.array([2], pa.int64()), "st": st("a" if mode == "honest" else "A", [5])}), os.path.join(out, name))
with open(os.path.join(out, "_delta_log", "%020d.json" % 1), "w") as f:
    f.write(json.dumps({"commitInfo": {"timestamp": 1, "operation": "WRITE"}}) + "\n")
    f.write(json.dumps({"add": {"path": name, "partitionValues": {}, "size": os.path.getsize(os.path.join(out, name)), "modificationTime": 1, "dataChange": True}}) + "\n")
print("st.a read by deltalake:", sorted([r["st"]["a"] for r in DeltaTable(out).to_pyarrow_table().to_pylist()], key=str), flush=True)
os._exit(0)
`

// TestDeltaStructFieldInAnotherCaseIsRefused: a data file whose struct
// column's field is the log's in another case ("A" for st.a) was read by
// DuckDB as st.a (it matches struct fields in any case, and the type
// check compared types in upper case), and by deltalake 1.6.6 as NULL: a
// custom check refusing a NULL st.a passed while readers of main read one.
// The table is refused naming the file and both spellings; the batch
// spelling it as the log does passes.
func TestDeltaStructFieldInAnotherCaseIsRefused(t *testing.T) {
	honestAndForgedDelta(t, deltaStructFieldCase, Check{Name: "st.a set", Kind: KindSQL, Table: "events", SQL: "SELECT * FROM events WHERE st.a IS NULL"},
		"st.a read by deltalake:", "[1, 5]", "[1, None]",
		`data file gold/events/part-00001-st.parquet has field "A" of column "st", which the log's schema spells "a"`)
}

// deltaStructFieldType is deltaStructFieldCase's table with st {s
// string}: main's file holds st.s x, the batch's file (pyarrow's) st.s as
// the timestamp 2024-01-01 00:00:00 ("honest": as that text).
const deltaStructFieldType = `
import sys, os, json, datetime
import pyarrow as pa, pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake
out, mode = sys.argv[1], sys.argv[2]
def st(typ, vals):
    return pa.array([{"s": v} for v in vals], pa.struct([("s", typ)]))
if mode == "base":
    write_deltalake(out, pa.table({"id": pa.array([1], pa.int64()), "st": st(pa.string(), ["x"])}))
    os._exit(0)
name = "part-00001-st.parquet"
s = st(pa.string(), ["2024-01-01 00:00:00"]) if mode == "honest" else st(pa.timestamp("us"), [datetime.datetime(2024, 1, 1)])
pq.write_table(pa.table({"id": pa.array([2], pa.int64()), "st": s}), os.path.join(out, name))
with open(os.path.join(out, "_delta_log", "%020d.json" % 1), "w") as f:
    f.write(json.dumps({"commitInfo": {"timestamp": 1, "operation": "WRITE"}}) + "\n")
    f.write(json.dumps({"add": {"path": name, "partitionValues": {}, "size": os.path.getsize(os.path.join(out, name)), "modificationTime": 1, "dataChange": True}}) + "\n")
print("st.s read by deltalake:", sorted([r["st"]["s"] for r in DeltaTable(out).to_pyarrow_table().to_pylist()]), flush=True)
os._exit(0)
`

// TestDeltaStructFieldOfAnotherTypeIsRefused: struct columns had no type
// of the log's to compare (only top-level primitive columns were), so a
// batch file holding the text field st.s as a timestamp beside main's
// text was read by DuckDB as '2024-01-01 00:00:00' (the view's union is
// text) and by deltalake 1.6.6 as '2024-01-01 00:00:00.000000': a custom
// check accepting only x and '2024-01-01 00:00:00' passed while readers
// of main read another value. Each struct field of a type lakewap maps is
// compared with the log's; the batch writing the text passes.
func TestDeltaStructFieldOfAnotherTypeIsRefused(t *testing.T) {
	honestAndForgedDelta(t, deltaStructFieldType, Check{Name: "st.s known", Kind: KindSQL, Table: "events", SQL: "SELECT * FROM events WHERE CAST(st.s AS VARCHAR) NOT IN ('x', '2024-01-01 00:00:00')"},
		"st.s read by deltalake:", "['2024-01-01 00:00:00', 'x']", "['2024-01-01 00:00:00.000000', 'x']",
		"data file gold/events/part-00001-st.parquet has field st.s as TIMESTAMP where the log's schema says VARCHAR")
}
