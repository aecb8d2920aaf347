"""Reads tables with pandas for TestPandasReadsBigIdsWithNullsAsFloat.

Arguments are FORMAT:COLUMN:DIR triples. pandas reads DIR as its users do:
pandas.read_parquet(DIR) for parquet; for csv, pandas.read_csv of each file (sorted by
name), concatenated. Prints one JSON line per table: {"dtype": the column's dtype,
"duplicates": the non-NULL values pandas reads as another row's value} or {"error": "..."}.
"""
import json
import os
import sys

import pandas as pd

for arg in sys.argv[1:]:
    fmt, col, path = arg.split(":", 2)
    try:
        if fmt == "parquet":
            df = pd.read_parquet(path)
        else:
            files = sorted(os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs)
            df = pd.concat([pd.read_csv(f) for f in files], ignore_index=True)
        s = df[col].dropna()
        out = {"dtype": str(df[col].dtype), "duplicates": int(s.duplicated().sum())}
    except Exception as e:  # noqa: BLE001 - any failure to read is the answer
        out = {"error": f"{type(e).__name__}: {e}"[:500]}
    print(json.dumps(out), flush=True)
