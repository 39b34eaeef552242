# awaken-lua: make test runs everything CI runs.
GO       ?= go
PKGS     := ./...
FUZZTIME ?= 30s
BENCHTIME ?= 1s

.PHONY: all build test vet fmt-check bench fuzz run check clean

all: build

build:
	$(GO) build -o bin/awaken-lua ./cmd/awaken-lua

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed on:"; echo "$$out"; exit 1; fi

vet:
	$(GO) vet $(PKGS)

test: fmt-check vet
	$(GO) test -race -count=1 -timeout 15m $(PKGS)

# Benchmarks print each figure next to SPEC.md section 14's targets (see README).
bench:
	$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) $(PKGS)

# The sidecar's load test (SPEC §14): tool_gate over loopback HTTP from 16
# clients, reporting decisions/s and p50/p95/p99 latency, next to the bare
# net/http floor and the handler's own cost.
.PHONY: bench-serve
bench-serve:
	$(GO) test -run '^$$' -bench 'BenchmarkServeToolGate|BenchmarkToolGateHandler' -benchtime 5s ./server/

# Each fuzz target runs for FUZZTIME.
fuzz:
	@set -e; for t in $$(grep -rl --include='*_test.go' '^func Fuzz' . | xargs -n1 dirname | sort -u); do \
		for f in $$(grep -ho '^func Fuzz[A-Za-z0-9_]*' $$t/*_test.go | sed 's/func //'); do \
			echo "== $$t $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$t; \
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
