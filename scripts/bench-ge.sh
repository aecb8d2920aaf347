#!/usr/bin/env bash
# lakewap against Great Expectations (pandas engine and its SQL datasource on
# DuckDB) on the 5 M-row Parquet file of the audit benchmarks, in one run:
# builds lakewap, installs the pinned Python tools (scripts/pyenv.sh), makes
# the file if missing ($TMPDIR/lakewap-audit-bench-v1, shared with
# `go test ./audit -bench .`), then runs tests/interop/bench_ge.py, which
# interleaves the three processes round by round and prints medians and
# ratios (docs/benchmarks.md). Usage: scripts/bench-ge.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/lakewap" ./cmd/lakewap
python=$(scripts/pyenv.sh)
[[ -n $python ]] || { echo "bench-ge.sh: needs python3 >= 3.9 (see scripts/pyenv.sh)" >&2; exit 1; }
root=${TMPDIR:-/tmp}/lakewap-audit-bench-v1
file=$root/main/gold/billing/part-0.parquet
if [[ ! -f $file ]]; then
	mkdir -p "$(dirname "$file")"
	"$python" - "$file" <<'PY'
import sys, duckdb
# The query of audit/bench_test.go's benchAuditFile.
duckdb.sql("""COPY (SELECT i AS id, (i % 50000)::INTEGER AS customer_id,
  CASE WHEN i % 2 = 0 THEN 'open' ELSE 'paid' END AS status, (hash(i) % 10000) / 100.0 AS amount,
  TIMESTAMP '2025-06-01 12:00:00' - to_seconds(i) AS updated_at
  FROM range(5000000) r(i)) TO '%s.tmp' (FORMAT parquet)""" % sys.argv[1])
PY
	mv "$file.tmp" "$file"
fi
"$python" tests/interop/bench_ge.py driver --lakewap "$work/lakewap" --file "$file" --work "$work" --rounds "$rounds"
