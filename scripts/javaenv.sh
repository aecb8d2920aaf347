#!/usr/bin/env bash
# Builds the Java example (examples/java: a consumer of the results topic)
# with Maven, once per version of its sources, into
# ${LAKEWAP_CACHE_DIR:-.cache}/java-examples-<first 12 hex of the sources' sha256>,
# with Maven's local repository in ${LAKEWAP_CACHE_DIR:-.cache}/m2 (kafka-clients,
# Avro and the pinned plugins come from Maven Central, first run only). Prints
# the class path to run it with (java -cp ... io.lakewap.examples.ResultsConsumer)
# on stdout, for LAKEWAP_EXAMPLES_JAVA_CP; everything else goes to stderr.
# Exit status 3 means "cannot build here" (no Java 17+ JDK or no Maven): the
# examples test skips its Java part, with the reason; a failed build fails.
set -euo pipefail
cd "$(dirname "$0")/.."

cache=${LAKEWAP_CACHE_DIR:-.cache}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)
[[ -f $cache/.gitignore ]] || echo '*' >"$cache/.gitignore"

cannot() { echo "javaenv.sh: $*" >&2; exit 3; }
java=${JAVA_HOME:+$JAVA_HOME/bin/}java
command -v "$java" >/dev/null 2>&1 || cannot "no Java runtime found (the Java example needs Java 17+)"
v=$("$java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')
[[ ${v%%.*} =~ ^[0-9]+$ ]] && ((${v%%.*} >= 17)) || cannot "$java is Java ${v:-of unknown version}; the Java example needs 17+"
command -v "${JAVA_HOME:+$JAVA_HOME/bin/}javac" >/dev/null 2>&1 || cannot "no javac: the Java example needs a JDK, not only a runtime"

src=examples/java
want=$(cd "$src" && find pom.xml src -type f | LC_ALL=C sort | xargs sha256sum | sha256sum | cut -d' ' -f1)
out=$cache/java-examples-${want:0:12}
if [[ -f $out/.complete ]]; then
	cat "$out/classpath"
	exit 0
fi
command -v mvn >/dev/null 2>&1 || cannot "Maven (mvn) not found: cannot build the Java example"

printf '\n== %s\n' "building examples/java with Maven into $out (first run only; Maven's repository: $cache/m2)" >&2
rm -rf "$out" "$out.tmp"
mkdir -p "$out.tmp"
# A copy of the sources, so that the build leaves no target/ in the checkout.
cp -r "$src/pom.xml" "$src/src" "$out.tmp/"
mvn -B -q -Dmaven.repo.local="$cache/m2" -f "$out.tmp/pom.xml" compile dependency:build-classpath \
	-Dmdep.includeScope=runtime -Dmdep.outputFile="$out.tmp/deps.classpath" >"$out.tmp/mvn.log" 2>&1 ||
	{ cat "$out.tmp/mvn.log" >&2; echo "javaenv.sh: the Maven build of examples/java failed" >&2; exit 1; }
mv "$out.tmp" "$out"
# Written last, so that a half-built one is never taken for a ready one.
echo "$out/target/classes:$(cat "$out/deps.classpath")" >"$out/classpath"
touch "$out/.complete"
cat "$out/classpath"
