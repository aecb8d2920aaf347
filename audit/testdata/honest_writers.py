# Writes ordinary tables the way users do (pandas, pyarrow, DuckDB,
# delta-rs) for TestHonestWritersPass: argv: case, stage (base|batch), dir.
# Every table has id (int64, 1.., unique, not null), s (text "s-<id>"),
# cat (a, b or c).
import sys, os, decimal, datetime
import pandas as pd, pyarrow as pa, pyarrow.parquet as pq

case, stage, out = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(out, exist_ok=True)

def frame(lo, n, big=False):
    ids = list(range(lo, lo + n))
    df = pd.DataFrame({
        "id": pd.array(ids, dtype="int64"),
        "s": ["s-%d" % i for i in ids],
        "cat": pd.Categorical([["a", "b", "c"][i % 3] for i in ids]),
        "n": pd.array([None if i % 4 == 0 else i for i in ids], dtype="Int64"),
        "flag": [i % 2 == 0 for i in ids],
        "ts": pd.to_datetime([1700000000 + i for i in ids], unit="s", utc=True),
        "amount": [decimal.Decimal("%d.25" % i) for i in ids],
        "none": [None] * n,
    })
    if big:
        df["sid"] = pd.array([(1 << 60) + i for i in ids], dtype="int64")
        df["parent"] = pd.array([None if i % 4 == 0 else (1 << 60) + i for i in ids], dtype="Int64")
    return df

def nested(lo, n):
    ids = list(range(lo, lo + n))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "s": pa.array(["s-%d" % i for i in ids]),
        "cat": pa.array([["a", "b", "c"][i % 3] for i in ids]).dictionary_encode(),
        "xs": pa.array([None if i % 5 == 0 else list(range(i % 4)) for i in ids], pa.list_(pa.int64())),
        "recs": pa.array([[{"a": i, "b": "x%d" % i}] * (i % 3) for i in ids], pa.list_(pa.struct([("a", pa.int64()), ("b", pa.string())]))),
        "m": pa.array([None if i % 7 == 0 else [("k%d" % j, j) for j in range(i % 3)] for i in ids], pa.map_(pa.string(), pa.int64())),
        "st": pa.array([{"x": i, "y": None if i % 2 else "y"} for i in ids], pa.struct([("x", pa.int64()), ("y", pa.string())])),
        "ts": pa.array([datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=i) for i in ids], pa.timestamp("us")),
    })

if case == "pandas":
    if stage == "batch":
        frame(1, 300).to_parquet(os.path.join(out, "part-0.parquet"))
        frame(301, 200).to_parquet(os.path.join(out, "part-1.parquet"), index=False)
elif case == "pandas_empty":
    # a job's run that found no rows writes an empty DataFrame: pyarrow
    # writes one row group of 0 rows, each chunk a dictionary page at 4
    # and data_page_offset 0 (no data page)
    if stage == "batch":
        frame(1, 300).to_parquet(os.path.join(out, "part-0.parquet"))
        frame(1, 0).to_parquet(os.path.join(out, "part-1.parquet"))
elif case == "pandas_big":
    if stage == "batch":
        frame(1, 300, big=True).to_parquet(os.path.join(out, "part-0.parquet"))
elif case == "pyarrow_nested":
    if stage == "batch":
        pq.write_table(nested(1, 5000), os.path.join(out, "part-0.parquet"), row_group_size=1000, data_page_version="2.0")
        pq.write_table(nested(5001, 3000), os.path.join(out, "part-1.parquet"), row_group_size=700, data_page_size=1024, use_dictionary=False)
        pq.write_table(nested(8001, 100), os.path.join(out, "part-2.parquet"), compression="zstd", write_page_index=True)
