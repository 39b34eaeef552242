package server

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// live reports whether run id is in memory.
func (sc *sidecar) live(id string) bool {
	sc.srv.mu.Lock()
	defer sc.srv.mu.Unlock()
	_, ok := sc.srv.runs[id]
	return ok
}

// holder is the run that holds thread, or "".
func (sc *sidecar) holder(thread string) string {
	sc.srv.mu.Lock()
	defer sc.srv.mu.Unlock()
	return sc.srv.threads[thread]
}

// sizes reads how many runs the server holds in memory and parked.
func (sc *sidecar) sizes() (live, parked int) {
	sc.srv.mu.Lock()
	defer sc.srv.mu.Unlock()
	for _, o := range sc.srv.out {
		if o.parked {
			parked++
		}
	}
	return len(sc.srv.runs), parked
}

// A client that opens runs and never ends them: past MaxRuns the least
// recently used leave memory. A durable store has each saved, so its next
// call restores it; the memory store forgets it, as after a restart
// (parking it would copy it and keep it in memory all the same).
func TestMaxRunsBoundsMemory(t *testing.T) {
	const bound = 4
	for _, c := range []struct {
		store   string
		durable bool
	}{{"", false}, {"\n[store]\nkind = \"file\"\npath = \"state\"\n", true}} {
		t.Run(fmt.Sprint("durable=", c.durable), func(t *testing.T) {
			sc := newSidecar(t, project(t, c.store, nil), Options{Log: quietLog(), MaxRuns: bound})
			tools := map[string]any{"tools": []any{map[string]any{"name": "deploy"}}}
			var ids []string
			for i := range 5 * bound {
				id := sc.startRun(tools)
				sc.phase(id, "step_start", nil)
				ids = append(ids, id)
				if live, parked := sc.sizes(); live > bound || parked > 0 {
					t.Fatalf("after %d runs: %d in memory, %d parked; want at most %d, and none parked", i+1, live, parked, bound)
				}
			}
			// No more than 5 other runs at a time: the sample is every run, so the
			// order is exact.
			n := len(ids)
			for i, id := range ids {
				live := sc.live(id)
				_, stored, err := sc.h.Store().Run(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case i >= n-bound && !live:
					t.Errorf("run %d of %d left memory; the %d most recent stay", i+1, n, bound)
				case i < n-bound && live:
					t.Errorf("run %d of %d is still in memory", i+1, n)
				case i < n-bound && stored != c.durable:
					t.Errorf("run %d of %d: in the store %v, want %v", i+1, n, stored, c.durable)
				}
			}
			old := ids[0]
			if !c.durable {
				problemOK(t, sc.call("GET", "/v1/runs/"+old, nil), 404, "run_not_found")
				return
			}
			// A run that left memory goes on where it was, and comes back
			// without exceeding the bound.
			sc.phase(old, "before_inference", map[string]any{"request": map[string]any{}})
			if got := sc.must(200, "GET", "/v1/runs/"+old, nil); got.str("status") != "running" || got.num("step") != 1 {
				t.Fatalf("restored run: %s", got.raw)
			}
			if live, _ := sc.sizes(); live > bound {
				t.Fatalf("after a restore: %d in memory", live)
			}
		})
	}
}

// Runs parked in the memory store by the idle sweep are bounded by
// MaxRuns too: past it the oldest are forgotten.
func TestMaxRunsBoundsParkedRuns(t *testing.T) {
	const bound = 3
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog(), MaxRuns: bound, IdleTimeout: time.Hour})
	tools := map[string]any{"tools": []any{map[string]any{"name": "deploy"}}}
	var ids []string
	for range 3 * bound {
		id := sc.startRun(tools)
		sc.phase(id, "step_start", nil)
		ids = append(ids, id)
		// Idle for two hours: the sweep parks every run.
		sc.srv.sweep(time.Now().Add(2 * time.Hour))
	}
	if live, parked := sc.sizes(); live != 0 || parked != bound {
		t.Fatalf("%d in memory, %d parked; want 0 and %d", live, parked, bound)
	}
	for i, id := range ids {
		_, stored, err := sc.h.Store().Run(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if want := i >= len(ids)-bound; stored != want {
			t.Errorf("parked run %d of %d: in the store %v, want %v", i+1, len(ids), stored, want)
		}
	}
}

