#!/usr/bin/env bash
# Builds the OpenTelemetry Collector used as the OTLP receiver in the
# end-to-end tests (see internal/testonly/testbackend) and caches the binary.
#
# Usage: tools/otelcol/build.sh
#
# The binary is cached under
#   ${XDG_CACHE_HOME:-$HOME/.cache}/claude-transcript-exporter/otelcol/<key>/otelcol-custom
# where <key> hashes builder-config.yaml, the builder version, the Go version
# and the target platform. A cache hit prints the path at once; a cold build
# (module downloads + compile) takes a couple of minutes on 2 cores.
#
# The last line on stdout is the absolute path of the binary; everything else
# (progress, builder and go output) goes to stderr.
#
# Why the three-step build: the builder runs `go mod tidy` on the generated
# module, which fails because a test-only dependency of the contrib
# fileexporter (otlpencodingextension v0.162.0) is refused by the module proxy
# reachable here. So: generate (its tidy fails, go.mod is already written),
# `go mod tidy -e` ourselves, then compile with --skip-generate
# --skip-get-modules. Needs only Go and network access to the module proxy.
set -euo pipefail

BUILDER_MODULE=go.opentelemetry.io/collector/cmd/builder
BUILDER_VERSION=v0.162.0
BINARY_NAME=otelcol-custom

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
config="$script_dir/builder-config.yaml"

LOG_PREFIX=otelcol/build.sh
# shellcheck source=../lib/cache.sh
. "$script_dir/../lib/cache.sh"

if [[ ! -f "$config" ]]; then
	log "missing $config"
	exit 1
fi
need_go
key=$(
	{
		cat "$config"
		printf 'builder=%s@%s\n' "$BUILDER_MODULE" "$BUILDER_VERSION"
		printf 'go=%s goos=%s goarch=%s\n' "${goenv[0]}" "${goenv[1]}" "${goenv[2]}"
	} | cache_key
)

cache_root="${XDG_CACHE_HOME:-$HOME/.cache}/claude-transcript-exporter/otelcol"
out_dir="$cache_root/$key"
bin="$out_dir/$BINARY_NAME"

cache_reuse "$bin" "$bin"
# Concurrent builds (several test packages at once) build once.
cache_lock "$cache_root"
cache_reuse "$bin" "$bin"

start=$(date +%s)
log "building collector (key $key, ${goenv[0]}); cold builds take ~2 minutes"

work=$(mktemp -d "$cache_root/.work.XXXXXX")
trap 'rm -rf "$work"' EXIT

# The builder itself, cached next to the collectors.
builder_dir="$cache_root/builder-$BUILDER_VERSION-${goenv[0]}"
builder="$builder_dir/builder"
if [[ ! -x "$builder" ]]; then
	log "installing $BUILDER_MODULE@$BUILDER_VERSION"
	(cd "$work" && GOBIN="$work/gobin" "$go_bin" install "$BUILDER_MODULE@$BUILDER_VERSION") >&2
	mkdir -p "$builder_dir"
	mv -f "$work/gobin/builder" "$builder"
fi

cp "$config" "$work/builder-config.yaml"
src="$work/otelcol-src" # dist.output_path (./otelcol-src) is relative to the working directory

log "generating sources"
if ! (cd "$work" && "$builder" --config builder-config.yaml --skip-compilation) >"$work/generate.log" 2>&1; then
	# Expected: the builder's own `go mod tidy` fails (see header).
	log "builder's go mod tidy failed as expected; continuing with go mod tidy -e"
fi
if [[ ! -f "$src/go.mod" || ! -f "$src/components.go" ]]; then
	cat "$work/generate.log" >&2
	log "builder did not generate $src/go.mod"
	exit 1
fi

log "go mod tidy -e"
(cd "$src" && "$go_bin" mod tidy -e) >"$work/tidy.log" 2>&1 || {
	cat "$work/tidy.log" >&2
	log "go mod tidy -e failed"
	exit 1
}

log "compiling"
(cd "$work" && "$builder" --config builder-config.yaml --skip-generate --skip-get-modules) >&2

if [[ ! -x "$src/$BINARY_NAME" ]]; then
	log "compilation produced no $src/$BINARY_NAME"
	exit 1
fi
"$src/$BINARY_NAME" components >/dev/null

# Publish atomically: the binary goes in last, so its presence means complete.
mkdir -p "$out_dir"
cp "$config" "$out_dir/builder-config.yaml"
cp "$src/go.mod" "$src/go.sum" "$out_dir/"
printf 'builder %s@%s\n%s %s/%s\n' "$BUILDER_MODULE" "$BUILDER_VERSION" "${goenv[@]}" >"$out_dir/BUILD-INFO"
cache_publish "$src/$BINARY_NAME" "$bin"

log "built in $(($(date +%s) - start))s"
printf '%s\n' "$bin"
