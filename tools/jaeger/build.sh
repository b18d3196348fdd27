#!/usr/bin/env bash
# Builds Jaeger v2 (the `jaeger` binary: an OpenTelemetry Collector with
# Jaeger's storage and query extensions) from the Go module
# github.com/jaegertracing/jaeger (Apache-2.0) for the end-to-end trace tests
# (see internal/testonly/testbackend) and caches the binary.
#
# Usage: tools/jaeger/build.sh
#
# The binary is cached under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/claude-transcript-exporter/jaeger/<key>/jaeger
# where <key> hashes the module version, the Go version and the target
# platform. A cache hit prints the path at once; a cold build takes about 6
# minutes on 2 cores.
#
# Why not `go install …/cmd/jaeger@version`: the module's go.mod has a replace
# directive, which `go install pkg@version` refuses. So the module is
# downloaded, copied to a scratch folder and built there as the main module,
# with its own go.mod and go.sum, which is how upstream builds it.
#
# Module v1.76.0 is Jaeger v2.13.0 (2025-12-03); it still serves the HTTP API
# that the Jaeger UI calls (/api/services, /api/traces), which is what the
# tests query.
#
# The last line on stdout is the absolute path of the binary; progress and go
# output go to stderr.
set -euo pipefail

MODULE=github.com/jaegertracing/jaeger
MODULE_VERSION=v1.76.0
RELEASE=v2.13.0

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LOG_PREFIX=jaeger/build.sh
# shellcheck source=../lib/cache.sh
. "$script_dir/../lib/cache.sh"
need_go
key=$(printf '%s@%s release=%s go=%s goos=%s goarch=%s cgo=0\n' \
	"$MODULE" "$MODULE_VERSION" "$RELEASE" "${goenv[@]}" | cache_key)

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/claude-transcript-exporter/jaeger"
out_dir="$cache_root/$key"
bin="$out_dir/jaeger"

cache_reuse "$bin" "$bin"
cache_lock "$cache_root"
cache_reuse "$bin" "$bin"

start=$(date +%s)
log "building Jaeger $RELEASE ($MODULE@$MODULE_VERSION, ${goenv[0]}); cold builds take ~6 minutes"

work=$(mktemp -d "$cache_root/.work.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

dir=$(cd "$work" && GOFLAGS=-mod=mod "$go_bin" mod download -json "$MODULE@$MODULE_VERSION" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
if [[ -z $dir || ! -f $dir/go.mod ]]; then
	log "go mod download gave no source folder for $MODULE@$MODULE_VERSION"
	exit 1
fi
cp -R "$dir" "$work/src"
chmod -R u+w "$work/src"

v=$MODULE/internal/version
ldflags="-s -w -X $v.latestVersion=$RELEASE -X $v.commitSHA=module-$MODULE_VERSION"
(cd "$work/src" && CGO_ENABLED=0 "$go_bin" build -trimpath -ldflags "$ldflags" -o "$work/jaeger" ./cmd/jaeger) >&2

if [[ ! -x "$work/jaeger" ]]; then
	log "go build produced no jaeger binary"
	exit 1
fi
"$work/jaeger" components >/dev/null

mkdir -p "$out_dir"
printf '%s@%s (Jaeger %s)\n%s %s/%s\n' "$MODULE" "$MODULE_VERSION" "$RELEASE" "${goenv[@]}" >"$out_dir/BUILD-INFO"
cache_publish "$work/jaeger" "$bin"

log "built in $(($(date +%s) - start))s"
printf '%s\n' "$bin"
