package server

import (
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// breakStore replaces a directory of the file store with a file, so every
// save (and read) in it fails, for root too; the returned func puts it
// back.
func breakStore(t *testing.T, projectDir, sub string) (fix func()) {
	t.Helper()
	dir := filepath.Join(projectDir, "store", sub)
	if err := os.Rename(dir, dir+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	fixed := false
	fix = func() {
		if fixed {
			return
		}
		fixed = true
		if err := os.Remove(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(dir+".away", dir); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(fix)
	return fix
}

// storeDown checks a failed save's reply: 503 store_unavailable, to retry.
// The tests check with GET that the call changed nothing.
func storeDown(t *testing.T, r reply) {
	t.Helper()
	problemOK(t, r, http.StatusServiceUnavailable, "store_unavailable")
	if r.header.Get("Retry-After") == "" || r.body["revision"] != nil {
		t.Fatalf("a failed save must say retry and show no revision: %v %s", r.header, r.raw)
	}
}

// toGate brings a new run on thread to tool_gate of call c1 (add), allowed.
func toGate(sc *sidecar, thread string) string {
	id := sc.startRun(map[string]any{"thread_id": thread, "tools": []any{map[string]any{"name": "add"}, map[string]any{"name": "deploy"}}})
	sc.phase(id, "step_start", nil)
	sc.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
	sc.phase(id, "after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{
		call("c1", "add", nil), call("d1", "deploy", nil)}}})
	sc.phase(id, "tool_gate", map[string]any{"call": call("c1", "add", nil)})
	return id
}

// With the file store unable to write, a call that changes a run answers
// 503 store_unavailable and changes nothing, in memory or in the store: the
// same call once the store writes again succeeds. (Before, it answered 500
// with the change applied in memory, so the retry got 409.)
func TestFailedSaveChangesNothing(t *testing.T) {
	t.Run("create", func(t *testing.T) {
		dir := project(t, fileStore, nil)
		sc := newSidecar(t, dir, Options{Log: quietLog()})
		fix := breakStore(t, dir, "runs")
		storeDown(t, sc.call("POST", "/v1/runs", map[string]any{"thread_id": "t1"}))
		fix()
		// The thread is not left reserved by the run that was not saved.
		sc.must(http.StatusCreated, "POST", "/v1/runs", map[string]any{"thread_id": "t1"})
	})
	t.Run("before_tool_execute", func(t *testing.T) {
		dir := project(t, fileStore, nil)
		sc := newSidecar(t, dir, Options{Log: quietLog()})
		id := toGate(sc, "t2")
		rev := sc.must(200, "GET", "/v1/runs/"+id, nil).num("revision")
		fix := breakStore(t, dir, "runs")
		storeDown(t, sc.call("POST", "/v1/runs/"+id+"/phases/before_tool_execute", map[string]any{"call": call("c1", "add", nil)}))
		fix()
		// The store still has the run, so its thread is not free either.
		problemOK(t, sc.call("POST", "/v1/runs", map[string]any{"thread_id": "t2"}), http.StatusConflict, "phase_out_of_order")
		if got := sc.must(200, "GET", "/v1/runs/"+id, nil); got.num("revision") != rev {
			t.Fatalf("revision %v after a failed save, was %v", got.num("revision"), rev)
		}
		sc.phase(id, "before_tool_execute", map[string]any{"call": call("c1", "add", nil)})
		sc.phase(id, "after_tool_execute", map[string]any{"call": call("c1", "add", nil), "result": map[string]any{"status": "success", "data": 2}})
	})
	t.Run("resume", func(t *testing.T) {
		dir := project(t, fileStore, nil)
		sc := newSidecar(t, dir, Options{Log: quietLog()})
		id := toGate(sc, "t3")
		waitOnDeploy(sc, id)
		fix := breakStore(t, dir, "runs")
		resume := map[string]any{"decisions": []any{map[string]any{"target": "d1", "action": "resume"}}}
		storeDown(t, sc.call("POST", "/v1/runs/"+id+"/resume", resume))
		fix()
		if got := sc.must(200, "GET", "/v1/runs/"+id, nil); got.str("status") != "waiting" {
			t.Fatalf("a failed resume changed the run: %s", got.raw)
		}
		if r := sc.must(200, "POST", "/v1/runs/"+id+"/resume", resume); len(r.body["calls"].([]any)) != 1 {
			t.Fatalf("resume again: %s", r.raw)
		}
	})
	t.Run("run_end", func(t *testing.T) {
		// A run that waited once: its thread named it. run_end that cannot
		// save the thread answered 200, and the thread then refused every
		// new run (409) naming this run, which was gone (404).
		dir := project(t, fileStore, nil)
		sc := newSidecar(t, dir, Options{Log: quietLog()})
		id := toGate(sc, "t4")
		waitOnDeploy(sc, id)
		sc.must(200, "POST", "/v1/runs/"+id+"/resume", map[string]any{"decisions": []any{map[string]any{"target": "d1", "action": "cancel"}}})
		sc.phase(id, "step_end", nil)
		sc.phase(id, "step_start", nil)
		sc.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
		sc.phase(id, "after_inference", map[string]any{"response": map[string]any{"text": "done"}})
		sc.phase(id, "step_end", nil)
		rev := sc.must(200, "GET", "/v1/runs/"+id, nil).num("revision")
		fix := breakStore(t, dir, "threads")
		storeDown(t, sc.call("POST", "/v1/runs/"+id+"/phases/run_end", nil))
		if got := sc.must(200, "GET", "/v1/runs/"+id, nil); got.str("status") != "running" || got.str("termination") != "natural" || got.num("revision") != rev {
			t.Fatalf("a failed run_end changed the run: %s", got.raw)
		}
		fix()
		if end := sc.phase(id, "run_end", nil); end.str("termination") != "natural" {
			t.Fatalf("run_end again: %s", end.raw)
		}
		next := sc.startRun(map[string]any{"thread_id": "t4"})
		if v := sc.must(200, "GET", "/v1/runs/"+next, nil).body["state"].(map[string]any)["policy.visits"]; v != 2.0 {
			t.Fatalf("policy.visits on the next run: %v, want 2", v)
		}
	})
	t.Run("delete", func(t *testing.T) {
		dir := project(t, fileStore, nil)
		sc := newSidecar(t, dir, Options{Log: quietLog()})
		id := toGate(sc, "t5")
		waitOnDeploy(sc, id)
		fix := breakStore(t, dir, "threads")
		storeDown(t, sc.call("DELETE", "/v1/runs/"+id, nil))
		fix()
		if got := sc.must(200, "GET", "/v1/runs/"+id, nil); got.str("status") != "waiting" {
			t.Fatalf("a failed delete changed the run: %s", got.raw)
		}
		sc.must(http.StatusNoContent, "DELETE", "/v1/runs/"+id, nil)
		sc.must(http.StatusCreated, "POST", "/v1/runs", map[string]any{"thread_id": "t5"})
	})
	t.Run("delete in progress", func(t *testing.T) {
		// The store keeps a run it could not delete, and so does the
		// thread: a new run there is refused until the delete goes through.
		dir := project(t, fileStore, nil)
		sc := newSidecar(t, dir, Options{Log: quietLog()})
		id := toGate(sc, "t6")
		fix := breakStore(t, dir, "runs")
		storeDown(t, sc.call("DELETE", "/v1/runs/"+id, nil))
		fix()
		problemOK(t, sc.call("POST", "/v1/runs", map[string]any{"thread_id": "t6"}), http.StatusConflict, "phase_out_of_order")
		sc.must(http.StatusNoContent, "DELETE", "/v1/runs/"+id, nil)
		sc.must(http.StatusCreated, "POST", "/v1/runs", map[string]any{"thread_id": "t6"})
	})
}

// waitOnDeploy takes a run at toGate's point to waiting on d1.
func waitOnDeploy(sc *sidecar, id string) {
	sc.t.Helper()
	sc.phase(id, "before_tool_execute", map[string]any{"call": call("c1", "add", nil)})
	sc.phase(id, "after_tool_execute", map[string]any{"call": call("c1", "add", nil), "result": map[string]any{"status": "success", "data": 2}})
	if g := sc.phase(id, "tool_gate", map[string]any{"call": call("d1", "deploy", nil)}); g.str("decision") != "suspend" {
		sc.t.Fatalf("deploy: %s", g.raw)
	}
	if se := sc.phase(id, "step_end", nil); se.str("termination") != "suspended" {
		sc.t.Fatalf("step_end: %s", se.raw)
	}
}

// /readyz fails while the store cannot write, whether or not a save failed,
// and recovers by itself once it can.
func TestReadyzFollowsTheStore(t *testing.T) {
	dir := project(t, fileStore, nil)
	sc := newSidecar(t, dir, Options{Log: quietLog()})
	sc.must(200, "GET", "/readyz", nil)
	fix := breakStore(t, dir, "runs")
	until(t, "readyz fails with the store broken", func() bool {
		r := sc.call("GET", "/readyz", nil)
		return r.status == http.StatusServiceUnavailable && r.str("code") == "not_ready"
	})
	fix()
	until(t, "readyz recovers with the store fixed", func() bool { return sc.call("GET", "/readyz", nil).status == 200 })

	// A failed save makes it fail at once.
	fix = breakStore(t, dir, "runs")
	storeDown(t, sc.call("POST", "/v1/runs", nil))
	problemOK(t, sc.call("GET", "/readyz", nil), http.StatusServiceUnavailable, "not_ready")
	fix()
	until(t, "readyz recovers after a failed save", func() bool { return sc.call("GET", "/readyz", nil).status == 200 })
}

// until polls cond with a generous deadline.
func until(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20s", what)
		}
	}
}

