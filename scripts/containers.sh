#!/usr/bin/env bash
# A container engine for lakewap's image, compose stack and testcontainers
# test, on a machine that has none and reaches no image registry.
#
#   scripts/containers.sh up         engine + Docker API socket + base and stand-in images (idempotent);
#                                    prints the DOCKER_HOST to use
#   scripts/containers.sh engine     podman configured, its Docker API socket started; prints DOCKER_HOST
#   scripts/containers.sh images     base images and stand-ins (needs the engine)
#   scripts/containers.sh lakewap    build the lakewap image (lakewap:local) from the Dockerfile
#   scripts/containers.sh acl        build lakeFS's ACL server image (deploy/lakefs-acl/Dockerfile)
#   scripts/containers.sh env        print the shell exports: DOCKER_HOST, base image build args
#   scripts/containers.sh stop       stop the Docker API service this script started
#
# Where a Docker engine already answers (DOCKER_HOST or /var/run/docker.sock),
# it is used as it is and nothing is installed. Otherwise, as root: podman,
# runc and debootstrap from Debian's packages, /etc/containers/containers.conf
# with the settings this kind of machine needs (crun cannot set rlimits here
# and cgroups are in hybrid mode: runc, cgroupfs, no default ulimits), and
# `podman system service` answering the Docker API on $LAKEWAP_DOCKER_SOCK
# (default /run/lakewap-podman/docker.sock).
#
# Images (only those not there yet are made; LAKEWAP_REBUILD=1 makes them again):
#   localhost/lakewap-base/debian:bookworm   debootstrap --variant=minbase bookworm, imported
#   localhost/lakewap-base/golang:<go>-bookworm   that plus gcc/g++ and this machine's Go toolchain
# and, where the official image cannot be pulled, stand-ins built from the
# same project's artifacts that the package registries here serve, tagged
# with the official names docker-compose.yml and the testcontainers test use:
#   apache/kafka:<v>           Kafka's jars from Maven Central on Debian's OpenJDK 17
#   treeverse/lakefs:<v>       the lakeFS server built from its Go module (internal/devstack's build)
#   postgres:<v>-bookworm      Debian's PostgreSQL <v>
#   minio/minio:RELEASE.<t>    the MinIO server built from its Go module at that release's commit
#   minio/mc:RELEASE.<t>       the MinIO client built from its Go module at that release's commit
#   curlimages/curl:<v>        Debian's curl
# Versions are read from docker-compose.yml. Artifacts are cached in
# ${LAKEWAP_CACHE_DIR:-<repo>/.cache}/containers. Exit status 3: cannot run
# here (not root and no engine).
set -euo pipefail
# The whole script is one block, read before it runs: editing the file
# while it runs does not change what this run does.
{

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CACHE="${LAKEWAP_CACHE_DIR:-$ROOT/.cache}/containers"
SOCK="${LAKEWAP_DOCKER_SOCK:-/run/lakewap-podman/docker.sock}"
RUNDIR="$(dirname "$SOCK")"
SUITE=bookworm
BASE="localhost/lakewap-base/debian:$SUITE"
GO_VERSION="$(go env GOVERSION 2>/dev/null | sed 's/^go//')"
GO_BASE="localhost/lakewap-base/golang:${GO_VERSION:-none}-$SUITE"
TIMINGS="${LAKEWAP_CONTAINER_TIMINGS:-$CACHE/timings.log}"

say() { printf 'containers.sh: %s\n' "$*" >&2; }
die() { say "$*"; exit 1; }
cannot() { say "$*"; exit 3; }

# timed NAME CMD...: runs CMD and appends "NAME <seconds>s" to $TIMINGS.
timed() {
	local name="$1" t0=$SECONDS
	shift
	"$@"
	mkdir -p "$(dirname "$TIMINGS")"
	printf '%s %s %ds\n' "$(date -u +%FT%TZ)" "$name" $((SECONDS - t0)) >>"$TIMINGS"
	say "$name: $((SECONDS - t0))s"
}

docker_answers() { DOCKER_HOST="$1" timeout 10 docker version --format '{{.Server.Version}}' >/dev/null 2>&1; }

# engine_host prints the DOCKER_HOST of an engine that answers, or fails.
engine_host() {
	local h
	for h in "${DOCKER_HOST:-}" "unix://$SOCK" unix:///var/run/docker.sock; do
		[[ -n "$h" ]] && docker_answers "$h" && { echo "$h"; return 0; }
	done
	return 1
}

is_podman() { local v; v="$(DOCKER_HOST="$1" docker version 2>/dev/null || true)"; [[ "${v,,}" == *podman* ]]; }

install_podman() {
	local need=()
	for c in podman runc debootstrap; do command -v "$c" >/dev/null || need+=("$c"); done
	((${#need[@]} == 0)) && return 0
	[[ $EUID == 0 ]] || cannot "no container engine answers and ${need[*]} missing; installing them needs root"
	say "installing ${need[*]} from Debian's packages"
	if ! DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}" >&2; then
		apt-get update >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y "${need[@]}" >&2
	fi
}

# configure_podman writes the settings podman needs on this kind of machine.
# A containers.conf that someone else wrote is left alone if it already has
# them, and refused otherwise.
configure_podman() {
	local conf=/etc/containers/containers.conf marker="# written by lakewap scripts/containers.sh"
	if [[ -f "$conf" ]] && ! grep -qF "$marker" "$conf"; then
		if grep -q 'runtime *= *"runc"' "$conf" && grep -q 'cgroup_manager *= *"cgroupfs"' "$conf" && grep -q 'default_ulimits *= *\[\]' "$conf"; then
			return 0
		fi
		die "$conf exists without runtime = \"runc\", cgroup_manager = \"cgroupfs\" and default_ulimits = []; add them (crun cannot set rlimits here and cgroups are in hybrid mode)"
	fi
	mkdir -p /etc/containers
	cat >"$conf" <<-EOF
		$marker
		# crun cannot set rlimits here and does not support cgroups in hybrid mode.
		[containers]
		default_ulimits = []

		[engine]
		cgroup_manager = "cgroupfs"
		runtime = "runc"
		events_logger = "file"
	EOF
}

start_service() {
	mkdir -p "$RUNDIR"
	if [[ -f "$RUNDIR/service.pid" ]] && kill -0 "$(cat "$RUNDIR/service.pid")" 2>/dev/null; then
		docker_answers "unix://$SOCK" && return 0
		kill "$(cat "$RUNDIR/service.pid")" 2>/dev/null || true
	fi
	rm -f "$SOCK"
	setsid podman system service --time=0 "unix://$SOCK" >"$RUNDIR/service.log" 2>&1 </dev/null &
	echo $! >"$RUNDIR/service.pid"
	local deadline=$((SECONDS + 60))
	until docker_answers "unix://$SOCK"; do
		kill -0 "$(cat "$RUNDIR/service.pid")" 2>/dev/null || { cat "$RUNDIR/service.log" >&2; die "podman system service exited"; }
		((SECONDS < deadline)) || die "podman's Docker API did not answer on $SOCK within 60s (log: $RUNDIR/service.log)"
		sleep 0.2
	done
}

cmd_engine() {
	local h
	if h="$(engine_host)"; then
		echo "$h"
		return 0
	fi
	install_podman
	configure_podman
	start_service
	say "podman $(podman version --format '{{.Client.Version}}') answers the Docker API on unix://$SOCK"
	echo "unix://$SOCK"
}

cmd_stop() {
	[[ -f "$RUNDIR/service.pid" ]] || return 0
	kill "$(cat "$RUNDIR/service.pid")" 2>/dev/null || true
	rm -f "$RUNDIR/service.pid"
}

export DOCKER_HOST
use_engine() {
	DOCKER_HOST="$(engine_host)" || die "no container engine answers: run scripts/containers.sh engine first"
}

have_image() { [[ "${LAKEWAP_REBUILD:-0}" != 1 ]] && docker image inspect "$1" >/dev/null 2>&1; }

# can_pull IMAGE: whether a registry hands out IMAGE (a few seconds at most).
can_pull() { timeout 60 docker pull -q "$1" >/dev/null 2>&1; }

# build TAG DIR [docker build args...]: builds DIR's Dockerfile as TAG.
build() {
	local tag="$1" dir="$2"
	shift 2
	docker build -q -t "$tag" "$@" "$dir" >/dev/null
}

compose_image() { sed -n "s|^ *image: *\($1:[^ ]*\)|\1|p" "$ROOT/docker-compose.yml" | head -1; }

base_image() {
	have_image "$BASE" && return 0
	local tar="$CACHE/debian-$SUITE-minbase.tar"
	if [[ ! -s "$tar" ]]; then
		command -v debootstrap >/dev/null || cannot "debootstrap is not installed"
		local dir
		dir="$(mktemp -d "${TMPDIR:-/tmp}/lakewap-rootfs.XXXXXX")"
		say "debootstrap --variant=minbase $SUITE (first run only)"
		debootstrap --variant=minbase "$SUITE" "$dir" >"$CACHE/debootstrap.log" 2>&1 ||
			{ tail -20 "$CACHE/debootstrap.log" >&2; die "debootstrap failed"; }
		rm -rf "$dir"/var/cache/apt/archives/*.deb "$dir"/var/lib/apt/lists/*
		tar -C "$dir" -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
		rm -rf "$dir"
	fi
	docker import "$tar" "$BASE" >/dev/null
}

golang_image() {
	have_image "$GO_BASE" && return 0
	[[ -n "$GO_VERSION" ]] || die "no Go toolchain on this machine to put in $GO_BASE"
	local ctx
	ctx="$(mktemp -d "${TMPDIR:-/tmp}/lakewap-golang.XXXXXX")"
	# The toolchain this machine runs (the official release), without its
	# tests and the docs.
	tar -C "$(go env GOROOT)" --exclude=./test --exclude=./doc --exclude=./api -cf "$ctx/go.tar" .
	cat >"$ctx/Dockerfile" <<-EOF
		FROM $BASE
		RUN apt-get update \\
		 && apt-get install -y --no-install-recommends gcc g++ libc6-dev make git ca-certificates \\
		 && rm -rf /var/lib/apt/lists/*
		ADD go.tar /usr/local/go
		ENV PATH=/usr/local/go/bin:/go/bin:/usr/local/sbin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin GOPATH=/go
		RUN go version
	EOF
	build "$GO_BASE" "$ctx"
	rm -rf "$ctx"
}

# --- stand-ins -------------------------------------------------------------

# context DIR: a fresh build context for one stand-in.
new_context() { local d; d="$(mktemp -d "${TMPDIR:-/tmp}/lakewap-standin.XXXXXX")"; echo "$d"; }

# standin IMAGE FUNC: makes IMAGE with FUNC unless it is there or a registry
# hands out the official one.
standin() {
	local image="$1" fn="$2"
	[[ -n "$image" ]] || die "docker-compose.yml names no image for $fn"
	if have_image "$image"; then return 0; fi
	if [[ "${LAKEWAP_REBUILD:-0}" != 1 ]] && can_pull "$image"; then
		say "$image: pulled the official image"
		return 0
	fi
	base_image
	local t0=$SECONDS
	"$fn" "$image"
	docker image inspect "$image" >/dev/null 2>&1 || die "building the stand-in $image failed"
	printf '%s stand-in %s %ds\n' "$(date -u +%FT%TZ)" "$image" $((SECONDS - t0)) >>"$TIMINGS"
	say "stand-in $image: $((SECONDS - t0))s"
}

# Apache Kafka: the broker's jars (scripts/kafka.sh fetch, Maven Central) and
# kafka-tools for the scripts the compose health check runs, on Debian's
# OpenJDK 17, started by /etc/kafka/docker/run like the official image:
# KAFKA_* variables become server.properties (KAFKA_LOG_DIRS -> log.dirs;
# __ -> _, ___ -> -), CLUSTER_ID formats the KRaft log dirs on first start.
kafka_standin() {
	local image="$1" v="${1##*:}" ctx
	local libs
	libs="$(KAFKA_VERSION="$v" "$ROOT/scripts/kafka.sh" fetch)" || die "cannot fetch Apache Kafka $v's jars"
	local tools="$CACHE/kafka-tools-$v"
	if [[ ! -f "$tools/.complete" ]]; then
		local work="$CACHE/kafka-tools.$$"
		rm -rf "$work" && mkdir -p "$work"
		printf '%s\n' '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>' \
			'<groupId>lakewap.containers</groupId><artifactId>kafka-tools</artifactId><version>1</version><packaging>pom</packaging>' \
			"<dependencies><dependency><groupId>org.apache.kafka</groupId><artifactId>kafka-tools</artifactId><version>$v</version>" \
			'<exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions></dependency>' \
			'<dependency><groupId>net.sourceforge.argparse4j</groupId><artifactId>argparse4j</artifactId><version>0.7.0</version></dependency>' \
			'</dependencies></project>' >"$work/pom.xml"
		mvn -B -q -f "$work/pom.xml" dependency:copy-dependencies -DoutputDirectory="$work/libs" >"$work/mvn.log" 2>&1 ||
			{ cat "$work/mvn.log" >&2; die "Maven could not resolve org.apache.kafka:kafka-tools:$v"; }
		touch "$work/libs/.complete"
		rm -rf "$tools" && mv "$work/libs" "$tools" && rm -rf "$work"
	fi
	ctx="$(new_context)"
	mkdir -p "$ctx/libs" "$ctx/tools-libs" "$ctx/bin"
	cp "$libs"/*.jar "$ctx/libs/"
	cp "$tools"/*.jar "$ctx/tools-libs/"
	cat >"$ctx/run" <<-'EOF'
		#!/bin/bash
		# Stand-in for the apache/kafka image's start script (lakewap scripts/containers.sh).
		set -euo pipefail
		conf=/opt/kafka/config/server.properties
		: >"$conf"
		skip='^KAFKA_(VERSION|HEAP_OPTS|LOG4J_OPTS|OPTS|JMX_OPTS|JVM_PERFORMANCE_OPTS|GC_LOG_OPTS|LOG4J_ROOT_LOGLEVEL|LOG4J_LOGGERS|TOOLS_LOG4J_LOGLEVEL|JMX_HOSTNAME|JMX_PORT)='
		while IFS='=' read -r name value; do
			key="${name#KAFKA_}"; key="${key,,}"
			key="${key//___/-}"; key="${key//__/@}"; key="${key//_/.}"; key="${key//@/_}"
			printf '%s=%s\n' "$key" "$value" >>"$conf"
		done < <(env | grep -E '^KAFKA_[A-Z0-9_]+=' | grep -Ev "$skip" | sort)
		if ! grep -q '^process.roles=' "$conf"; then
			# The official image's default: one node, broker and controller.
			cat >>"$conf" <<-'DEFAULTS'
				process.roles=broker,controller
				node.id=1
				controller.quorum.voters=1@localhost:9093
				listeners=PLAINTEXT://:9092,CONTROLLER://:9093
				advertised.listeners=PLAINTEXT://localhost:9092
				controller.listener.names=CONTROLLER
				listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT
				offsets.topic.replication.factor=1
				transaction.state.log.replication.factor=1
				transaction.state.log.min.isr=1
			DEFAULTS
		fi
		grep -q '^log.dirs=' "$conf" || echo "log.dirs=/tmp/kraft-combined-logs" >>"$conf"
		jvm=(${KAFKA_HEAP_OPTS:--Xmx512m -Xms256m} -XX:+UseG1GC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true
			-Dlog4j2.configurationFile=/opt/kafka/config/log4j2.properties ${KAFKA_OPTS:-} -cp "/opt/kafka/libs/*")
		java "${jvm[@]}" kafka.tools.StorageTool format --config "$conf" --cluster-id "${CLUSTER_ID:-5L6g3nShT-eMCtK--X86sw}" --ignore-formatted
		exec java "${jvm[@]}" kafka.Kafka "$conf"
	EOF
	cat >"$ctx/bin/kafka-run-class.sh" <<-'EOF'
		#!/bin/sh
		# Stand-in: runs a Kafka tool class with the broker's and kafka-tools' jars.
		exec java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -Dlog4j2.configurationFile=/opt/kafka/config/tools-log4j2.properties \
			-cp "/opt/kafka/libs/*:/opt/kafka/tools-libs/*" "$@"
	EOF
	for tool in broker-api-versions:org.apache.kafka.tools.BrokerApiVersionsCommand topics:org.apache.kafka.tools.TopicCommand \
		console-consumer:org.apache.kafka.tools.consumer.ConsoleConsumer; do
		printf '#!/bin/sh\nexec /opt/kafka/bin/kafka-run-class.sh %s "$@"\n' "${tool#*:}" >"$ctx/bin/kafka-${tool%%:*}.sh"
	done
	chmod +x "$ctx/run" "$ctx/bin/"*.sh
	printf '%s\n' 'status = warn' 'appender.out.type = Console' 'appender.out.name = out' 'appender.out.layout.type = PatternLayout' \
		'appender.out.layout.pattern = [%d] %p %m (%c)%n' 'rootLogger.level = info' 'rootLogger.appenderRef.out.ref = out' >"$ctx/log4j2.properties"
	printf '%s\n' 'status = error' 'appender.err.type = Console' 'appender.err.name = err' 'appender.err.target = SYSTEM_ERR' \
		'appender.err.layout.type = PatternLayout' 'appender.err.layout.pattern = %p %m%n' 'rootLogger.level = warn' 'rootLogger.appenderRef.err.ref = err' >"$ctx/tools-log4j2.properties"
	cat >"$ctx/Dockerfile" <<-EOF
		FROM $BASE
		RUN apt-get update \\
		 && apt-get install -y --no-install-recommends openjdk-17-jre-headless \\
		 && rm -rf /var/lib/apt/lists/* \\
		 && useradd --uid 1000 --user-group --create-home appuser \\
		 && mkdir -p /opt/kafka/config /etc/kafka/docker /var/lib/kafka/data /mnt/shared/config \\
		 && chown -R appuser:appuser /opt/kafka/config /var/lib/kafka /mnt/shared
		COPY libs/ /opt/kafka/libs/
		COPY tools-libs/ /opt/kafka/tools-libs/
		COPY bin/ /opt/kafka/bin/
		COPY log4j2.properties tools-log4j2.properties /opt/kafka/config/
		COPY run /etc/kafka/docker/run
		LABEL org.lakewap.standin="apache/kafka $v: Maven Central jars on Debian OpenJDK 17 (scripts/containers.sh)"
		USER appuser
		WORKDIR /home/appuser
		EXPOSE 9092
		CMD ["/etc/kafka/docker/run"]
	EOF
	build "$image" "$ctx"
	rm -rf "$ctx"
}

# lakeFS: the server built from its Go module (the one the embedded stack
# runs, built by `lakewap prepare`) as /app/lakefs, run as user lakefs, with
# wget for the compose health check. LAKEFS_* variables are lakeFS's own.
lakefs_standin() {
	local image="$1" v="${1##*:}" bin
	[[ "v$v" == "$(sed -n 's/^const LakeFSVersion = "\(.*\)"/\1/p' "$ROOT/internal/devstack/binary.go")" ]] ||
		die "$image: the lakeFS server lakewap builds is $(sed -n 's/^const LakeFSVersion = "\(.*\)"/\1/p' "$ROOT/internal/devstack/binary.go"), not v$v"
	(cd "$ROOT" && go run ./cmd/lakewap prepare >&2) || die "building the lakeFS server failed"
	bin="${LAKEWAP_CACHE_DIR:-$ROOT/.cache}/lakefs-v$v/lakefs"
	[[ -x "$bin" ]] || die "no lakeFS server at $bin"
	local ctx
	ctx="$(new_context)"
	cp "$bin" "$ctx/lakefs"
	cat >"$ctx/Dockerfile" <<-EOF
		FROM $BASE
		RUN apt-get update \\
		 && apt-get install -y --no-install-recommends ca-certificates wget \\
		 && rm -rf /var/lib/apt/lists/* \\
		 && useradd --uid 101 --user-group --create-home --home-dir /home/lakefs lakefs
		COPY lakefs /app/lakefs
		LABEL org.lakewap.standin="treeverse/lakefs $v: server built from its Go module (scripts/containers.sh)"
		USER lakefs
		WORKDIR /home/lakefs
		EXPOSE 8000
		ENTRYPOINT ["/app/lakefs"]
		CMD ["run"]
	EOF
	build "$image" "$ctx"
	rm -rf "$ctx"
}

# PostgreSQL: Debian's postgresql-<major>, with an entry point honouring the
# official image's POSTGRES_USER / POSTGRES_PASSWORD / POSTGRES_DB / PGDATA:
# initdb on an empty data dir, password auth from other hosts.
postgres_standin() {
	local image="$1" major
	major="$(sed 's/^[^:]*:\([0-9]*\).*/\1/' <<<"$1")"
	local ctx
	ctx="$(new_context)"
	cat >"$ctx/docker-entrypoint.sh" <<-'EOF'
		#!/bin/bash
		# Stand-in for the postgres image's entry point (lakewap scripts/containers.sh).
		set -euo pipefail
		[[ "${1:-postgres}" == postgres ]] || exec "$@"
		: "${PGDATA:=/var/lib/postgresql/data}" "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=$POSTGRES_USER}"
		if [[ $(id -u) == 0 ]]; then
			mkdir -p "$PGDATA" /var/run/postgresql
			chown -R postgres:postgres "$PGDATA" /var/run/postgresql
			chmod 700 "$PGDATA"
			exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
		fi
		if [[ ! -s "$PGDATA/PG_VERSION" ]]; then
			[[ -n "${POSTGRES_PASSWORD:-}" ]] || { echo "POSTGRES_PASSWORD is not set" >&2; exit 1; }
			initdb -D "$PGDATA" -U "$POSTGRES_USER" --pwfile=<(printf '%s\n' "$POSTGRES_PASSWORD") --auth-local=trust --auth-host=scram-sha-256 >/dev/null
			echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
			pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start >/dev/null
			if [[ "$POSTGRES_DB" != postgres ]]; then
				psql -v ON_ERROR_STOP=1 -U "$POSTGRES_USER" -d postgres -c "CREATE DATABASE \"$POSTGRES_DB\"" >/dev/null
			fi
			pg_ctl -D "$PGDATA" -m fast -w stop >/dev/null
			echo "PostgreSQL init process complete; ready for start up."
		fi
		exec postgres -D "$PGDATA" -c listen_addresses='*'
	EOF
	chmod +x "$ctx/docker-entrypoint.sh"
	cat >"$ctx/Dockerfile" <<-EOF
		FROM $BASE
		RUN apt-get update \\
		 && apt-get install -y --no-install-recommends postgresql-$major \\
		 && rm -rf /var/lib/apt/lists/* \\
		 && mkdir -p /var/lib/postgresql/data /var/run/postgresql \\
		 && chown -R postgres:postgres /var/lib/postgresql /var/run/postgresql
		ENV PATH=/usr/lib/postgresql/$major/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin PGDATA=/var/lib/postgresql/data
		COPY docker-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
		LABEL org.lakewap.standin="postgres $major: Debian's postgresql-$major (scripts/containers.sh)"
		ENTRYPOINT ["docker-entrypoint.sh"]
		STOPSIGNAL SIGINT
		EXPOSE 5432
		CMD ["postgres"]
	EOF
	build "$image" "$ctx"
	rm -rf "$ctx"
}

# minio_module NAME IMAGE: builds github.com/minio/NAME at the commit of the
# release IMAGE names (pseudo-version from the release's UTC timestamp and
# commit, both in MINIO_COMMITS below) into the cache; prints the binary.
declare -A MINIO_COMMITS=(
	[minio:RELEASE.2025-04-22T22-12-26Z]=v0.0.0-20250422221226-0d7408fc9969
	[mc:RELEASE.2025-04-16T18-13-26Z]=v0.0.0-20250416181326-b00526b153a3
)
minio_module() {
	local name="$1" tag="${2##*/}" version bin
	version="${MINIO_COMMITS[$tag]:-}"
	[[ -n "$version" ]] || die "no commit known for $2: add its pseudo-version to MINIO_COMMITS in scripts/containers.sh"
	bin="$CACHE/bin/$name-$version"
	if [[ ! -x "$bin" ]]; then
		local gobin="$CACHE/bin/.build-$name.$$"
		say "building github.com/minio/$name@$version (first run only, several minutes)"
		CGO_ENABLED=0 GOBIN="$gobin" go install -trimpath -ldflags="-s -w" "github.com/minio/$name@$version" >&2 ||
			die "go install github.com/minio/$name@$version failed"
		mv "$gobin/$name" "$bin" && rm -rf "$gobin"
	fi
	echo "$bin"
}

# MinIO: the server from its Go module at the release's commit, started like
# the official image (arguments not starting with minio are minio's), with mc
# beside it for the compose health check (`mc ready local`).
minio_standin() {
	local image="$1" ctx server client
	server="$(minio_module minio "$image")"
	client="$(minio_module mc "$(compose_image minio/mc)")"
	ctx="$(new_context)"
	cp "$server" "$ctx/minio"
	cp "$client" "$ctx/mc"
	printf '%s\n' '#!/bin/sh' '# Stand-in for the minio image entry point (lakewap scripts/containers.sh).' \
		'if [ "${1}" != "minio" ] && [ -n "${1}" ]; then set -- minio "$@"; fi' 'exec "$@"' >"$ctx/docker-entrypoint.sh"
	chmod +x "$ctx/docker-entrypoint.sh"
	cat >"$ctx/Dockerfile" <<-EOF
		FROM $BASE
		COPY minio mc docker-entrypoint.sh /usr/bin/
		LABEL org.lakewap.standin="${image##*/}: MinIO built from its Go module at the release commit (scripts/containers.sh)"
		EXPOSE 9000
		VOLUME ["/data"]
		ENTRYPOINT ["/usr/bin/docker-entrypoint.sh"]
		CMD ["minio"]
	EOF
	build "$image" "$ctx"
	rm -rf "$ctx"
}

mc_standin() {
	local image="$1" ctx client
	client="$(minio_module mc "$image")"
	ctx="$(new_context)"
	cp "$client" "$ctx/mc"
	cat >"$ctx/Dockerfile" <<-EOF
		FROM $BASE
		RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates && rm -rf /var/lib/apt/lists/*
		COPY mc /usr/bin/mc
		LABEL org.lakewap.standin="${image##*/}: mc built from its Go module at the release commit (scripts/containers.sh)"
		ENTRYPOINT ["mc"]
	EOF
	build "$image" "$ctx"
	rm -rf "$ctx"
}

# curl: Debian's curl (bookworm: 7.88), entry point curl like the official image.
curl_standin() {
	local image="$1" ctx
	ctx="$(new_context)"
	cat >"$ctx/Dockerfile" <<-EOF
		FROM $BASE
		RUN apt-get update && apt-get install -y --no-install-recommends curl ca-certificates && rm -rf /var/lib/apt/lists/* \\
		 && useradd --uid 100 --user-group curl_user
		LABEL org.lakewap.standin="${image##*/}: Debian's curl (scripts/containers.sh)"
		USER curl_user
		ENTRYPOINT ["curl"]
	EOF
	build "$image" "$ctx"
	rm -rf "$ctx"
}

