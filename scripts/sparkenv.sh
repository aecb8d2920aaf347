#!/usr/bin/env bash
# Installs PySpark (tests/spark/requirements.txt: Spark's jars come inside the
# Python package) into a venv of its own at
# ${LAKEWAP_CACHE_DIR:-.cache}/sparkvenv-<first 12 hex of the file's sha256>,
# once, apart from scripts/pyenv.sh's venv so that neither's pins move the
# other's. Prints the venv's interpreter (absolute path) on stdout, for
# LAKEWAP_SPARK_PYTHON; everything else goes to stderr.
# Without python3 (3.10+) or a Java 17+ runtime (Spark 4 needs both) it says
# so, prints nothing and exits 0, and the Spark differential test skips; a
# failed pip install fails.
set -euo pipefail
cd "$(dirname "$0")/.."

req=tests/spark/requirements.txt
cache=${LAKEWAP_CACHE_DIR:-.cache}

py=${PYTHON:-python3}
if ! command -v "$py" >/dev/null || ! "$py" -c 'import sys, venv; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
	echo "sparkenv.sh: no python3 >= 3.10 with venv; the Spark differential test will skip" >&2
	exit 0
fi
java=${JAVA_HOME:+$JAVA_HOME/bin/}java
v=$("$java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p') || true
if ! [[ ${v%%.*} =~ ^[0-9]+$ ]] || ((${v%%.*} < 17)); then
	echo "sparkenv.sh: no Java 17+ runtime (${java}: ${v:-none}); the Spark differential test will skip" >&2
	exit 0
fi

want=$(sha256sum "$req" | cut -d' ' -f1)
venv=$cache/sparkvenv-${want:0:12}
# Written last, so a half-built venv is never taken for a ready one.
stamp=$venv/.requirements.sha256
# Reused only if it still imports (its interpreter may have moved or gone).
if [[ -f $stamp && $(cat "$stamp") == "$want" ]] && "$venv/bin/python" -c 'import pyspark' 2>/dev/null; then
	echo "$(cd "$venv/bin" && pwd)/python"
	exit 0
fi

printf '\n== %s\n' "installing PySpark into $venv (first run only, about a minute: the package is 450 MB)" >&2
mkdir -p "$cache"
[[ -f $cache/.gitignore ]] || echo '*' >"$cache/.gitignore"
rm -rf "$venv"
"$py" -m venv "$venv" >&2
# PySpark is published as a source archive only (its jars inside); py4j as a wheel.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input --no-cache-dir \
	--only-binary=py4j -r "$req" >&2
echo "$want" >"$stamp"
echo "$(cd "$venv/bin" && pwd)/python"
