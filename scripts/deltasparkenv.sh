#!/usr/bin/env bash
# Installs delta-spark and the PySpark it requires (tests/deltaspark/
# requirements.txt) into a venv of its own at
# ${LAKEWAP_CACHE_DIR:-.cache}/deltasparkvenv-<first 12 hex of the file's
# sha256>, once, apart from scripts/sparkenv.sh's (PySpark 4.3.0, which
# delta-spark 4.4 does not accept), and resolves Delta's jars
# (io.delta:delta-spark_4.2_2.13, from Maven Central through Spark's
# spark.jars.packages) into the venv's ivy/, where the tests find them.
# Prints the venv's interpreter (absolute path) on stdout, for
# LAKEWAP_DELTASPARK_PYTHON; everything else goes to stderr.
# Without python3 (3.10+) or a Java 17+ runtime it says so, prints nothing
# and exits 0, and the delta-spark tests skip; a failed pip install or jar
# resolution fails.
set -euo pipefail
cd "$(dirname "$0")/.."

req=tests/deltaspark/requirements.txt
cache=${LAKEWAP_CACHE_DIR:-.cache}

py=${PYTHON:-python3}
if ! command -v "$py" >/dev/null || ! "$py" -c 'import sys, venv; sys.exit(sys.version_info < (3, 10))' 2>/dev/null; then
	echo "deltasparkenv.sh: no python3 >= 3.10 with venv; the delta-spark tests will skip" >&2
	exit 0
fi
java=${JAVA_HOME:+$JAVA_HOME/bin/}java
v=$("$java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p') || true
if ! [[ ${v%%.*} =~ ^[0-9]+$ ]] || ((${v%%.*} < 17)); then
	echo "deltasparkenv.sh: no Java 17+ runtime (${java}: ${v:-none}); the delta-spark tests will skip" >&2
	exit 0
fi

want=$(sha256sum "$req" | cut -d' ' -f1)
venv=$cache/deltasparkvenv-${want:0:12}
# Written last, so a half-built venv (or one without its jars) is never
# taken for a ready one.
stamp=$venv/.requirements.sha256
if [[ -f $stamp && $(cat "$stamp") == "$want" ]] && "$venv/bin/python" -c 'import delta, pyspark' 2>/dev/null; then
	echo "$(cd "$venv/bin" && pwd)/python"
	exit 0
fi

printf '\n== %s\n' "installing delta-spark into $venv (first run only, about two minutes: PySpark is 450 MB, Delta's jars 10 MB)" >&2
mkdir -p "$cache"
[[ -f $cache/.gitignore ]] || echo '*' >"$cache/.gitignore"
rm -rf "$venv"
"$py" -m venv "$venv" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input --no-cache-dir \
	--only-binary=py4j,importlib_metadata,zipp -r "$req" >&2
# Delta's jars, resolved once into the venv (the tests pass the same
# spark.jars.ivy, so they start without the network).
SPARK_LOCAL_IP=127.0.0.1 "$venv/bin/python" - "$(cd "$venv" && pwd)/ivy" >&2 <<'PY'
import sys
from pyspark.sql import SparkSession
from delta import configure_spark_with_delta_pip
b = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
     .config("spark.jars.ivy", sys.argv[1])
     .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
     .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog"))
s = configure_spark_with_delta_pip(b).getOrCreate()
s.range(1).collect()
s.stop()
PY
echo "$want" >"$stamp"
echo "$(cd "$venv/bin" && pwd)/python"
