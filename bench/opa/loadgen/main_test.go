package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// event is the part of a PreToolUse event the fake servers check.
type event struct {
	SessionID     string `json:"session_id"`
	HookEventName string `json:"hook_event_name"`
	ToolName      string `json:"tool_name"`
	ToolInput     struct {
		Command string `json:"command"`
	} `json:"tool_input"`
	ToolUseID string `json:"tool_use_id"`
}

// fakeServer answers as target does with the reference policy, after
// checking each request: the path, the JSON event, and per client the
// tool_use_ids toolu_<c>_0, _1, ... in order (so each is fresh) with the
// session s<c>-<i/2> (so sessions come in pairs). It counts the requests;
// after fail of them, it answers failStatus.
type fakeServer struct {
	t          *testing.T
	target     string
	fail       int
	failStatus int

	mu   sync.Mutex
	n    int
	next map[int]int // client: its next request's index
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n++
	if f.fail > 0 && f.n > f.fail {
		w.WriteHeader(f.failStatus)
		if f.failStatus != http.StatusNoContent {
			fmt.Fprint(w, `{"code":"internal_error"}`)
		}
		return
	}
	if err := f.check(r); err != nil {
		f.t.Error(err)
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, map[string]string{"awaken": `{}`, "opa": `{"result":{}}`}[f.target])
}

func (f *fakeServer) check(r *http.Request) error {
	path := map[string]string{"awaken": "/v1/hooks/claude-code", "opa": "/v1/data/claude/decision"}[f.target]
	if r.Method != http.MethodPost || r.URL.Path != path || r.Header.Get("Content-Type") != "application/json" {
		return fmt.Errorf("%s %s %q, want POST %s application/json", r.Method, r.URL.Path, r.Header.Get("Content-Type"), path)
	}
	// The whole body is one JSON value: Content-Length was right.
	body, err := io.ReadAll(r.Body)
	if err == nil && f.target == "opa" {
		var in struct {
			Input json.RawMessage `json:"input"`
		}
		err = json.Unmarshal(body, &in)
		body = in.Input
	}
	var ev event
	if err == nil {
		err = json.Unmarshal(body, &ev)
	}
	if err != nil {
		return fmt.Errorf("body: %v", err)
	}
	var c, i int
	if _, err := fmt.Sscanf(ev.ToolUseID, "toolu_%d_%d", &c, &i); err != nil {
		return fmt.Errorf("tool_use_id %q: %v", ev.ToolUseID, err)
	}
	if want := f.next[c]; i != want {
		return fmt.Errorf("tool_use_id %q, want toolu_%d_%d", ev.ToolUseID, c, want)
	}
	f.next[c]++
	if want := fmt.Sprintf("s%d-%d", c, i/2); ev.SessionID != want {
		return fmt.Errorf("%s: session_id %q, want %q", ev.ToolUseID, ev.SessionID, want)
	}
	if ev.HookEventName != "PreToolUse" || ev.ToolName != "Bash" || ev.ToolInput.Command != commands[i%len(commands)] {
		return fmt.Errorf("%s: event %+v", ev.ToolUseID, ev)
	}
	return nil
}

// seen returns how many requests the server saw, and from each client.
func (f *fakeServer) seen() (int, map[int]int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n, f.next
}

func serve(t *testing.T, f *fakeServer) string {
	f.t, f.next = t, map[int]int{}
	ts := httptest.NewServer(f)
	t.Cleanup(ts.Close)
	return strings.TrimPrefix(ts.URL, "http://")
}

func TestRun(t *testing.T) {
	for _, target := range []string{"awaken", "opa"} {
		t.Run(target+"/paced", func(t *testing.T) {
			f := &fakeServer{target: target}
			// 2 clients, one request each per 1 ms, for 50 ms: 50 each.
			r, err := run(config{addr: serve(t, f), target: target, clients: 2, duration: 50 * time.Millisecond, rate: 2000})
			if err != nil {
				t.Fatal(err)
			}
			if n, next := f.seen(); r.requests != 100 || n != 100 || next[0] != 50 || next[1] != 50 {
				t.Errorf("counted %d, server saw %d (%v), want 100 (50 a client)", r.requests, n, next)
			}
			checkResult(t, r)
		})
		t.Run(target+"/saturated", func(t *testing.T) {
			f := &fakeServer{target: target}
			r, err := run(config{addr: serve(t, f), target: target, clients: 3, duration: 50 * time.Millisecond, warmup: 10 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			// The warm-up's requests, and those whose replies came after
			// the end, were sent but not counted.
			if n, next := f.seen(); r.requests < 1 || r.requests > n || len(next) != 3 {
				t.Errorf("counted %d, server saw %d from %d clients", r.requests, n, len(next))
			}
			checkResult(t, r)
		})
	}
}

func checkResult(t *testing.T, r result) {
	t.Helper()
	if r.perSec <= 0 || r.p50 <= 0 || !slices.IsSorted([]time.Duration{r.p50, r.p95, r.p99, r.max}) {
		t.Errorf("result %+v", r)
	}
}

func TestRunFails(t *testing.T) {
	for _, c := range []struct {
		status int
		want   string
	}{{500, `HTTP 500: {"code":"internal_error"}`}, {204, "HTTP 204"}} {
		f := &fakeServer{target: "opa", fail: 10, failStatus: c.status}
		_, err := run(config{addr: serve(t, f), target: "opa", clients: 2, duration: time.Second})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "request body: {") {
			t.Errorf("status %d: error %v, want one with %q and the request body", c.status, err, c.want)
		}
	}
	// Nothing listens on the server's address once it is closed.
	ts := httptest.NewServer(http.NotFoundHandler())
	ts.Close()
	if _, err := run(config{addr: strings.TrimPrefix(ts.URL, "http://"), target: "awaken", clients: 1, duration: time.Second}); err == nil {
		t.Error("no error with no server")
	}
	if _, err := run(config{addr: "127.0.0.1:1", target: "envoy", clients: 1, duration: time.Second}); err == nil {
		t.Error("no error with an unknown target")
	}
}
