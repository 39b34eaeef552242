package server

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// sizes reads how many runs the server holds in memory and parked.
func (sc *sidecar) sizes() (live, parked int) {
	sc.srv.mu.Lock()
	defer sc.srv.mu.Unlock()
	return len(sc.srv.runs), len(sc.srv.parked)
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
			// Fewer than 16 runs at a time: the sample is every run, so the
			// order is exact.
			n := len(ids)
			for i, id := range ids {
				sc.srv.mu.Lock()
				_, live := sc.srv.runs[id]
				sc.srv.mu.Unlock()
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
