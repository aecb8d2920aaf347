"""Writers that reach lakeFS through its S3 gateway, as users' jobs do.

Used by tests/s3writers_test.go. Credentials come from the
environment (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY: the lakeFS key);
--endpoint is the lakeFS server (its S3 gateway answers on the same port).

  s3writers.py boto3 --endpoint URL --uri s3://repo/branch/path/file.parquet --start N --rows N [--null-ids N]
      writes one Parquet file (pyarrow) with boto3's put_object.
  s3writers.py delta --endpoint URL --uri s3://repo/branch/path/table --mode append|overwrite --start N --rows N [--null-ids N] [--cdf]
      writes one commit of a Delta table with deltalake (delta-rs); --cdf
      makes a new table with the change data feed on.
  s3writers.py delta --endpoint URL --uri ... --mode update|delete --predicate SQL
      updates (amount to 999) or deletes the rows of the predicate: with the
      change data feed on, the commit names change data files.

Prints {"written": [...keys or files...], "version": delta version} as JSON.
"""
import argparse
import io
import json
import os
import sys
from urllib.parse import urlparse

import pyarrow as pa
import pyarrow.parquet as pq


def rows(start, n, null_ids):
    ids = [None if i < null_ids else start + i for i in range(n)]
    return pa.table({
        "event_id": pa.array(ids, pa.int64()),
        "amount": pa.array([float((start + i) % 100) for i in range(n)], pa.float64()),
        "kind": pa.array(["click" if i % 2 else "view" for i in range(n)], pa.string()),
    })


def main():
    p = argparse.ArgumentParser()
    p.add_argument("writer", choices=["boto3", "delta"])
    p.add_argument("--endpoint", required=True)
    p.add_argument("--uri", required=True)
    p.add_argument("--mode", default="append")
    p.add_argument("--start", type=int, default=0)
    p.add_argument("--rows", type=int, default=0)
    p.add_argument("--null-ids", type=int, default=0)
    p.add_argument("--cdf", action="store_true")
    p.add_argument("--predicate", default="")
    a = p.parse_args()
    table = rows(a.start, a.rows, a.null_ids)
    out = {}
    if a.writer == "boto3":
        import boto3
        from botocore.config import Config

        u = urlparse(a.uri)
        s3 = boto3.client("s3", endpoint_url=a.endpoint, region_name="us-east-1",
                          config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 3}))
        buf = io.BytesIO()
        pq.write_table(table, buf)
        s3.put_object(Bucket=u.netloc, Key=u.path.lstrip("/"), Body=buf.getvalue())
        head = s3.head_object(Bucket=u.netloc, Key=u.path.lstrip("/"))
        out = {"written": [u.path.lstrip("/")], "size": head["ContentLength"], "boto3": boto3.__version__}
    else:
        import deltalake

        opts = {
            "AWS_ENDPOINT_URL": a.endpoint,
            "AWS_ACCESS_KEY_ID": os.environ["AWS_ACCESS_KEY_ID"],
            "AWS_SECRET_ACCESS_KEY": os.environ["AWS_SECRET_ACCESS_KEY"],
            "AWS_REGION": "us-east-1",
            "AWS_ALLOW_HTTP": "true",
            "AWS_VIRTUAL_HOSTED_STYLE_REQUEST": "false",
            # lakeFS's gateway has no lock service; one writer per branch.
            "AWS_S3_ALLOW_UNSAFE_RENAME": "true",
        }
        if a.mode == "update":
            deltalake.DeltaTable(a.uri, storage_options=opts).update(predicate=a.predicate, updates={"amount": "999.0"})
        elif a.mode == "delete":
            deltalake.DeltaTable(a.uri, storage_options=opts).delete(a.predicate)
        else:
            conf = {"delta.enableChangeDataFeed": "true"} if a.cdf else None
            deltalake.write_deltalake(a.uri, table, mode=a.mode, storage_options=opts, configuration=conf)
        dt = deltalake.DeltaTable(a.uri, storage_options=opts)
        out = {"written": dt.file_uris(), "version": dt.version(), "deltalake": deltalake.__version__}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
