#!/usr/bin/env bash
# make bench: the exporter against ccusage on amplified real transcripts,
# plus decoder/span Go benchmarks and the idle daemon. See bench/README.md.
#
# Figures go to stdout and to bench/results/<UTC timestamp>/summary.txt
# (raw data beside it); progress goes to stderr.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

SIZES=${BENCH_SIZES:-"100 1024 2048"}
RUNS=${BENCH_RUNS:-5}
STEPS=${BENCH_STEPS:-"oneshot exact gobench idle memory restart history teamload"}
HISTORY_SIZES=${BENCH_HISTORY_SIZES:-"100"}
TEAM_MACHINES=${BENCH_TEAM_MACHINES:-200}
TEAM_SECONDS=${BENCH_TEAM_SECONDS:-60}
TEAM_INTERVAL=${BENCH_TEAM_INTERVAL:-10s}
RESTART_SIZE=${BENCH_RESTART_SIZE:-1024}
RESTARTS=${BENCH_RESTARTS:-3}
INDEP_SIZES=${BENCH_INDEP_SIZES:-"1024"}
GO_PKGS=${BENCH_GO_PKGS:-"./mapping/transcript/ ./mapping/spans/ ./exporter/prom/ ./internal/daemon/"}
GO_COUNT=${BENCH_GO_COUNT:-6}
GO_CPU=${BENCH_GO_CPU:-1}
IDLE_FILES=${BENCH_IDLE_FILES:-5000}
IDLE_SECONDS=${BENCH_IDLE_SECONDS:-60}
APPENDS=${BENCH_APPENDS:-50}
MEM_FILES=${BENCH_MEM_FILES:-"20000 100000"}
MEM_SUBAGENT_FILES=${BENCH_MEM_SUBAGENT_FILES:-"100000"}
MEM_SETTLE=${BENCH_MEM_SETTLE:-20s}
MEM_APPENDS=${BENCH_MEM_APPENDS:-30}
MEM_AFTER_APPENDS=${BENCH_MEM_AFTER_APPENDS:-12s}
LONG_LINE_MB=${BENCH_LONG_LINE_MB:-70}
CCUSAGE_VERSION=${BENCH_CCUSAGE_VERSION:-}
BENCHSTAT=${BENCH_BENCHSTAT:-golang.org/x/perf/cmd/benchstat@latest}

TS=$(date -u +%Y%m%dT%H%M%SZ)
OUT="$ROOT/bench/results/$TS"
mkdir -p "$OUT"
SUMMARY="$OUT/summary.txt"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/cte-bench.XXXXXX")
DAEMON_PID=

cleanup() {
	if [ -n "$DAEMON_PID" ] && kill -0 "$DAEMON_PID" 2>/dev/null; then
		kill "$DAEMON_PID" 2>/dev/null || true
		wait "$DAEMON_PID" 2>/dev/null || true
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT

# say prints a figure to stdout and to summary.txt.
say() { printf '%s\n' "$*" | tee -a "$SUMMARY"; }
sayf() {
	# shellcheck disable=SC2059
	printf "$@" | tee -a "$SUMMARY"
}
TARGETS=()
target() { TARGETS+=("$(printf '[%s] %s' "$1" "$2")"); }

has_step() { [[ " $STEPS " == *" $1 "* ]]; }

median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "NA"; else if (NR % 2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
calc() { awk "BEGIN { printf \"$1\", $2 }"; }

# ---------------------------------------------------------------- header

say "claude-transcript-exporter bench  $TS"
say "repo:    $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown) ($(git -C "$ROOT" rev-parse --abbrev-ref HEAD 2>/dev/null || echo '?'))"
[ -z "${BENCH_LABEL:-}" ] || say "label:   $BENCH_LABEL"
say "go:      $(go version | cut -d' ' -f3-)"
say "cpu:     $(nproc) x $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n1)"
say "memory:  $(awk '/MemTotal/ {printf "%.1f GiB", $2/1048576}' /proc/meminfo);  kernel $(uname -r)"
read -r LOAD1 LOAD5 _ </proc/loadavg
say "load:    $LOAD1 (1 min), $LOAD5 (5 min) at start"
if awk "BEGIN { exit !($LOAD1 > $(nproc) * 0.5) }"; then
	say "WARNING: the machine is busy (load $LOAD1 on $(nproc) cores): wall times and latencies below are noisy; compare CPU times"
fi
say "results: $OUT"
say

# ---------------------------------------------------------------- tools

if [ ! -x /usr/bin/time ]; then
	log "/usr/bin/time missing: installing Debian package 'time' (needed for CPU time and peak RSS)"
	SUDO=
	[ "$(id -u)" -eq 0 ] || SUDO=sudo
	$SUDO apt-get install -y time >&2 || die "could not install 'time'; install it (apt-get install time) and run again"
fi

log "building the exporter"
BIN="$WORK/claude-transcript-exporter"
CGO_ENABLED=0 go build -trimpath -ldflags '-s -w' -o "$BIN" ./cmd/claude-transcript-exporter ||
	die "go build ./cmd/claude-transcript-exporter failed"
go build -o "$WORK/exactcheck" ./bench/exactcheck || die "go build ./bench/exactcheck failed"
go build -o "$WORK/tailprobe" ./bench/tailprobe || die "go build ./bench/tailprobe failed"
go build -o "$WORK/gensessions" ./bench/gensessions || die "go build ./bench/gensessions failed"
EXP_FLAGS=(--traces.exporter=none --log.level=warn)
# The daemon keeps durable state in $XDG_STATE_HOME (default ~/.local/state);
# every exporter run here gets its own, so the bench neither reads nor
# clobbers the user's.
export XDG_STATE_HOME="$WORK/state"
HAS_STATE_FLAG=
BIN_HELP=$("$BIN" --help 2>&1 || true)
if [[ $BIN_HELP == *--state.file* ]]; then HAS_STATE_FLAG=1; fi

# ---------------------------------------------------------------- corpora

declare -A CDIR COPIES FILES BYTES
if has_step oneshot || has_step exact; then
	for size in $SIZES; do
		d=$(ensure_corpus "$size")
		CDIR[$size]=$d/claude
		COPIES[$size]=$(amp_field "$d" copies)
		BYTES[$size]=$(amp_field "$d" bytes)
		FILES[$size]=$(find "$d/claude/projects" -name '*.jsonl' -type f | wc -l)
	done
	say "corpora (python3 $BENCH_AMPLIFY <dir> <MB> $BENCH_REAL/*; cached in $BENCH_CACHE):"
	for size in $SIZES; do
		sayf '  %-6s copies=%-3s transcripts=%-6s bytes=%s (%s MiB)  %s\n' "${size}m" "${COPIES[$size]}" "${FILES[$size]}" \
			"${BYTES[$size]}" "$(calc %.0f "${BYTES[$size]}/1048576")" "${CDIR[$size]}"
	done
	say
fi

# ---------------------------------------------------------------- ccusage

# ccusage ships as a JS launcher (node_modules/.bin/ccusage -> src/cli.js)
# that spawns a static native binary from the optional dependency
# @ccusage/ccusage-<os>-<arch>. We time that native binary directly, so
# neither tool pays a launcher; the launcher adds one node start.
CC_BIN=
CC_VERSION=
CC_NOTE=
ccusage_platform() {
	local arch
	case $(uname -m) in
	x86_64) arch=x64 ;;
	aarch64 | arm64) arch=arm64 ;;
	*) arch=$(uname -m) ;;
	esac
	printf '@ccusage/ccusage-linux-%s' "$arch"
}

