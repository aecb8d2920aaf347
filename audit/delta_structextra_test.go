package audit

import (
	"testing"
)

// deltaStructExtraField writes, with delta-rs, a table of ids and a
// struct st {a long} on main (version 0: id 1), and a batch on b1 whose
// version 1 adds a file (pyarrow's) of a NULL id whose st also holds a
// field c = 'y' the log's schema does not have ("honest": id 2 and st
// {a} only). It prints the rows deltalake reads.
const deltaStructExtraField = `
import sys, os, json
import pyarrow as pa, pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake
out, mode = sys.argv[1], sys.argv[2]
if mode == "base":
    write_deltalake(out, pa.table({"id": pa.array([1], pa.int64()), "st": pa.array([{"a": 1}], pa.struct([("a", pa.int64())]))}))
    os._exit(0)
name = "part-00001-st.parquet"
if mode == "honest":
    t = pa.table({"id": pa.array([2], pa.int64()), "st": pa.array([{"a": 2}], pa.struct([("a", pa.int64())]))})
else:
    t = pa.table({"id": pa.array([None], pa.int64()), "st": pa.array([{"a": 2, "c": "y"}], pa.struct([("a", pa.int64()), ("c", pa.string())]))})
pq.write_table(t, os.path.join(out, name))
with open(os.path.join(out, "_delta_log", "%020d.json" % 1), "w") as f:
    f.write(json.dumps({"commitInfo": {"timestamp": 1, "operation": "WRITE"}}) + "\n")
    f.write(json.dumps({"add": {"path": name, "partitionValues": {}, "size": os.path.getsize(os.path.join(out, name)), "modificationTime": 1, "dataChange": True}}) + "\n")
print("rows read by deltalake:", sorted([(r["id"], r["st"]) for r in DeltaTable(out).to_pyarrow_table().to_pylist()], key=str), flush=True)
os._exit(0)
`

// TestDeltaStructFieldTheLogLacksIsRefused: a data file whose column the
// log's schema does not have is refused (Delta readers leave it out), but
// a struct field was not: a batch file holding st.c = 'y' beside a NULL
// id was read by DuckDB with st.c, and by deltalake 1.6.6 without it. A
// custom check refusing NULL ids whose st has no c
// (json_extract_string(to_json(st), '$.c') IS NULL, which binds whatever
// st's fields) passed, where Delta readers of main running it find the
// NULL id. The file is refused naming its type and the log's; the batch
// writing st as the log does passes.
func TestDeltaStructFieldTheLogLacksIsRefused(t *testing.T) {
	honestAndForgedDelta(t, deltaStructExtraField, Check{Name: "ids", Kind: KindSQL, Table: "events", SQL: "SELECT * FROM events WHERE id IS NULL AND json_extract_string(to_json(st), '$.c') IS NULL"},
		"rows read by deltalake:", "[(1, {'a': 1}), (2, {'a': 2})]", "[(1, {'a': 1}), (None, {'a': 2})]",
		`data file gold/events/part-00001-st.parquet has column "st" as STRUCT(a BIGINT, c VARCHAR) where the log's schema says STRUCT(a BIGINT)`)
}

