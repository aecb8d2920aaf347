#!/usr/bin/env bash
# Installs the Python clients and tools of the interop and differential tests
# (tests/interop/requirements.txt) into a venv at
# ${LAKEWAP_CACHE_DIR:-.cache}/pyvenv-<first 12 hex of the file's sha256>, once:
# a changed requirements.txt gets a venv of its own, so checkouts of different
# versions sharing one cache do not rebuild each other's. Prints the venv's interpreter (absolute
# path) on stdout, for LAKEWAP_INTEROP_PYTHON; everything else goes to stderr.
# Without python3 (3.9+) it says so, prints nothing and exits 0, and the
# interop test skips; a failed pip install fails.
set -euo pipefail
cd "$(dirname "$0")/.."

req=tests/interop/requirements.txt
cache=${LAKEWAP_CACHE_DIR:-.cache}

py=${PYTHON:-python3}
if ! command -v "$py" >/dev/null || ! "$py" -c 'import sys, venv; sys.exit(sys.version_info < (3, 9))' 2>/dev/null; then
	echo "pyenv.sh: no python3 >= 3.9 with venv; the interop test (foreign Python clients) will skip" >&2
	exit 0
fi

want=$(sha256sum "$req" | cut -d' ' -f1)
venv=$cache/pyvenv-${want:0:12}
# Written last, so a half-built venv is never taken for a ready one.
stamp=$venv/.requirements.sha256
# Reused only if it still imports (its interpreter may have moved or gone).
if [[ -f $stamp && $(cat "$stamp") == "$want" ]] &&
	"$venv/bin/python" -c 'import cloudevents, confluent_kafka, fastavro, lakefs_sdk, pyarrow, boto3, deltalake, great_expectations, dbt.cli.main, duckdb' 2>/dev/null; then
	echo "$(cd "$venv/bin" && pwd)/python"
	exit 0
fi

printf '\n== %s\n' "installing the interop test's Python clients into $venv (first run only, a few minutes: Great Expectations and dbt are large)" >&2
mkdir -p "$cache"
[[ -f $cache/.gitignore ]] || echo '*' >"$cache/.gitignore"
rm -rf "$venv"
"$py" -m venv "$venv" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input --only-binary=:all: -r "$req" >&2
echo "$want" >"$stamp"
echo "$(cd "$venv/bin" && pwd)/python"
