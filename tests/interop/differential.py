"""Runs a Great Expectations suite and a dbt schema.yml over the same Parquet
files lakewap audits, with the real tools, and prints what each said as JSON.

Used by tests/differential_test.go; the JSON goes to --out. For each data set (a directory with
billing.parquet and customers.parquet; usually clean/ and dirty/):
- Great Expectations (pandas engine) validates billing.parquet against the
  suite; per expectation: success, unexpected_count, observed_value.
- dbt (dbt-duckdb) builds two view models over the files and runs the tests
  of schema.yml (`dbt build`); per test (by dbt's name): status, failures.
"""
import argparse
import json
import os
import shutil
import sys

os.environ.setdefault("GX_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DBT_SEND_ANONYMOUS_USAGE_STATS", "false")
os.environ.setdefault("DO_NOT_TRACK", "1")


def ge_name(cfg):
    kw = cfg.kwargs
    cols = []
    if kw.get("column"):
        cols = [kw["column"]]
    for k in ("column_list", "column_set"):
        if kw.get(k):
            cols = list(kw[k])
    return "%s(%s)" % (cfg.type, ",".join(cols))


def run_ge(suite_file, data_dirs):
    import great_expectations as gx
    import pandas as pd
    from great_expectations.core.expectation_suite import expectationSuiteSchema

    ctx = gx.get_context(mode="ephemeral")
    with open(suite_file) as f:
        suite = ctx.suites.add(gx.ExpectationSuite(**expectationSuiteSchema.load(json.load(f))))
    asset = ctx.data_sources.add_pandas("files").add_dataframe_asset("billing")
    batch_def = asset.add_batch_definition_whole_dataframe("whole")
    out = {}
    for name, d in data_dirs.items():
        df = pd.read_parquet(os.path.join(d, "billing"))
        res = batch_def.get_batch(batch_parameters={"dataframe": df}).validate(suite)
        out[name] = {}
        for r in res.results:
            result = r.result or {}
            obs = result.get("observed_value")
            out[name][ge_name(r.expectation_config)] = {
                "success": bool(r.success),
                "unexpected_count": result.get("unexpected_count"),
                "observed_value": obs if isinstance(obs, (int, float, str, list, type(None))) else str(obs),
                "exception": (r.exception_info or {}).get("raised_exception", False),
            }
    return out, gx.__version__


def run_dbt(schema_file, data_dirs, work):
    from dbt.cli.main import dbtRunner
    import dbt.version

    proj = os.path.join(work, "dbt")
    shutil.rmtree(proj, ignore_errors=True)
    os.makedirs(os.path.join(proj, "models"))
    with open(os.path.join(proj, "dbt_project.yml"), "w") as f:
        f.write("name: lakewap_diff\nversion: '1.0'\nconfig-version: 2\nprofile: lakewap_diff\nmodel-paths: [models]\n")
    with open(os.path.join(proj, "profiles.yml"), "w") as f:
        f.write("lakewap_diff:\n  target: dev\n  outputs:\n    dev: {type: duckdb, path: '%s', threads: 1}\n"
                % os.path.join(proj, "diff.duckdb"))
    for model in ("billing", "customers"):
        with open(os.path.join(proj, "models", model + ".sql"), "w") as f:
            f.write("{{ config(materialized='view') }}\nselect * from read_parquet('{{ var(\"data\") }}/%s/*.parquet')\n" % model)
    shutil.copy(schema_file, os.path.join(proj, "models", "schema.yml"))
    out = {}
    runner = dbtRunner()
    for name, d in data_dirs.items():
        res = runner.invoke(["build", "--quiet", "--project-dir", proj, "--profiles-dir", proj,
                             "--vars", json.dumps({"data": os.path.abspath(d)})])
        if res.exception is not None:
            raise res.exception
        out[name] = {}
        for r in res.result.results:
            if r.node.resource_type != "test":
                continue
            out[name][r.node.name] = {"status": str(r.status), "failures": r.failures}
    return out, dbt.version.__version__


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--suite", required=True)
    p.add_argument("--schema", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("--out", required=True, help="file the JSON goes to (dbt prints on stdout)")
    p.add_argument("data", nargs="+", help="name=dir")
    a = p.parse_args()
    dirs = dict(x.split("=", 1) for x in a.data)
    ge, ge_version = run_ge(a.suite, dirs)
    dbt, dbt_version = run_dbt(a.schema, dirs, a.work)
    with open(a.out, "w") as f:
        json.dump({"ge": ge, "dbt": dbt, "versions": {"great_expectations": ge_version, "dbt": dbt_version}}, f)


if __name__ == "__main__":
    main()