// Claude Code sessions that never end are bounded too, and a session the
// sidecar let go of is decided as before on its next event.
func TestMaxRunsBoundsClaudeCodeSessions(t *testing.T) {
	const bound = 4
	sc := ccSidecar(t, Options{MaxRuns: bound})
	session := func(i int) string { return fmt.Sprintf("many-%d", i) }
	for i := range 5 * bound {
		in := map[string]any{"session_id": session(i), "tool_use_id": fmt.Sprintf("toolu_%d", i)}
		if d := specific(sc.hook(t, fixture(t, "pre_tool_use_bash_ls", in), ""))["permissionDecision"]; d == "deny" {
			t.Fatalf("session %d: ls denied", i)
		}
		if live, parked := sc.sizes(); live > bound || parked > bound {
			t.Fatalf("after %d sessions: %d runs in memory, %d parked; want at most %d each", i+1, live, parked, bound)
		}
	}
	kept := 0
	for i := range 5 * bound {
		if sc.ccRunID(t, session(i)) != "" {
			kept++
		}
	}
	if kept > bound {
		t.Fatalf("%d Claude Code sessions kept; want at most %d", kept, bound)
	}
	if sc.ccRunID(t, session(0)) != "" {
		t.Fatal("the oldest session is still kept")
	}
	in := map[string]any{"session_id": session(0), "tool_use_id": "toolu_again"}
	wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_bash_rm", in), ""), "deny", "rm")
}

// An MCP call whose session the adapter let go of while the tool ran
// (other sessions pushed it past MaxRuns) still gets its result
// transform: with a durable store the run is restored, and the new
// session takes it up again.
func TestMaxRunsKeepsACallInFlight(t *testing.T) {
	const bound = 4
	sc := newSidecar(t, project(t, "\n[store]\nkind = \"file\"\npath = \"state\"\n", map[string]string{"redactor.lua": redactLua}),
		Options{Log: quietLog(), MaxRuns: bound})
	mcp := map[string]any{"session_id": "m", "tool_name": "mcp__github__get_token", "tool_input": map[string]any{}, "tool_use_id": "toolu_M1"}
	sc.hook(t, fixture(t, "user_prompt_submit", map[string]any{"session_id": "m"}), "")
	sc.hook(t, fixture(t, "pre_tool_use_mcp", mcp), "")
	for i := range 2 * bound {
		sc.hook(t, fixture(t, "pre_tool_use_bash_ls", map[string]any{"session_id": fmt.Sprint("other-", i), "tool_use_id": fmt.Sprint("t", i)}), "")
	}
	if sc.ccRunID(t, "m") != "" {
		t.Fatal("the session was not let go of: the test proves nothing")
	}
	post := fixture(t, "post_tool_use_write", mcp)
	post["tool_response"] = "token ghp_abc123 issued"
	if s := specific(sc.hook(t, post, "")); s == nil || s["updatedMCPToolOutput"] != "token [REDACTED] issued" {
		t.Fatalf("want the redacted output, got %v", s)
	}
}

// A busy run is not the one to drop: shed takes the next of its sample.
func TestMaxRunsSkipsABusyRun(t *testing.T) {
	const bound = 4
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog(), MaxRuns: bound})
	a := sc.startRun(map[string]any{})
	sc.srv.mu.Lock()
	ea := sc.srv.runs[a]
	sc.srv.mu.Unlock()
	ea.mu.Lock() // a call in progress on a
	defer ea.mu.Unlock()
	for range 3 * bound {
		sc.startRun(map[string]any{})
		if live, _ := sc.sizes(); live > bound {
			t.Fatalf("%d runs in memory with one busy; want at most %d", live, bound)
		}
	}
	if !sc.live(a) {
		t.Fatal("the busy run was dropped")
	}
}

// A run in progress that left memory still holds its thread: another run
// on the thread waits for it to end, as it would in memory, and once it
// ends (restored from the store) the thread is free.
func TestMaxRunsKeepsTheThread(t *testing.T) {
	for _, store := range []string{"", "\n[store]\nkind = \"file\"\npath = \"state\"\n"} {
		t.Run(fmt.Sprint("file=", store != ""), func(t *testing.T) {
			const bound = 2
			sc := newSidecar(t, project(t, store, nil), Options{Log: quietLog(), MaxRuns: bound, IdleTimeout: time.Hour})
			a := sc.startRun(map[string]any{"thread_id": "T"})
			sc.phase(a, "step_start", nil)
			if store == "" {
				// The memory store keeps a run that left memory when the
				// idle sweep parks it (past max_runs it would forget it).
				sc.srv.sweep(time.Now().Add(2 * time.Hour))
			}
			for range 2 * bound {
				sc.phase(sc.startRun(map[string]any{}), "step_start", nil)
			}
			if sc.live(a) {
				t.Fatal("run a is still in memory: the test proves nothing")
			}
			problemOK(t, sc.call("POST", "/v1/runs", map[string]any{"thread_id": "T"}), 409, "phase_out_of_order")
			sc.phase(a, "before_inference", map[string]any{"request": map[string]any{}})
			sc.phase(a, "after_inference", map[string]any{"response": map[string]any{"text": "done"}})
			sc.phase(a, "step_end", nil)
			sc.phase(a, "run_end", nil)
			sc.must(201, "POST", "/v1/runs", map[string]any{"thread_id": "T"})
		})
	}
}

