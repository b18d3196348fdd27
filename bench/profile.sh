#!/usr/bin/env bash
# CPU and allocation profile of the whole one-shot pipeline, in process:
# BenchmarkOneshot (internal/daemon/oneshot_bench_test.go) run once over the
# amplified corpus, with -cpuprofile and -memprofile. Prints the top 25 of
# both and keeps everything under bench/results/<timestamp>-profile/.
#
#   bench/profile.sh [CLAUDE_DIR]
#
# CLAUDE_DIR defaults to $CTE_BENCH_CORPUS, else the cached amplified
# corpus of BENCH_PROFILE_SIZE MB (default 1024; built like bench/run.sh
# does when missing). BENCH_PROFILE_BENCHTIME (default 1x) is passed as
# -test.benchtime.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

SIZE=${BENCH_PROFILE_SIZE:-1024}
BENCHTIME=${BENCH_PROFILE_BENCHTIME:-1x}
CORPUS=${1:-${CTE_BENCH_CORPUS:-}}
if [ -z "$CORPUS" ]; then
	CORPUS=$(ensure_corpus "$SIZE")/claude
fi
[ -d "$CORPUS/projects" ] || die "$CORPUS is not a Claude config dir (no projects/)"

OUT="$ROOT/bench/results/$(date -u +%Y%m%dT%H%M%SZ)-profile"
mkdir -p "$OUT"
log "compiling the internal/daemon test binary"
go test -c -o "$OUT/daemon.test" ./internal/daemon/

{
	echo "profile of BenchmarkOneshot, -test.benchtime $BENCHTIME, corpus $CORPUS"
	echo "($(find "$CORPUS/projects" -name '*.jsonl' -type f | wc -l) transcripts, $(du -sm "$CORPUS" | cut -f1) MiB; repo $(git describe --always --dirty 2>/dev/null || echo unknown); load $(cut -d' ' -f1-3 /proc/loadavg))"
} | tee "$OUT/summary.txt"
log "running BenchmarkOneshot"
(cd internal/daemon && CTE_BENCH_CORPUS="$CORPUS" "$OUT/daemon.test" -test.run '^$' -test.bench '^BenchmarkOneshot$' \
	-test.benchtime "$BENCHTIME" -test.count 1 -test.benchmem \
	-test.cpuprofile "$OUT/cpu.prof" -test.memprofile "$OUT/mem.prof") | tee -a "$OUT/summary.txt"

{
	echo
	echo "== CPU: go tool pprof -top -nodecount=25 daemon.test cpu.prof"
	go tool pprof -top -nodecount=25 "$OUT/daemon.test" "$OUT/cpu.prof" 2>/dev/null
	echo
	echo "== allocations: go tool pprof -top -nodecount=25 -sample_index=alloc_space daemon.test mem.prof"
	go tool pprof -top -nodecount=25 -sample_index=alloc_space "$OUT/daemon.test" "$OUT/mem.prof" 2>/dev/null
	echo
	echo "files: $OUT/{cpu,mem}.prof with $OUT/daemon.test (go tool pprof -http=: ... to browse)"
} | tee -a "$OUT/summary.txt"