elif case == "pyarrow_lists_only":
    # lists and maps only (no flat column), as a feature store or an
    # embedding table is written: many row groups, pages V1 and V2, an
    # empty file, a row group of NULL lists only, nested lists
    if stage == "batch":
        def lists(lo, n):
            ids = list(range(lo, lo + n))
            return pa.table({
                "xs": pa.array([[float(i)] * (i % 5) for i in ids], pa.list_(pa.float32())),
                "tags": pa.array([None if i % 3 == 0 else ["t%d" % (i % 7)] for i in ids], pa.list_(pa.string())),
                "m": pa.array([[("k", i)] for i in ids], pa.map_(pa.string(), pa.int64())),
                "nn": pa.array([[[i], [], None] for i in ids], pa.list_(pa.list_(pa.int32()))),
            })
        pq.write_table(lists(1, 4000), os.path.join(out, "part-0.parquet"), row_group_size=512, data_page_version="2.0", data_page_size=2048)
        pq.write_table(lists(4001, 3000), os.path.join(out, "part-1.parquet"), row_group_size=1000, use_dictionary=["tags"])
        pq.write_table(lists(1, 0), os.path.join(out, "part-2.parquet"))
        t = pa.table({"xs": pa.array([None] * 50, pa.list_(pa.float32())), "tags": pa.array([None] * 50, pa.list_(pa.string())),
            "m": pa.array([None] * 50, pa.map_(pa.string(), pa.int64())), "nn": pa.array([None] * 50, pa.list_(pa.list_(pa.int32())))})
        pq.write_table(t, os.path.join(out, "part-3.parquet"), row_group_size=10)
elif case == "pyarrow_encodings":
    # dictionaries that fall back to PLAIN mid-chunk, DELTA and
    # BYTE_STREAM_SPLIT encodings, no statistics, page indexes over lists,
    # decimals as integers, LZ4 and GZIP, small pages
    if stage == "batch":
        def enc(lo, n):
            ids = list(range(lo, lo + n))
            return pa.table({
                "id": pa.array(ids, pa.int64()),
                "s": pa.array(["s-%d" % i for i in ids]),
                "cat": pa.array([["a", "b", "c"][i % 3] for i in ids]),
                "f": pa.array([i / 7 for i in ids], pa.float64()),
                "dec": pa.array([decimal.Decimal(i) / 100 for i in ids], pa.decimal128(12, 2)),
                "xs": pa.array([[i, None] if i % 3 else None for i in ids], pa.list_(pa.int64())),
                "ts": pa.array([datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=i) for i in ids], pa.timestamp("ms")),
            })
        pq.write_table(enc(1, 20000), os.path.join(out, "part-0.parquet"), dictionary_pagesize_limit=4096, data_page_size=4096, compression="lz4")
        pq.write_table(enc(20001, 5000), os.path.join(out, "part-1.parquet"), use_dictionary=["cat"],
            column_encoding={"id": "DELTA_BINARY_PACKED", "s": "DELTA_BYTE_ARRAY", "f": "BYTE_STREAM_SPLIT"}, compression="gzip")
        pq.write_table(enc(25001, 5000), os.path.join(out, "part-2.parquet"), write_statistics=False, store_decimal_as_integer=True,
            write_page_index=True, data_page_version="2.0", row_group_size=1500)
        pq.write_table(enc(30001, 3000), os.path.join(out, "part-3.parquet"), write_page_index=True, write_page_checksum=True,
            sorting_columns=[pq.SortingColumn(0)], compression="brotli", use_dictionary=False, data_page_size=512)
elif case == "duckdb":
    if stage == "batch":
        import duckdb
        duckdb.sql("""COPY (SELECT i::BIGINT AS id, 's-' || i AS s, ['a','b','c'][i % 3 + 1] AS cat,
            CASE WHEN i % 5 = 0 THEN NULL ELSE range(i % 4) END AS xs,
            {'x': i, 'y': CASE WHEN i % 2 = 0 THEN 'y' END} AS st,
            MAP {'k': i} AS m, i % 2 = 0 AS flag, TIMESTAMPTZ '2024-01-01 00:00:00+00' + to_seconds(i) AS ts,
            (i / 4)::DECIMAL(18, 2) AS amount
            FROM range(1, 20001) t(i)) TO 'OUT' (FORMAT parquet, ROW_GROUP_SIZE 5000)""".replace("OUT", os.path.join(out, "part-0.parquet")))
