package server

import "testing"

// budgetedReviewer is an agent whose plugin continues Claude at its stops
// while the budget allows two steps.
const budgetedReviewer = `
[agents.reviewed]
tools = []
plugins = ["reviewer", "budget"]

[plugins.budget]
max_steps = 2
`

// A plugin continues Claude at its Stop (runtime.continue) while the
// budget's max_steps is spent: the budget stops the continued step at its
// step_start, so the Stop lets Claude stop ({}) instead of telling it to go
// on (decision block) into a step that is already over, whose first call
// would then be denied and Claude stopped. With steps left, the Stop
// continues Claude and its next call runs in the continued step.
func TestClaudeCodeStopContinueWithinBudget(t *testing.T) {
	sc := newSidecar(t, project(t, budgetedReviewer, map[string]string{"reviewer.lua": ccContinueLua}), Options{Log: quietLog()})
	q := "?agent=reviewed"
	for _, tc := range []struct {
		name  string
		calls int // tool calls before the Stop: each ends a step
		block bool
	}{
		{"a step left", 0, true},
		{"no step left", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := map[string]any{"session_id": "budget-" + tc.name}
			sc.hook(t, fixture(t, "user_prompt_submit", s), q)
			for range tc.calls {
				wantEmpty(t, sc.hook(t, fixture(t, "pre_tool_use_bash_ls", s), q))
				sc.hook(t, fixture(t, "post_tool_use_bash_ls", s), q)
			}
			out := sc.hook(t, fixture(t, "stop", s), q)
			if !tc.block {
				wantEmpty(t, out)
				return
			}
			if out["decision"] != "block" {
				t.Fatalf("Stop: want decision block, got %s", mustJSON(out))
			}
			// Claude goes on: its call runs in the continued step.
			next := map[string]any{"session_id": s["session_id"], "tool_use_id": "toolu_NEXT"}
			wantEmpty(t, sc.hook(t, fixture(t, "pre_tool_use_bash_ls", next), q))
		})
	}
}

// The same at a subagent's stop: its continued step past the budget's
// max_steps ends the subagent's run at the SubagentStop ({}), and with a
// step left the continue keeps it open for the subagent's next calls.
func TestClaudeCodeSubagentStopContinueWithinBudget(t *testing.T) {
	sc := newSidecar(t, project(t, budgetedReviewer, map[string]string{"reviewer.lua": ccContinueLua}), Options{Log: quietLog(), HookAgent: "reviewed"})
	const sid = "sub-budget"
	call := func(agent, id string) {
		t.Helper()
		ev := map[string]any{"session_id": sid, "tool_use_id": id, "agent_id": agent, "agent_type": "Explore"}
		wantEmpty(t, sc.hook(t, fixture(t, "pre_tool_use_bash_ls", ev), ""))
		sc.hook(t, fixture(t, "post_tool_use_bash_ls", ev), "")
	}
	stop := func(agent string) map[string]any {
		return sc.hook(t, map[string]any{"session_id": sid, "hook_event_name": "SubagentStop", "agent_id": agent,
			"agent_type": "Explore", "last_assistant_message": "found it", "stop_hook_active": false}, "")
	}
	// a1 answers in its first step: the continue has a step left.
	if out := stop("a1"); out["decision"] != "block" {
		t.Fatalf("a1's stop with a step left: want decision block, got %s", mustJSON(out))
	}
	call("a1", "toolu_A1") // in the continued step
	// a2 made a call first: its stop ends the last step the budget allows.
	call("a2", "toolu_A2")
	wantEmpty(t, stop("a2"))
}
