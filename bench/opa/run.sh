#!/usr/bin/env bash
# make bench-opa: OPA and awaken-lua side by side, each its own server
# process on loopback, deciding the same Claude Code PreToolUse events with
# the same policy (deny Bash(rm *), ask for Bash(git push *)): OPA with
# bench/opa/policy.rego, awaken-lua with the reference policy of
# testdata/agents/claude-code/policy. The same load generator
# (bench/opa/loadgen) drives both, saturated and then at RATE.
#
# OPA is installed once with go install (it needs the Go module proxy, and
# takes about 70 s) into AWAKEN_BENCH_CACHE. Each round runs OPA then
# awaken-lua, so that over ROUNDS both see the same machine.
#
# Usage: [DUR=5s] [WARM=1s] [CLIENTS=16] [RATE=10000] [ROUNDS=3] bash bench/opa/run.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
DUR=${DUR:-5s}
WARM=${WARM:-1s}
CLIENTS=${CLIENTS:-16}
RATE=${RATE:-10000}
ROUNDS=${ROUNDS:-3}
GO=${GO:-go}
OPA_VERSION=v1.22.3
CACHE=${AWAKEN_BENCH_CACHE:-$HOME/.cache/awaken-lua-bench}
OPA=$CACHE/opa
OPA_ADDR=127.0.0.1:8181
AWAKEN_ADDR=127.0.0.1:8282

TMP=$(mktemp -d)
SERVER_PID=

stop_server() {
	if [[ -n $SERVER_PID ]]; then
		kill "$SERVER_PID" 2>/dev/null || true
		for _ in $(seq 50); do
			kill -0 "$SERVER_PID" 2>/dev/null || break
			sleep 0.1
		done
		kill -9 "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
		SERVER_PID=
	fi
}
trap 'stop_server; rm -rf "$TMP"' EXIT
trap 'exit 130' INT TERM

# start_server URL COMMAND...: start the server in the background and wait
# until URL answers 200, for at most 20 s. The port must be free first, so
# that another server on it is not measured instead.
start_server() {
	local url=$1
	shift
	if curl -s -o /dev/null --max-time 1 "$url"; then
		echo "run.sh: something already answers on $url" >&2
		exit 1
	fi
	"$@" >"$TMP/server.log" 2>&1 &
	SERVER_PID=$!
	local deadline=$((SECONDS + 20))
	until [[ $(curl -s -o /dev/null -w '%{http_code}' --max-time 1 "$url" || true) == 200 ]]; do
		if ! kill -0 "$SERVER_PID" 2>/dev/null || ((SECONDS >= deadline)); then
			echo "run.sh: no 200 from $url; the server said:" >&2
			cat "$TMP/server.log" >&2
			exit 1
		fi
		sleep 0.05
	done
}

# loads TARGET ADDR: saturated, then at RATE.
loads() {
	for rate in 0 "$RATE"; do
		"$TMP/loadgen" -target "$1" -addr "$2" -clients "$CLIENTS" -duration "$DUR" -warmup "$WARM" -rate "$rate"
	done
}

# awaken_serve: the sidecar on the reference policy's project, with no
# bearer token (loopback only).
awaken_serve() {
	cd "$ROOT/testdata/agents/claude-code/policy"
	exec env -u AWAKEN_TOKEN "$TMP/awaken-lua" --config awaken.toml serve -addr "$AWAKEN_ADDR" -log-level error
}

cd "$ROOT"
"$GO" build -o "$TMP/awaken-lua" ./cmd/awaken-lua
"$GO" build -o "$TMP/loadgen" ./bench/opa/loadgen
if ! [[ -x $OPA ]] || [[ $("$OPA" version | head -n 1) != "Version: ${OPA_VERSION#v}" ]]; then
	echo "installing OPA $OPA_VERSION into $CACHE (once, about 70 s)"
	mkdir -p "$CACHE"
	GOBIN=$CACHE "$GO" install "github.com/open-policy-agent/opa@$OPA_VERSION"
fi

echo "# awaken-lua $(git rev-parse --short HEAD 2>/dev/null || echo "(no git)"), OPA $OPA_VERSION, $(nproc) cores, DUR=$DUR WARM=$WARM CLIENTS=$CLIENTS RATE=$RATE"
for round in $(seq "$ROUNDS"); do
	echo "# round $round of $ROUNDS"
	# --skip-version-check: no call to GitHub at start-up.
	start_server "http://$OPA_ADDR/health" \
		"$OPA" run --server --addr "$OPA_ADDR" --log-level error --skip-version-check bench/opa/policy.rego
	loads opa "$OPA_ADDR"
	stop_server

	start_server "http://$AWAKEN_ADDR/readyz" awaken_serve
	loads awaken "$AWAKEN_ADDR"
	stop_server
done