elif case.startswith("delta"):
    from deltalake import DeltaTable, write_deltalake
    cdf = {"delta.enableChangeDataFeed": "true"}
    def arrow(df):
        return pa.Table.from_pandas(df.drop(columns=["none"]), preserve_index=False)
    if case == "delta_append":
        if stage == "base":
            write_deltalake(out, frame(1, 100).drop(columns=["none"]))
        else:
            write_deltalake(out, frame(101, 50).drop(columns=["none"]), mode="append")
            write_deltalake(out, frame(151, 50).drop(columns=["none"]), mode="append")
    elif case == "delta_overwrite":
        if stage == "base":
            write_deltalake(out, frame(1, 100).drop(columns=["none"]))
        else:
            write_deltalake(out, frame(1, 120).drop(columns=["none"]), mode="overwrite")
    elif case == "delta_evolve":
        if stage == "base":
            write_deltalake(out, frame(1, 100).drop(columns=["none", "amount", "flag"]))
        else:
            write_deltalake(out, frame(101, 100).drop(columns=["none"]), mode="append", schema_mode="merge")
    elif case == "delta_nested":
        if stage == "base":
            write_deltalake(out, nested(1, 1000))
        else:
            write_deltalake(out, nested(1001, 2000), mode="append")
            t = nested(3001, 10)
            t = t.append_column("tz", pa.array([datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)] * 10, pa.timestamp("us", tz="UTC")))
            write_deltalake(out, t, mode="append", schema_mode="merge")
    elif case in ("delta_cdf", "delta_dml"):
        conf = cdf if case == "delta_cdf" else None
        if stage == "base":
            write_deltalake(out, frame(1, 100).drop(columns=["none"]), configuration=conf)
        else:
            dt = DeltaTable(out)
            dt.update(predicate="id < 10", updates={"s": "'s-upd'"})
            dt.delete("id > 95")
            src = frame(90, 20).drop(columns=["none"])
            dt = DeltaTable(out)
            (dt.merge(source=arrow(src.assign(none=None)), predicate="t.id = s.id", source_alias="s", target_alias="t")
                .when_matched_update_all().when_not_matched_insert_all().execute())
    elif case == "delta_optimize":
        if stage == "base":
            write_deltalake(out, frame(1, 100).drop(columns=["none"]))
        else:
            for k in range(5):
                write_deltalake(out, frame(101 + 20 * k, 20).drop(columns=["none"]), mode="append")
            dt = DeltaTable(out)
            dt.optimize.compact()
            dt.create_checkpoint()
            write_deltalake(out, frame(301, 5).drop(columns=["none"]), mode="append")
    elif case == "delta_checkpoint":
        if stage == "base":
            write_deltalake(out, nested(1, 100), configuration={"delta.checkpointInterval": "2"})
            write_deltalake(out, nested(101, 100), mode="append")
            DeltaTable(out).create_checkpoint()
        else:
            write_deltalake(out, nested(201, 100), mode="append")
            write_deltalake(out, nested(301, 100), mode="append")
            DeltaTable(out).create_checkpoint()
            DeltaTable(out).optimize.z_order(["id"])
    elif case == "delta_restore":
        # restore adds again the files of version 0, removed by version 1
        if stage == "base":
            write_deltalake(out, frame(1, 100).drop(columns=["none"]))
            write_deltalake(out, frame(1, 50).drop(columns=["none"]), mode="overwrite")
        else:
            DeltaTable(out).restore(0)
            write_deltalake(out, frame(101, 10).drop(columns=["none"]), mode="append")
            DeltaTable(out).restore(1)
            DeltaTable(out).restore(3)
    elif case == "delta_replace_where":
        if stage == "base":
            write_deltalake(out, frame(1, 100).drop(columns=["none"]).assign(cat=lambda d: d.cat.astype(str)), partition_by=["cat"])
        else:
            d = frame(1, 100).drop(columns=["none"]).assign(cat=lambda d: d.cat.astype(str))
            write_deltalake(out, d[d.cat == "a"], mode="overwrite", predicate="cat = 'a'")
            DeltaTable(out).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    elif case == "delta_cdf_evolve":
        # change data files of versions before and after a schema merge,
        # of struct, list and map columns, in a partitioned table
        def nest(lo, n, wide=False):
            t = nested(lo, n).drop_columns(["cat"]).append_column("cat", pa.array([["a", "b", "c"][i % 3] for i in range(lo, lo + n)]))
            if wide:
                t = t.append_column("extra", pa.array(["e"] * n)).append_column("i32", pa.array(list(range(n)), pa.int32()))
            return t
        if stage == "base":
            write_deltalake(out, nest(1, 100), configuration=cdf, partition_by=["cat"])
        else:
            DeltaTable(out).update(predicate="id < 10", updates={"s": "'s-upd'"})
            write_deltalake(out, nest(101, 50, True), mode="append", schema_mode="merge", partition_by=["cat"])
            DeltaTable(out).update(predicate="id > 140", updates={"s": "'s-upd'", "extra": "'f'"})
            DeltaTable(out).delete("id = 50")
            src = nest(90, 20, True)
            (DeltaTable(out).merge(source=src, predicate="t.id = s.id", source_alias="s", target_alias="t")
                .when_matched_update_all().when_not_matched_insert_all().execute())
    elif case == "delta_partitioned":
        if stage == "base":
            write_deltalake(out, frame(1, 100).drop(columns=["none"]).assign(day=lambda d: d.id % 3, cat=lambda d: d.cat.astype(str)), partition_by=["cat", "day"])
        else:
            write_deltalake(out, frame(101, 100).drop(columns=["none"]).assign(day=lambda d: d.id % 3, cat=lambda d: d.cat.astype(str)), partition_by=["cat", "day"], mode="append")
            DeltaTable(out).delete("id < 5")
            DeltaTable(out).optimize.compact()
    elif case == "delta_struct_evolve":
        def st(lo, n, wide, widee=None):
            widee = wide if widee is None else widee
            ids = list(range(lo, lo + n))
            f = [("x", pa.int64())] + ([("y", pa.string())] if wide else [])
            e = [("a", pa.int32())] + ([("b", pa.float64())] if widee else [])
            return pa.table({
                "id": pa.array(ids, pa.int64()), "s": pa.array(["s-%d" % i for i in ids]),
                "cat": pa.array([["a", "b", "c"][i % 3] for i in ids]),
                "st": pa.array([dict(x=i, y="y") if wide else dict(x=i) for i in ids], pa.struct(f)),
                "xs": pa.array([[dict(a=1, b=2.0) if widee else dict(a=1)] for i in ids], pa.list_(pa.struct(e))),
                "m": pa.array([[("k", dict(a=1, b=2.0) if widee else dict(a=1))] for i in ids], pa.map_(pa.string(), pa.struct(e))),
            })
        if stage == "base":
            write_deltalake(out, st(1, 100, False))
        else:
            write_deltalake(out, st(101, 100, True), mode="append", schema_mode="merge")
            write_deltalake(out, st(201, 10, False, True), mode="append", schema_mode="merge")
    elif case == "delta_types":
        def ty(lo, n):
            ids = list(range(lo, lo + n))
            return pa.table({
                "id": pa.array(ids, pa.int64()), "s": pa.array(["s-%d" % i for i in ids]),
                "cat": pa.array([["a", "b", "c"][i % 3] for i in ids]),
                "b8": pa.array([i % 100 for i in ids], pa.int8()), "i16": pa.array([i for i in ids], pa.int16()),
                "i32": pa.array([None if i % 3 == 0 else i for i in ids], pa.int32()),
                "f32": pa.array([i / 2 for i in ids], pa.float32()), "f64": pa.array([i / 3 for i in ids], pa.float64()),
                "d": pa.array([datetime.date(2024, 1, 1) + datetime.timedelta(days=i) for i in ids], pa.date32()),
                "bin": pa.array([b"x%d" % i for i in ids], pa.binary()),
                "dec": pa.array([decimal.Decimal(i) / 100 for i in ids], pa.decimal128(10, 2)),
                "ntz": pa.array([datetime.datetime(2024, 1, 1) + datetime.timedelta(seconds=i) for i in ids], pa.timestamp("us")),
                "tz": pa.array([datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)] * n, pa.timestamp("us", tz="UTC")),
                "flag": pa.array([i % 2 == 0 for i in ids]),
                "ls": pa.array([["a"] * (i % 2) for i in ids], pa.large_list(pa.large_string())),
            })
        if stage == "base":
            write_deltalake(out, ty(1, 100), configuration=cdf)
        else:
            write_deltalake(out, ty(101, 100), mode="append")
            DeltaTable(out).update(predicate="id < 10", updates={"i32": "7", "f32": "1.5"})
            DeltaTable(out).delete("id > 190")
            DeltaTable(out).create_checkpoint()
    else:
        raise SystemExit("unknown case " + case)
else:
    raise SystemExit("unknown case " + case)
os._exit(0)