# ccusage_install VERSION: installs into the cache (once) and sets CC_BIN.
ccusage_install() {
	local v=$1 dir tmp native
	native=$(ccusage_platform)
	dir="$BENCH_CACHE/ccusage/$v"
	if [ ! -f "$dir/node_modules/$native/bin/ccusage" ]; then
		# A version known to lack its native package is not tried again.
		[ ! -f "$dir.no-native" ] || return 1
		log "installing ccusage@$v from npm into $dir"
		mkdir -p "$BENCH_CACHE/ccusage"
		tmp=$(mktemp -d "$BENCH_CACHE/ccusage/.install.XXXXXX")
		if ! npm install --prefix "$tmp" --no-audit --no-fund --include=optional "ccusage@$v" >"$WORK/npm.log" 2>&1; then
			log "npm install ccusage@$v failed: $(tail -n 3 "$WORK/npm.log" | tr '\n' ' ')"
			rm -rf "$tmp"
			return 1
		fi
		if [ ! -f "$tmp/node_modules/$native/bin/ccusage" ]; then
			rm -rf "$tmp"
			touch "$dir.no-native"
			return 1
		fi
		rm -rf "$dir"
		mv "$tmp" "$dir"
	fi
	# npm unpacks it without the x bit; the launcher chmods it on first use.
	chmod 755 "$dir/node_modules/$native/bin/ccusage" 2>/dev/null || true
	"$dir/node_modules/$native/bin/ccusage" --version >/dev/null 2>&1 || return 1
	CC_BIN="$dir/node_modules/$native/bin/ccusage"
	CC_VERSION=$v
}

ccusage_setup() {
	local latest native_latest cached
	if ! command -v npm >/dev/null; then
		CC_NOTE="npm is not installed"
	else
		latest=$CCUSAGE_VERSION
		[ -n "$latest" ] || latest=$(npm view ccusage version 2>/dev/null || true)
		if [ -n "$latest" ] && ccusage_install "$latest"; then
			return
		fi
		if [ -n "$latest" ] && [ -z "$CCUSAGE_VERSION" ]; then
			# ccusage@20.0.26 was published without its native packages;
			# fall back to the newest version whose native package exists.
			native_latest=$(npm view "$(ccusage_platform)" version 2>/dev/null || true)
			if [ -n "$native_latest" ] && [ "$native_latest" != "$latest" ] && ccusage_install "$native_latest"; then
				CC_NOTE="ccusage@$latest (npm latest) installs no native binary for $(ccusage_platform | sed 's/.*ccusage-//') (its optional dependency $(ccusage_platform)@$latest is not on npm); used ccusage@$native_latest, the newest with one"
				return
			fi
		fi
		CC_NOTE="could not install a runnable ccusage${latest:+ (tried ccusage@$latest)} from npm"
	fi
	# Offline or broken registry: any install left in the cache.
	for cached in $(find "$BENCH_CACHE/ccusage" -mindepth 1 -maxdepth 1 -type d ! -name '.*' 2>/dev/null | sort -rV); do
		if ccusage_install "$(basename "$cached")"; then
			CC_NOTE="$CC_NOTE; used cached ccusage@$CC_VERSION"
			return
		fi
	done
}

if has_step oneshot; then
	ccusage_setup
	if [ -n "$CC_BIN" ]; then
		say "ccusage: $CC_VERSION, native binary $CC_BIN"
		say "  run as: CLAUDE_CONFIG_DIR=<corpus> ccusage claude daily --json --offline"
	else
		say "ccusage: NOT MEASURED: $CC_NOTE"
	fi
	[ -z "$CC_NOTE" ] || [ -z "$CC_BIN" ] || say "  note: $CC_NOTE"
	say