cmd_images() {
	use_engine
	mkdir -p "$CACHE"
	timed "base image $BASE" base_image
	standin "$(compose_image apache/kafka)" kafka_standin
	standin "$(compose_image treeverse/lakefs)" lakefs_standin
	standin "$(compose_image postgres)" postgres_standin
	standin "$(compose_image minio/minio)" minio_standin
	standin "$(compose_image minio/mc)" mc_standin
	standin "$(compose_image curlimages/curl)" curl_standin
}

# lakewap_image builds the Dockerfile as lakewap:local on the base images
# above (the official ones where a registry answers). With podman, the
# build reads Go modules from this machine's module cache first.
lakewap_image() {
	local args=()
	if ! can_pull "golang:1.26-$SUITE"; then
		golang_image
		args+=(--build-arg "BUILD_IMAGE=$GO_BASE")
	fi
	if ! can_pull "debian:$SUITE-slim"; then
		base_image
		args+=(--build-arg "RUNTIME_IMAGE=$BASE")
	fi
	local modcache
	modcache="$(go env GOMODCACHE 2>/dev/null)/cache/download"
	if is_podman "$DOCKER_HOST" && [[ -d "$modcache" ]]; then
		# Every module of the graph into this machine's cache, which the
		# build reads as a file proxy (nothing is fetched inside the build).
		(cd "$ROOT" && go mod download)
		podman build --format docker -t lakewap:local "${args[@]}" -v "$modcache:/goproxy:ro" \
			--build-arg "GOPROXY=file:///goproxy" -f "$ROOT/Dockerfile" "$ROOT" >&2
	else
		docker build -t lakewap:local "${args[@]}" -f "$ROOT/Dockerfile" "$ROOT" >&2
	fi
}

