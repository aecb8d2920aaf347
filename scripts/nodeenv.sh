#!/usr/bin/env bash
# Installs the AsyncAPI parser that checks docs/reference/asyncapi.yaml
# (tests/asyncapi/package.json and its package-lock.json, every version
# pinned) into ${LAKEWAP_CACHE_DIR:-.cache}/nodeenv-<first 12 hex of the
# lock file's sha256>, once. Prints that directory (absolute) on stdout, for
# LAKEWAP_ASYNCAPI_NODE_DIR; everything else goes to stderr. Without node
# and npm it says so, prints nothing and exits 0, and the test skips; a
# failed npm install fails.
set -euo pipefail
cd "$(dirname "$0")/.."

src=tests/asyncapi
cache=${LAKEWAP_CACHE_DIR:-.cache}

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
	echo "nodeenv.sh: no node and npm; the AsyncAPI document's parser check will skip" >&2
	exit 0
fi

want=$(cat "$src/package.json" "$src/package-lock.json" | sha256sum | cut -d' ' -f1)
dir=$cache/nodeenv-${want:0:12}
stamp=$dir/.lock.sha256 # written last: a half-done install is never taken for a ready one
if [[ -f $stamp && $(cat "$stamp") == "$want" ]]; then
	echo "$(cd "$dir" && pwd)"
	exit 0
fi

printf '\n== %s\n' "installing the AsyncAPI parser into $dir (first run only)" >&2
mkdir -p "$cache"
[[ -f $cache/.gitignore ]] || echo '*' >"$cache/.gitignore"
rm -rf "$dir"
mkdir -p "$dir"
cp "$src/package.json" "$src/package-lock.json" "$dir/"
(cd "$dir" && npm ci --no-audit --no-fund --loglevel=error --ignore-scripts >&2)
echo "$want" >"$stamp"
echo "$(cd "$dir" && pwd)"
