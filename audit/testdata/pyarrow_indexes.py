"""Writes honest Parquet files with bloom filters, page indexes and page
statistics, as pyarrow writes them when asked (and by default, for page
statistics), into the directory given: several row
groups and pages, dictionary and PLAIN pages, V1 and V2 pages, every codec
pyarrow has, NULLs, and most physical types (readerindex_test.go)."""
import datetime
import decimal
import sys

import pyarrow as pa
import pyarrow.parquet as pq

out = sys.argv[1]
n = 6000


def col(f):
    return [None if i % 7 == 3 else f(i) for i in range(n)]


table = pa.table({
    "id": pa.array(range(n), pa.int64()),
    "i32": pa.array(col(lambda i: i % 300 - 150), pa.int32()),
    "u16": pa.array(col(lambda i: i % 5000), pa.uint16()),
    "low": pa.array(col(lambda i: "v%d" % (i % 20))),
    "text": pa.array(col(lambda i: "t\u00e9xt-%d" % (i * 7919 % n))),
    "f64": pa.array(col(lambda i: (i % 1000) / 8 - 40.0), pa.float64()),
    "f32": pa.array(col(lambda i: float(i % 333) / 4), pa.float32()),
    "d": pa.array(col(lambda i: datetime.date(2020, 1, 1) + datetime.timedelta(days=i % 900)), pa.date32()),
    "ts": pa.array(col(lambda i: datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=i * 37)), pa.timestamp("us")),
    "dec": pa.array(col(lambda i: decimal.Decimal(i % 2000) / 100), pa.decimal128(10, 2)),
    "bin": pa.array(col(lambda i: bytes([i % 256, (i * 3) % 256])), pa.binary()),
    "fsb": pa.array(col(lambda i: i.to_bytes(16, "little")), pa.binary(16)),
    "tm": pa.array(col(lambda i: datetime.time(i % 24, i % 60, i % 60, i * 1000 % 1000000)), pa.time32("ms")),
    "tu": pa.array(col(lambda i: datetime.time(i % 24, i % 60, i % 60, i * 7 % 1000000)), pa.time64("us")),
    "flag": pa.array(col(lambda i: i % 3 == 0), pa.bool_()),
    "st": pa.array(col(lambda i: {"x": None if i % 5 == 0 else i % 77, "y": "y%d" % (i % 9)}),
                   pa.struct([("x", pa.int64()), ("y", pa.string())])),
    "li": pa.array(col(lambda i: [i % 10, None, i % 4] if i % 6 else []), pa.list_(pa.int64())),
})
bloom = {c: {"ndv": n, "fpp": 0.05} for c in table.column_names if c not in ("flag", "st", "li", "tm", "tu")}
variants = {
    "snappy": {},
    "zstd": {"compression": "zstd"},
    "gzip": {"compression": "gzip"},
    "brotli": {"compression": "brotli"},
    "lz4": {"compression": "lz4"},
    "none": {"compression": "none"},
    "v2": {"data_page_version": "2.0"},
    "v2_zstd": {"data_page_version": "2.0", "compression": "zstd"},
    "plain": {"use_dictionary": False},
    "fallback": {"dictionary_pagesize_limit": 2048},
    "page_index": {"write_page_index": True},
    "page_index_plain_v2": {"write_page_index": True, "use_dictionary": False, "data_page_version": "2.0"},
}
for name, kw in variants.items():
    pq.write_table(table, "%s/%s.parquet" % (out, name), row_group_size=2500, data_page_size=4096,
                   bloom_filter_options=bloom, **kw)
# pyarrow's defaults: no bloom filter, no page index, statistics in each
# page's header.
pq.write_table(table, "%s/defaults.parquet" % out, row_group_size=2500, data_page_size=4096)
