# Shared by the build scripts under tools/ that build a test backend from Go
# modules once and cache it by version. Source it; it defines:
#
#   cache_key            hashes stdin to 16 hex digits (the cache key)
#   cache_lock DIR       creates DIR and holds DIR/.build.lock on fd 9, so that
#                        concurrent builds (several test packages at once)
#                        build once: the others wait, then find the cache
#   cache_publish SRC DST
#                        moves SRC to DST atomically (through DST's folder), so
#                        that a file at DST is always complete
#
# Callers set LOG_PREFIX for their messages on stderr.

log() { printf '%s: %s\n' "${LOG_PREFIX:-build}" "$*" >&2; }

cache_key() { sha256sum | cut -c1-16; }

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
