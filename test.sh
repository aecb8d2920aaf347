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

scripts/pyenv.sh  # Python clients of the interop test, into .cache/pyvenv (first run only)

step "go vet"
go vet ./...

step "go test ./... (embedded Kafka broker + real lakeFS server + DuckDB)"
go test -count=1 -timeout 30m ./... "$@"