# acl_image builds deploy/lakefs-acl/Dockerfile (lakeFS's ACL server from
# the lakeFS Go module that tools/lakefs/go.mod pins) as the image
# docker-compose.yml names, the way lakewap_image builds lakewap:local. The
# image is always built here: lakeFS publishes none of the ACL server.
acl_image() {
	local image v pinned args=()
	image="$(compose_image lakewap-lakefs-acl)"
	[[ -n "$image" ]] || die "docker-compose.yml names no lakewap-lakefs-acl image"
	v="${image##*:}"
	pinned="$(sed -n 's/^require github.com\/treeverse\/lakefs \(v[^ ]*\)$/\1/p' "$ROOT/tools/lakefs/go.mod")"
	[[ "v$v" == "$pinned" ]] || die "$image: tools/lakefs/go.mod pins lakeFS $pinned, not v$v"
	if have_image "$image"; then return 0; fi
	if ! can_pull "golang:1.26-$SUITE"; then
		golang_image
		args+=(--build-arg "BUILD_IMAGE=$GO_BASE")
	fi
	if ! can_pull "debian:$SUITE-slim"; then
		base_image
		args+=(--build-arg "RUNTIME_IMAGE=$BASE")
	fi
	local modcache
	modcache="$(go env GOMODCACHE 2>/dev/null)/cache/download"
	if is_podman "$DOCKER_HOST" && [[ -d "$modcache" ]]; then
		(cd "$ROOT/tools/lakefs" && GOWORK=off go mod download)
		podman build --format docker -t "$image" "${args[@]}" -v "$modcache:/goproxy:ro" \
			--build-arg "GOPROXY=file:///goproxy" -f "$ROOT/deploy/lakefs-acl/Dockerfile" "$ROOT" >&2
	else
		docker build -t "$image" "${args[@]}" -f "$ROOT/deploy/lakefs-acl/Dockerfile" "$ROOT" >&2
	fi
}

