"""Reads tables with pyarrow.dataset for TestTextAndParquetDifferentialAgainstPyArrow.

Arguments are FORMAT:COLUMNS:DIR triples (COLUMNS comma-separated). pyarrow reads DIR as
pandas and most pyarrow users do: pyarrow.dataset.dataset(DIR, format=FORMAT,
partitioning="hive"), files whose name starts with _ or . ignored (pyarrow's default).
Prints one JSON line per table: {"rows": N, "nulls": {col: n or null when the column is
absent}, "columns": [...]} or {"error": "..."}.
"""
import json
import sys

import pyarrow.dataset as ds

for arg in sys.argv[1:]:
    fmt, cols, path = arg.split(":", 2)
    try:
        table = ds.dataset(path, format=fmt, partitioning="hive").to_table()
        nulls = {}
        for c in cols.split(","):
            nulls[c] = table.column(c).null_count if c in table.column_names else None
        out = {"rows": table.num_rows, "nulls": nulls, "columns": table.column_names}
    except Exception as e:  # noqa: BLE001 - any failure to read is the answer
        out = {"error": f"{type(e).__name__}: {e}"[:500]}
    print(json.dumps(out), flush=True)
