// Package gctune sets the collector up for a long-running sidecar.
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

// TuneGC keeps the ballast unless GOGC or GOMEMLIMIT is set, and returns
// what lets it go.
func TuneGC() (release func()) {
	for _, v := range []string{"GOGC", "GOMEMLIMIT"} {
		if _, set := os.LookupEnv(v); set {
			return func() {}
		}
	}
	ballast := make([]byte, BallastSize)
	return func() { runtime.KeepAlive(ballast) }
}
