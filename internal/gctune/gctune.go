// Package gctune sets the Go runtime up for a long-running sidecar: a heap
// floor, so the collector runs rarely, and enough processors that it marks
// with a dedicated worker.
package gctune

import (
	"os"
	"runtime"
)

// BallastSize is the heap floor `awaken-lua serve` keeps unless the
// environment sets GOGC or GOMEMLIMIT: a pointer-free allocation that is
// never touched, so the collector counts it as live heap (the next cycle
// starts when the heap has doubled past it) while it costs no marking and,
// as its pages are never written, no resident memory.
//
// Why: a sidecar's live heap is small (the runs in progress) while every
// request allocates, so with the default heap goal the collector runs
// several times a second under load, and each cycle (its pauses, its
// marking on one of two cores) delays the replies in flight; the figures
// are in server/README.md ("Performance"). The price is that the heap may
// grow to about 256 MiB plus twice the live heap before a cycle (with
// GOGC=100). Set GOGC or GOMEMLIMIT to tune the collector yourself.
const BallastSize = 128 << 20

// MinProcs is how many processors (GOMAXPROCS) `awaken-lua serve` runs
// Go with at least, unless the environment sets GOMAXPROCS.
//
// Why: the collector takes a quarter of the processors while it marks.
// With fewer than four it cannot take a whole one, and marks with
// fractional workers instead, each of which runs until its processor has
// had its share of the mark so far, milliseconds at once late in a long
// mark, whatever waits in that processor's queue; on two cores both
// processors then mark at once while replies wait. With four it marks
// with one dedicated worker, and the operating system shares the cores
// between it and the rest. On the 2-core development VM this took the
// Claude Code benchmark's p95 at 10,000 decisions/s from 0.71-2.1 ms to
// 0.45-0.73 ms (server/README.md, "Performance").
const MinProcs = 4

// TuneGC keeps the ballast unless GOGC or GOMEMLIMIT is set, and at least
// MinProcs processors unless GOMAXPROCS is set, and returns what undoes
// both.
func TuneGC() (release func()) {
	procs := func() {}
	if _, set := os.LookupEnv("GOMAXPROCS"); !set && runtime.GOMAXPROCS(0) < MinProcs {
		prev := runtime.GOMAXPROCS(MinProcs)
		procs = func() { runtime.GOMAXPROCS(prev) }
	}
	for _, v := range []string{"GOGC", "GOMEMLIMIT"} {
		if _, set := os.LookupEnv(v); set {
			return procs
		}
	}
	ballast := make([]byte, BallastSize)
	return func() {
		runtime.KeepAlive(ballast)
		procs()
	}
}