case "${1:-}" in
engine) cmd_engine ;;
stop) cmd_stop ;;
base)
	use_engine
	mkdir -p "$CACHE"
	timed "base image $BASE" base_image
	timed "base image $GO_BASE" golang_image
	;;
images) cmd_images ;;
standin) # standin kafka|lakefs|postgres|minio|mc|curl: one stand-in only
	use_engine
	mkdir -p "$CACHE"
	case "${2:-}" in
	kafka) standin "$(compose_image apache/kafka)" kafka_standin ;;
	lakefs) standin "$(compose_image treeverse/lakefs)" lakefs_standin ;;
	postgres) standin "$(compose_image postgres)" postgres_standin ;;
	minio) standin "$(compose_image minio/minio)" minio_standin ;;
	mc) standin "$(compose_image minio/mc)" mc_standin ;;
	curl) standin "$(compose_image curlimages/curl)" curl_standin ;;
	*) die "usage: containers.sh standin kafka|lakefs|postgres|minio|mc|curl" ;;
	esac
	;;
up)
	DOCKER_HOST="$(cmd_engine)"
	cmd_images
	echo "$DOCKER_HOST"
	;;
env)
	use_engine
	echo "export DOCKER_HOST=$DOCKER_HOST"
	;;
acl)
	use_engine
	mkdir -p "$CACHE"
	timed "image $(compose_image lakewap-lakefs-acl)" acl_image
	;;
lakewap)
	use_engine
	mkdir -p "$CACHE"
	timed "image lakewap:local" lakewap_image
	docker image inspect lakewap:local --format 'lakewap:local {{.Size}} bytes' >&2
	;;
*)
	sed -n '2,12p' "$0" >&2
	exit 2
	;;
esac
exit
}