fi

# ---------------------------------------------------------------- one-shot timing

# timed STDOUT_FILE CMD...: runs CMD under /usr/bin/time; prints
# "wall user sys maxrss_kb exit_status".
timed() {
	local out=$1 rc=0
	shift
	/usr/bin/time -f '%e %U %S %M' -o "$WORK/time.txt" "$@" >"$out" 2>>"$WORK/stderr.log" || rc=$?
	printf '%s %s\n' "$(tail -n 1 "$WORK/time.txt")" "$rc"
}

run_exporter() { timed "$1" "$BIN" --oneshot --claude.dir="$2" "${EXP_FLAGS[@]}"; }
run_ccusage() { CLAUDE_CONFIG_DIR="$2" timed "$1" "$CC_BIN" claude daily --json --offline; }

declare -A MED_WALL MED_CPU MED_RSS FAILED
if has_step oneshot; then
	TIMES="$OUT/times.tsv"
	printf 'corpus\ttool\trun\twall_s\tuser_s\tsys_s\tmaxrss_kib\texit\n' >"$TIMES"
	tools=(exporter)
	[ -z "$CC_BIN" ] || tools+=(ccusage)
	for size in $SIZES; do
		# Warm-up (also the output kept for the checks), then RUNS runs,
		# the two tools alternating.
		log "one-shot ${size}m: warm-up"
		for tool in "${tools[@]}"; do
			case $tool in
			exporter) r=$(run_exporter "$OUT/oneshot-${size}m.prom" "${CDIR[$size]}") ;;
			ccusage) r=$(run_ccusage "$OUT/ccusage-${size}m.json" "${CDIR[$size]}") ;;
			esac
			read -r w u s m rc <<<"$r"
			printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "${size}m" "$tool" warmup "$w" "$u" "$s" "$m" "$rc" >>"$TIMES"
			[ "$rc" = 0 ] || FAILED[$size,$tool]="exit status $rc: $(tail -n 2 "$WORK/stderr.log" | tr '\n' ' ')"
		done
		for ((i = 1; i <= RUNS; i++)); do
			log "one-shot ${size}m: run $i/$RUNS"
			for tool in "${tools[@]}"; do
				[ -z "${FAILED[$size,$tool]:-}" ] || continue
				case $tool in
				exporter) r=$(run_exporter /dev/null "${CDIR[$size]}") ;;
				ccusage) r=$(run_ccusage /dev/null "${CDIR[$size]}") ;;
				esac
				read -r w u s m rc <<<"$r"
				printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "${size}m" "$tool" "$i" "$w" "$u" "$s" "$m" "$rc" >>"$TIMES"
				[ "$rc" = 0 ] || FAILED[$size,$tool]="exit status $rc"
			done
		done
		# shellcheck disable=SC2016 # sel's argument is an awk expression
		for tool in "${tools[@]}"; do
			sel() { awk -F'\t' -v c="${size}m" -v t="$tool" "\$1 == c && \$2 == t && \$3 != \"warmup\" && \$8 == 0 { print $1 }" "$TIMES" | median; }
			MED_WALL[$size,$tool]=$(sel '$4')
			MED_CPU[$size,$tool]=$(sel '$5 + $6')
			MED_RSS[$size,$tool]=$(sel '$7 / 1024')
		done
	done

	say "one-shot: median of $RUNS runs after one warm-up (page cache warm), /usr/bin/time"
	say "  exporter: claude-transcript-exporter --oneshot --claude.dir=<corpus> --traces.exporter=none --log.level=warn >/dev/null"
	say "  ccusage:  CLAUDE_CONFIG_DIR=<corpus> ccusage claude daily --json --offline >/dev/null"
	sayf '  %-7s %-9s %8s %8s %13s %10s\n' corpus tool wall_s cpu_s peak_RSS_MiB MB/s_wall
	for size in $SIZES; do
		mb=$(calc %.1f "${BYTES[$size]}/1e6")
		for tool in exporter ccusage; do
			label="${size}m"
			[ "$tool" = exporter ] || label=""
			if [ "$tool" = ccusage ] && [ -z "$CC_BIN" ]; then
				sayf '  %-7s %-9s %s\n' "$label" "$tool" "not measured ($CC_NOTE)"
				continue
			fi
			if [ -n "${FAILED[$size,$tool]:-}" ]; then
				sayf '  %-7s %-9s %s\n' "$label" "$tool" "FAILED: ${FAILED[$size,$tool]}"
				continue
			fi
			sayf '  %-7s %-9s %8.2f %8.2f %13.1f %10.0f\n' "$label" "$tool" "${MED_WALL[$size,$tool]}" "${MED_CPU[$size,$tool]}" \
				"${MED_RSS[$size,$tool]}" "$(calc %.1f "$mb/(${MED_WALL[$size,$tool]}+0.0001)")"
		done
		if [ -n "$CC_BIN" ] && [ -z "${FAILED[$size,exporter]:-}${FAILED[$size,ccusage]:-}" ]; then
			sayf '  %-7s %-9s %8.2f %8.2f %13.2f\n' "" "exp/ccu" \
				"$(calc %.4f "${MED_WALL[$size,exporter]}/(${MED_WALL[$size,ccusage]}+0.0001)")" \
				"$(calc %.4f "${MED_CPU[$size,exporter]}/(${MED_CPU[$size,ccusage]}+0.0001)")" \
				"$(calc %.4f "${MED_RSS[$size,exporter]}/(${MED_RSS[$size,ccusage]}+0.0001)")"
		fi
	done
	say "  (every run: $TIMES)"
	say

	for size in $SIZES; do
		[ -z "${FAILED[$size,exporter]:-}" ] || continue
		if [ "$size" = 1024 ]; then
			if [ -n "$CC_BIN" ] && [ -z "${FAILED[$size,ccusage]:-}" ]; then
				ratio=$(calc %.2f "${MED_WALL[$size,exporter]}/${MED_WALL[$size,ccusage]}")
				ok=$(awk "BEGIN { print ($ratio <= 0.5) ? \"PASS\" : \"FAIL\" }")
				target "$ok" "one-shot wall on 1024m <= 0.5 x ccusage (same run): ${ratio}x (${MED_WALL[$size,exporter]} s vs ${MED_WALL[$size,ccusage]} s)"
			else
				target "N/A" "one-shot wall on 1024m <= 0.5 x ccusage: ccusage not measured"
			fi
		fi
		if [ "$size" = 1024 ] || [ "$size" = 2048 ]; then
			ok=$(awk "BEGIN { print (${MED_RSS[$size,exporter]} <= 64) ? \"PASS\" : \"FAIL\" }")
			target "$ok" "peak RSS <= 64 MiB on ${size}m: ${MED_RSS[$size,exporter]} MiB"
		fi
	done
