package server

import (
	"fmt"
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/server/hooks"
)

// A session whose subagents a runtime.continue keeps going at their
// SubagentStop, and that never stop again (interrupted), keeps at most
// hooks.MaxSubRuns of their runs open: past it the oldest one ends, as at
// SessionEnd, and its subagent's session is forgotten. A subagent whose
// run ends at its stop leaves no session behind either. So a long session
// that starts ever more subagents holds a bounded number of them.
func TestClaudeCodeSubagentRunsBounded(t *testing.T) {
	sc := newSidecar(t, project(t, "\n[agents.reviewed]\ntools = []\nmax_continues = 1\n",
		map[string]string{"reviewer.lua": ccContinueLua}), Options{Log: quietLog(), HookAgent: "reviewed"})
	const sid = "many"
	stop := func(agent string) map[string]any {
		return sc.hook(t, map[string]any{"session_id": sid, "hook_event_name": "SubagentStop", "agent_id": agent,
			"agent_type": "Explore", "last_assistant_message": "found it", "stop_hook_active": false}, "")
	}
	subagents := func() int {
		n := 0
		for key := range sc.srv.agents.Facts() {
			if strings.HasPrefix(key, sid+"/subagent/") {
				n++
			}
		}
		return n
	}
	n := 3 * hooks.MaxSubRuns
	for i := range n {
		agent := fmt.Sprint("a", i)
		ev := map[string]any{"session_id": sid, "tool_use_id": "toolu_" + agent, "tool_name": "Read",
			"agent_id": agent, "agent_type": "Explore", "tool_input": map[string]any{"file_path": "/" + agent}}
		sc.hook(t, fixture(t, "pre_tool_use_write", ev), "")
		post := fixture(t, "post_tool_use_write", ev)
		post["tool_response"] = map[string]any{"ok": true}
		sc.hook(t, post, "")
		if out := stop(agent); out["decision"] != "block" {
			t.Fatalf("%s's first stop should be continued: %s", agent, mustJSON(out))
		}
		if kept := len(sc.srv.agents.Facts()[sid].SubRuns); kept > hooks.MaxSubRuns {
			t.Fatalf("after %d subagents the session keeps %d of their runs, past the bound of %d", i+1, kept, hooks.MaxSubRuns)
		}
	}
	for i := range n {
		held := sc.holder(fmt.Sprintf("%s/subagent/a%d", sid, i)) != ""
		if want := i >= n-hooks.MaxSubRuns; held != want {
			t.Fatalf("subagent a%d of %d: its run is held %v, want %v (the oldest past the bound end)", i, n, held, want)
		}
	}
	if got := subagents(); got != hooks.MaxSubRuns {
		t.Fatalf("the session keeps %d subagents' sessions, want the %d whose runs are kept", got, hooks.MaxSubRuns)
	}
	last := fmt.Sprint("a", n-1)
	wantEmpty(t, stop(last)) // its one continue is spent: the run ends
	if _, kept := sc.srv.agents.Facts()[sid+"/subagent/"+last]; kept || subagents() != hooks.MaxSubRuns-1 {
		t.Fatalf("a subagent whose run ended at its stop left its session (%v); %d kept", kept, subagents())
	}
}
