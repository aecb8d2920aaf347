"""Writes Parquet files with pyarrow into the directory given, for
TestFooterSchemaDifferential: nested types, case-colliding, duplicate and
unicode names, empty tables, many columns, writer options."""
import os
import sys

import pyarrow as pa
import pyarrow.parquet as pq

out = sys.argv[1]


def write(name, table, **kw):
    pq.write_table(table, os.path.join(out, name + ".parquet"), **kw)


write("flat", pa.table({"a": [1, 2], "b": ["x", None], "c": [1.5, 2.5]}))
write("nested", pa.table({
    "s": pa.array([{"x": 1, "y": {"z": "q"}}]),
    "m": pa.array([[("k", 1)]], type=pa.map_(pa.string(), pa.int64())),
    "l": pa.array([[1, 2]], type=pa.list_(pa.int32())),
    "ll": pa.array([[[{"a": 1}]]], type=pa.large_list(pa.list_(pa.struct([("a", pa.int8())])))),
    "fl": pa.array([[1, 2]], type=pa.list_(pa.int16(), 2)),
    "d": pa.array(["a", "b"][:1]).dictionary_encode(),
}))
write("case_colliding", pa.table([pa.array([1]), pa.array([2]), pa.array([{"v": 1, "V": 2}])],
                                 names=["billing_id", "BILLING_ID", "s"]))
write("duplicate", pa.table([pa.array([1]), pa.array([2])], names=["a", "a"]))
write("unicode", pa.table([pa.array([1]), pa.array([2]), pa.array([3]), pa.array([4])],
                          names=["名前", "ünïcödé", "emoji_🦆", "sp ace.dot\"quote'"]))
write("empty", pa.table({"a": pa.array([], type=pa.int64()), "s": pa.array([], type=pa.struct([("x", pa.string())]))}))
write("many", pa.table({f"c{i}": [i] for i in range(700)}))
write("v1_snappy_nostats", pa.table({"a": list(range(1000)), "t": pa.array([0] * 1000, type=pa.timestamp("us", tz="UTC"))}),
      version="1.0", compression="snappy", write_statistics=False, row_group_size=100)
write("v2_pages_zstd", pa.table({"a": list(range(1000)), "dec": pa.array([1] * 1000, type=pa.decimal128(20, 3))}),
      data_page_version="2.0", compression="zstd", row_group_size=64, store_schema=False)
write("types", pa.table({
    "u": pa.array([1], type=pa.uint64()), "h": pa.array([1.0], type=pa.float16()), "d": pa.array([1], type=pa.date32()),
    "t": pa.array([1], type=pa.time64("ns")), "bin": pa.array([b"x"], type=pa.binary()),
    "fsb": pa.array([b"xy"], type=pa.binary(2)), "n": pa.array([None], type=pa.null()),
    "lt": pa.array(["x"], type=pa.large_string()), "b": pa.array([True]),
}))
