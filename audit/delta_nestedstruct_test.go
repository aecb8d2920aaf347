package audit

import (
	"testing"
)

// deltaNestedStruct writes, with delta-rs, a table of ids and a column
// whose struct sits in a list or a map (or whose list sits in a struct)
// on main (version 0, id 1), and a batch on b1 whose version 1 adds a
// file (pyarrow's) of id 2 holding that column with the struct's field in
// another type (a timestamp for text) or another case ("A" for a); the
// honest batch writes it as the log does. case_ names the shape; it prints
// the field's values deltalake reads.
const deltaNestedStruct = `
import sys, os, json, datetime
import pyarrow as pa, pyarrow.parquet as pq
from deltalake import DeltaTable, write_deltalake
out, mode = sys.argv[1], sys.argv[2]
ts = datetime.datetime(2024, 1, 1)
text = "2024-01-01 00:00:00"
def ls(name, typ): return pa.list_(pa.struct([(name, typ)]))
def ms(name, typ): return pa.map_(pa.string(), pa.struct([(name, typ)]))
def sl(typ): return pa.struct([("l", pa.list_(typ))])
shapes = {
    # column, main's value and type, the batch's forged and honest ones; how a row's field reads
    "list_struct_type": ("l", ([{"s": "x"}], ls("s", pa.string())), ([{"s": ts}], ls("s", pa.timestamp("us"))), ([{"s": text}], ls("s", pa.string())), lambda v: v[0]["s"]),
    "list_struct_case": ("l", ([{"a": 1}], ls("a", pa.int64())), ([{"A": 5}], ls("A", pa.int64())), ([{"a": 5}], ls("a", pa.int64())), lambda v: v[0]["a"]),
    "map_struct_type": ("m", ([("k", {"s": "x"})], ms("s", pa.string())), ([("k", {"s": ts})], ms("s", pa.timestamp("us"))), ([("k", {"s": text})], ms("s", pa.string())), lambda v: v[0][1]["s"]),
    "map_struct_case": ("m", ([("k", {"a": 1})], ms("a", pa.int64())), ([("k", {"A": 5})], ms("A", pa.int64())), ([("k", {"a": 5})], ms("a", pa.int64())), lambda v: v[0][1]["a"]),
    "struct_list_type": ("st", ({"l": ["x"]}, sl(pa.string())), ({"l": [ts]}, sl(pa.timestamp("us"))), ({"l": [text]}, sl(pa.string())), lambda v: v["l"][0]),
}
col, base, forged, honest, field = shapes[case_]
if mode == "base":
    write_deltalake(out, pa.table({"id": pa.array([1], pa.int64()), col: pa.array([base[0]], base[1])}))
    os._exit(0)
v = honest if mode == "honest" else forged
name = "part-00001-n.parquet"
pq.write_table(pa.table({"id": pa.array([2], pa.int64()), col: pa.array([v[0]], v[1])}), os.path.join(out, name))
with open(os.path.join(out, "_delta_log", "%020d.json" % 1), "w") as f:
    f.write(json.dumps({"commitInfo": {"timestamp": 1, "operation": "WRITE"}}) + "\n")
    f.write(json.dumps({"add": {"path": name, "partitionValues": {}, "size": os.path.getsize(os.path.join(out, name)), "modificationTime": 1, "dataChange": True}}) + "\n")
print("read by deltalake:", sorted([field(r[col]) for r in DeltaTable(out).to_pyarrow_table().to_pylist()], key=str), flush=True)
os._exit(0)
`

// TestDeltaStructInListOrMapOfAnotherTypeOrCaseIsRefused: the log's types
// were compared for top-level columns, struct fields through structs, a
// list's elements and a map's keys and values, but not through a struct
// inside a list or a map, nor a list inside a struct. A batch file holding
// l: list<struct<s: string>> as list<struct<s: timestamp>> beside main's
// text was read by DuckDB as '2024-01-01 00:00:00' and by deltalake 1.6.6
// as '2024-01-01 00:00:00.000000'; one spelling the field "A" for the
// log's a was read by DuckDB as a 5 and by deltalake as NULL; likewise in
// a map's values and a list in a struct. Custom checks accepting x and
// '2024-01-01 00:00:00', or refusing a NULL field, passed while readers of
// main read other values. Each is refused naming the file and column; the
// batch writing the log's type and names passes.
func TestDeltaStructInListOrMapOfAnotherTypeOrCaseIsRefused(t *testing.T) {
	cases := []struct {
		shape, sql, honest, forged, refusal string
	}{
		{"list_struct_type", "SELECT * FROM events WHERE CAST(l[1].s AS VARCHAR) NOT IN ('x', '2024-01-01 00:00:00')",
			"['2024-01-01 00:00:00', 'x']", "['2024-01-01 00:00:00.000000', 'x']",
			`data file gold/events/part-00001-n.parquet has column "l" as STRUCT(s TIMESTAMP)[] where the log's schema says STRUCT(s VARCHAR)[]`},
		{"list_struct_case", "SELECT * FROM events WHERE l[1].a IS NULL", "[1, 5]", "[1, None]",
			`data file gold/events/part-00001-n.parquet has column "l" as STRUCT(A BIGINT)[] where the log's schema says STRUCT(a BIGINT)[]`},
		{"map_struct_type", "SELECT * FROM events WHERE CAST(m['k'].s AS VARCHAR) NOT IN ('x', '2024-01-01 00:00:00')",
			"['2024-01-01 00:00:00', 'x']", "['2024-01-01 00:00:00.000000', 'x']",
			`data file gold/events/part-00001-n.parquet has column "m" as MAP(VARCHAR, STRUCT(s TIMESTAMP)) where the log's schema says MAP(VARCHAR, STRUCT(s VARCHAR))`},
		{"map_struct_case", "SELECT * FROM events WHERE m['k'].a IS NULL", "[1, 5]", "[1, None]",
			`data file gold/events/part-00001-n.parquet has column "m" as MAP(VARCHAR, STRUCT(A BIGINT)) where the log's schema says MAP(VARCHAR, STRUCT(a BIGINT))`},
		{"struct_list_type", "SELECT * FROM events WHERE CAST(st.l[1] AS VARCHAR) NOT IN ('x', '2024-01-01 00:00:00')",
			"['2024-01-01 00:00:00', 'x']", "['2024-01-01 00:00:00.000000', 'x']",
			`data file gold/events/part-00001-n.parquet has column "st" as STRUCT(l TIMESTAMP[]) where the log's schema says STRUCT(l VARCHAR[])`},
	}
	for _, c := range cases {
		t.Run(c.shape, func(t *testing.T) {
			honestAndForgedDelta(t, "case_ = "+quoteLiteral(c.shape)+"\n"+deltaNestedStruct, Check{Name: "field known", Kind: KindSQL, Table: "events", SQL: c.sql},
				"read by deltalake:", c.honest, c.forged, c.refusal)
		})
	}
}
