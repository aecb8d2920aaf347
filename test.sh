#!/usr/bin/env bash
# lakewap's test command: everything the tests need is built or fetched here
# on first use (and cached), then the whole suite runs.
set -euo pipefail
cd "$(dirname "$0")"

step() { printf '\n== %s\n' "$*" >&2; }

command -v go >/dev/null || { echo "test.sh: Go 1.26+ is required (with cgo and gcc for DuckDB)" >&2; exit 1; }
export CGO_ENABLED=1

step "downloading Go modules (first run only)"
go mod download

step "building the lakeFS server for the embedded stack (first run only, about 2 minutes cold)"
go run ./cmd/lakewap prepare

LAKEWAP_INTEROP_PYTHON=$(scripts/pyenv.sh); export LAKEWAP_INTEROP_PYTHON  # the interop test's Python clients (.cache/pyvenv-<hash>, first run only)
# PySpark for the audit package's Spark differential test, in a venv of its own
# (.cache/sparkvenv-<hash>, first run only, about a minute; needs Java 17+, else the test skips).
LAKEWAP_SPARK_PYTHON=$(scripts/sparkenv.sh); export LAKEWAP_SPARK_PYTHON
# delta-spark and the PySpark 4.2 it requires, in a venv of its own (.cache/deltasparkvenv-<hash>, first
# run only, about two minutes; Delta's jars from Maven Central into it; needs Java 17+, else its tests skip).
LAKEWAP_DELTASPARK_PYTHON=$(scripts/deltasparkenv.sh); export LAKEWAP_DELTASPARK_PYTHON
LAKEWAP_ASYNCAPI_NODE_DIR=$(scripts/nodeenv.sh); export LAKEWAP_ASYNCAPI_NODE_DIR  # the AsyncAPI parser (.cache/nodeenv-<hash>, first run only)
# The Java example (examples/java), built with Maven (.cache/java-examples-<hash>, its jars in
# .cache/m2; first run only, about a minute). Without a Java 17+ JDK or Maven (exit 3),
# TestExamples skips its Java consumer, with the reason; a failed build fails here.
java_rc=0
LAKEWAP_EXAMPLES_JAVA_CP=$(scripts/javaenv.sh) || java_rc=$?
case $java_rc in
0) export LAKEWAP_EXAMPLES_JAVA_CP ;;
3) step "SKIPPED building examples/java (reason above): TestExamples will skip its Java consumer" ;;
*) exit "$java_rc" ;;
esac

step "go vet"
go vet ./...

# The alert rules' unit tests (deploy/prometheus). promtool comes with
# Debian's prometheus package; without it they are skipped, with the reason.
if command -v promtool >/dev/null; then
	step "promtool test rules deploy/prometheus/lakewap-alerts.test.yml"
	promtool test rules deploy/prometheus/lakewap-alerts.test.yml
else
	step "SKIPPED promtool test rules: promtool not installed (apt-get install prometheus)"
fi

# TestContainersEndToEnd runs the apache/kafka and treeverse/lakefs images
# of docker-compose.yml. In CI (CI set) or with LAKEWAP_CONTAINERS=1,
# scripts/containers.sh brings up a container engine where none answers
# (podman from Debian's packages) and the stand-in images where no registry
# answers: about 9 minutes the first time on 2 cores, seconds after. Without
# an engine the test skips, with the reason; LAKEWAP_CONTAINERS=0 never starts one.
containers_started=""
stop_containers() { [[ -z "$containers_started" ]] || scripts/containers.sh stop || true; }
if [[ "${LAKEWAP_CONTAINERS:-}" == 1 || (-n "${CI:-}" && "${LAKEWAP_CONTAINERS:-}" != 0) ]]; then
	step "container engine and the Kafka and lakeFS images for TestContainersEndToEnd (scripts/containers.sh; first run only: minutes)"
	began=$SECONDS
	engine_was_up=""
	scripts/containers.sh env >/dev/null 2>&1 && engine_was_up=1
	if host="$(scripts/containers.sh engine)" && scripts/containers.sh standin kafka && scripts/containers.sh standin lakefs; then
		# No reaper image here (the test removes its containers); ports are reached on loopback.
		export DOCKER_HOST="$host" TESTCONTAINERS_RYUK_DISABLED=true TESTCONTAINERS_HOST_OVERRIDE=127.0.0.1
		[[ -n "$engine_was_up" ]] || containers_started=1
		step "container engine at $DOCKER_HOST ready in $((SECONDS - began))s"
	else
		step "no container engine (reason above): TestContainersEndToEnd will skip"
	fi
