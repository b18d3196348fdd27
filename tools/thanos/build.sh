#!/usr/bin/env bash
# Builds Thanos from the Go module github.com/thanos-io/thanos (Apache-2.0)
# for the team hashring test and bench (e2e/team_thanos_test.go,
# bench/teamload) and the validation of deploy/team/thanos, and caches the
# binary.
#
# Usage: tools/thanos/build.sh
#
# The binary is cached under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/claude-transcript-exporter/thanos/<key>/thanos
# where <key> hashes the module version, the Go version and the target
# platform. A cache hit prints the folder at once.
#
# Thanos' go.mod has replace directives, so `go install …@version` refuses
# it: the module is downloaded (go mod download) and built inside a
# writable copy of its own tree, so that its replaces and go.sum apply and
# this repository's go.mod plays no part. v0.42.5 asks for go >= 1.26.10;
# v0.42.4 builds with any go 1.26.
#
# The last line on stdout is the absolute path of the folder holding
# `thanos`; progress and go output go to stderr. A failed build prints the
# go output and exits non-zero.
set -euo pipefail

MODULE=github.com/thanos-io/thanos
MODULE_VERSION=v0.42.4
# Upstream's release tags (.promu.yml). slicelabels is required: without it
# query panics reading a store's label sets (index out of range in
# labels_stringlabels.go, measured with v0.42.4).
TAGS=netgo,slicelabels

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LOG_PREFIX=thanos/build.sh
# shellcheck source=../lib/cache.sh
. "$script_dir/../lib/cache.sh"
need_go
key=$(printf '%s@%s tags=%s go=%s goos=%s goarch=%s cgo=0\n' \
	"$MODULE" "$MODULE_VERSION" "$TAGS" "${goenv[@]}" | cache_key)

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/claude-transcript-exporter/thanos"
out_dir="$cache_root/$key"

cache_reuse "$out_dir" "$out_dir/thanos"
cache_lock "$cache_root"
cache_reuse "$out_dir" "$out_dir/thanos"

start=$(date +%s)
log "building Thanos $MODULE_VERSION (${goenv[0]}); cold builds take many minutes on 2 cores"

work=$(mktemp -d "$cache_root/.work.XXXXXX")
trap 'chmod -R u+w "$work" 2>/dev/null; rm -rf "$work"' EXIT

src=$(cd "$work" && GOFLAGS=-mod=mod GOTOOLCHAIN=local "$go_bin" mod download -json "$MODULE@$MODULE_VERSION" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
if [[ -z $src || ! -d $src ]]; then
	log "go mod download $MODULE@$MODULE_VERSION gave no source folder"
	exit 1
fi
cp -r "$src" "$work/src"
chmod -R u+w "$work/src"

v=github.com/prometheus/common/version
release=${MODULE_VERSION#v}
ldflags="-s -w -X $v.Version=$release -X $v.Revision=$MODULE_VERSION -X $v.Branch=go-module -X $v.BuildUser=claude-transcript-exporter/tools/thanos"
if ! (cd "$work/src" && GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 "$go_bin" build -trimpath -tags "$TAGS" -ldflags "$ldflags" \
	-o "$work/thanos" ./cmd/thanos) >"$work/build.log" 2>&1; then
	log "go build ./cmd/thanos failed; its output:"
	cat "$work/build.log" >&2
	exit 1
fi
got=$("$work/thanos" --version 2>&1 | head -n1)
if [[ $got != *"version $release"* ]]; then
	log "built thanos reports '$got', want version $release"
	exit 1
fi

printf '%s@%s tags %s\n%s %s/%s\n' "$MODULE" "$MODULE_VERSION" "$TAGS" "${goenv[@]}" >"$work/BUILD-INFO"
mkdir -p "$out_dir"
cp "$work/BUILD-INFO" "$out_dir/BUILD-INFO"
cache_publish "$work/thanos" "$out_dir/thanos"

log "built in $(($(date +%s) - start))s"
printf '%s\n' "$out_dir"
