# Shared by the build scripts under tools/ that build a test backend from Go
# modules once and cache it by version. Source it; it defines:
#
#   need_go              checks that ${GO:-go} runs and sets go_bin and
#                        goenv=(GOVERSION GOOS GOARCH), which keys depend on
#   cache_key            hashes stdin to 16 hex digits (the cache key)
#   cache_reuse OUT FILE...
#                        when every FILE is an executable, prints OUT and
#                        exits the script: the cache has the build
#   cache_lock DIR       creates DIR and holds DIR/.build.lock on fd 9, so that
#                        concurrent builds (several test packages at once)
#                        build once: the others wait, then find the cache
#   cache_publish SRC DST
#                        moves SRC to DST atomically (through DST's folder), so
#                        that a file at DST is always complete
#
# Callers set LOG_PREFIX for their messages on stderr.

log() { printf '%s: %s\n' "${LOG_PREFIX:-build}" "$*" >&2; }

need_go() {
	go_bin=${GO:-go}
	if ! command -v "$go_bin" >/dev/null 2>&1; then
		log "go not found on PATH"
		exit 1
	fi
	mapfile -t goenv < <("$go_bin" env GOVERSION GOOS GOARCH)
	if [[ ${#goenv[@]} -ne 3 ]]; then
		log "$go_bin env GOVERSION GOOS GOARCH failed"
		exit 1
	fi
}

cache_key() { sha256sum | cut -c1-16; }

cache_reuse() {
	local out=$1 f
	shift
	for f in "$@"; do
		[[ -x $f ]] || return 0
	done
	printf '%s\n' "$out"
	exit 0
}

cache_lock() {
	mkdir -p "$1"
	if ! command -v flock >/dev/null 2>&1; then
		return 0
	fi
	exec 9>"$1/.build.lock"
	if ! flock -n 9; then
		log "another build holds $1/.build.lock; waiting"
		flock 9
	fi
}

cache_publish() {
	local src=$1 dst=$2
	local tmp
	tmp="$(dirname "$dst")/.$(basename "$dst").tmp"
	mkdir -p "$(dirname "$dst")"
	mv -f "$src" "$tmp"
	mv -f "$tmp" "$dst"
}