// A restore that fails for a reason that may pass (here a cancelled
// request) keeps the run's hold on its thread.
func TestMaxRunsFailedRestoreKeepsTheThread(t *testing.T) {
	sc := newSidecar(t, project(t, "\n[store]\nkind = \"file\"\npath = \"state\"\n", nil), Options{Log: quietLog(), MaxRuns: 2})
	a := sc.startRun(map[string]any{"thread_id": "T"})
	sc.phase(a, "step_start", nil)
	for range 4 {
		sc.phase(sc.startRun(map[string]any{}), "step_start", nil)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if e, err := sc.srv.lockRun(ctx, a); err == nil {
		sc.srv.unlock(e) // or closing the sidecar would wait on it for ever
		t.Fatal("a restore with a cancelled context succeeded: the test proves nothing")
	}
	problemOK(t, sc.call("POST", "/v1/runs", map[string]any{"thread_id": "T"}), 409, "phase_out_of_order")
}

// Finished runs, kept only to be read, leave before a run in progress
// however recently they finished: a client with one run going and many
// short ones ending keeps its run.
func TestMaxRunsDropsFinishedRunsFirst(t *testing.T) {
	const bound = 4
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog(), MaxRuns: bound})
	going := sc.startRun(map[string]any{})
	sc.phase(going, "step_start", nil)
	for range 3 * bound {
		id := sc.startRun(map[string]any{})
		sc.phase(id, "step_start", nil)
		sc.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
		sc.phase(id, "after_inference", map[string]any{"response": map[string]any{"text": "done"}})
		sc.phase(id, "step_end", nil)
		sc.phase(id, "run_end", nil) // finished, kept for DoneRetention
	}
	sc.phase(going, "before_inference", map[string]any{"request": map[string]any{}})
}

// A subagent that runtime.continue kept going, in a session the adapter
// let go of (past MaxRuns, or idle), goes on in the same run at its next
// stop: its run still holds its thread, so starting another would be
// refused, and max_continues counts on. (Past MaxRuns the memory store
// forgets a run in progress, so there the idle sweep parks it.)
func TestMaxRunsKeepsASubagentGoing(t *testing.T) {
	for _, store := range []string{"", "\n[store]\nkind = \"file\"\npath = \"state\"\n"} {
		t.Run(fmt.Sprint("file=", store != ""), func(t *testing.T) {
			const bound = 3
			sc := newSidecar(t, project(t, store+"\n[agents.reviewed]\ntools = []\nmax_continues = 2\n",
				map[string]string{"reviewer.lua": ccContinueLua}), Options{Log: quietLog(), HookAgent: "reviewed", MaxRuns: bound, IdleTimeout: time.Hour})
			stop := func() map[string]any {
				return sc.hook(t, map[string]any{"session_id": "sub", "hook_event_name": "SubagentStop", "agent_id": "a1",
					"agent_type": "Explore", "last_assistant_message": "found it", "stop_hook_active": false}, "")
			}
			if out := stop(); out["decision"] != "block" {
				t.Fatalf("first stop: %s", mustJSON(out))
			}
			if store == "" {
				later := time.Now().Add(2 * time.Hour)
				sc.srv.sweep(later)
				sc.srv.agents.Sweep(later, time.Hour)
			} else {
				for i := range 2 * bound {
					sc.hook(t, fixture(t, "user_prompt_submit", map[string]any{"session_id": fmt.Sprint("other-", i)}), "")
				}
			}
			holder := sc.holder("sub/subagent/a1")
			_, kept, err := sc.srv.agents.ClaudeCodeSession(context.Background(), "sub")
			if err != nil {
				t.Fatal(err)
			}
			if kept || holder == "" {
				t.Fatalf("session kept %v, thread held by %q: the test proves nothing", kept, holder)
			}
			if out := stop(); out["decision"] != "block" {
				t.Fatalf("second stop (one continue of two spent): %s", mustJSON(out))
			}
			wantEmpty(t, stop()) // both continues spent: the run ends
			if held := sc.holder("sub/subagent/a1"); held != "" {
				t.Fatalf("the subagent's thread is still held by %s", held)
			}
		})
	}
}

