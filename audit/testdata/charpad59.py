# Writes the charpad59_*.parquet files of TestCharPad59SparkPadsCharColumns
# with pyarrow 26.0.1: string columns whose Spark schema
# (org.apache.spark.sql.parquet.row.metadata) declares them CHAR(n) or
# VARCHAR(n) in the field metadata Spark writes
# (__CHAR_VARCHAR_TYPE_STRING), holding values Spark itself never writes
# there (shorter or longer than n).
import json

import pyarrow as pa
import pyarrow.parquet as pq

KEY = "__CHAR_VARCHAR_TYPE_STRING"


def field(name, typ, raw=None):
    return {"name": name, "type": typ, "nullable": True, "metadata": {KEY: raw} if raw else {}}


def write(name, table, fields):
    spark = json.dumps({"type": "struct", "fields": fields}, separators=(",", ":"))
    pq.write_table(table.replace_schema_metadata({"org.apache.spark.sql.parquet.row.metadata": spark}), name)


ids = pa.array([1, 2, 3], pa.int32())
idf = field("id", "integer")
# A CHAR(5) column of "ab", "ab " and NULL: Spark pads both to "ab   ".
write("charpad59_char_short.parquet", pa.table({"id": ids, "c": ["ab", "ab ", None]}), [idf, field("c", "string", "char(5)")])
# The same, declared CHAR(5) in upper case with spaces, as Spark's SQL parser reads it.
write("charpad59_char_upper.parquet", pa.table({"id": ids, "c": ["ab", "ab ", None]}), [idf, field("c", "string", " CHAR ( 5 ) ")])
# Values longer than the CHAR(3) and VARCHAR(3) declared.
write("charpad59_char_long.parquet", pa.table({"id": ids, "c": ["abc", "abcdef", None]}), [idf, field("c", "string", "char(3)")])
write("charpad59_varchar_long.parquet", pa.table({"id": ids, "c": ["ab", "abcdef", None]}), [idf, field("c", "string", "varchar(3)")])
# Values of exactly n characters (one of them not ASCII): read alike.
write("charpad59_char_exact.parquet", pa.table({"id": ids, "c": ["abcde", "äbcdé", None]}), [idf, field("c", "string", "char(5)")])
# A struct's CHAR(5) field, as Spark writes it (the raw type on both levels).
st = pa.array([{"x": "ab"}, {"x": "ab "}, None], pa.struct([("x", pa.string())]))
write("charpad59_char_struct.parquet", pa.table({"id": ids, "st": st}),
      [idf, field("st", {"type": "struct", "fields": [field("x", "string", "char(5)")]}, "struct<x:char(5)>")])
# An ARRAY<CHAR(5)>: the raw type on the top-level field only.
l = pa.array([["ab"], ["ab "], None], pa.list_(pa.string()))
write("charpad59_char_array.parquet", pa.table({"id": ids, "l": l}),
      [idf, field("l", {"type": "array", "elementType": "string", "containsNull": True}, "array<char(5)>")])
# The Spark schema's type itself char(5), no metadata.
write("charpad59_char_type.parquet", pa.table({"id": ids, "c": ["ab", "ab ", None]}), [idf, field("c", "char(5)")])
# The struct's field declared CHAR(5) on the nested field only.
write("charpad59_char_structinner.parquet", pa.table({"id": ids, "st": st}),
      [idf, field("st", {"type": "struct", "fields": [field("x", "string", "char(5)")]})])
# A table of two files: part-0's Spark schema declares c CHAR(5) (its value
# padded, as Spark writes it), part-1 has no Spark schema and holds "ab".
import os

os.makedirs("charpad59_char_table_dir", exist_ok=True)
write("charpad59_char_table_dir/part-0.parquet", pa.table({"id": pa.array([1], pa.int32()), "c": ["abcde"]}), [idf, field("c", "string", "char(5)")])
pq.write_table(pa.table({"id": pa.array([2], pa.int32()), "c": ["ab"]}), "charpad59_char_table_dir/part-1.parquet")
# The same, the declaring file second.
os.makedirs("charpad59_char_table2_dir", exist_ok=True)
pq.write_table(pa.table({"id": pa.array([1], pa.int32()), "c": ["ab"]}), "charpad59_char_table2_dir/part-0.parquet")
write("charpad59_char_table2_dir/part-1.parquet", pa.table({"id": pa.array([2], pa.int32()), "c": ["abcde"]}), [idf, field("c", "string", "char(5)")])