fi

step "go test ./... [Kafka backend: kfake, in-process] (+ real lakeFS server + DuckDB)"
status=0
# -timeout is a guard against a hang, per package: the audit package, with its PySpark and
# delta-spark differentials, takes about 25 minutes on a loaded 2-core machine.
env -u LAKEWAP_TEST_KAFKA_BROKERS go test -count=1 -timeout 50m ./... "$@" || status=$?

# The Helm chart (deploy/helm/lakewap): rendered with Helm's Go packages and
# every manifest decoded strictly into the Kubernetes API types, in a module
# of its own (tools/helmtest) so that Helm stays out of the product's go.mod.
step "go test tools/helmtest [the Helm chart]"
(cd tools/helmtest && go test -count=1 ./...) || status=$?

# go test prints skips only with -v: say which tests skipped here and why
# (testcontainers needs a Docker engine; the rest should not skip).
if [[ -z "${DOCKER_HOST:-}" ]]; then
	step "skipped tests and their reasons (the testcontainers test skips where no Docker engine answers)"
	env -u LAKEWAP_TEST_KAFKA_BROKERS go test -count=1 -v -run 'TestContainers' ./tests/ 2>&1 |
		grep -E -B1 -- '^--- SKIP' | grep -v -- '^--$' >&2 || echo "(no skips)" >&2
fi

# The Kafka-facing tests again, against Apache Kafka: a single-node KRaft
# broker from Maven Central's jars on Java 17+ (scripts/kafka.sh). Skipped,
# with the reason, where Java or Maven is missing; LAKEWAP_REAL_KAFKA=0 skips it too.
kafka_pkgs=(./kafka/... ./internal/devstack/ ./consumer/ ./notify/ ./tests/)
if [[ "${LAKEWAP_REAL_KAFKA:-1}" == 0 ]]; then
	step "SKIPPED the Apache Kafka run: LAKEWAP_REAL_KAFKA=0"
	stop_containers
	exit "$status"
fi
kafka_dir="$(mktemp -d "${TMPDIR:-/tmp}/lakewap-kafka.XXXXXX")"
stop_kafka() {
	stop_containers
	scripts/kafka.sh stop "$kafka_dir" || true
	if [[ "$status" == 0 ]]; then rm -rf "$kafka_dir"; else echo "test.sh: Apache Kafka's log: $kafka_dir/kafka.log" >&2; fi
}
trap stop_kafka EXIT
# The container engine served only TestContainersEndToEnd, which ran above:
# stop it before the broker starts, so the two do not compete for the machine.
stop_containers
containers_started=""
step "starting Apache Kafka (KRaft, single node) for the second run"
kafka_rc=0
brokers="$(scripts/kafka.sh start "$kafka_dir")" || kafka_rc=$?
case "$kafka_rc" in
0)
	step "go test ${kafka_pkgs[*]} [Kafka backend: Apache Kafka $(cat "$kafka_dir/version" 2>/dev/null) at $brokers]"
	began=$SECONDS
	# The testcontainers test brings its own broker: it ran in the first run.
	LAKEWAP_TEST_KAFKA_BROKERS="$brokers" go test -count=1 -timeout 30m -skip TestContainersEndToEnd "${kafka_pkgs[@]}" "$@" || status=$?
	step "Apache Kafka run took $((SECONDS - began))s (broker: $(tr '\n' ' ' <"$kafka_dir/timings"))"
	;;
3) step "SKIPPED the Apache Kafka run (reason above); the kfake run above is the only Kafka run" ;;
*)
	echo "test.sh: could not start Apache Kafka (exit $kafka_rc)" >&2
	status=1
	;;
esac
exit "$status"
