"""Reads one column of CSV, JSON lines and Parquet files with pandas for the TestReview40
and TestReview42 tests.

Arguments are FORMAT:COLUMN:FILE triples (FORMAT csv, jsonl or parquet). pandas reads FILE
as its users do: pandas.read_csv(FILE), pandas.read_json(FILE, lines=True), or
pandas.read_parquet(FILE). Prints one JSON
line per file: {"values": the column's values as text, null for a missing one} or
{"error": "..."}.
"""
import json
import sys

import pandas as pd

for arg in sys.argv[1:]:
    fmt, col, path = arg.split(":", 2)
    try:
        if fmt == "csv":
            df = pd.read_csv(path)
        elif fmt == "parquet":
            df = pd.read_parquet(path)
        else:
            df = pd.read_json(path, lines=True)
        out = {"values": [None if pd.isna(v) else str(v) for v in df[col]]}
    except Exception as e:  # noqa: BLE001 - any failure to read is the answer
        out = {"error": f"{type(e).__name__}: {e}"[:500]}
    print(json.dumps(out), flush=True)