// With a durable store a run that left memory before it ended holds its
// thread for a bounded time and count: past HoldsPerRun times MaxRuns such
// runs, or past AbandonAfter, its thread is free again, while the store
// keeps the run.
func TestMaxRunsBoundsThreadHolds(t *testing.T) {
	const file = "\n[store]\nkind = \"file\"\npath = \"state\"\n"
	t.Run("count", func(t *testing.T) {
		const bound = 3
		sc := newSidecar(t, project(t, file, nil), Options{Log: quietLog(), MaxRuns: bound})
		var ids []string
		for i := range (HoldsPerRun + 3) * bound {
			id := sc.startRun(map[string]any{"thread_id": fmt.Sprint("T", i)})
			sc.phase(id, "step_start", nil)
			ids = append(ids, id)
		}
		sc.srv.mu.Lock()
		out, threads := len(sc.srv.out), len(sc.srv.threads)
		sc.srv.mu.Unlock()
		if want := HoldsPerRun * bound; out > want || threads > want+bound {
			t.Fatalf("%d runs out of memory tracked, %d threads held; want at most %d and %d", out, threads, want, want+bound)
		}
		// Which runs let go is sampled: take one whose thread is free.
		free := -1
		for i := range ids {
			if sc.holder(fmt.Sprint("T", i)) == "" {
				free = i
				break
			}
		}
		if free < 0 {
			t.Fatal("every thread is still held")
		}
		sc.must(201, "POST", "/v1/runs", map[string]any{"thread_id": fmt.Sprint("T", free)})
		if got := sc.must(200, "GET", "/v1/runs/"+ids[free], nil); got.str("status") != "running" {
			t.Fatalf("a run let go of, from the store: %s", got.raw)
		}
	})
	t.Run("time", func(t *testing.T) {
		sc := newSidecar(t, project(t, file, nil), Options{Log: quietLog(), IdleTimeout: time.Hour, AbandonAfter: 24 * time.Hour})
		a := sc.startRun(map[string]any{"thread_id": "T"})
		sc.phase(a, "step_start", nil)
		now := time.Now()
		sc.srv.sweep(now.Add(2 * time.Hour)) // a leaves memory, idle
		problemOK(t, sc.call("POST", "/v1/runs", map[string]any{"thread_id": "T"}), 409, "phase_out_of_order")
		sc.srv.sweep(now.Add(20 * time.Hour))
		problemOK(t, sc.call("POST", "/v1/runs", map[string]any{"thread_id": "T"}), 409, "phase_out_of_order")
		sc.srv.sweep(now.Add(27 * time.Hour))
		sc.must(201, "POST", "/v1/runs", map[string]any{"thread_id": "T"})
		if got := sc.must(200, "GET", "/v1/runs/"+a, nil); got.str("status") != "running" {
			t.Fatalf("the abandoned run, from the store: %s", got.raw)
		}
	})
}

// With the memory store only runs in progress are parked and hold their
// thread out of memory: waiting runs leaving memory do not count against
// the parked runs' bound (their thread in the store names them, so a new
// run there is still refused).
func TestMaxRunsWaitingRunsDoNotPushOutParkedOnes(t *testing.T) {
	sc := newSidecar(t, project(t, "", nil), Options{Log: quietLog(), MaxRuns: 2, IdleTimeout: time.Hour})
	now := time.Now()
	a := sc.startRun(map[string]any{})
	sc.phase(a, "step_start", nil)
	sc.srv.sweep(now.Add(2 * time.Hour)) // a is parked
	for _, th := range []string{"w1", "w2", "w3"} {
		waitOnDeploy(sc, toGate(sc, th))
	}
	sc.srv.sweep(now.Add(4 * time.Hour)) // the waiting runs leave memory
	if live, parked := sc.sizes(); live != 0 || parked != 1 {
		t.Fatalf("%d in memory, %d parked; want 0 and 1", live, parked)
	}
	if got := sc.must(200, "GET", "/v1/runs/"+a, nil); got.str("status") != "running" {
		t.Fatalf("the parked run: %s", got.raw)
	}
	problemOK(t, sc.call("POST", "/v1/runs", map[string]any{"thread_id": "w1"}), 409, "phase_out_of_order")
}
