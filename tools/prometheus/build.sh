#!/usr/bin/env bash
# Builds Prometheus 3 and promtool from the Go module
# github.com/prometheus/prometheus (Apache-2.0) for the tests (see
# internal/testonly/testbackend) and caches both binaries.
#
# Usage: tools/prometheus/build.sh
#
# The binaries are cached under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/claude-transcript-exporter/prometheus/<key>/
# where <key> hashes the module version, the Go version and the target
# platform. A cache hit prints the folder at once; a cold build (about 2 GB of
# module downloads, then compiling) takes about 6 minutes on 2 cores, 1 minute
# when the module cache is warm.
#
# The last line on stdout is the absolute path of the folder holding
# `prometheus` and `promtool`; progress and go output go to stderr.
#
# The module has no web UI assets (they are built with npm upstream); the
# HTTP API, which is all the tests use, works without them. Version
# information is set with ldflags, as upstream's release builds do, so that
# `prometheus --version` says which release this is.
set -euo pipefail

MODULE=github.com/prometheus/prometheus
MODULE_VERSION=v0.316.0 # Prometheus 3.16.0 (module v0.3XX.Y is release 3.XX.Y)
RELEASE=3.16.0

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LOG_PREFIX=prometheus/build.sh
# shellcheck source=../lib/cache.sh
. "$script_dir/../lib/cache.sh"
need_go
key=$(printf '%s@%s release=%s go=%s goos=%s goarch=%s cgo=0\n' \
	"$MODULE" "$MODULE_VERSION" "$RELEASE" "${goenv[@]}" | cache_key)

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/claude-transcript-exporter/prometheus"
out_dir="$cache_root/$key"

# prometheus is published last: its presence means both are complete.
cache_reuse "$out_dir" "$out_dir/promtool" "$out_dir/prometheus"
cache_lock "$cache_root"
cache_reuse "$out_dir" "$out_dir/promtool" "$out_dir/prometheus"

start=$(date +%s)
log "building Prometheus $RELEASE and promtool ($MODULE@$MODULE_VERSION, ${goenv[0]}); cold builds take ~6 minutes"

work=$(mktemp -d "$cache_root/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT

v=github.com/prometheus/common/version
ldflags="-s -w -X $v.Version=$RELEASE -X $v.Revision=$MODULE_VERSION -X $v.Branch=go-module -X $v.BuildUser=claude-transcript-exporter/tools/prometheus"
# A module-aware install outside any module: go.mod of this repository plays
# no part, so its dependency versions cannot leak into Prometheus's.
(cd "$work" && GOBIN="$work/bin" GOFLAGS=-mod=mod CGO_ENABLED=0 "$go_bin" install -trimpath -ldflags "$ldflags" \
	"$MODULE/cmd/prometheus@$MODULE_VERSION" "$MODULE/cmd/promtool@$MODULE_VERSION") >&2

for b in prometheus promtool; do
	if [[ ! -x "$work/bin/$b" ]]; then
		log "go install produced no $b"
		exit 1
	fi
done
got=$("$work/bin/prometheus" --version 2>&1 | head -n1)
if [[ $got != *"version $RELEASE"* ]]; then
	log "built prometheus reports '$got', want version $RELEASE"
	exit 1
fi

printf '%s@%s (Prometheus %s)\n%s %s/%s\n' "$MODULE" "$MODULE_VERSION" "$RELEASE" "${goenv[@]}" >"$work/BUILD-INFO"
mkdir -p "$out_dir"
cp "$work/BUILD-INFO" "$out_dir/BUILD-INFO"
cache_publish "$work/bin/promtool" "$out_dir/promtool"
cache_publish "$work/bin/prometheus" "$out_dir/prometheus"

log "built in $(($(date +%s) - start))s"
printf '%s\n' "$out_dir"
