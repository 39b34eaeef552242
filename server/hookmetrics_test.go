package server

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

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

// Journal records the writer could not write are counted on /metrics: here
// the journal's directory is a file by the time the first record comes.
func TestMetricsJournalRecordsLost(t *testing.T) {
	dir := project(t, "\n[journal]\npath = \"journal\"\n", nil)
	sc := newSidecar(t, dir, Options{Log: quietLog()})
	lost := func() string {
		for _, line := range strings.Split(string(sc.must(http.StatusOK, "GET", "/metrics", nil).raw), "\n") {
			if v, ok := strings.CutPrefix(line, "awaken_journal_records_lost_total "); ok {
				return v
			}
		}
		t.Fatal("no awaken_journal_records_lost_total")
		return ""
	}
	if got := lost(); got != "0" {
		t.Fatalf("before any record: %s lost", got)
	}
	jdir := filepath.Join(dir, "journal")
	if err := os.RemoveAll(jdir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jdir, []byte("in the way"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc.must(http.StatusCreated, "POST", "/v1/runs", map[string]any{})
	deadline := time.Now().Add(10 * time.Second)
	for lost() == "0" {
		if time.Now().After(deadline) {
			t.Fatal("a record the journal could not write was not counted")
		}
		time.Sleep(10 * time.Millisecond)
	}
}