fi

# ---------------------------------------------------------------- exactness

if has_step exact; then
	log "exactness: one-shot on the source trees"
	mapfile -t trees < <(source_trees)
	src_args=()
	for t in "${trees[@]}"; do src_args+=(--claude.dir="$t"); done
	"$BIN" --oneshot "${src_args[@]}" "${EXP_FLAGS[@]}" >"$OUT/source.prom" || die "one-shot on the source trees failed"
	say "exactness: one-shot counters on each corpus vs copies x one-shot on all source trees (one run, every tree as --claude.dir)"
	for size in $SIZES; do
		prom="$OUT/oneshot-${size}m.prom"
		if [ ! -s "$prom" ]; then
			log "exactness ${size}m: one-shot"
			"$BIN" --oneshot --claude.dir="${CDIR[$size]}" "${EXP_FLAGS[@]}" >"$prom" || {
				say "  ${size}m: FAIL (one-shot exited non-zero)"
				continue
			}
		fi
		args=(-copies "${COPIES[$size]}" -source "$OUT/source.prom" -amplified "$prom")
		[[ " $INDEP_SIZES " != *" $size "* ]] || args+=(-indep "${CDIR[$size]}")
		[ ! -s "$OUT/ccusage-${size}m.json" ] || args+=(-ccusage "$OUT/ccusage-${size}m.json")
		log "exactness ${size}m: comparing"
		rc=0
		"$WORK/exactcheck" "${args[@]}" >"$OUT/exact-${size}m.txt" 2>&1 || rc=$?
		say "  --- ${size}m (copies=${COPIES[$size]}) ---"
		sed 's/^/  /' "$OUT/exact-${size}m.txt" | tee -a "$SUMMARY"
		if [ "$rc" -gt 1 ]; then
			target FAIL "exactness check on ${size}m could not run (exit $rc)"
			continue
		fi
		v_copies=$(sed -n 's/^verdict copies=//p' "$OUT/exact-${size}m.txt")
		v_indep=$(sed -n 's/^verdict indep=//p' "$OUT/exact-${size}m.txt")
		[ -z "$v_indep" ] || target "$v_indep" "one-shot counters on ${size}m exactly equal to the independent count (internal/testonly/indepcount)"
		[ "$size" != 1024 ] || target "${v_copies:-FAIL}" "one-shot counters on ${size}m exactly equal to copies x source trees (amplify's expectation)"
	done
	say
fi

# ---------------------------------------------------------------- Go benchmarks

