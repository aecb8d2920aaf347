# Writes the spark_legacy_*.parquet files of TestSparkLegacyCalendarIsRefused
# with pyarrow 26.0.1: dates and times before the Gregorian calendar's start
# under the key-value metadata by which Spark 3+ reads a file as written by
# Spark 2 (org.apache.spark.version before 3.0.0, or the legacyDateTime key)
# and rebases those values from the Julian calendar.
import datetime as dt

import pyarrow as pa
import pyarrow.parquet as pq

old, new = dt.date(1500, 1, 1), dt.date(2020, 1, 1)


def write(name, meta, d, ts, n, st=None):
    cols = {
        "d": pa.array(d, pa.date32()),
        "ts": pa.array(ts, pa.timestamp("us", tz="UTC")),
        "n": pa.array(n, pa.timestamp("us")),
    }
    if st is not None:
        cols["st"] = pa.array([{"d": x} for x in st], pa.struct([("d", pa.date32())]))
    pq.write_table(pa.table(cols).replace_schema_metadata(meta), name)


t = lambda d: dt.datetime(d.year, d.month, d.day)
v24 = {"org.apache.spark.version": "2.4.8"}
v35 = {"org.apache.spark.version": "3.5.0"}
v35legacy = {"org.apache.spark.version": "3.5.0", "org.apache.spark.legacyDateTime": ""}
# Refused: Spark reads d 1499-12-23 (ts likewise).
write("spark_legacy_date.parquet", v24, [old, new], [t(new)] * 2, [t(new)] * 2)
write("spark_legacy_ts.parquet", v35legacy, [new, new], [t(old), t(new)], [t(new)] * 2)
write("spark_legacy_struct.parquet", v24, [new, new], [t(new)] * 2, [t(new)] * 2, st=[old, new])
# Read alike: no rebase (Spark 3+ metadata, none, or only the legacy key),
# only later values, or a timestamp not adjusted to UTC (TIMESTAMP_NTZ).
write("spark_corrected.parquet", v35, [old, new], [t(old), t(new)], [t(old)] * 2)
write("spark_legacy_key_only.parquet", {"org.apache.spark.legacyDateTime": ""}, [old, new], [t(old), t(new)], [t(old)] * 2)
write("spark_legacy_new_values.parquet", v24, [dt.date(1582, 10, 15), new], [dt.datetime(1900, 1, 1), t(new)], [t(old)] * 2, st=[new, new])


def write_cols(name, meta, cols, **kw):
    pq.write_table(pa.table(cols).replace_schema_metadata(meta), name, **kw)


v301 = {"org.apache.spark.version": "3.0.1"}
v31 = {"org.apache.spark.version": "3.1.0"}
# Refused: nested leaves (a list of structs, a map's values), a time
# adjusted to UTC from 1582-10-15 to 1900 (Spark rebases it in zones whose
# rebase table goes on to 1900; in UTC it reads alike, as a date would),
# INT96 under a Spark 3.0 version (whose dates read as written), and a
# file whose footer lakewap gives to DuckDB (a name over 1 KiB).
write_cols("spark_legacy_list.parquet", v24, {
    "l": pa.array([[{"d": new}], [{"d": new}, {"d": old}]], pa.list_(pa.struct([("d", pa.date32())])))})
write_cols("spark_legacy_map.parquet", v24, {
    "m": pa.array([[("a", dt.datetime(1800, 1, 1))], [("b", t(new))]], pa.map_(pa.string(), pa.timestamp("us", tz="UTC")))})
write_cols("spark_legacy_int96.parquet", v301, {
    "d": pa.array([old, new], pa.date32()),
    "ts96": pa.array([dt.datetime(1800, 1, 1), t(new)], pa.timestamp("us"))}, use_deprecated_int96_timestamps=True)
write_cols("spark_legacy_duckdb_footer.parquet", v24, {
    "d": pa.array([old, new], pa.date32()), "x" * 1100: pa.array([1, 2], pa.int64())})
# Read alike: INT96 under Spark 3.1, nested values from 1900 on.
write_cols("spark_int96_corrected.parquet", v31, {
    "ts96": pa.array([dt.datetime(1800, 1, 1), t(new)], pa.timestamp("us"))}, use_deprecated_int96_timestamps=True)
write_cols("spark_legacy_nested_new.parquet", v24, {
    "l": pa.array([[{"d": dt.date(1582, 10, 15)}], []], pa.list_(pa.struct([("d", pa.date32())]))),
    "m": pa.array([[("a", dt.datetime(1900, 1, 1))], None], pa.map_(pa.string(), pa.timestamp("us", tz="UTC")))})
