"""lakewap against Great Expectations on the same 5 M-row Parquet file, in one run.

Run by scripts/bench-ge.sh (which builds lakewap and makes the file). The same
five checks — not_null(id), unique(id), amount between 0 and 100, row count
>= 1, freshness (newest updated_at at most 1 h before 2025-06-01T12:30Z) — run
as three separate processes, interleaved round by round so that load from
other work on the machine hits all three alike:

- lakewap: `lakewap audit -local` (the whole CLI: config, DuckDB, the suite);
  "check" is the audit report's duration (Engine.Run: listing, views, scan).
- GE pandas: pandas reads the file, GE 1.x validates a dataframe asset;
  "check" is validate() alone.
- GE SQL: GE's SQL datasource on DuckDB (duckdb-engine) over a view of the
  file; "check" is validate() alone. GE 1.24.1 reads query results after
  closing the connection, which DuckDB does not allow (every metric fails
  with "list index out of range"); like for SQLite, GE must keep one
  connection, so DuckDB is added to its persisted-connection dialects.

For each process: wall time (fork to exit), the check's own time, and peak
RSS (the child's ru_maxrss from wait4). Prints JSON lines per run, then a
markdown table of medians and ratios.
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
BATCH_TIME = "2025-06-01T12:30:00Z"


def ge_suite(gx):
    import great_expectations.expectations as E
    s = gx.ExpectationSuite(name="standard")
    s.add_expectation(E.ExpectColumnValuesToNotBeNull(column="id"))
    s.add_expectation(E.ExpectColumnValuesToBeUnique(column="id"))
    s.add_expectation(E.ExpectColumnValuesToBeBetween(column="amount", min_value=0, max_value=100))
    s.add_expectation(E.ExpectTableRowCountToBeBetween(min_value=1))
    s.add_expectation(E.ExpectColumnMaxToBeBetween(column="updated_at", min_value=datetime.datetime(2025, 6, 1, 11, 30)))
    return s


def child_ge(engine, file, work):
    import great_expectations as gx
    ctx = gx.get_context(mode="ephemeral")
    suite = ctx.suites.add(ge_suite(gx))
    if engine == "pandas":
        import pandas as pd
        t0 = time.monotonic()
        df = pd.read_parquet(file)
        read = time.monotonic() - t0
        bd = ctx.data_sources.add_pandas("files").add_dataframe_asset("billing").add_batch_definition_whole_dataframe("all")
        batch = bd.get_batch(batch_parameters={"dataframe": df})
    else:
        import duckdb
        import great_expectations.execution_engine.sqlalchemy_execution_engine as sqlengine

        class Dialect(str):
            value = "duckdb"

        sqlengine._PERSISTED_CONNECTION_DIALECTS = tuple(sqlengine._PERSISTED_CONNECTION_DIALECTS) + (Dialect("duckdb"),)
        db = os.path.join(work, "ge-sql.duckdb")
        con = duckdb.connect(db)
        con.execute("CREATE OR REPLACE VIEW billing AS SELECT * FROM read_parquet('%s')" % file)
        con.close()
        read = 0.0
        ds = ctx.data_sources.add_sql("duck", connection_string="duckdb:///" + db)
        batch = ds.add_table_asset("billing", table_name="billing").add_batch_definition_whole_table("all").get_batch()
    t0 = time.monotonic()
    res = batch.validate(suite)
    check = time.monotonic() - t0
    verdicts = {r.expectation_config.type + "(" + str(r.expectation_config.kwargs.get("column", "")) + ")": bool(r.success)
                for r in res.results}
    errors = [r.expectation_config.type for r in res.results if (r.exception_info or {}).get("raised_exception")]
    print(json.dumps({"check_s": check, "read_s": read, "verdicts": verdicts, "errors": errors}))


def measure(cmd):
    """Runs cmd, returns (exit code, stdout, stderr, wall seconds, peak RSS MB)."""
    t0 = time.monotonic()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    # Read the pipes in threads so the child never blocks on a full pipe.
    import threading
    bufs = {}

    def drain(name, f):
        bufs[name] = f.read()

    ts = [threading.Thread(target=drain, args=("out", p.stdout)), threading.Thread(target=drain, args=("err", p.stderr))]
    for t in ts:
        t.start()
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.monotonic() - t0
    for t in ts:
        t.join()
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, bufs["out"], bufs["err"], wall, ru.ru_maxrss / 1024.0


def driver(a):
    cfg = os.path.join(a.work, "lakewap.yaml")
    with open(cfg, "w") as f:
        f.write("""kafka: {brokers: ["127.0.0.1:1"]}
