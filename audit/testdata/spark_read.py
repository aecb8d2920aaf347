"""Reads tables with Apache Spark (PySpark, local mode) for TestDifferentialAgainstSpark.

Arguments are READER:COLUMNS:DIR triples (COLUMNS comma-separated). READER is how a Spark
user reads DIR, with Spark's defaults otherwise (spark.sql.caseSensitive=false, a Parquet
schema from one footer, partition discovery of key=value directories, files whose name starts
with _ or . skipped):
  parquet    spark.read.parquet(DIR)
  csv        spark.read.option("header", "true").csv(DIR)            (every column text)
  csv_infer  spark.read.option("header", "true").option("inferSchema", "true").csv(DIR)
  json       spark.read.json(DIR)                                    (JSON lines)
Prints one JSON line per table: {"rows": N, "columns": [...], "types": {...}, "stats": {col:
{"nulls": n, "nans": n, "distinct": n, "min": x, "max": x, "values": [...]} or null when the column is absent}}, min and
max only for numeric columns, values (the first 65 distinct, sorted) only for text columns, or {"error": "..."} when Spark cannot read the table.
"""
import json
import math
import sys

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DoubleType, FloatType, NumericType, StringType

# Local mode on loopback, small, no UI: a reader, not a cluster.
spark = (
    SparkSession.builder.master("local[2]")
    .appName("lakewap-spark-differential")
    .config("spark.driver.host", "127.0.0.1")
    .config("spark.driver.bindAddress", "127.0.0.1")
    .config("spark.ui.enabled", "false")
    .config("spark.driver.memory", "512m")
    .config("spark.sql.shuffle.partitions", "1")
    .config("spark.sql.session.timeZone", "UTC")
    # Tiny tables: re-planning and compiling each query cost more than they save.
    .config("spark.sql.adaptive.enabled", "false")
    .config("spark.sql.codegen.wholeStage", "false")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")


def number(v):
    if v is None:
        return None
    f = float(v)
    return str(f) if math.isnan(f) or math.isinf(f) else f


def read(reader, path):
    r = spark.read
    if reader == "parquet":
        return r.parquet(path)
    if reader == "csv":
        return r.option("header", "true").csv(path)
    if reader == "csv_infer":
        return r.option("header", "true").option("inferSchema", "true").csv(path)
    if reader == "json":
        return r.json(path)
    raise ValueError(f"unknown reader {reader}")


for arg in sys.argv[1:]:
    reader, cols, path = arg.split(":", 2)
    try:
        df = read(reader, path)
        present = {f.name: f for f in df.schema.fields}
        aggs = [F.count(F.lit(1)).alias("rows")]
        wanted = []
        for i, c in enumerate(cols.split(",")):
            f = present.get(c)
            if f is None:
                continue
            wanted.append((i, c, isinstance(f.dataType, NumericType)))
            col = F.col("`" + c + "`")
            aggs += [F.count(col).alias(f"n{i}"), F.count_distinct(col).alias(f"d{i}")]
            if isinstance(f.dataType, NumericType):
                aggs += [F.min(col).alias(f"lo{i}"), F.max(col).alias(f"hi{i}")]
            if isinstance(f.dataType, StringType):
                aggs.append(F.slice(F.sort_array(F.collect_set(col)), 1, 65).alias(f"v{i}"))
            if isinstance(f.dataType, (DoubleType, FloatType)):
                aggs.append(F.count(F.when(F.isnan(col), 1)).alias(f"nan{i}"))
        row = df.agg(*aggs).collect()[0]
        stats = {c: None for c in cols.split(",")}
        for i, c, numeric in wanted:
            s = {"nulls": row["rows"] - row[f"n{i}"], "distinct": row[f"d{i}"], "nans": 0}
            if f"nan{i}" in row.asDict():
                s["nans"] = row[f"nan{i}"]
            if f"v{i}" in row.asDict():
                s["values"] = row[f"v{i}"]
            if numeric:
                s["min"] = number(row[f"lo{i}"])
                s["max"] = number(row[f"hi{i}"])
            stats[c] = s
        out = {
            "rows": row["rows"],
            "columns": df.columns,
            "types": {f.name: f.dataType.simpleString() for f in df.schema.fields},
            "stats": stats,
        }
    except Exception as e:  # noqa: BLE001 - any failure to read is the answer
        out = {"error": f"{type(e).__name__}: {e}"[:500]}
    print(json.dumps(out), flush=True)
spark.stop()
