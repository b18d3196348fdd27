#!/usr/bin/env bash
# Builds (or finds in their caches) the real backends the tests run against,
# all from Go modules, and prints one shell assignment per binary:
#
#   CTE_OTELCOL_BIN=…     OpenTelemetry Collector (tools/otelcol/build.sh)
#   CTE_PROMETHEUS_BIN=…  Prometheus 3            (tools/prometheus/build.sh)
#   CTE_PROMTOOL_BIN=…    promtool                (tools/prometheus/build.sh)
#   CTE_JAEGER_BIN=…      Jaeger v2               (tools/jaeger/build.sh)
#   CTE_THANOS_BIN=…      Thanos                  (tools/thanos/build.sh)
#
# Usage: eval "$(tools/backends.sh [otelcol] [prometheus] [jaeger] [thanos])"
# (no argument: all four). A variable already set in the environment is
# kept, so a machine with its own binaries builds nothing. Progress goes to
# stderr; cold builds take 10-15 minutes on 2 cores, cached ones a second.
set -euo pipefail

tools=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
want=("$@")
if [[ ${#want[@]} -eq 0 ]]; then
	want=(otelcol prometheus jaeger thanos)
fi

# built NAME: runs tools/NAME/build.sh and prints the last line it printed.
# Callers assign its output in a plain command (not after || or &&), so
# that set -e stops at a failed build.
built() {
	local out
	out=$("$tools/$1/build.sh") || return 1
	tail -n1 <<<"$out"
}

for b in "${want[@]}"; do
	case $b in
	otelcol)
		bin=${CTE_OTELCOL_BIN:-}
		if [[ -z $bin ]]; then bin=$(built otelcol); fi
		printf 'export CTE_OTELCOL_BIN=%q\n' "$bin"
		;;
	prometheus)
		prom=${CTE_PROMETHEUS_BIN:-} promtool=${CTE_PROMTOOL_BIN:-}
		if [[ -z $prom || -z $promtool ]]; then
			dir=$(built prometheus)
			prom=${prom:-$dir/prometheus} promtool=${promtool:-$dir/promtool}
		fi
		printf 'export CTE_PROMETHEUS_BIN=%q\nexport CTE_PROMTOOL_BIN=%q\n' "$prom" "$promtool"
		;;
	jaeger)
		bin=${CTE_JAEGER_BIN:-}
		if [[ -z $bin ]]; then bin=$(built jaeger); fi
		printf 'export CTE_JAEGER_BIN=%q\n' "$bin"
		;;
	thanos)
		bin=${CTE_THANOS_BIN:-}
		if [[ -z $bin ]]; then
			dir=$(built thanos)
			bin=$dir/thanos
		fi
		printf 'export CTE_THANOS_BIN=%q\n' "$bin"
		;;
	*)
		echo "backends.sh: unknown backend '$b' (otelcol, prometheus, jaeger, thanos)" >&2
		exit 2
		;;
	esac
done