lakefs: {endpoint: "http://127.0.0.1:1", access_key_id: a, secret_access_key: b}
audit: {work_dir: %s, cache_dir: %s, threads: %d}
datasets:
  bench:
    repository: local
    tables: [{name: billing, path: gold/billing/}]
    checks:
      - {kind: not_null, table: billing, column: id}
      - {kind: unique, table: billing, column: id}
      - {kind: range, table: billing, column: amount, min: 0, max: 100}
      - {kind: row_count, table: billing, min: 1}
      - {kind: freshness, table: billing, column: updated_at, max_age: 1h}
""" % (os.path.join(a.work, "audit"), os.path.join(a.work, "cache"), a.threads))
    local = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(a.file))))  # DIR/main/gold/billing/x
    contenders = {
        "lakewap": [a.lakewap, "audit", "-config", cfg, "-dataset", "bench", "-ref", "main", "-base", "main",
                    "-local", local, "-batch-time", BATCH_TIME, "-json"],
        "GE pandas": [sys.executable, __file__, "child", "pandas", "--file", a.file, "--work", a.work],
        "GE SQL (DuckDB)": [sys.executable, __file__, "child", "sql", "--file", a.file, "--work", a.work],
    }
    results = {k: [] for k in contenders}
    for rnd in range(a.rounds + 1):  # round 0 warms caches and is not counted
        for name, cmd in contenders.items():
            code, out, err, wall, rss = measure(cmd)
            if name == "lakewap":
                if code != 0:
                    sys.exit("lakewap exit %d: %s %s" % (code, out.decode()[-2000:], err.decode()[-2000:]))
                rep = json.loads(out)
                check = rep["duration_ms"] / 1000.0
                verdicts = {c["name"]: c["status"] == "pass" for c in rep["checks"]}
                errors = [c["name"] for c in rep["checks"] if c["status"] == "error"]
            else:
                if code != 0:
                    sys.exit("%s exit %d: %s" % (name, code, err.decode()[-3000:]))
                r = json.loads(out.decode().strip().splitlines()[-1])
                check, verdicts, errors = r["check_s"], r["verdicts"], r["errors"]
            row = {"round": rnd, "tool": name, "wall_s": round(wall, 3), "check_s": round(check, 3), "peak_rss_mb": round(rss, 1),
                   "all_pass": all(verdicts.values()), "errors": errors}
            print(json.dumps(row), flush=True)
            if rnd > 0:
                results[name].append(row)
    med = {k: {m: statistics.median(r[m] for r in v) for m in ("wall_s", "check_s", "peak_rss_mb")} for k, v in results.items()}
    # Ratios are taken round by round (the three ran back to back, under the
    # same load) and their median reported.
    ratio = {k: {m: statistics.median(o[m] / l[m] for o, l in zip(v, results["lakewap"])) for m in ("wall_s", "check_s", "peak_rss_mb")}
             for k, v in results.items()}
    print()
    print("| | wall time per process | check itself | peak RSS | process: GE / lakewap | check: GE / lakewap | RSS: lakewap / GE | verdicts |")
    print("|---|---|---|---|---|---|---|---|")
    for k, m in med.items():
        verdict = "all pass" if all(r["all_pass"] and not r["errors"] for r in results[k]) else "NOT all pass"
        if k == "lakewap":
            print("| %s | %.2f s | %.2f s | %.0f MB | | | | %s |" % (k, m["wall_s"], m["check_s"], m["peak_rss_mb"], verdict))
        else:
            r = ratio[k]
            print("| %s | %.2f s | %.2f s | %.0f MB | %.1fx | %.1fx | %.2f | %s |" % (
                k, m["wall_s"], m["check_s"], m["peak_rss_mb"], r["wall_s"], r["check_s"], 1 / r["peak_rss_mb"], verdict))
    print("\nmedians of %d rounds (after a warm-up round; ratios are medians of per-round ratios); lakewap DuckDB threads=%d"
          % (a.rounds, a.threads))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="mode", required=True)
    d = sub.add_parser("driver")
    d.add_argument("--lakewap", required=True)
    d.add_argument("--file", required=True, help="DIR/main/gold/billing/part-0.parquet")
    d.add_argument("--work", required=True)
    d.add_argument("--rounds", type=int, default=3)
    d.add_argument("--threads", type=int, default=2)
    c = sub.add_parser("child")
    c.add_argument("engine", choices=["pandas", "sql"])
    c.add_argument("--file", required=True)
    c.add_argument("--work", required=True)
    a = p.parse_args()
    if a.mode == "driver":
        driver(a)
    else:
        child_ge(a.engine, a.file, a.work)


if __name__ == "__main__":
    main()
