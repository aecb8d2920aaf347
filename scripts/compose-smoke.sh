#!/usr/bin/env bash
# Smoke test of docker-compose.yml on a container engine: the whole stack
# up, one good and one bad batch pushed through it from outside, checked,
# then torn down.
#
#   scripts/compose-smoke.sh
#
# Steps: engine and images (scripts/containers.sh: the official images where
# a registry answers, stand-ins otherwise; lakewap:local from the Dockerfile),
# `docker-compose up -d` with random secrets and free host ports, wait until
# every service is healthy and the one-shot jobs have exited 0, then from the
# host: `lakewap emit` lands a batch, a writer (Python: pyarrow + lakeFS's
# Python SDK) writes its Parquet file to the branch lakewap made, `lakewap
# emit` says the write is complete; the good batch must be published on
# lakeFS (main's head is its merge, its file is on main), the bad one (NULL
# billing ids) aborted by billing_id_not_null (its file not on main), and the
# result events on Kafka (`lakewap tail`). Everything is removed at the end,
# volumes included (LAKEWAP_SMOKE_KEEP=1 keeps the stack up for a look).
#
# Exits non-zero naming the step that failed. Step timings go to stderr and
# to ${LAKEWAP_CACHE_DIR:-.cache}/containers/timings.log.
set -euo pipefail
# The whole script is one block, read before it runs: editing the file
# while it runs does not change what this run does.
{

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
cd "$ROOT"
CACHE="${LAKEWAP_CACHE_DIR:-$ROOT/.cache}/containers"
TIMINGS="${LAKEWAP_CONTAINER_TIMINGS:-$CACHE/timings.log}"
mkdir -p "$CACHE"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/lakewap-smoke.XXXXXX")"
PROJECT="lakewap-smoke-$$"
STEP="setup"
PUMP_PID=""

say() { printf 'compose-smoke: %s\n' "$*" >&2; }
fail() {
	say "FAILED at step \"$STEP\": $*"
	exit 1
}
step() {
	STEP="$1"
	STEP_T0=$SECONDS
	say "== $STEP"
}
done_step() {
	printf '%s smoke %s %ds\n' "$(date -u +%FT%TZ)" "$STEP" $((SECONDS - STEP_T0)) >>"$TIMINGS"
	say "   $STEP: $((SECONDS - STEP_T0))s"
}

compose() { docker-compose -p "$PROJECT" -f "$ROOT/docker-compose.yml" "$@"; }

teardown() {
	local rc=$?
	[[ -n "$PUMP_PID" ]] && kill "$PUMP_PID" 2>/dev/null || true
	if [[ -n "${DOCKER_HOST:-}" ]] && command -v docker-compose >/dev/null; then
		if ((rc != 0)); then
			say "logs of the failed stack: $WORK/compose.log"
			compose logs --no-color >"$WORK/compose.log" 2>&1 || true
		fi
		if [[ "${LAKEWAP_SMOKE_KEEP:-0}" == 1 ]]; then
			say "LAKEWAP_SMOKE_KEEP=1: the stack stays up as project $PROJECT (docker-compose -p $PROJECT down -v)"
		else
			STEP="tear down"
			local t0=$SECONDS
			compose down -v --remove-orphans >"$WORK/down.log" 2>&1 || { cat "$WORK/down.log" >&2; say "tear down failed"; rc=1; }
			printf '%s smoke %s %ds\n' "$(date -u +%FT%TZ)" "tear down" $((SECONDS - t0)) >>"$TIMINGS"
			say "   tear down: $((SECONDS - t0))s"
		fi
	fi
	if ((rc == 0)); then rm -rf "$WORK"; else say "work dir kept: $WORK"; fi
	exit "$rc"
}
trap teardown EXIT

free_port() {
	python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
rand() { head -c 32 /dev/urandom | base64 | tr -dc 'A-Za-z0-9' | head -c "$1"; }

# wait_for SECONDS WHAT CMD...: runs CMD until it succeeds.
wait_for() {
	local limit="$1" what="$2" deadline=$((SECONDS + $1))
	shift 2
	until "$@" >/dev/null 2>&1; do
		((SECONDS < deadline)) || fail "$what not within ${limit}s"
		sleep 2
	done
}

step "engine and images"
command -v docker-compose >/dev/null || fail "docker-compose is not installed (apt-get install docker-compose)"
DOCKER_HOST="$(scripts/containers.sh up)" || fail "scripts/containers.sh up"
export DOCKER_HOST
scripts/containers.sh lakewap || fail "building lakewap:local"
done_step

step "lakewap image: non-root, version, validate"
user="$(docker run --rm --entrypoint id lakewap:local -u)" || fail "docker run lakewap:local id"
[[ "$user" != 0 ]] || fail "the lakewap image runs as root"
version="$(docker run --rm lakewap:local version)" || fail "lakewap version in the image"
validated="$(docker run --rm -e LAKEFS_ACCESS_KEY_ID=AKIAEXAMPLE -e LAKEFS_SECRET_ACCESS_KEY=example -e LAKEWAP_WEBHOOK_TOKEN=example \
	-v "$ROOT/deploy/lakewap.yaml:/etc/lakewap/lakewap.yaml:ro" lakewap:local validate /etc/lakewap/lakewap.yaml)" ||
	fail "lakewap validate deploy/lakewap.yaml in the image"
health="$(docker image inspect -f '{{if .Config.Healthcheck}}{{join .Config.Healthcheck.Test " "}}{{end}}' lakewap:local)"
if [[ -z "$health" ]] && command -v podman >/dev/null; then
	# podman 4.3's Docker API leaves the image's health check out of Config.
	health="$(podman image inspect -f '{{if .HealthCheck}}{{join .HealthCheck.Test " "}}{{end}}' lakewap:local 2>/dev/null || true)"
fi
[[ "$health" == *"lakewap ready"* ]] || fail "the lakewap image has no lakewap ready health check: \"$health\""
say "   uid $user; $version; $validated; health check: $health"
say "   image size: $(docker image inspect -f '{{.Size}}' lakewap:local) bytes"
done_step

step "host tools"
go build -o "$WORK/lakewap" ./cmd/lakewap || fail "go build ./cmd/lakewap"
PY="$(scripts/pyenv.sh)" || fail "scripts/pyenv.sh"
[[ -n "$PY" ]] || fail "no Python for the writer (scripts/pyenv.sh printed none)"
done_step

# Secrets and host ports for this run only; the compose file takes them
# from the environment.
export LAKEFS_ACCESS_KEY_ID="AKIASMOKE$(rand 11 | tr a-z A-Z)"
export LAKEFS_SECRET_ACCESS_KEY="$(rand 40)"
export LAKEFS_DB_PASSWORD="$(rand 24)" MINIO_ROOT_USER="smoke$(rand 8)" MINIO_ROOT_PASSWORD="$(rand 24)"
export LAKEFS_AUTH_ENCRYPT_SECRET_KEY="$(rand 32)" LAKEWAP_WEBHOOK_TOKEN="$(rand 32)"
export KAFKA_CLUSTER_ID="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')"
export KAFKA_HOST_PORT="$(free_port)" LAKEFS_HOST_PORT="$(free_port)" MINIO_CONSOLE_HOST_PORT="$(free_port)" LAKEWAP_HOST_PORT="$(free_port)"
BROKERS="127.0.0.1:$KAFKA_HOST_PORT"
LAKEFS="http://127.0.0.1:$LAKEFS_HOST_PORT"
LAKEWAP="http://127.0.0.1:$LAKEWAP_HOST_PORT"

# Podman runs health checks from systemd timers; where there is no systemd
# nothing runs them, so this loop does, the way the timers would.
engine="$(docker version 2>/dev/null || true)"
if [[ "${engine,,}" == *podman* ]] && [[ "$(cat /proc/1/comm 2>/dev/null)" != systemd ]]; then
	(
		while sleep 3; do
			for id in $(podman ps -q --filter "label=com.docker.compose.project=$PROJECT" 2>/dev/null); do
				podman healthcheck run "$id" >/dev/null 2>&1 || true
			done
		done
	) &
	PUMP_PID=$!
fi

step "compose up"
compose up -d >"$WORK/up.log" 2>&1 || { cat "$WORK/up.log" >&2; fail "docker-compose up"; }
done_step

step "services healthy"
# health NAME: the state of service NAME's container: healthy, exited:N, running, ...
health() {
	local id
	id="$(compose ps -q "$1" 2>/dev/null | head -1)"
	[[ -n "$id" ]] || { echo missing; return; }
	# podman reports an empty Health for containers without a health check.
	docker inspect -f '{{.State.Status}}{{if eq .State.Status "exited"}}:{{.State.ExitCode}}{{else if .State.Health}}{{if .State.Health.Status}}:{{.State.Health.Status}}{{end}}{{end}}' "$id"
}
all_healthy() {
	local s ok=0
	for svc in kafka postgres minio lakefs lakewap; do
		s="$(health "$svc")"
		[[ "$s" == running:healthy ]] || ok=1
	done
	for job in minio-setup lakefs-setup; do
		s="$(health "$job")"
		[[ "$s" == exited:0 ]] || ok=1
		[[ "$s" == exited:[1-9]* ]] && { say "$job failed: $s"; return 2; }
	done
	return "$ok"
}
deadline=$((SECONDS + ${LAKEWAP_SMOKE_UP_TIMEOUT:-300}))
while :; do
	rc=0
	all_healthy || rc=$?
	((rc == 0)) && break
	((rc == 2)) && fail "a setup job failed"
	if ((SECONDS >= deadline)); then
		for svc in kafka postgres minio minio-setup lakefs lakefs-setup lakewap; do say "   $svc: $(health "$svc")"; done
		fail "services not healthy within ${LAKEWAP_SMOKE_UP_TIMEOUT:-300}s"
	fi
	sleep 3
done
for svc in kafka postgres minio minio-setup lakefs lakefs-setup lakewap; do say "   $svc: $(health "$svc")"; done
curl -fsS "$LAKEWAP/readyz" >/dev/null || fail "lakewap's /readyz from the host"
done_step

# The writer: a Parquet file of 1000 billing rows (every 25th billing_id NULL
# when bad) uploaded to the branch through lakeFS's Python SDK.
cat >"$WORK/writer.py" <<'EOF'
import os, sys
import pyarrow as pa, pyarrow.parquet as pq
import lakefs_sdk

endpoint, key, secret, repo, branch, path, batch, bad = sys.argv[1:]
n = 1000
ids = [None if bad == "1" and i % 25 == 0 else f"INV-{batch}-{i:07d}" for i in range(n)]
table = pa.table({
    "billing_id": pa.array(ids, pa.string()),
    "customer_id": pa.array([f"C{i % 97:04d}" for i in range(n)], pa.string()),
    "amount_cents": pa.array([100 + i for i in range(n)], pa.int64()),
    "currency": pa.array([("EUR", "USD", "GBP")[i % 3] for i in range(n)], pa.string()),
})
local = os.path.join(os.path.dirname(os.path.abspath(__file__)), batch + ".parquet")
pq.write_table(table, local)
cfg = lakefs_sdk.Configuration(host=endpoint + "/api/v1", username=key, password=secret)
with lakefs_sdk.ApiClient(cfg) as client:
    stats = lakefs_sdk.ObjectsApi(client).upload_object(repo, branch, path, content=local)
print(f"wrote {n} rows to lakefs://{repo}/{branch}/{path} ({stats.size_bytes} bytes)")
EOF

LW=("$WORK/lakewap")
# result BATCH TYPE...: the first result event of BATCH among TYPEs, as JSON.
result() {
	local batch="$1"
	shift
	local pat
	pat="$(IFS='|'; echo "$*")"
	"${LW[@]}" tail -brokers "$BROKERS" -from-beginning -follow=false 2>/dev/null |
		grep -F "\"batch_id\":\"$batch\"" | grep -E "\"type\":\"($pat)\"" | head -1
}
await_result() {
	local limit="$1" batch="$2" out
	shift 2
	local deadline=$((SECONDS + limit))
	while :; do
		out="$(result "$batch" "$@" || true)"
		[[ -n "$out" ]] && { echo "$out"; return 0; }
		((SECONDS < deadline)) || return 1
		sleep 2
	done
}

# push BATCH BAD: lands the batch, writes its file where BranchReady says,
# completes the write; prints the final result event.
push() {
	local batch="$1" bad="$2" ready branch path final
	"${LW[@]}" emit -brokers "$BROKERS" landed -batch "$batch" -dataset billing -writes billing_fact -producer compose-smoke >&2 ||
		fail "lakewap emit landed $batch"
	ready="$(await_result 120 "$batch" BranchReady)" || fail "no BranchReady for $batch within 120s"
	branch="$(sed -n 's/.*"branch":"\([^"]*\)".*/\1/p' <<<"$ready")"
	[[ -n "$branch" ]] || fail "BranchReady for $batch names no branch: $ready"
	path="gold/billing_fact/batch=$batch/part-0.parquet"
	"$PY" "$WORK/writer.py" "$LAKEFS" "$LAKEFS_ACCESS_KEY_ID" "$LAKEFS_SECRET_ACCESS_KEY" lake "$branch" "$path" "$batch" "$bad" >&2 ||
		fail "the writer could not write $path to $branch"
	"${LW[@]}" emit -brokers "$BROKERS" write -batch "$batch" -dataset billing -write billing_fact -paths "$path" >&2 ||
		fail "lakewap emit write $batch"
	final="$(await_result 300 "$batch" BatchPublished BatchAborted BatchFailed)" || fail "no final result for $batch within 300s"
	echo "$final"
}

# stat REF PATH: HTTP status of the object PATH on REF.
stat() {
	curl -s -o /dev/null -w '%{http_code}' -u "$LAKEFS_ACCESS_KEY_ID:$LAKEFS_SECRET_ACCESS_KEY" \
		"$LAKEFS/api/v1/repositories/lake/refs/$1/objects/stat?path=$2"
}

step "good batch published"
good="smoke-good-$$"
final="$(push "$good" 0)"
say "   ${final:0:300}"
grep -q '"type":"BatchPublished"' <<<"$final" || fail "good batch $good was not published: $final"
commit="$(sed -n 's/.*"commit_id":"\([^"]*\)".*/\1/p' <<<"$final")"
head="$(curl -fsS -u "$LAKEFS_ACCESS_KEY_ID:$LAKEFS_SECRET_ACCESS_KEY" "$LAKEFS/api/v1/repositories/lake/branches/main")" ||
	fail "reading main on lakeFS"
grep -q "\"commit_id\":\"$commit\"" <<<"${head// /}" || fail "main on lakeFS is at $head, BatchPublished said $commit"
[[ "$(stat main "gold/billing_fact/batch=$good/part-0.parquet")" == 200 ]] || fail "the good batch's file is not on main"
done_step

step "bad batch aborted"
bad="smoke-bad-$$"
final="$(push "$bad" 1)"
say "   ${final:0:300}"
grep -q '"type":"BatchAborted"' <<<"$final" || fail "bad batch $bad was not aborted: $final"
grep -q 'billing_id_not_null' <<<"$final" || fail "bad batch $bad was not stopped by billing_id_not_null: $final"
[[ "$(stat main "gold/billing_fact/batch=$bad/part-0.parquet")" == 404 ]] || fail "the bad batch's file reached main"
done_step

step "result events on Kafka"
events="$("${LW[@]}" tail -brokers "$BROKERS" -from-beginning -follow=false 2>/dev/null)" || fail "lakewap tail"
for want in "$good:BranchReady" "$good:BatchPublished" "$bad:BranchReady" "$bad:BatchAborted"; do
	grep -F "\"batch_id\":\"${want%%:*}\"" <<<"$events" | grep -qF "\"type\":\"${want#*:}\"" ||
		fail "no ${want#*:} for ${want%%:*} on the results topic"
done
say "   $(wc -l <<<"$events") result events on the results topic"
done_step

step "lakewap stops on SIGTERM within runner.shutdown_grace, handing back its partitions"
grace="$(sed -n 's/^ *shutdown_grace: *\([0-9]*\)s.*/\1/p' deploy/lakewap.yaml)"
grace="${grace:-10}" # the default when deploy/lakewap.yaml sets none
id="$(compose ps -q lakewap)"
t0="$(date +%s%N)"
docker stop -t 60 "$id" >/dev/null || fail "docker stop lakewap"
took_ms=$((($(date +%s%N) - t0) / 1000000))
code="$(docker inspect -f '{{.State.ExitCode}}' "$id")"
docker logs "$id" >"$WORK/lakewap.log" 2>&1 || true
say "   stopped in ${took_ms} ms (runner.shutdown_grace ${grace}s), exit code $code"
((took_ms <= grace * 1000 + 5000)) || fail "lakewap took ${took_ms} ms to stop, over runner.shutdown_grace ${grace}s (+5s)"
[[ "$code" == 0 ]] || fail "lakewap exited $code on SIGTERM"
revoked="$(grep -c '"partition revoked"' "$WORK/lakewap.log" || true)"
((revoked >= 1)) || fail "lakewap's log has no \"partition revoked\" on shutdown (log: $WORK/lakewap.log)"
say "   $revoked partition(s) handed back: $(grep -o '"msg":"[^"]*shut[^"]*"' "$WORK/lakewap.log" | tail -2 | tr '\n' ' ')"
done_step

say "OK: image checked, stack up and healthy, $good published, $bad aborted, results on Kafka, lakewap stopped cleanly"
exit
}
