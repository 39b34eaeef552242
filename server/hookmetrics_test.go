package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/host"
)

// With HookMetrics, /metrics shows each plugin's call latency.
func TestHookLatencyByPlugin(t *testing.T) {
	dir := project(t, "", nil)
	hooks := NewHookMetrics()
	h, err := host.Open(context.Background(), host.Options{ConfigPath: filepath.Join(dir, "awaken.toml"), HookObserver: hooks.Observe})
	if err != nil {
		t.Fatal(err)
	}
	srv := New(h, Options{Hooks: hooks})
	ts := httptest.NewServer(srv)
	sc := &sidecar{t: t, h: h, srv: srv, ts: ts}
	t.Cleanup(sc.close)
	sc.startRun(map[string]any{})
	r := sc.must(200, "GET", "/metrics", nil)
	text := string(r.raw)
	if !strings.Contains(text, `awaken_hook_duration_seconds_count{plugin="policy"} 1`) {
		t.Fatalf("no hook latency for the policy plugin:\n%s", text)
	}
}

// /metrics carries the collector's figures, under the Prometheus Go
// client's names: a collection between two scrapes shows in both counters.
func TestMetricsGoRuntime(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog()})
	read := func() map[string]float64 {
		r := sc.must(http.StatusOK, "GET", "/metrics", nil)
		got := map[string]float64{}
		for _, line := range strings.Split(string(r.raw), "\n") {
			if name, v, ok := strings.Cut(line, " "); ok && strings.HasPrefix(name, "go_") {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					t.Fatalf("%q: %v", line, err)
				}
				got[name] = f
			}
		}
		return got
	}
	before := read()
	runtime.GC()
	after := read()
	if after["go_gc_cycles_total_gc_cycles_total"] < before["go_gc_cycles_total_gc_cycles_total"]+1 {
		t.Fatalf("cycles %v then %v, with a collection between", before["go_gc_cycles_total_gc_cycles_total"], after["go_gc_cycles_total_gc_cycles_total"])
	}
	if after["go_cpu_classes_gc_total_cpu_seconds_total"] <= before["go_cpu_classes_gc_total_cpu_seconds_total"] || after["go_gc_heap_live_bytes"] <= 0 ||
		after["go_goroutines"] < 2 {
		t.Fatalf("before %v, after %v", before, after)
	}
}
