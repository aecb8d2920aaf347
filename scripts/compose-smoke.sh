#!/usr/bin/env bash
# Smoke test of docker-compose.yml on a container engine: docs/quickstart.md
# run as written, from the stack's start to retry and revert, each outcome
# checked, then torn down.
#
#   scripts/compose-smoke.sh
#
# Steps: engine and images (scripts/containers.sh: the official images where
# a registry answers, stand-ins otherwise; lakewap:local and lakeFS's ACL
# server from their Dockerfiles), the lakewap image checked, then every `sh`
# block of docs/quickstart.md in order, in one shell, in a scratch directory
# (docker-compose.yml, deploy/ and the quickstart's .env), with the checks its
# markers name: HTML comments right before a block, `<!-- smoke: D; D -->`,
# with directives `ports` (the quickstart's host ports become the free ones
# picked here), `file NAME` (write the block to NAME instead of running it),
# `check NAME` / `before NAME` (run check NAME after / before the block). The
# checks: every service healthy, lakewap running with its own non-admin
# lakeFS key, which lakeFS refuses creating a repository, and no route from
# lakewap to the ACL server; the result events of each batch on Kafka
# (`lakewap tail` from the host); main on lakeFS (its head, its files, who
# committed); the console message the quickstart shows for Slack; lakewap
# stopping within runner.shutdown_grace on SIGTERM. A check the script knows
# that no block names fails the run, and so does an unknown directive, so a
# quickstart that no longer runs, or no longer goes through every step,
# fails here. Everything is removed at the end, volumes included
# (LAKEWAP_SMOKE_KEEP=1 keeps the stack up for a look).
#
# Exits non-zero naming the step (the quickstart block and its line) that
# failed. Step timings go to stderr and to
# ${LAKEWAP_CACHE_DIR:-.cache}/containers/timings.log.
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
BLOCK_OUT=""

