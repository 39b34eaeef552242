package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

const fileStore = `
[store]
kind = "file"
path = "store"
`

// A thread waits for a decision; the sidecar and its host close; a new
// host and sidecar on the same store directory resume the run by id, and
// it completes with its state and its thread intact.
func TestRestartWithFileStoreWhileWaiting(t *testing.T) {
	dir := project(t, fileStore, nil)
	a := newSidecar(t, dir, Options{Log: quietLog()})
	if st, _ := a.must(200, "GET", "/v1/plugins", nil).body["store"].(map[string]any); st["kind"] != "file" {
		t.Fatalf("store: %v", st)
	}
	if v := a.metricValue("awaken_store_corrupt_files"); v != 0 {
		t.Fatalf("awaken_store_corrupt_files = %v on a clean store", v)
	}
	id := a.startRun(map[string]any{"thread_id": "ops", "tools": []any{map[string]any{"name": "deploy"}, map[string]any{"name": "add"}}})
	a.phase(id, "step_start", nil)
	a.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
	a.phase(id, "after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{
		call("a1", "add", map[string]any{"a": 1, "b": 1}), call("d1", "deploy", map[string]any{"env": "prod"}),
	}}})
	a.phase(id, "tool_gate", map[string]any{"call": call("a1", "add", nil)})
	a.phase(id, "before_tool_execute", map[string]any{"call": call("a1", "add", nil)})
	a.phase(id, "after_tool_execute", map[string]any{"call": call("a1", "add", nil), "result": map[string]any{"status": "success", "data": 2}})
	ticket := a.phase(id, "tool_gate", map[string]any{"call": call("d1", "deploy", nil)}).body["ticket"].(map[string]any)
	if se := a.phase(id, "step_end", nil); se.str("termination") != "suspended" {
		t.Fatalf("step_end: %s", se.raw)
	}
	waiting := a.must(200, "GET", "/v1/runs/"+id, nil)
	a.close()

	if _, err := os.Stat(filepath.Join(dir, "store", "runs", id+".json")); err != nil {
		t.Fatalf("the waiting run should be a file in the store: %v", err)
	}
	b := newSidecar(t, dir, Options{Log: quietLog()})
	got := b.must(200, "GET", "/v1/runs/"+id, nil)
	if got.str("status") != "waiting" || got.num("revision") != waiting.num("revision") || got.num("step") != 1 {
		t.Fatalf("after the restart:\n%s\nbefore:\n%s", got.raw, waiting.raw)
	}
	st := got.body["state"].(map[string]any)
	if st["policy.calls"] != 1.0 || st["policy.visits"] != 1.0 {
		t.Fatalf("state after the restart: %s", got.raw)
	}
	res := b.must(200, "POST", "/v1/runs/"+id+"/resume", map[string]any{"decisions": []any{
		map[string]any{"target": ticket["id"], "action": "resume"},
	}})
	if res.body["calls"].([]any)[0].(map[string]any)["id"] != "d1" {
		t.Fatalf("resume: %s", res.raw)
	}
	if g := b.phase(id, "tool_gate", map[string]any{"call": call("d1", "deploy", nil)}); g.str("decision") != "allow" {
		t.Fatalf("gate after resume: %s", g.raw)
	}
	b.phase(id, "before_tool_execute", map[string]any{"call": call("d1", "deploy", nil)})
	b.phase(id, "after_tool_execute", map[string]any{"call": call("d1", "deploy", nil), "result": map[string]any{"status": "success", "data": "ok"}})
	b.phase(id, "step_end", nil)
	b.phase(id, "step_start", nil)
	// The tools given at creation were checkpointed with the run: a step
	// that names none offers them after the restart too.
	bi := b.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
	var names []string
	for _, tl := range bi.body["request"].(map[string]any)["tools"].([]any) {
		names = append(names, tl.(map[string]any)["name"].(string))
	}
	if fmt.Sprint(names) != "[deploy add]" {
		t.Fatalf("tools after the restart: %v\n%s", names, bi.raw)
	}
	b.phase(id, "after_inference", map[string]any{"response": map[string]any{"text": "deployed"}})
	b.phase(id, "step_end", nil)
	if end := b.phase(id, "run_end", nil); end.str("termination") != "natural" {
		t.Fatalf("run_end: %s", end.raw)
	}
	if _, err := os.Stat(filepath.Join(dir, "store", "runs", id+".json")); !os.IsNotExist(err) {
		t.Fatalf("a finished run should leave the store: %v", err)
	}
	// The thread carries over, and it no longer waits: a new run starts.
	next := b.startRun(map[string]any{"thread_id": "ops"})
	if st := b.must(200, "GET", "/v1/runs/"+next, nil).body["state"].(map[string]any); st["policy.visits"] != 2.0 {
		t.Fatalf("thread state after the restart: %v", st)
	}
}

