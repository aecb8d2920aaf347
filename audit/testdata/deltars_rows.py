"""Reads Delta tables with deltalake (delta-rs) for TestDeltaDifferentialAgainstDeltaRS.

Each argument is a table directory; prints one JSON line per table:
{"rows": [...]} (every row as a JSON object, in no order) or {"error": "..."}.
"""
import json
import os
import sys
import datetime
import decimal

import deltalake


def plain(v):
    if isinstance(v, (datetime.datetime, datetime.date)):
        return v.isoformat()
    if isinstance(v, decimal.Decimal):
        return str(v)
    return v


for path in sys.argv[1:]:
    try:
        dt = deltalake.DeltaTable(path)
        rows = dt.to_pyarrow_table().to_pylist()
        out = {"rows": [{k: plain(v) for k, v in r.items()} for r in rows], "version": dt.version()}
    except Exception as e:  # noqa: BLE001 - any failure to read is the answer
        out = {"error": f"{type(e).__name__}: {e}"[:500]}
    print(json.dumps(out), flush=True)

# Skip the interpreter's teardown: delta-rs's runtime threads can abort the
# process there ("terminate called without an active exception") after every
# answer is printed.
sys.stdout.flush()
os._exit(0)
