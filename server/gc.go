package server

import (
	"os"
	"runtime/debug"
)

// GCPercent is the GOGC that `awaken-lua serve` runs with when the
// environment does not set GOGC. A sidecar's live heap is small (the runs
// in progress) while every request allocates, so the default (100)
// collects often, and each cycle's marking competes with requests for the
// cores: on 2 cores it doubled the p99 of tool_gate. 400 trades memory
// (the heap grows to about 5x the live heap before a cycle) for fewer
// cycles. Set GOGC, and GOMEMLIMIT for a hard ceiling, to choose otherwise.
const GCPercent = 400

// TuneGC applies GCPercent unless GOGC is set, and returns what restores
// the previous setting.
func TuneGC() (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	prev := debug.SetGCPercent(GCPercent)
	return func() { debug.SetGCPercent(prev) }
}