// A run in the middle of a step survives a restart too: every call that
// changes it is checkpointed.
func TestRestartMidStep(t *testing.T) {
	dir := project(t, fileStore, nil)
	a := newSidecar(t, dir, Options{Log: quietLog()})
	id := a.startRun(map[string]any{"tools": []any{map[string]any{"name": "add"}}})
	a.phase(id, "step_start", nil)
	a.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
	a.phase(id, "after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{call("c1", "add", nil)}}})
	first := a.phase(id, "tool_gate", map[string]any{"call": call("c1", "add", nil)})
	a.close()

	b := newSidecar(t, dir, Options{Log: quietLog()})
	// The gate's decision was saved: the retry after the restart gets it.
	if again := b.phase(id, "tool_gate", map[string]any{"call": call("c1", "add", nil)}); string(again.raw) != string(first.raw) {
		t.Fatalf("gate after restart:\n%s\n%s", first.raw, again.raw)
	}
	b.phase(id, "before_tool_execute", map[string]any{"call": call("c1", "add", nil)})
	b.phase(id, "after_tool_execute", map[string]any{"call": call("c1", "add", nil), "result": map[string]any{"status": "success", "data": 0}})
	b.phase(id, "step_end", nil)
}

// A waiting run whose checkpoint was torn while the sidecar was down is
// set aside; its thread is not left refusing every new run: the first
// POST /v1/runs on it answers 409 run_lost naming the set-aside file (the
// run's pending decisions are gone), and the next one starts.
func TestRestartWithALostWaitingRun(t *testing.T) {
	dir := project(t, fileStore, nil)
	a := newSidecar(t, dir, Options{Log: quietLog()})
	id := a.startRun(map[string]any{"thread_id": "ops", "tools": []any{map[string]any{"name": "deploy"}}})
	a.phase(id, "step_start", nil)
	a.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
	a.phase(id, "after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{call("d1", "deploy", nil)}}})
	a.phase(id, "tool_gate", map[string]any{"call": call("d1", "deploy", nil)})
	if se := a.phase(id, "step_end", nil); se.str("termination") != "suspended" {
		t.Fatalf("step_end: %s", se.raw)
	}
	a.close()
	path := filepath.Join(dir, "store", "runs", id+".json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}

	c := newSidecar(t, dir, Options{Log: quietLog()})
	lost := c.must(409, "POST", "/v1/runs", map[string]any{"thread_id": "ops"})
	if lost.str("code") != "run_lost" || !strings.Contains(lost.str("detail"), id+".json.corrupt-") {
		t.Fatalf("a run on the thread of a lost run: %s", lost.raw)
	}
	c.startRun(map[string]any{"thread_id": "ops"})
}

// Many runs at once, and many calls on one run at once: the race detector
// watches, and every call on one run is serialized.
func TestConcurrentRuns(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog(), MaxConcurrent: 256})
	const runs = 24
	var wg sync.WaitGroup
	errs := make(chan error, runs*2)
	for i := 0; i < runs; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			if err := driveRun(sc, fmt.Sprintf("thread-%d", i)); err != nil {
				errs <- err
			}
		}(i)
	}
	// Parallel gates on one run: each call is decided once.
	id := sc.startRun(map[string]any{"tools": []any{map[string]any{"name": "add"}}})
	sc.phase(id, "step_start", nil)
	sc.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
	var announced []any
	for i := 0; i < 8; i++ {
		announced = append(announced, call(fmt.Sprintf("c%d", i), "add", nil))
	}
	sc.phase(id, "after_inference", map[string]any{"response": map[string]any{"tool_calls": announced}})
	const gates = 16
	for i := 0; i < gates; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			r := sc.call("POST", "/v1/runs/"+id+"/phases/tool_gate", map[string]any{"call": call(fmt.Sprintf("c%d", i%8), "add", nil)})
			if r.status != 200 || r.str("decision") != "allow" {
				errs <- fmt.Errorf("parallel gate: %d %s", r.status, r.raw)
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	got := sc.must(200, "GET", "/v1/runs/"+id, nil)
	if n := len(got.body["state"].(map[string]any)["__runtime.tool_calls"].(map[string]any)); n != 8 {
		t.Fatalf("%d calls recorded, want 8", n)
	}
}