// markLua writes a thread-scoped key in the middle of a run.
const markLua = `local awaken = require("awaken")
local p = awaken.plugin { id = "mark" }
local seen = p:key("mark.seen", { scope = "thread", reducer = "add", default = 0, schema = { type = "integer" } })
p:on("after_tool_execute", function(ctx) ctx:update(seen, 1) end)
return p
`

// A thread-scoped value written by an acknowledged call survives a graceful
// restart of the sidecar in the middle of the run, and reaches the thread
// when the run ends. (Before, the checkpoint kept run-scoped keys only: the
// value was gone at the same revision.)
func TestThreadValuesSurviveRestart(t *testing.T) {
	dir := project(t, fileStore, map[string]string{"policy.lua": policyLua, "mark.lua": markLua})
	a := newSidecar(t, dir, Options{Log: quietLog()})
	id := toGate(a, "keep")
	a.phase(id, "before_tool_execute", map[string]any{"call": call("c1", "add", nil)})
	a.phase(id, "after_tool_execute", map[string]any{"call": call("c1", "add", nil), "result": map[string]any{"status": "success", "data": 2}})
	before := a.must(200, "GET", "/v1/runs/"+id, nil)
	a.close()

	b := newSidecar(t, dir, Options{Log: quietLog()})
	got := b.must(200, "GET", "/v1/runs/"+id, nil)
	if got.num("revision") != before.num("revision") || got.body["state"].(map[string]any)["mark.seen"] != 1.0 {
		t.Fatalf("after the restart:\n%s\nbefore:\n%s", got.raw, before.raw)
	}
	b.phase(id, "tool_gate", map[string]any{"call": call("d1", "deploy", nil)})
	b.must(200, "POST", "/v1/runs/"+id+"/phases/step_end", nil)
	b.must(200, "POST", "/v1/runs/"+id+"/resume", map[string]any{"decisions": []any{map[string]any{"target": "d1", "action": "cancel"}}})
	b.phase(id, "step_end", nil)
	b.phase(id, "step_start", nil)
	b.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
	b.phase(id, "after_inference", map[string]any{"response": map[string]any{"text": "done"}})
	b.phase(id, "step_end", nil)
	b.phase(id, "run_end", nil)
	next := b.startRun(map[string]any{"thread_id": "keep"})
	if v := b.must(200, "GET", "/v1/runs/"+next, nil).body["state"].(map[string]any)["mark.seen"]; v != 1.0 {
		t.Fatalf("mark.seen on the thread's next run: %v, want 1", v)
	}
}