if has_step gobench; then
	GB="$OUT/gobench.txt"
	: >"$GB"
	say "Go benchmarks: go test -run '^\$' -bench . -benchmem -count $GO_COUNT -cpu $GO_CPU <pkg>  (raw: $GB)"
	for pkg in $GO_PKGS; do
		log "go benchmarks: $pkg"
		rc=0
		go test -run '^$' -bench . -benchmem -count "$GO_COUNT" -cpu "$GO_CPU" -timeout 30m "$pkg" >"$WORK/gobench-pkg.txt" 2>&1 || rc=$?
		cat "$WORK/gobench-pkg.txt" >>"$GB"
		if [ "$rc" != 0 ]; then
			say "  $pkg: FAILED (exit $rc): $(grep -v '^\s*$' "$WORK/gobench-pkg.txt" | tail -n 3 | tr '\n' ' ')"
		elif ! grep -q '^Benchmark' "$WORK/gobench-pkg.txt"; then
			say "  $pkg: no benchmarks"
		fi
	done
	# Median of every reported unit, per benchmark.
	awk '
	/^pkg: / { pkg = $2; sub(".*/", "", pkg) }
	/^Benchmark/ {
		name = pkg "." $1
		if (!(name in seen)) { seen[name] = 1; order[++nb] = name }
		for (i = 3; i + 1 <= NF; i += 2) { k = name SUBSEP $(i+1); n[k]++; v[k, n[k]] = $i }
	}
	function med(k,   m, i, j, t, a) {
		m = n[k]; if (!m) return ""
		for (i = 1; i <= m; i++) a[i] = v[k, i] + 0
		for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j+1] = a[j]; a[j+1] = t }
		return (m % 2) ? a[(m+1)/2] : (a[m/2] + a[m/2+1]) / 2
	}
	function show(k, unit, fmt,   x) { x = med(k SUBSEP unit); return (x == "") ? "" : sprintf(fmt, x) }
	END {
		for (b = 1; b <= nb; b++) {
			k = order[b]
			line = sprintf("  %-46s %s", k, show(k, "ns/op", "%14.0f ns/op"))
			line = line show(k, "MB/s", " %9.1f MB/s")
			line = line show(k, "lines/s", " %12.0f lines/s")
			line = line show(k, "spans/s", " %12.0f spans/s")
			line = line show(k, "B/op", " %12.0f B/op")
			line = line show(k, "allocs/op", " %9.0f allocs/op")
			print line
			if ((x = med(k SUBSEP "MB/s")) != "") print "GBMB\t" k "\t" x > "/dev/stderr"
			if ((x = med(k SUBSEP "spans/s")) != "") print "GBSP\t" k "\t" x > "/dev/stderr"
		}
	}' "$GB" 2>"$WORK/gobench-keys.txt" | tee -a "$SUMMARY"
	dec=$(awk -F'\t' '$1 == "GBMB" && $2 ~ /^transcript\.BenchmarkDecode(-[0-9]+)?$/ { print $3 }' "$WORK/gobench-keys.txt")
	if [ -n "$dec" ]; then
		ok=$(awk "BEGIN { print ($dec >= 1000) ? \"PASS\" : \"FAIL\" }")
		target "$ok" "decoder >= 1 GB/s on one core (BenchmarkDecode, real corpus, -cpu $GO_CPU): $dec MB/s (Go's MB = 10^6 B)"
	else
		target "N/A" "decoder >= 1 GB/s: BenchmarkDecode not found in $GO_PKGS"
	fi
	spans=$(awk -F'\t' '$1 == "GBSP" { printf "%s%s %.0f spans/s", sep, $2, $3; sep = "; " }' "$WORK/gobench-keys.txt")
	if [ -n "$spans" ]; then
		say "  span builder: $spans"
	else
		say "  span builder: NOT MEASURED: no benchmark in $GO_PKGS reports spans/s"
	fi

	# benchstat: this run, and against the previous run that has Go benchmarks.
	prev=$(find "$ROOT/bench/results" -mindepth 2 -maxdepth 2 -name gobench.txt -size +0 ! -path "*/$TS/*" 2>/dev/null | sort | tail -n 1 || true)
	if grep -q '^Benchmark' "$GB"; then
		log "benchstat ($BENCHSTAT)"
		if (cd "$WORK" && GOFLAGS='' timeout 300 go run "$BENCHSTAT" "this=$GB") >"$OUT/benchstat.txt" 2>&1; then
			say "  benchstat: $OUT/benchstat.txt"
			if [ -n "$prev" ]; then
				(cd "$WORK" && GOFLAGS='' timeout 300 go run "$BENCHSTAT" "prev=$prev" "this=$GB") >"$OUT/benchstat-vs-prev.txt" 2>&1 || true
				say "  benchstat vs previous run ($(basename "$(dirname "$prev")")):"
				sed 's/^/    /' "$OUT/benchstat-vs-prev.txt" | tee -a "$SUMMARY"
			fi
		else
			say "  benchstat unavailable ($(tail -n 1 "$OUT/benchstat.txt")); gobench.txt is benchstat input"
		fi
	fi
	say
fi

# ---------------------------------------------------------------- idle daemon

