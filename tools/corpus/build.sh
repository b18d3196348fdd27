#!/usr/bin/env bash
# Rebuilds testdata/corpus, the repository's anonymized test corpus, from the
# real trees in ../shared/corpus/real (or $CTE_SHARED_DIR/corpus/real) with
# cmd/claude-transcript-anonymize and a fixed key, and writes its MANIFEST.md.
#
# Usage: tools/corpus/build.sh        (make corpus)
#
# The same sources and key give the same bytes, so a rebuild that changes
# nothing shows no diff in git.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
shared=${CTE_SHARED_DIR:-../shared}
real="$shared/corpus/real"
out=testdata/corpus
# The key only makes path filler reproducible; the sources are public
# repositories, so it need not be secret.
key="claude-transcript-exporter test corpus v1"

if [[ ! -d $real ]]; then
	echo "tools/corpus/build.sh: $real not found (set CTE_SHARED_DIR)" >&2
	exit 1
fi

bin=$(mktemp -d)/claude-transcript-anonymize
trap 'rm -rf "$(dirname "$bin")"' EXIT
go build -o "$bin" ./cmd/claude-transcript-anonymize

rm -rf "$out"
mkdir -p "$out"
{
	cat <<'HEAD'
# Anonymized test corpus

Each folder is a Claude config dir copied from `../shared/corpus/real/<name>` (real transcripts that
Claude Code wrote on someone's machine and that were committed to a public repository) by
`claude-transcript-anonymize` with a fixed key (`tools/corpus/build.sh`, `make corpus`).

What was replaced, in every file: prompts, responses, thinking, tool input and output, file contents,
titles, summaries, todo and task text, URLs, queries, e-mail addresses, host and user names; paths,
working directories, encoded project folder names, git branches, the arguments of shell commands,
subagent ids built from words and custom skill names are filled run by run (the same name always
gives the same filler, so projects, subagents and skills stay apart and linked). Every string keeps its byte length, so
every line and file keeps its size. What was kept: record types and subtypes, ids and `parentUuid`
links, timestamps, versions, models, usage numbers, stop reasons, tool names, `is_error`, agent types,
subagent files and `.meta.json`, compaction metadata, enums, the markers Claude Code writes itself
(`<command-name>`, `[Request interrupted by user`, `Warmup`, ...) and the text of its own API error
and limit notices (parentheses filled), and what the counters read inside filled text: patch-line
`+`/`-` prefixes and newlines, file extensions and `Makefile`/`Dockerfile` names, job states, the
shell words of the commit and pull-request rules with every quote and operator. Every family the
exporter serves counts the same on a folder as on its original (custom skill names aside, which are
replaced). Malformed lines stay malformed for the same reason.

Run the exporter on one folder with `--claude.dir=testdata/corpus/<name>`.
HEAD
	for tree in "$real"/*/; do
		name=$(basename "$tree")
		source=$(awk -v n="## $name" '$0 == n {f=1; next} f && /^source:/ {sub(/^source: */, ""); print; exit}' "$real/MANIFEST.md" 2>/dev/null || true)
		stats=$("$bin" --from "$tree" --to "$out/$name" --key "$key")
		printf '\n## %s\nsource: %s\n\n' "$name" "${source:-unknown}"
		sed 's/^wrote [^:]*: /- /; s/^replaced /- replaced /; s/^not copied: /- not copied: /' <<<"$stats"
	done
} >"$out/MANIFEST.md"
echo "wrote $out ($(du -sh "$out" | cut -f1))"
