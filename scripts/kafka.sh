#!/usr/bin/env bash
# A throwaway single-node Apache Kafka broker (KRaft, combined broker and
# controller) for the test suite's real-Kafka run.
#
#   scripts/kafka.sh fetch        download Kafka's jars from Maven Central into the cache (once)
#   scripts/kafka.sh start DIR    format and start a broker with its state in DIR; prints host:port
#   scripts/kafka.sh stop DIR     stop the broker started in DIR (by its recorded PID)
#
# The jars come from Maven Central through Maven (org.apache.kafka:kafka_2.13
# and its runtime dependencies) and are cached in
# ${LAKEWAP_CACHE_DIR:-<repo>/.cache}/kafka-<version>/libs.
# KAFKA_VERSION overrides the version. Exit status 3 means "cannot run here"
# (no Java 17+ or no Maven): callers skip the real-Kafka tests.
set -euo pipefail

KAFKA_VERSION="${KAFKA_VERSION:-4.4.0}"
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${LAKEWAP_CACHE_DIR:-$ROOT/.cache}/kafka-$KAFKA_VERSION"
LIBS="$CACHE/libs"
START_TIMEOUT="${KAFKA_START_TIMEOUT:-120}"

say() { printf 'kafka.sh: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
cannot() { say "$*"; exit 3; }

# need_java exits 3 unless a Java 17+ runtime is on PATH (or in JAVA_HOME).
need_java() {
	JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"
	command -v "$JAVA" >/dev/null 2>&1 || cannot "no Java runtime found (Apache Kafka $KAFKA_VERSION needs Java 17+)"
	local v
	v="$("$JAVA" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java.specification.version = //p')"
	[[ "${v%%.*}" =~ ^[0-9]+$ ]] || cannot "cannot tell the version of $JAVA"
	((${v%%.*} >= 17)) || cannot "$JAVA is Java $v; Apache Kafka $KAFKA_VERSION needs Java 17+"
}

fetch() {
	if [[ -f "$LIBS/.complete" ]]; then
		return 0
	fi
	command -v mvn >/dev/null 2>&1 || cannot "Maven (mvn) not found: cannot fetch Apache Kafka $KAFKA_VERSION from Maven Central"
	say "fetching Apache Kafka $KAFKA_VERSION and its dependencies from Maven Central (first run only)"
	mkdir -p "$CACHE"
	local work="$CACHE/fetch.$$"
	rm -rf "$work" && mkdir -p "$work/libs"
	# The broker's classpath is kafka_2.13 (kafka.Kafka, StorageTool) with its
	# runtime closure; Kafka logs through SLF4J 1.7, so the log4j2 binding of
	# the same log4j version is added for a readable broker log.
	cat >"$work/pom.xml" <<-EOF
		<project xmlns="http://maven.apache.org/POM/4.0.0">
		  <modelVersion>4.0.0</modelVersion>
		  <groupId>lakewap.test</groupId>
		  <artifactId>kafka-broker-classpath</artifactId>
		  <version>1</version>
		  <packaging>pom</packaging>
		  <dependencies>
		    <dependency>
		      <groupId>org.apache.kafka</groupId>
		      <artifactId>kafka_2.13</artifactId>
		      <version>$KAFKA_VERSION</version>
		    </dependency>
		  </dependencies>
		</project>
	EOF
	local mvn=(mvn -B -q -f "$work/pom.xml")
	"${mvn[@]}" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$work/libs" >"$work/mvn.log" 2>&1 ||
		{ cat "$work/mvn.log" >&2; die "Maven could not resolve org.apache.kafka:kafka_2.13:$KAFKA_VERSION"; }
	local log4j
	log4j="$(cd "$work/libs" && ls log4j-core-*.jar 2>/dev/null | sed -n 's/^log4j-core-\(.*\)\.jar$/\1/p' | head -1)"
	if [[ -n "$log4j" ]]; then
		"${mvn[@]}" dependency:copy -Dartifact="org.apache.logging.log4j:log4j-slf4j-impl:$log4j" \
			-DoutputDirectory="$work/libs" >>"$work/mvn.log" 2>&1 ||
			say "no log4j-slf4j-impl $log4j: the broker log will be nearly empty"
	fi
	[[ -f "$work/libs/kafka_2.13-$KAFKA_VERSION.jar" ]] || die "Maven finished but kafka_2.13-$KAFKA_VERSION.jar is missing"
	touch "$work/libs/.complete"
	rm -rf "$LIBS"
	mv "$work/libs" "$LIBS"
	rm -rf "$work"
	say "cached $(ls "$LIBS" | wc -l) jars in $LIBS"
}

# free_port prints a TCP port on 127.0.0.1 that nothing listens on now.
free_port() {
	local p
	for _ in $(seq 1 200); do
		p=$((20000 + RANDOM % 40000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
			echo "$p"
			return 0
		fi
	done
	die "no free port found"
}

# cluster_id prints a random Kafka cluster id (16 random bytes, URL-safe base64).
# Not one that starts with '-', which kafka-storage's argument parser takes
# for an option (1 in 64 ids; Kafka's own random-uuid skips them too).
cluster_id() {
	local id
	while id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')" && [[ $id == -* ]]; do :; done
	printf '%s' "$id"
}

write_config() {
	local dir="$1" port="$2" cport="$3"
	# Tuned for one node and for tests: replication 1 everywhere, no initial
	# rebalance delay (3 s by default) so that a group's first join is prompt,
	# few offsets partitions, and no topic auto-creation so that a missing
	# topic is an error as in a locked-down production cluster.
	cat >"$dir/server.properties" <<-EOF
		process.roles=broker,controller
		node.id=1
		controller.quorum.voters=1@127.0.0.1:$cport
		listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
		advertised.listeners=PLAINTEXT://127.0.0.1:$port
		controller.listener.names=CONTROLLER
		inter.broker.listener.name=PLAINTEXT
		listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
		log.dirs=$dir/data
		num.partitions=1
		default.replication.factor=1
		min.insync.replicas=1
		auto.create.topics.enable=false
		offsets.topic.replication.factor=1
		offsets.topic.num.partitions=3
		transaction.state.log.replication.factor=1
		transaction.state.log.min.isr=1
		transaction.state.log.num.partitions=3
		share.coordinator.state.topic.replication.factor=1
		share.coordinator.state.topic.min.isr=1
		group.initial.rebalance.delay.ms=0
		log.cleaner.backoff.ms=1000
	EOF
	cat >"$dir/log4j2.properties" <<-EOF
		status = warn
		appender.file.type = File
		appender.file.name = file
		appender.file.fileName = $dir/kafka.log
		appender.file.layout.type = PatternLayout
		appender.file.layout.pattern = [%d] %p %m (%c)%n
		rootLogger.level = info
		rootLogger.appenderRef.file.ref = file
		logger.kafka.name = kafka
		logger.kafka.level = info
		logger.org.name = org.apache.kafka
		logger.org.level = info
	EOF
}

# start DIR starts the broker; a broker that dies while starting (seen once
# in CI, killed with nothing in its log) is started once more on fresh ports
# before giving up.
start() {
	local attempt
	for attempt in 1 2; do
		local rc=0
		start_once "$@" || rc=$?
		[[ "$rc" == 4 ]] || return "$rc"
		((attempt == 2)) || say "starting the broker again (attempt 2 of 2)"
	done
	die "the broker exited during start twice (logs in ${1:-})"
}

start_once() {
	local dir="${1:?usage: kafka.sh start DIR}"
	need_java
	fetch
	mkdir -p "$dir"
	dir="$(cd "$dir" && pwd)"
	if [[ -f "$dir/kafka.pid" ]] && kill -0 "$(cat "$dir/kafka.pid")" 2>/dev/null; then
		die "a broker already runs from $dir (PID $(cat "$dir/kafka.pid"))"
	fi
	local port cport id
	port="$(free_port)"
	cport="$(free_port)"
	[[ "$port" != "$cport" ]] || cport="$(free_port)"
	id="$(cluster_id)"
	rm -rf "$dir/data"
	write_config "$dir" "$port" "$cport"
	local jvm=(-Xms256m -Xmx768m -XX:+UseG1GC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true
		-Dlog4j2.configurationFile="$dir/log4j2.properties" -cp "$LIBS/*")

	local t0 t1 t2
	t0="$(date +%s%N)"
	"$JAVA" "${jvm[@]}" kafka.tools.StorageTool format --config "$dir/server.properties" \
		--cluster-id "$id" >"$dir/format.log" 2>&1 ||
		{ cat "$dir/format.log" >&2; die "formatting the KRaft log dir failed"; }
	t1="$(date +%s%N)"

	# setsid: the broker gets its own process group, so stop can end the JVM
	# and nothing else.
	setsid "$JAVA" "${jvm[@]}" kafka.Kafka "$dir/server.properties" >"$dir/kafka.out" 2>&1 </dev/null &
	local pid=$!
	echo "$pid" >"$dir/kafka.pid"
	echo "127.0.0.1:$port" >"$dir/bootstrap"
	echo "$KAFKA_VERSION" >"$dir/version"

	# Ready means the broker accepts connections on its client listener, which
	# KRaft enables only once the broker has caught up with the metadata log.
	local deadline=$((SECONDS + START_TIMEOUT))
	until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
		if ! kill -0 "$pid" 2>/dev/null; then
			local rc=0
			wait "$pid" 2>/dev/null || rc=$?
			tail -n 40 "$dir/kafka.out" "$dir/kafka.log" >&2 2>/dev/null || true
			say "the broker (PID $pid) exited during start with status $rc$( ((rc > 128)) && printf ' (signal %s)' "$(kill -l $((rc - 128)) 2>/dev/null)")"
			# A kernel OOM kill leaves nothing in the broker's own logs.
			dmesg 2>/dev/null | grep -i -E 'out of memory|killed process|oom' | tail -n 5 >&2 || true
			cp "$dir/kafka.log" "$dir/kafka.log.failed-start" 2>/dev/null || true
			return 4
		fi
		if ((SECONDS >= deadline)); then
			tail -n 40 "$dir/kafka.log" >&2 2>/dev/null || true
			stop "$dir"
			die "the broker did not answer on 127.0.0.1:$port within ${START_TIMEOUT}s (logs in $dir)"
		fi
		sleep 0.2
	done
	t2="$(date +%s%N)"
	printf 'format %d ms\nstart %d ms\n' $(((t1 - t0) / 1000000)) $(((t2 - t1) / 1000000)) >"$dir/timings"
	say "Apache Kafka $KAFKA_VERSION (KRaft, cluster $id) answers on 127.0.0.1:$port: format $(((t1 - t0) / 1000000)) ms, start $(((t2 - t1) / 1000000)) ms; log $dir/kafka.log"
	echo "127.0.0.1:$port"
}

stop() {
	local dir="${1:?usage: kafka.sh stop DIR}"
	[[ -f "$dir/kafka.pid" ]] || return 0
	local pid
	pid="$(cat "$dir/kafka.pid")"
	if kill -0 "$pid" 2>/dev/null; then
		kill -TERM "$pid" 2>/dev/null || true
		for _ in $(seq 1 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null; then
			say "broker $pid ignored SIGTERM for 10s; killing it"
			kill -KILL "$pid" 2>/dev/null || true
		fi
	fi
	rm -f "$dir/kafka.pid"
}

case "${1:-}" in
fetch)
	command -v mvn >/dev/null 2>&1 || [[ -f "$LIBS/.complete" ]] || cannot "Maven (mvn) not found"
	fetch
	echo "$LIBS"
	;;
start) start "${2:-}" ;;
stop) stop "${2:-}" ;;
*)
	sed -n '2,13p' "$0" >&2
	exit 2
	;;
esac
