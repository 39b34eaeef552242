package gctune

import (
	"os"
	"runtime"
	rtmetrics "runtime/metrics"
	"testing"
)

// liveHeap is the heap the collector found live at its last cycle.
func liveHeap() uint64 {
	runtime.GC()
	s := []rtmetrics.Sample{{Name: "/gc/heap/live:bytes"}}
	rtmetrics.Read(s)
	return s[0].Value.Uint64()
}

// TuneGC keeps the heap floor unless the environment tunes the collector.
func TestTuneGC(t *testing.T) {
	for _, tc := range []struct {
		env   map[string]string
		floor bool
	}{
		{nil, true},
		{map[string]string{"GOGC": "100"}, false},
		{map[string]string{"GOMEMLIMIT": "1GiB"}, false},
	} {
		for _, v := range []string{"GOGC", "GOMEMLIMIT"} {
			t.Setenv(v, "") // restored after the test
			os.Unsetenv(v)
		}
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		before := liveHeap()
		release := TuneGC()
		during := liveHeap()
		release()
		after := liveHeap()
		if got := during >= before+BallastSize*9/10; got != tc.floor {
			t.Errorf("%v: live heap %d -> %d: floor kept = %v, want %v", tc.env, before, during, got, tc.floor)
		}
		if after >= before+BallastSize/2 {
			t.Errorf("%v: the floor outlived its release: live heap %d -> %d", tc.env, before, after)
		}
	}
}

// TuneGC runs with at least MinProcs processors unless GOMAXPROCS is set,
// and its release puts back what there was.
func TestTuneGCProcessors(t *testing.T) {
	for _, tc := range []struct {
		env   string // GOMAXPROCS, "" for unset
		floor bool
	}{{"", true}, {"2", false}} {
		t.Setenv("GOMAXPROCS", tc.env) // restored after the test
		if tc.env == "" {
			os.Unsetenv("GOMAXPROCS")
		}
		runtime.SetDefaultGOMAXPROCS()
		before := runtime.GOMAXPROCS(0)
		release := TuneGC()
		during := runtime.GOMAXPROCS(0)
		release()
		after := runtime.GOMAXPROCS(0)
		want := before
		if tc.floor {
			want = max(before, MinProcs)
		}
		if during != want || after != before {
			t.Errorf("GOMAXPROCS=%q: processors %d -> %d -> %d, want %d during and %d after", tc.env, before, during, after, want, before)
		}
	}
}
