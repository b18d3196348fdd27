# claude-transcript-exporter
BINARY   := claude-transcript-exporter
PKG      := github.com/claude-transcript-exporter/claude-transcript-exporter
VERSION  ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
REVISION ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
BRANCH   ?= $(shell git rev-parse --abbrev-ref HEAD 2>/dev/null || echo unknown)
LDFLAGS  := -s -w \
	-X github.com/prometheus/common/version.Version=$(VERSION) \
	-X github.com/prometheus/common/version.Revision=$(REVISION) \
	-X github.com/prometheus/common/version.Branch=$(BRANCH)
GO       ?= go

.PHONY: all build anonymize run test backends test-short fuzz lint bench corpus up down logs backfill check-deploy clean

all: build

build:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o $(BINARY) ./cmd/claude-transcript-exporter

# The anonymizer: copies a Claude config dir without personal text (for bug
# reports; see README).
anonymize:
	CGO_ENABLED=0 $(GO) build -trimpath -ldflags '$(LDFLAGS)' -o claude-transcript-anonymize ./cmd/claude-transcript-anonymize

# Starts the exporter on this machine's defaults: reads ~/.claude (or
# $CLAUDE_CONFIG_DIR) and serves metrics on 127.0.0.1:9812 (loopback only).
run: build
	./$(BINARY) $(ARGS)

# Every test, with the race detector. The end-to-end tests start real
# backends on loopback ports: Prometheus 3 (and promtool), an OpenTelemetry
# Collector, Jaeger v2 and Thanos, all built from Go modules by tools/backends.sh the
# first time (10-15 minutes on 2 cores) and then taken from
# $${XDG_CACHE_HOME:-~/.cache}/claude-transcript-exporter. CTE_*_BIN variables
# already set are used as they are.
test:
	@backends=$$(tools/backends.sh) && eval "$$backends" && \
	$(GO) test -race -count=1 ./...

# Builds (or finds cached) the test backends and prints where they are.
backends:
	@tools/backends.sh

test-short:
	$(GO) test -count=1 ./mapping/...

# Go's native fuzzer on each target, one after the other, for FUZZTIME
# each (tools/fuzz.sh: a stop on Go 1.26's fuzzing deadline race that
# writes no input is told apart from a finding). A crash is saved as a regression case in the package's
# testdata/fuzz/<Target>/ (replayed by every go test): commit it with the fix.
# FUZZMINTIME bounds the minimizing of each new input (Go's default, 60s,
# can take most of a short run).
FUZZTIME ?= 60s
FUZZMINTIME ?= 5s
FUZZ_TARGETS := \
	FuzzDecode:./mapping/transcript \
	FuzzValidUTF8:./mapping/transcript \
	FuzzStringEnd:./mapping/transcript \
	FuzzCountLines:./mapping/transcript \
	FuzzPipeline:./internal/daemon \
	FuzzTail:./internal/tail \
	FuzzParse:./mapping/claudedir \
	FuzzShellRulesAgree:./internal/testonly/indepcount \
	FuzzAnswers:./mapping/planusage \
	FuzzParseNeverFails:./mapping/limits

fuzz:
	@GO=$(GO) FUZZTIME=$(FUZZTIME) FUZZMINTIME=$(FUZZMINTIME) tools/fuzz.sh $(FUZZ_TARGETS)

lint:
	gofmt -l . | (! grep .) || (echo "gofmt needed on the files above" && exit 1)
	$(GO) vet ./...

bench:
	./bench/run.sh

# Rebuilds testdata/corpus from the original trees in ../shared/corpus/real
# (or $$CTE_SHARED_DIR) with the anonymizer; the same sources give the same bytes.
corpus:
	./tools/corpus/build.sh

# The whole stack (exporter, collector, Tempo, Jaeger, Prometheus,
# Grafana) on a machine with Docker.
up:
	CLAUDE_UID=$$(id -u) CLAUDE_GID=$$(id -g) docker compose up -d --build

down:
	docker compose down

logs:
	docker compose logs -f exporter

# Loads the history of your transcripts into the compose stack's Prometheus,
# so that Grafana shows every past day (README "Last month, day by day"):
# the history as OpenMetrics with timestamps, promtool's TSDB blocks in the
# prometheus-data volume, a restart to load them. Run it before the stack
# first scrapes the exporter, or set HISTORY_END to the hour it did (RFC 3339,
# e.g. 2026-11-20T09:00:00Z) so that history and live samples never overlap.
# HISTORY_STEP is the finest cell of the last 48 hours (days before it).
CLAUDE_DIR   ?= $(HOME)/.claude
HISTORY_DIR  ?= $(CURDIR)/history
HISTORY_STEP ?= 1h
HISTORY_END  ?=
backfill: build
	mkdir -p $(HISTORY_DIR)
	./$(BINARY) --oneshot --claude.dir=$(CLAUDE_DIR) --traces.exporter=none \
		--oneshot.metrics-file=$(HISTORY_DIR)/now.prom \
		--oneshot.history-file=$(HISTORY_DIR)/history.om \
		--oneshot.history-step=$(HISTORY_STEP) $(if $(HISTORY_END),--oneshot.history-end=$(HISTORY_END))
	docker compose run --rm --no-deps --entrypoint promtool \
		-v $(HISTORY_DIR):/history:ro prometheus \
		tsdb create-blocks-from openmetrics --max-block-duration=744h /history/history.om /prometheus
	docker compose restart prometheus

check-deploy:
	@backends=$$(tools/backends.sh otelcol prometheus thanos) && eval "$$backends" && \
	"$$CTE_PROMTOOL_BIN" check config deploy/prometheus/prometheus.yml && \
	"$$CTE_PROMTOOL_BIN" test rules deploy/prometheus/tests/*.yml && \
	$(GO) test -count=1 ./deploy/...

clean:
	rm -f $(BINARY) claude-transcript-anonymize