// deltaStructFieldDropped writes, with delta-rs, a table of ids and a
// struct st {a long, b string} on main (version 0: id 1, st.b x), and a
// batch on b1: version 1 adds a file (pyarrow's) of a NULL id whose st.b
// is the timestamp 2024-01-01 00:00:00 ("honest": that text, as its
// version's schema says); version 2 states a schema whose st drops b,
// removes both files and adds one of id 3. It prints st.b as deltalake
// reads it at version 1, and the last version's rows.
const deltaStructFieldDropped = `
import sys, os, json, datetime
import pyarrow as pa, pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake
out, mode = sys.argv[1], sys.argv[2]
if mode == "base":
    write_deltalake(out, pa.table({"id": pa.array([1], pa.int64()), "st": pa.array([{"a": 1, "b": "x"}], pa.struct([("a", pa.int64()), ("b", pa.string())]))}))
    os._exit(0)
log = os.path.join(out, "_delta_log")
v0 = [json.loads(l) for l in open(os.path.join(log, "%020d.json" % 0))]
meta = [a["metaData"] for a in v0 if "metaData" in a][0]
base = [a["add"]["path"] for a in v0 if "add" in a][0]
def add(name, t, version):
    pq.write_table(t, os.path.join(out, name))
    return {"add": {"path": name, "partitionValues": {}, "size": os.path.getsize(os.path.join(out, name)), "modificationTime": version, "dataChange": True}}
def commit(version, actions):
    with open(os.path.join(log, "%020d.json" % version), "w") as f:
        f.write(json.dumps({"commitInfo": {"timestamp": version, "operation": "WRITE"}}) + "\n")
        for a in actions:
            f.write(json.dumps(a) + "\n")
b = pa.array(["2024-01-01 00:00:00"], pa.string()) if mode == "honest" else pa.array([datetime.datetime(2024, 1, 1)], pa.timestamp("us"))
st = pa.StructArray.from_arrays([pa.array([2], pa.int64()), b], names=["a", "b"])
commit(1, [add("part-00001-v1.parquet", pa.table({"id": pa.array([None], pa.int64()), "st": st}), 1)])
schema = json.loads(meta["schemaString"])
for f in schema["fields"]:
    if f["name"] == "st":
        f["type"]["fields"] = [x for x in f["type"]["fields"] if x["name"] == "a"]
meta = dict(meta, schemaString=json.dumps(schema))
commit(2, [{"metaData": meta},
    {"remove": {"path": base, "deletionTimestamp": 2, "dataChange": True}},
    {"remove": {"path": "part-00001-v1.parquet", "deletionTimestamp": 2, "dataChange": True}},
    add("part-00002-v2.parquet", pa.table({"id": pa.array([3], pa.int64()), "st": pa.array([{"a": 3}], pa.struct([("a", pa.int64())]))}), 2)])
print("st.b read by deltalake at version 1:", sorted([r["st"]["b"] for r in DeltaTable(out, version=1).to_pyarrow_table().to_pylist()]),
    "last:", [(r["id"], r["st"]) for r in DeltaTable(out).to_pyarrow_table().to_pylist()], flush=True)
os._exit(0)
`

// TestDeltaStructFieldDroppedBetweenVersionsIsReadInItsVersionsType: a
// file a batch's version adds and a later one removes is read by the last
// version's schema, and a struct field that schema drops (st.b) was read
// in the file's type, not compared with anything: a file holding the
// text field st.b as a timestamp was read by DuckDB as '2024-01-01
// 00:00:00' and by deltalake 1.6.6 at version 1 as '2024-01-01
// 00:00:00.000000'. not_null(id) where st.b (through to_json, which binds
// at the last version too) is not '2024-01-01 00:00:00' passed, where
// readers of version 1 find the NULL id. Such a file's columns are now
// compared with its own version's schema too; the batch writing st.b as
// that schema says passes.
func TestDeltaStructFieldDroppedBetweenVersionsIsReadInItsVersionsType(t *testing.T) {
	honestAndForgedDelta(t, deltaStructFieldDropped, Check{Name: "ids", Kind: KindNotNull, Table: "events", Column: "id", Where: "json_extract_string(to_json(st), '$.b') IS DISTINCT FROM '2024-01-01 00:00:00'"},
		"st.b read by deltalake at version 1:", "['2024-01-01 00:00:00', 'x'] last: [(3, {'a': 3})]", "['2024-01-01 00:00:00.000000', 'x'] last: [(3, {'a': 3})]",
		`version 1 adds data file gold/events/part-00001-v1.parquet, which version 2 removes, holding column "st" as STRUCT(a BIGINT, b TIMESTAMP) where the schema of version 1 says STRUCT(a BIGINT, b VARCHAR)`)
}