// driveRun runs one whole two-step run over HTTP.
func driveRun(sc *sidecar, thread string) error {
	do := func(path string, body any) (reply, error) {
		r := sc.call("POST", path, body)
		if r.status/100 != 2 {
			return r, fmt.Errorf("%s: %d %s", path, r.status, r.raw)
		}
		return r, nil
	}
	r, err := do("/v1/runs", map[string]any{"thread_id": thread, "tools": []any{map[string]any{"name": "add"}}})
	if err != nil {
		return err
	}
	p := "/v1/runs/" + r.str("run_id") + "/phases/"
	steps := []struct {
		phase string
		body  any
	}{
		{"step_start", nil},
		{"before_inference", map[string]any{"request": map[string]any{}}},
		{"after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{call("c1", "add", nil)}}}},
		{"tool_gate", map[string]any{"call": call("c1", "add", nil)}},
		{"before_tool_execute", map[string]any{"call": call("c1", "add", nil)}},
		{"after_tool_execute", map[string]any{"call": call("c1", "add", nil), "result": map[string]any{"status": "success", "data": 1}}},
		{"step_end", nil},
		{"step_start", nil},
		{"before_inference", map[string]any{"request": map[string]any{}}},
		{"after_inference", map[string]any{"response": map[string]any{"text": "done"}}},
		{"step_end", nil},
		{"run_end", nil},
	}
	for _, s := range steps {
		if r, err = do(p+s.phase, s.body); err != nil {
			return err
		}
	}
	if r.str("termination") != "natural" {
		return fmt.Errorf("%s ended %q", thread, r.str("termination"))
	}
	return nil
}

// versioned stamps its version into state at every phase; a run that
// mixed generations would hold two versions.
func versioned(v int) string {
	return fmt.Sprintf(`local awaken = require("awaken")
local p = awaken.plugin { id = "stamp" }
local seen = p:key("stamp.seen", { reducer = "union", default = {} })
for _, ph in ipairs({ "run_start", "step_start", "before_inference", "after_inference", "step_end", "run_end" }) do
  p:on(ph, function(ctx) ctx:update(seen, %d) end)
end
p:tool_gate(function(ctx, call)
  if call.name == "v" and %d > 1 then return awaken.block("version %d blocks v") end
end)
return p
`, v, v, v)
}

// Reloading while serving: a running run keeps the generation it started
// on (its plugins, its header), new runs get the new one, and runs keep
// succeeding while plugins reload under load.
func TestReloadWhileServing(t *testing.T) {
	dir := project(t, "", map[string]string{"stamp.lua": versioned(1)})
	sc := newSidecar(t, dir, Options{Log: quietLog(), MaxConcurrent: 256})
	old := sc.startRun(map[string]any{"tools": []any{map[string]any{"name": "v"}}})
	sc.phase(old, "step_start", nil)

	writeFile(t, filepath.Join(dir, "scripts", "stamp.lua"), versioned(2))
	if r := sc.must(200, "POST", "/v1/plugins/reload", nil); r.str("generation") != "g2" {
		t.Fatalf("reload: %s", r.raw)
	}
	sc.phase(old, "before_inference", map[string]any{"request": map[string]any{}})
	sc.phase(old, "after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{call("c1", "v", nil)}}})
	g := sc.phase(old, "tool_gate", map[string]any{"call": call("c1", "v", nil)})
	if g.str("decision") != "allow" || g.header.Get(GenerationHeader) != "g1" {
		t.Fatalf("the old run must keep g1's plugins: %s (%s)", g.raw, g.header.Get(GenerationHeader))
	}
	got := sc.must(200, "GET", "/v1/runs/"+old, nil)
	if seen := got.body["state"].(map[string]any)["stamp.seen"].([]any); len(seen) != 1 || seen[0] != 1.0 || got.str("generation") != "g1" {
		t.Fatalf("old run state: %s", got.raw)
	}
	fresh := sc.must(201, "POST", "/v1/runs", map[string]any{"tools": []any{map[string]any{"name": "v"}}})
	if fresh.str("generation") != "g2" {
		t.Fatalf("a new run starts on g2: %s", fresh.raw)
	}
	id := fresh.str("run_id")
	sc.phase(id, "step_start", nil)
	sc.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
	sc.phase(id, "after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{call("c1", "v", nil)}}})
	if g := sc.phase(id, "tool_gate", map[string]any{"call": call("c1", "v", nil)}); g.str("decision") != "block" {
		t.Fatalf("the new run uses g2's gate: %s", g.raw)
	}

	// Under load: runs in parallel while the plugins reload.
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 64)
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if err := driveRun(sc, fmt.Sprintf("load-%d-%d", w, i)); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	for v := 3; v < 12; v++ {
		writeFile(t, filepath.Join(dir, "scripts", "stamp.lua"), versioned(v))
		if r := sc.call("POST", "/v1/plugins/reload", nil); r.status != http.StatusOK || r.str("last_result") != "loaded" {
			t.Errorf("reload %d: %s", v, r.raw)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// With the memory store a run is written when it leaves memory, not after
// every call: a second server on the same host finds it after Close.
func TestMemoryStoreSavesOnClose(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog()})
	id := sc.startRun(map[string]any{"tools": []any{map[string]any{"name": "add"}}})
	sc.phase(id, "step_start", nil)
	rev := sc.must(200, "GET", "/v1/runs/"+id, nil).num("revision")
	sc.srv.Close()
	srv := New(sc.h, Options{Log: quietLog()})
	second := &sidecar{t: t, h: sc.h, srv: srv, ts: httptest.NewServer(srv)}
	defer func() { second.ts.Close(); srv.Close() }()
	got := second.must(200, "GET", "/v1/runs/"+id, nil)
	if got.num("step") != 1 || got.num("revision") != rev {
		t.Fatalf("after Close: %s", got.raw)
	}
	second.phase(id, "before_inference", map[string]any{"request": map[string]any{"tools": []any{}}})
}
