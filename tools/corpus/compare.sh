#!/usr/bin/env bash
# Compares the exporter's counters on original Claude config dirs with
# their anonymized copies: for each tree in ORIGINALS that COPIES also
# holds, the number of series (every family the exporter serves, project
# label summed out: --metrics.project-label=none) whose value differs or
# that only one side has, and the families they belong to. Values are
# compared to 12 significant digits (float sums depend on the order files
# are read in); the exporter's own timings and build info are left out.
# Custom skill names, which the copy replaces, are compared by their
# counts (every skill label value but none and other reads as S).
#
# Usage: tools/corpus/compare.sh ORIGINALS COPIES
#   e.g. tools/corpus/compare.sh ../shared/corpus/real testdata/corpus
set -euo pipefail

if [[ $# -ne 2 || ! -d $1 || ! -d $2 ]]; then
	echo "usage: $0 ORIGINALS COPIES" >&2
	exit 2
fi
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/exporter" ./cmd/claude-transcript-exporter

series() {
	"$tmp/exporter" --oneshot --traces.exporter=none --log.level=error --claude.dir="$1" --metrics.project-label=none |
		grep -v -e '^#' -e build_info -e duration_seconds -e state_file_age |
		sed -E 's/skill="([^"]*)"/skill="\1"\n/' | awk '
			/skill="/ { line = $0; getline rest; v = line; sub(/.*skill="/, "", v); sub(/"$/, "", v)
				if (v != "none" && v != "other") sub(/skill="[^"]*"$/, "skill=\"S\"", line); $0 = line rest }
			{ val = $NF; $NF = ""; printf "%s%.12g\n", $0, val }' | sort
}

total=0
for orig in "$1"/*/; do
	name=$(basename "$orig")
	[[ -d $2/$name ]] || continue
	series "$orig" >"$tmp/a"
	series "$2/$name" >"$tmp/b"
	diff=$(comm -3 "$tmp/a" "$tmp/b" | sed 's/^\t//; s/ [^ ]*$//' | sort -u)
	n=$(grep -c . <<<"$diff" || true)
	families=
	[[ $n -eq 0 ]] || families=$(sed -E 's/[{ ].*//; s/^claude_transcript_//' <<<"$diff" | sort -u | tr '\n' ' ')
	printf '%s: %d of %d series differ %s\n' "$name" "$n" "$(wc -l <"$tmp/a")" "${families:+($families)}"
	total=$((total + n))
done
echo "total: $total"