if has_step idle; then
	# A Claude dir with >= IDLE_FILES transcripts: the first k copies of an
	# amplified corpus (copy dirs end in -c0000, -c0001, ...), copied fresh
	# because the probe appends to it.
	mapfile -t trees < <(source_trees)
	per_copy=0
	for t in "${trees[@]}"; do
		[ -d "$t/projects" ] || continue
		per_copy=$((per_copy + $(find "$t/projects" -type f -name '*.jsonl' ! -name '.*' | wc -l)))
	done
	[ "$per_copy" -gt 0 ] || die "no transcripts under $BENCH_REAL"
	k=$(((IDLE_FILES + per_copy - 1) / per_copy))
	IDLE="$WORK/idle"
	src=
	# shellcheck disable=SC2086 # SIZES is a list
	for size in $(printf '%s\n' $SIZES | sort -n); do
		d=$(corpus_dir "$size")
		if [ -f "$d/amplify.txt" ] && [ "$(amp_field "$d" copies)" -ge "$k" ]; then
			src=$d/claude
			break
		fi
	done
	mkdir -p "$IDLE/projects"
	if [ -n "$src" ]; then
		log "idle corpus: copies 0..$((k - 1)) of $src"
		for p in "$src"/projects/*-c[0-9][0-9][0-9][0-9]; do
			n=${p##*-c}
			if ((10#$n < k)); then
				cp -a "$p" "$IDLE/projects/"
			fi
		done
	else
		src_bytes=$( (for t in "${trees[@]}"; do [ -d "$t/projects" ] && find "$t/projects" -type f \( -name '*.jsonl' -o -name '*.meta.json' \) -printf '%s\n'; done) | awk '{s += $1} END {print s}')
		log "idle corpus: amplify $k copies (no cached corpus has enough)"
		python3 "$BENCH_AMPLIFY" "$IDLE" "$(calc %.6f "($k*$src_bytes+1024)/1048576")" "${trees[@]}" >&2
	fi
	nfiles=$(find "$IDLE/projects" -type f -name '*.jsonl' | wc -l)
	say "idle daemon: $nfiles transcripts ($(du -sm "$IDLE" | cut -f1) MiB, $k copies); CPU from /proc/<pid>/stat over ${IDLE_SECONDS}s with nothing scraped (durable state, if any, in a fresh private XDG_STATE_HOME); then $APPENDS streamed requests, each to a distinct file (a placeholder line with stop_reason null, 50 ms later the final line), /metrics polled every 5 ms from the final line until claude_transcript_tokens_total{type=\"output\"} has grown by the request's tokens (token_*: what a user graphs; lines_p99: when lines_read_total saw it)"
	sayf '  %-38s %8s %7s %9s %8s %13s %13s %13s %13s\n' config ready_s files idle_cpu% rss_MiB token_p50_ms token_p99_ms token_max_ms lines_p99_ms
	cfgspecs=("default:" "poll-50ms:--tail.poll-interval=50ms")
	# Where durable state exists, also without it, to show what it costs.
	[ -z "$HAS_STATE_FLAG" ] || cfgspecs+=("state-off:--state.file=")
	for cfgspec in "${cfgspecs[@]}"; do
		name=${cfgspec%%:*}
		extra=${cfgspec#*:}
		export XDG_STATE_HOME="$WORK/state-$name"
		port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
		log "idle daemon ($name): starting on 127.0.0.1:$port"
		# shellcheck disable=SC2086
		"$BIN" --claude.dir="$IDLE" --web.listen-address="127.0.0.1:$port" "${EXP_FLAGS[@]}" $extra >"$OUT/daemon-$name.log" 2>&1 &
		DAEMON_PID=$!
		log "idle daemon ($name): measuring (about $((IDLE_SECONDS + APPENDS)) s)"
		"$WORK/tailprobe" -addr "127.0.0.1:$port" -pid "$DAEMON_PID" -dir "$IDLE" -idle "${IDLE_SECONDS}s" -appends "$APPENDS" \
			-clk-tck "$(getconf CLK_TCK)" >"$OUT/idle-$name.txt" 2>>"$OUT/daemon-$name.log" || true
		kill "$DAEMON_PID" 2>/dev/null || true
		wait "$DAEMON_PID" 2>/dev/null || true
		DAEMON_PID=
		get() { sed -n "s/^$1=//p" "$OUT/idle-$name.txt"; }
		if [ -n "$(get error)" ]; then
			say "  $name ${extra:-(--tail.poll-interval=1s)}: FAILED: $(get error)"
			continue
		fi
		sayf '  %-38s %8s %7s %9s %8s %13s %13s %13s %13s\n' "$name ${extra:-(--tail.poll-interval=1s)}" "$(get ready_after_s)" "$(get files_watched)" \
			"$(get idle_cpu_pct)" "$(get rss_mib)" "$(get append_p50_ms)" "$(get append_p99_ms)" "$(get append_max_ms)" "$(get lines_p99_ms)"
		[ "$(get append_timeouts)" = 0 ] || say "    $(get append_timeouts) of $APPENDS appends never showed up within 15 s"
		if [ "$name" = default ]; then
			p99=$(get append_p99_ms)
			ok=$(awk "BEGIN { print ($p99 < 100) ? \"PASS\" : \"FAIL\" }")
			target "$ok" "append -> token counter p99 < 100 ms with $(get files_watched) files: $p99 ms"
			pct=$(get idle_cpu_pct)
			ok=$(awk "BEGIN { print ($pct < 0.5) ? \"PASS\" : \"FAIL\" }")
			target "$ok" "idle daemon with $(get files_watched) files < 0.5 % of a core: $pct % (default flags, ${IDLE_SECONDS} s)"
		fi
	done
	say "  (append latency = poll interval wait + read + scrape; raw: $OUT/idle-*.txt)"
	say
fi

# ---------------------------------------------------------------- memory

if has_step memory; then
	# Many small sessions (bench/gensessions), the daemon with default
	# flags and its durable state: time to ready, resident size, peak,
	# idle CPU after the post-backfill writes have settled; then one line
	# over the line cap and the resident size once it is read.
	say "many files: bench/gensessions trees (4-line sessions over 200 projects, dated in October 2026 as past sessions are); default flags, state in a private XDG_STATE_HOME; idle CPU over ${IDLE_SECONDS}s starting $MEM_SETTLE after ready; then ${MEM_APPENDS} requests appended and the peak ${MEM_AFTER_APPENDS} later (periodic state writes included); then a session in a new project dir, which makes the daemon walk every dir again, and the peak 3 s after it is counted; then one ${LONG_LINE_MB} MB line appended and the resident size 1 s after it was read; before the daemon, --oneshot over the fresh tree (wall and peak RSS, /usr/bin/time)"
	say "  (files N+sub: N/2 sessions, each with a Task call and its subagent's file and .meta.json, as in real trees; BENCH_MEM_SUBAGENT_FILES)"
	sayf '  %-10s %8s %9s %9s %9s %18s %17s %17s %10s %16s\n' files ready_s rss_MiB peak_MiB idle_cpu% peak_appends_MiB peak_rescan_MiB rss_after_line_MiB oneshot_s oneshot_peak_MiB
	mem_trees=()
	for n in $MEM_FILES; do mem_trees+=("$n"); done
	for n in $MEM_SUBAGENT_FILES; do mem_trees+=("$n+sub"); done
	for tree in "${mem_trees[@]}"; do
		n=${tree%+sub}
		what="$n session files"
		dir="$WORK/mem-$tree"
		if [ "$tree" = "$n" ]; then
			"$WORK/gensessions" -dir "$dir" -sessions "$n" || die "gensessions failed"
		else
			what="$n files (half of them subagents)"
			"$WORK/gensessions" -dir "$dir" -sessions "$((n / 2))" -subagents || die "gensessions -subagents failed"
		fi
		# The one-shot first, on the tree as generated (it writes no state).
		read -r os_wall _ _ os_rss os_rc < <(run_exporter /dev/null "$dir")
		os_peak=$(awk -v k="$os_rss" 'BEGIN { printf "%.1f", k / 1024 }')
		os_ok=$(awk -v k="$os_rss" 'BEGIN { print (k ~ /^[0-9]+$/ && k <= 65536) ? "PASS" : "FAIL" }')
		[ "$os_rc" = 0 ] || { os_peak="FAILED($os_rc)" os_ok=FAIL; }
		export XDG_STATE_HOME="$WORK/state-mem-$tree"
		port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
		log "memory ($tree files): starting on 127.0.0.1:$port"
		"$BIN" --claude.dir="$dir" --web.listen-address="127.0.0.1:$port" "${EXP_FLAGS[@]}" >"$OUT/daemon-mem-$tree.log" 2>&1 &
		DAEMON_PID=$!
		"$WORK/tailprobe" -addr "127.0.0.1:$port" -pid "$DAEMON_PID" -dir "$dir" -settle "$MEM_SETTLE" -idle "${IDLE_SECONDS}s" -appends "$MEM_APPENDS" -after-appends "$MEM_AFTER_APPENDS" -rescan \
			-long-line-mb "$LONG_LINE_MB" -clk-tck "$(getconf CLK_TCK)" >"$OUT/mem-$tree.txt" 2>>"$OUT/daemon-mem-$tree.log" || true
		kill "$DAEMON_PID" 2>/dev/null || true
		wait "$DAEMON_PID" 2>/dev/null || true
		DAEMON_PID=
		rm -rf "$dir"
		get() { sed -n "s/^$1=//p" "$OUT/mem-$tree.txt"; }
		if [ -n "$(get error)" ]; then
			say "  $tree: FAILED: $(get error) (--oneshot: $os_wall s, peak $os_peak MiB)"
			continue
		fi
		sayf '  %-10s %8s %9s %9s %9s %18s %17s %17s %10s %16s\n' "$tree" "$(get ready_after_s)" "$(get rss_mib)" "$(get hwm_mib)" "$(get idle_cpu_pct)" "$(get hwm_after_appends_mib)" "$(get hwm_after_rescan_mib)" "$(get rss_after_long_line_mib)" "$os_wall" "$os_peak"
		if [ "$n" = 20000 ] || [ "$n" = 100000 ]; then
			# Issue 11 (20,000 files), issue 25 (100,000 files too, and
			# real trees, half of whose files are subagents).
			v=$(get hwm_mib)
			target "$(awk "BEGIN { print ($v <= 64) ? \"PASS\" : \"FAIL\" }")" "peak RSS <= 64 MiB with $what: $v MiB (resident after the backfill: $(get rss_mib) MiB)"
			v=$(get hwm_after_appends_mib)
			target "$(awk -v v="$v" 'BEGIN { print (v != "" && v + 0 <= 64) ? "PASS" : "FAIL" }')" "peak RSS <= 64 MiB with $what once $MEM_APPENDS requests were appended: ${v:-not measured} MiB"
			v=$(get hwm_after_rescan_mib)
			target "$(awk -v v="$v" 'BEGIN { print (v != "" && v + 0 <= 64) ? "PASS" : "FAIL" }')" "peak RSS <= 64 MiB with $what once a new project dir made it walk every dir again: ${v:-not measured} MiB"
			v=$(get idle_cpu_pct)
			target "$(awk "BEGIN { print ($v < 0.5) ? \"PASS\" : \"FAIL\" }")" "idle daemon with $what < 0.5 % of a core: $v %"
			target "$os_ok" "peak RSS <= 64 MiB of --oneshot over $what: $os_peak MiB ($os_wall s)"
		fi
		if [ "$tree" = 20000 ]; then
			v=$(get rss_after_long_line_mib)
			target "$(awk "BEGIN { print ($v <= 64) ? \"PASS\" : \"FAIL\" }")" "resident size after a ${LONG_LINE_MB} MB line <= 64 MiB: $v MiB"
		fi
	done
	say
fi

# ---------------------------------------------------------------- history

if has_step history; then
	# The history file (README "Last month, day by day") of every source
	# tree and of the amplified corpora of BENCH_HISTORY_SIZES, against the
	# transcripts it comes from; promtool's time to make blocks of it when
	# a promtool is at hand (CTE_PROMTOOL_BIN or on PATH). Target: no
	# larger than the transcripts, on trees of 1 MiB or more.
	PROMTOOL=${CTE_PROMTOOL_BIN:-$(command -v promtool || true)}
	say "history: --oneshot.history-file (default step and recent window) against the transcripts' bytes; promtool tsdb create-blocks-from openmetrics --max-block-duration=744h${PROMTOOL:+ ($PROMTOOL)}"
	sayf '  %-28s %14s %14s %7s %9s %10s\n' tree transcript_B history_B ratio write_s promtool_s
	worst=0
	hist_dirs=()
	mapfile -t hist_dirs < <(source_trees)
	for size in $HISTORY_SIZES; do
		hist_dirs+=("$(ensure_corpus "$size")/claude")
	done
	for d in "${hist_dirs[@]}"; do
		name=$(basename "$d")
		[ "$name" = claude ] && name="amplified-$(basename "$(dirname "$d")" | sed 's/.*-//')"
		tb=$(find -L "$d" -path '*/projects/*' -name '*.jsonl' -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}')
		[ "$tb" -gt 0 ] || continue
		f="$WORK/history.om"
		s0=$(date +%s.%N)
		"$BIN" --oneshot --claude.dir="$d" "${EXP_FLAGS[@]}" --oneshot.metrics-file=/dev/null --oneshot.history-file="$f" >/dev/null 2>&1 ||
			{ say "  $name: FAILED: the one-shot with --oneshot.history-file"; continue; }
		s1=$(date +%s.%N)
		hb=$(stat -c %s "$f")
		pt=-
		if [ -n "$PROMTOOL" ]; then
			rm -rf "$WORK/history-data"
			p0=$(date +%s.%N)
			if "$PROMTOOL" tsdb create-blocks-from openmetrics --max-block-duration=744h "$f" "$WORK/history-data" >"$OUT/promtool-$name.log" 2>&1; then
				pt=$(awk "BEGIN { printf \"%.2f\", $(date +%s.%N) - $p0 }")
			else
				pt=FAILED
			fi
			rm -rf "$WORK/history-data"
		fi
		ratio=$(awk "BEGIN { printf \"%.4f\", $hb / $tb }")
		# A tree of a few requests pays the families' HELP lines and a few
		# label sets: the target is for trees of 1 MiB and more.
		[ "$tb" -ge 1048576 ] && worst=$(awk "BEGIN { print ($ratio > $worst) ? $ratio : $worst }")
		sayf '  %-28s %14s %14s %7s %9s %10s\n' "$name" "$tb" "$hb" "$ratio" "$(awk "BEGIN { printf \"%.2f\", $s1 - $s0 }")" "$pt"
		rm -f "$f"
	done
	target "$(awk "BEGIN { print ($worst <= 1) ? \"PASS\" : \"FAIL\" }")" "history file no larger than its transcripts (trees of 1 MiB or more): at most $worst of their bytes"
	say
fi

# ---------------------------------------------------------------- restart

if has_step restart && [ -n "$HAS_STATE_FLAG" ]; then
	# Time to /-/ready: the first start reads everything and writes the
	# state; each later start with nothing changed restores it.
	d=$(corpus_dir "$RESTART_SIZE")/claude
	if [ ! -d "$d/projects" ]; then
		say "restart: no ${RESTART_SIZE}m corpus (run with BENCH_SIZES including $RESTART_SIZE first)"
	else
		export XDG_STATE_HOME="$WORK/state-restart"
		port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
		times=()
		for i in $(seq 0 "$RESTARTS"); do
			t0=$(date +%s.%N)
			"$BIN" --claude.dir="$d" --web.listen-address="127.0.0.1:$port" "${EXP_FLAGS[@]}" >>"$OUT/daemon-restart.log" 2>&1 &
			DAEMON_PID=$!
			until curl -sf "127.0.0.1:$port/-/ready" >/dev/null 2>&1; do
				kill -0 "$DAEMON_PID" 2>/dev/null || die "restart: daemon exited (see $OUT/daemon-restart.log)"
				sleep 0.01
			done
			t1=$(date +%s.%N)
			lines=$(curl -s "127.0.0.1:$port/metrics" | awk '/^claude_transcript_exporter_lines_read_total /{print $2}')
			kill -INT "$DAEMON_PID"
			wait "$DAEMON_PID" 2>/dev/null || true
			DAEMON_PID=
			took=$(calc %.3f "$t1 - $t0")
			if [ "$i" -eq 0 ]; then
				say "restart (${RESTART_SIZE}m corpus, state in a private XDG_STATE_HOME): first start ready in $took s ($lines lines read)"
			else
				say "  restart $i with nothing changed: ready in $took s ($lines lines read)"
				times+=("$took")
			fi
		done
		med=$(printf '%s\n' "${times[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
		ok=$(awk "BEGIN { print ($med < 1) ? \"PASS\" : \"FAIL\" }")
		target "$ok" "restart with nothing changed on ${RESTART_SIZE}m < 1 s: median $med s"
		say
	fi
fi

# ---------------------------------------------------------------- team load

if has_step teamload; then
	# bench/teamload: N simulated machines push the corpus trees'
	# expositions over OTLP through a real collector into a real Thanos
	# receive hashring (3 receivers, RF 2) on loopback, for a fixed time.
	log "team load: $TEAM_MACHINES machines for ${TEAM_SECONDS}s (Thanos is built once by tools/thanos/build.sh)"
	rc=0
	go test -count=1 -timeout 30m -run '^TestTeamLoad$' ./bench/teamload -args \
		-teamload.machines="$TEAM_MACHINES" -teamload.duration="${TEAM_SECONDS}s" \
		-teamload.interval="$TEAM_INTERVAL" -teamload.report="$OUT/teamload.txt" >"$OUT/teamload.log" 2>&1 || rc=$?
	if [ -s "$OUT/teamload.txt" ]; then
		while IFS= read -r line; do say "$line"; done <"$OUT/teamload.txt"
	fi
	if [ "$rc" -eq 0 ]; then
		target PASS "team load: every machine's series through thanos query, nothing refused"
	else
		target FAIL "team load: see $OUT/teamload.log"
	fi
	say
fi

# ---------------------------------------------------------------- targets

if [ "${#TARGETS[@]}" -gt 0 ]; then
	say "targets (issues 4, 6 and 11):"
	for t in "${TARGETS[@]}"; do say "  $t"; done
fi
read -r LOAD1 LOAD5 _ </proc/loadavg
say "load at end: $LOAD1 (1 min), $LOAD5 (5 min)"