say() { printf 'compose-smoke: %s\n' "$*" >&2; }
FAILED=0
fail() {
	say "FAILED at step \"$STEP\": $*"
	FAILED=1
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

# The quickstart's directory: the compose file and deploy/ of this checkout,
# and the .env its first block writes (so the checkout's own .env, if any, is
# neither read nor overwritten).
QS="$WORK/quickstart"
mkdir -p "$QS"
ln -s "$ROOT/docker-compose.yml" "$QS/docker-compose.yml"
ln -s "$ROOT/deploy" "$QS/deploy"
compose() { docker-compose -p "$PROJECT" --project-directory "$QS" -f "$QS/docker-compose.yml" "$@"; }

teardown() {
	local rc=$?
	# A command that failed under set -e (in a quickstart block, say).
	((rc == 0 || FAILED)) || say "FAILED at step \"$STEP\": a command exited $rc"
	[[ -n "$PUMP_PID" ]] && kill "$PUMP_PID" 2>/dev/null || true
	if ((rc != 0)) && [[ -n "$BLOCK_OUT" && -s "$BLOCK_OUT" ]]; then
		say "output of the quickstart block ($BLOCK_OUT):"
		tail -20 "$BLOCK_OUT" | sed 's/^/   | /' >&2
	fi
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
scripts/containers.sh acl || fail "building lakeFS's ACL server image"
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

# Host ports for this run only (the compose file takes them from the
# environment, over .env); the secrets are the quickstart's .env.
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

# --- the quickstart --------------------------------------------------------

# The quickstart's blocks, in order: NN.sh (or the file a `file` block
# names), and one manifest line per block: NN, language, line, directives.
BLOCKS="$WORK/blocks"
mkdir -p "$BLOCKS"
python3 - "$ROOT/docs/quickstart.md" "$BLOCKS" <<'PY' || fail "reading the blocks of docs/quickstart.md"
import re, sys
src, out = sys.argv[1], sys.argv[2]
lines = open(src, encoding="utf-8").read().split("\n")
marker = re.compile(r"^<!--\s*smoke:\s*(.*?)\s*-->\s*$")
n, i, manifest, pending = 0, 0, [], None
while i < len(lines):
    m = marker.match(lines[i])
    if m:
        pending = (i + 1, m.group(1))
        i += 1
        continue
    f = re.match(r"^```\s*([A-Za-z0-9_-]*)\s*$", lines[i])
    if not f:
        if lines[i].strip():
            pending = None  # a marker belongs to the block right after it
        i += 1
        continue
    lang, start = f.group(1), i + 1
    j = start
    while j < len(lines) and not lines[j].startswith("```"):
        j += 1
    if j == len(lines):
        sys.exit(f"docs/quickstart.md:{start}: unterminated block")
    body = "\n".join(lines[start:j]) + "\n"
    directives = pending[1] if pending else ""
    pending = None
    if lang == "sh" or "file" in directives:
        n += 1
        open(f"{out}/{n:02d}.block", "w", encoding="utf-8").write(body)
        manifest.append(f"{n:02d}\t{lang}\t{start}\t{directives}")
    i = j + 1
open(f"{out}/manifest", "w").write("\n".join(manifest) + "\n")
PY

# Checks the quickstart must name, each once at least.
KNOWN_CHECKS=(stack branch-ready published aborted slack retried reverted sigterm)
declare -A CHECKS_RUN=()

# quickstart_env NAME: NAME's value in the quickstart's .env.
qs_env() { sed -n "s/^$1=//p" "$QS/.env" | tail -1; }

LW=("$WORK/lakewap")
# results: every result event on the results topic, from the host.
results() { "${LW[@]}" tail -brokers "$BROKERS" -from-beginning -follow=false 2>/dev/null; }
# result BATCH TYPE: the first result event of BATCH of TYPE, as JSON.
result() { results | grep -F "\"batch_id\":\"$1\"" | grep -F "\"type\":\"$2\"" | head -1; }
# lakefs_get KEY PATH: GET the lakeFS API path with KEY (admin or lakewap).
lakefs_get() {
	local key
	if [[ "$1" == admin ]]; then key="$(qs_env LAKEFS_ACCESS_KEY_ID):$(qs_env LAKEFS_SECRET_ACCESS_KEY)"; else
		key="$(qs_env LAKEWAP_LAKEFS_ACCESS_KEY_ID):$(qs_env LAKEWAP_LAKEFS_SECRET_ACCESS_KEY)"; fi
	curl -s -u "$key" "$LAKEFS/api/v1/$2"
}
# on_main BATCH: HTTP status of BATCH's file on main.
on_main() {
	curl -s -o /dev/null -w '%{http_code}' -u "$(qs_env LAKEFS_ACCESS_KEY_ID):$(qs_env LAKEFS_SECRET_ACCESS_KEY)" \
		"$LAKEFS/api/v1/repositories/lake/refs/main/objects/stat?path=gold/billing_fact/batch=$1/part-0.parquet"
}
field() { sed -n "s/.*\"$1\":\"\([^\"]*\)\".*/\1/p" <<<"$2" | head -1; }
main_head() { lakefs_get admin "repositories/lake/refs/main/commits?amount=1" | tr -d ' \n'; }

# health NAME: the state of service NAME's container: running:healthy, exited:N, ...
health() {
	local id
	id="$(compose ps -q "$1" 2>/dev/null | head -1)"
	[[ -n "$id" ]] || { echo missing; return; }
	# podman reports an empty Health for containers without a health check.
	docker inspect -f '{{.State.Status}}{{if eq .State.Status "exited"}}:{{.State.ExitCode}}{{else if .State.Health}}{{if .State.Health.Status}}:{{.State.Health.Status}}{{end}}{{end}}' "$id"
}
SERVICES=(kafka postgres minio lakefs-acl lakefs lakewap)
JOBS=(minio-setup lakefs-setup)

check_stack() {
	local s svc
	for svc in "${SERVICES[@]}"; do
		s="$(health "$svc")"
		say "   $svc: $s"
		[[ "$s" == running:healthy ]] || fail "$svc is $s, not running:healthy"
	done
	for svc in "${JOBS[@]}"; do
		s="$(health "$svc")"
		say "   $svc: $s"
		[[ "$s" == exited:0 ]] || fail "$svc is $s, not exited:0"
	done
	compose logs --no-color lakefs-setup 2>/dev/null | grep -o '[a-z][^|]*: HTTP [0-9]*' | sed 's/^/   lakefs-setup: /' >&2 || true
	# lakewap runs with its own key, not the admin's.
	local id env
	id="$(compose ps -q lakewap)"
	env="$(docker inspect -f '{{range .Config.Env}}{{println .}}{{end}}' "$id")"
	grep -qx "LAKEFS_ACCESS_KEY_ID=$(qs_env LAKEWAP_LAKEFS_ACCESS_KEY_ID)" <<<"$env" || fail "lakewap does not run with LAKEWAP_LAKEFS_ACCESS_KEY_ID"
	grep -q "$(qs_env LAKEFS_SECRET_ACCESS_KEY)" <<<"$env" && fail "the lakeFS admin's secret is in lakewap's environment"
	# lakewap's user is in Writers and no other group.
	local groups
	groups="$(lakefs_get admin auth/users/lakewap/groups | grep -o '"id":"[^"]*"' | tr '\n' ' ')"
	say "   lakewap's groups: $groups"
	[[ "$groups" == '"id":"Writers" ' ]] || fail "lakewap's lakeFS user is in groups $groups, not Writers alone"
	# lakewap's key reads the repository and is refused creating one.
	[[ "$(lakefs_get lakewap repositories/lake | grep -o '"id":"lake"')" == '"id":"lake"' ]] || fail "lakewap's key cannot read repository lake"
	local code
	code="$(curl -s -o "$WORK/create-repo.json" -w '%{http_code}' -u "$(qs_env LAKEWAP_LAKEFS_ACCESS_KEY_ID):$(qs_env LAKEWAP_LAKEFS_SECRET_ACCESS_KEY)" \
		-H 'Content-Type: application/json' -d '{"name":"smoke-not-allowed","storage_namespace":"s3://lakefs-data/smoke-not-allowed"}' "$LAKEFS/api/v1/repositories")"
	say "   lakewap's key creating a repository: HTTP $code $(head -c 120 "$WORK/create-repo.json")"
	[[ "$code" == 401 || "$code" == 403 ]] || fail "lakewap's key creating a repository got HTTP $code, not 401/403"
	code="$(curl -s -o /dev/null -w '%{http_code}' -u "$(qs_env LAKEWAP_LAKEFS_ACCESS_KEY_ID):$(qs_env LAKEWAP_LAKEFS_SECRET_ACCESS_KEY)" \
		-H 'Content-Type: application/json' -d '{"id":"smoke-not-allowed"}' "$LAKEFS/api/v1/auth/users")"
	say "   lakewap's key creating a user: HTTP $code"
	[[ "$code" == 401 || "$code" == 403 ]] || fail "lakewap's key creating a user got HTTP $code, not 401/403"
	# main is branch-protected: not even the admin uploads to it directly.
	code="$(curl -s -o "$WORK/upload-main.json" -w '%{http_code}' -u "$(qs_env LAKEFS_ACCESS_KEY_ID):$(qs_env LAKEFS_SECRET_ACCESS_KEY)" \
		-H 'Content-Type: application/octet-stream' --data-binary 'x' "$LAKEFS/api/v1/repositories/lake/branches/main/objects?path=gold/billing_fact/direct/x")"
	say "   the admin's upload to main: HTTP $code $(head -c 120 "$WORK/upload-main.json")"
	[[ "$code" == 403 ]] || fail "an upload to main with the admin's key got HTTP $code, not 403 (branch protection)"
	# The ACL server (no authentication of its own) is not reachable from lakewap.
	docker exec "$id" bash -c true || fail "no bash in the lakewap container to try a connection with"
	if docker exec "$id" bash -c 'exec 3<>/dev/tcp/lakefs-acl/8001' 2>/dev/null; then
		fail "lakewap reaches the ACL server at lakefs-acl:8001"
	fi
	local acl_ip
	acl_ip="$(docker inspect -f '{{range .NetworkSettings.Networks}}{{.IPAddress}} {{end}}' "$(compose ps -q lakefs-acl)" | awk '{print $1}')"
	if [[ -n "$acl_ip" ]] && docker exec "$id" timeout 5 bash -c "exec 3<>/dev/tcp/$acl_ip/8001" 2>/dev/null; then
		fail "lakewap reaches the ACL server at its address $acl_ip:8001"
	fi
	say "   lakewap cannot reach the ACL server (lakefs-acl:8001, $acl_ip:8001)"
	curl -fsS "$LAKEWAP/readyz" >/dev/null || fail "lakewap's /readyz from the host"
	# Its run records are sealed (runner.state_key_file from LAKEWAP_STATE_KEY).
	if docker logs "$id" 2>&1 | grep -q 'state_key_file is not set'; then
		fail "lakewap runs without a state key: its changelog records are not sealed"
	fi
	say "   lakewap's run records are sealed (runner.state_key_file)"
}

check_branch_ready() {
	local ev
	ev="$(result 2024-06-01 BranchReady)"
	[[ "$(field branch "$ev")" == wap-billing-2024-06-01 ]] || fail "BranchReady of 2024-06-01 does not name wap-billing-2024-06-01: $ev"
}

PUBLISHED_1=""
check_published() {
	local ev head
	ev="$(result 2024-06-01 BatchPublished)"
	PUBLISHED_1="$(field commit_id "$ev")"
	[[ -n "$PUBLISHED_1" ]] || fail "no BatchPublished with a commit_id for 2024-06-01: $ev"
	head="$(main_head)"
	[[ "$(field id "$head")" == "$PUBLISHED_1" ]] || fail "main's head is not BatchPublished's commit $PUBLISHED_1: ${head:0:300}"
	[[ "$(field committer "$head")" == lakewap ]] || fail "main's head was not committed by lakeFS user lakewap: ${head:0:300}"
	[[ "$(on_main 2024-06-01)" == 200 ]] || fail "batch 2024-06-01's file is not on main"
	say "   main at $PUBLISHED_1, merged by user lakewap; batch=2024-06-01 on main"
}

check_aborted() {
	local ev
	ev="$(result 2024-06-02 BatchAborted)"
	[[ -n "$ev" ]] || fail "no BatchAborted for 2024-06-02"
	grep -q billing_id_not_null <<<"$ev" || fail "2024-06-02 was not stopped by billing_id_not_null: ${ev:0:300}"
	[[ -z "$(result 2024-06-02 BatchPublished)" ]] || fail "2024-06-02 was published"
	[[ "$(field id "$(main_head)")" == "$PUBLISHED_1" ]] || fail "main moved when 2024-06-02 was stopped"
	[[ "$(on_main 2024-06-02)" == 404 ]] || fail "the stopped batch's file reached main"
	lakefs_get admin repositories/lake/branches/wap-billing-2024-06-02 | grep -q '"id":"wap-billing-2024-06-02"' ||
		fail "the stopped batch's branch was not kept"
	say "   aborted by billing_id_not_null; main still at $PUBLISHED_1; branch kept"
}

check_slack() {
	local msg
	msg="$(compose logs --no-color --no-log-prefix lakewap 2>/dev/null | grep -v '^{' | grep -A 20 'batch 2024-06-02')"
	for want in 'billing_id_not_null' 'lakewap retry -dataset billing -batch 2024-06-02' 'billing aborted'; do
		grep -qF -- "$want" <<<"$msg" || fail "the console message of 2024-06-02 has no \"$want\": ${msg:0:600}"
	done
}

check_retried() {
	local ev head
	ev="$(result 2024-06-02 BatchPublished)"
	[[ -n "$ev" ]] || fail "no BatchPublished for 2024-06-02 after retry"
	head="$(main_head)"
	[[ "$(field id "$head")" == "$(field commit_id "$ev")" ]] || fail "main's head is not the retried publish: ${head:0:300}"
	[[ "$(on_main 2024-06-02)" == 200 && "$(on_main 2024-06-01)" == 200 ]] || fail "main does not have both batches after the retry"
	say "   2024-06-02 published at $(field commit_id "$ev"); main has both batches"
}

check_reverted() {
	local ev head
	ev="$(result 2024-06-01 BatchReverted)"
	[[ -n "$ev" ]] || fail "no BatchReverted for 2024-06-01"
	head="$(main_head)"
	[[ "$(field committer "$head")" == lakewap ]] || fail "the revert on main was not committed by user lakewap: ${head:0:300}"
	grep -qF '"wap.reverted_batch_id":"2024-06-01"' <<<"$head" || fail "main's head is not the revert of 2024-06-01: ${head:0:300}"
	[[ "$(on_main 2024-06-01)" == 404 ]] || fail "batch 2024-06-01's file is still on main after the revert"
	[[ "$(on_main 2024-06-02)" == 200 ]] || fail "the revert took batch 2024-06-02 off main too"
	say "   main at the revert $(field id "$head") by user lakewap; batch=2024-06-01 gone, batch=2024-06-02 kept"
	say "   $(results | wc -l) result events on the results topic"
}

check_sigterm() {
	local grace id t0 took_ms code revoked
	grace="$(sed -n 's/^ *shutdown_grace: *\([0-9]*\)s.*/\1/p' "$ROOT/deploy/lakewap.yaml")"
	grace="${grace:-10}" # the default when deploy/lakewap.yaml sets none
	id="$(compose ps -q lakewap)"
	t0="$(date +%s%N)"
	docker stop -t 60 "$id" >/dev/null || fail "docker stop lakewap"
	took_ms=$((($(date +%s%N) - t0) / 1000000))
	code="$(docker inspect -f '{{.State.ExitCode}}' "$id")"
	docker logs "$id" >"$WORK/lakewap.log" 2>&1 || true
	say "   lakewap stopped in ${took_ms} ms (runner.shutdown_grace ${grace}s), exit code $code"
	((took_ms <= grace * 1000 + 5000)) || fail "lakewap took ${took_ms} ms to stop, over runner.shutdown_grace ${grace}s (+5s)"
	[[ "$code" == 0 ]] || fail "lakewap exited $code on SIGTERM"
	revoked="$(grep -c '"partition revoked"' "$WORK/lakewap.log" || true)"
	((revoked >= 1)) || fail "lakewap's log has no \"partition revoked\" on shutdown (log: $WORK/lakewap.log)"
	say "   $revoked partition(s) handed back"
}

run_check() {
	local name="$1" known=0 c
	for c in "${KNOWN_CHECKS[@]}"; do [[ "$c" == "$name" ]] && known=1; done
	((known)) || fail "docs/quickstart.md names check \"$name\", which the script does not know (${KNOWN_CHECKS[*]})"
	"check_${name//-/_}"
	CHECKS_RUN[$name]=1
}

# The quickstart's `docker compose`: this run's project, in the scratch
# directory; `up --build` without --build (the images were built above,
# from the same Dockerfiles, by scripts/containers.sh).
docker() {
	if [[ "${1:-}" == compose ]]; then
		shift
		local a args=()
		for a in "$@"; do [[ "$a" == --build ]] || args+=("$a"); done
		compose "${args[@]}"
	else
		command docker "$@"
	fi
}
shopt -s expand_aliases
export USER="${USER:-$(id -un)}"
PATH="$(dirname "$PY"):$PATH" # python3: the venv with pyarrow and lakefs-sdk
BLOCK_TIMEOUT="${LAKEWAP_SMOKE_BLOCK_TIMEOUT:-600}"
WATCHDOG=""
trap 'fail "the block ran past ${BLOCK_TIMEOUT}s (LAKEWAP_SMOKE_BLOCK_TIMEOUT)"' USR1

cd "$QS"
while IFS=$'\t' read -r n lang line directives; do
	[[ -n "$n" ]] || continue
	first="$(grep -m1 -v '^\s*\(#.*\)\?$' "$BLOCKS/$n.block" | cut -c1-60)"
	step "quickstart block $n (docs/quickstart.md:$line)"
	say "   \$ $first"
	file="" checks=() befores=() ports=0
	IFS=';' read -ra ds <<<"$directives"
	for d in "${ds[@]}"; do
		d="$(xargs <<<"$d")"
		case "$d" in
		"") ;;
		ports) ports=1 ;;
		"file "*) file="${d#file }" ;;
		"check "*) checks+=("${d#check }") ;;
		"before "*) befores+=("${d#before }") ;;
		*) fail "docs/quickstart.md:$((line - 2)): unknown smoke directive \"$d\"" ;;
		esac
	done
	[[ "$lang" == sh || -n "$file" ]] || fail "block $n is $lang with no file directive"
	script="$BLOCKS/$n.block"
	if ((ports)); then
		sed -e "s/localhost:29092/localhost:$KAFKA_HOST_PORT/g" -e "s/localhost:8000/localhost:$LAKEFS_HOST_PORT/g" \
			-e "s/localhost:9001/localhost:$MINIO_CONSOLE_HOST_PORT/g" -e "s/localhost:9090/localhost:$LAKEWAP_HOST_PORT/g" \
			"$script" >"$script.ported"
		script="$script.ported"
	fi
	for c in "${befores[@]}"; do run_check "$c"; done
	if [[ -n "$file" ]]; then
		cp "$script" "$QS/$file"
		say "   wrote $file"
	else
		(
			deadline=$((SECONDS + BLOCK_TIMEOUT))
			while ((SECONDS < deadline)); do sleep 1; kill -0 $$ 2>/dev/null || exit 0; done
			kill -USR1 $$
		) &
		WATCHDOG=$!
		# shellcheck disable=SC1090
		# In this shell (the quickstart's aliases, functions and variables
		# carry over to later blocks), under set -e: a command that fails
		# ends the run, the block's output shown by the tear down.
		BLOCK_OUT="$BLOCKS/$n.out"
		source "$script" </dev/null >"$BLOCK_OUT" 2>&1
		kill "$WATCHDOG" 2>/dev/null || true
		sed 's/^/   | /' "$BLOCKS/$n.out" | cut -c1-240 | tail -12 >&2
	fi
	for c in "${checks[@]}"; do run_check "$c"; done
	done_step
done <"$BLOCKS/manifest"
cd "$ROOT"
for c in "${KNOWN_CHECKS[@]}"; do
	[[ -n "${CHECKS_RUN[$c]:-}" ]] || fail "docs/quickstart.md names no block for check \"$c\": the quickstart no longer goes through it"
done

say "OK: image checked, docs/quickstart.md run as written ($(grep -c . "$BLOCKS/manifest") blocks): stack up with lakewap as lakeFS user lakewap (Writers, refused creating a repository), 2024-06-01 published, 2024-06-02 stopped, the console message, retry published it, 2024-06-01 reverted, lakewap stopped cleanly"
exit
}
