# awaken-lua: make ci runs everything CI runs (.ci/run): make test (gofmt,
# vet, the race tests, every benchmark once) and make lint.
GO       ?= go
PKGS     := ./...
FUZZTIME ?= 30s
BENCHTIME ?= 1s

# The linters, pinned to versions that build with the go.mod Go version,
# installed into bin/tools/<version>/ on first use.
STATICCHECK_VERSION ?= v0.8.2
DEADCODE_VERSION    ?= v0.52.0
STATICCHECK := $(CURDIR)/bin/tools/staticcheck-$(STATICCHECK_VERSION)/staticcheck
DEADCODE    := $(CURDIR)/bin/tools/deadcode-$(DEADCODE_VERSION)/deadcode

.PHONY: all build ci test vet fmt-check lint bench bench-smoke fuzz run check clean

all: build

build:
	$(GO) build -o bin/awaken-lua ./cmd/awaken-lua

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

ci: test lint

test: fmt-check vet
	$(GO) test -race -count=1 -timeout 15m $(PKGS)
	@$(MAKE) --no-print-directory bench-smoke

# Every benchmark once, so none rots between `make bench` runs.
bench-smoke:
	$(GO) test -run '^$$' -bench . -benchtime 1x -timeout 10m $(PKGS)

# staticcheck, and deadcode -test: a function no test or binary reaches is
# a finding too (deadcode itself exits 0 on findings).
lint: $(STATICCHECK) $(DEADCODE)
	@status=0; \
	$(STATICCHECK) $(PKGS) || status=1; \
	out="$$($(DEADCODE) -test $(PKGS))" || status=1; \
	if [ -n "$$out" ]; then echo "deadcode: unreachable functions:"; echo "$$out"; status=1; fi; \
	exit $$status

$(STATICCHECK):
	GOBIN=$(dir $@) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION)

$(DEADCODE):
	GOBIN=$(dir $@) $(GO) install golang.org/x/tools/cmd/deadcode@$(DEADCODE_VERSION)

# Benchmarks print each figure; the README's Speed table holds the targets.
bench:
	AWAKEN_CC_EVENTS=100000 $(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) $(PKGS)

# The sidecar's load test: tool_gate over loopback HTTP from 16 clients,
# reporting decisions/s and p50/p95/p99 latency, next to the bare net/http
# floor and the handler's own cost; then Claude Code's PreToolUse, over
# loopback and in process.
.PHONY: bench-serve
bench-serve:
	$(GO) test -run '^$$' -bench 'BenchmarkServeToolGate|BenchmarkToolGateHandler|BenchmarkServeClaudeCode|BenchmarkClaudeCodeHandler' -benchtime 5s ./server/
	$(GO) test -run '^$$' -bench 'BenchmarkTwoReplicasToolGate' -benchtime 5s ./server/replicas/

# OPA and awaken-lua side by side on the same Claude Code policy, each a
# server process driven by the same load generator (bench/opa/run.sh;
# DUR, WARM, CLIENTS, RATE, ROUNDS). Installs OPA once with go install.
.PHONY: bench-opa
bench-opa:
	GO="$(GO)" bash bench/opa/run.sh

# Each fuzz target runs for FUZZTIME. Go 1.26's fuzz coordinator can fail
# a target with "context deadline exceeded" at the -fuzztime deadline
# without having found anything (golang/go#75804, fixed in Go 1.27): such a
# failure, with no failing input written, is reported and skipped.
fuzz:
	@set -e; log=$$(mktemp); trap 'rm -f $$log' EXIT; \
	for t in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
		for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$t/*_test.go | sed 's/func //'); do \
			echo "== $$t $$f"; \
			before=$$(ls $$t/testdata/fuzz/$$f 2>/dev/null | wc -l); \
			if ! $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$t > $$log 2>&1; then \
				cat $$log; \
				after=$$(ls $$t/testdata/fuzz/$$f 2>/dev/null | wc -l); \
				if [ "$$after" = "$$before" ] && grep -q '^    context deadline exceeded$$' $$log; then \
					echo "   not a finding: no failing input written (golang/go#75804)"; \
				else exit 1; fi; \
			else tail -n 2 $$log; fi; \
		done; \
	done

# The default configuration: the scripted model, the example plugins and a
# sandbox workspace; no network, no keys.
run:
	$(GO) run ./cmd/awaken-lua run "Why does reserving more items than are in stock fail with 500?"

check:
	$(GO) run ./cmd/awaken-lua check

clean:
	rm -rf bin
