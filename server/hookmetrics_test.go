package server

import (
	"context"
	"net/http/httptest"
	"path/filepath"
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
