# shellcheck shell=bash
# Shared by bench/run.sh and bench/profile.sh; sourced, never run.
#
# Expects ROOT (the repository root). Sets the BENCH_* defaults and
# defines the corpus cache helpers.

BENCH_REAL=${BENCH_REAL:-$ROOT/testdata/corpus}
BENCH_AMPLIFY=${BENCH_AMPLIFY:-$ROOT/../shared/tools/amplify}
BENCH_CACHE=${BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/claude-transcript-exporter/bench}

log() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "error: $*"; exit 1; }

# source_trees prints the real trees (one Claude config dir each), sorted.
source_trees() {
	local d
	for d in "$BENCH_REAL"/*/; do
		[ -d "$d" ] && printf '%s\n' "${d%/}"
	done
}

# corpus_key SIZE_MB: cache key from the amplify script, the source files
# (names and sizes) and the target size.
corpus_key() {
	local size=$1 amp src
	amp=$(sha256sum "$BENCH_AMPLIFY" | cut -c1-12)
	src=$( (cd "$BENCH_REAL" && find -L . -path '*/projects/*' -type f \( -name '*.jsonl' -o -name '*.meta.json' \) -printf '%p %s\n' | LC_ALL=C sort) | sha256sum | cut -c1-12)
	printf 'corpus-amp%s-src%s-%sm' "$amp" "$src" "$size"
}

# corpus_dir SIZE_MB prints where the cached corpus of that size lives
# (a Claude config dir is <that>/claude; amplify's output line is in
# <that>/amplify.txt). It does not build it.
corpus_dir() {
	printf '%s/%s' "$BENCH_CACHE" "$(corpus_key "$1")"
}

# ensure_corpus SIZE_MB builds the corpus unless it is cached, and prints
# its dir. Building writes to a temporary dir and renames it at the end, so
# an interrupted build is never mistaken for a cached one.
ensure_corpus() {
	local size=$1 dir tmp
	dir=$(corpus_dir "$size")
	if [ -f "$dir/amplify.txt" ] && [ -d "$dir/claude/projects" ]; then
		log "corpus ${size} MB: cached at $dir ($(cat "$dir/amplify.txt"))"
		printf '%s\n' "$dir"
		return
	fi
	[ -f "$BENCH_AMPLIFY" ] || die "amplify not found at $BENCH_AMPLIFY (set BENCH_AMPLIFY)"
	mkdir -p "$BENCH_CACHE"
	tmp=$(mktemp -d "$BENCH_CACHE/.building-${size}m.XXXXXX")
	log "corpus ${size} MB: building with amplify (one-time; about 2 min per GB on an idle machine)..."
	local -a trees
	mapfile -t trees < <(source_trees)
	[ "${#trees[@]}" -gt 0 ] || die "no trees under $BENCH_REAL"
	python3 "$BENCH_AMPLIFY" "$tmp/claude" "$size" "${trees[@]}" >"$tmp/amplify.txt" ||
		{ rm -rf "$tmp"; die "amplify failed for ${size} MB"; }
	rm -rf "$dir"
	mv "$tmp" "$dir"
	log "corpus ${size} MB: built at $dir ($(cat "$dir/amplify.txt"))"
	printf '%s\n' "$dir"
}

# amp_field DIR NAME prints NAME (copies|files|bytes) from DIR/amplify.txt.
amp_field() {
	tr ' ' '\n' <"$1/amplify.txt" | sed -n "s/^$2=//p"
}
