package server

import (
	"fmt"
	"testing"
)

// blocker is a Lua plugin with a priority whose gate blocks every call
// with its id as the reason.
func blocker(id string, priority int) string {
	return fmt.Sprintf(`local awaken = require("awaken")
local p = awaken.plugin { id = %q, priority = %d }
p:tool_gate(function(ctx, call) return awaken.block(%q) end)
return p
`, id, priority, id)
}

// TestPluginOrderOverHTTP: /v1/plugins shows each agent's hook order and
// each plugin's priority, and a gate tie goes to the first in that order.
func TestPluginOrderOverHTTP(t *testing.T) {
	sc := newSidecar(t, project(t, "\n[agents.listed]\ntools = []\nplugins = [\"low\", \"late\", \"early\"]\n",
		map[string]string{"early.lua": blocker("early", 500), "late.lua": blocker("late", 500), "low.lua": blocker("low", 10),
			"high.lua": blocker("high", 990)}), Options{Log: quietLog()})
	p := sc.must(200, "GET", "/v1/plugins", nil)
	order := p.body["order"].(map[string]any)
	if got := fmt.Sprint(order["default"]); got != "[high early late low]" {
		t.Errorf("default agent's order %s: priority, then id", got)
	}
	if got := fmt.Sprint(order["listed"]); got != "[late early low]" {
		t.Errorf("listed agent's order %s: priority, then its plugins list", got)
	}
	for _, d := range p.body["plugins"].([]any) {
		if m := d.(map[string]any); m["id"] == "low" && m["priority"] != float64(10) {
			t.Errorf("low's priority %v", m["priority"])
		}
	}
	for agent, want := range map[string]string{"default": "high", "listed": "late"} {
		r := sc.must(201, "POST", "/v1/runs", map[string]any{"agent": agent, "tools": []any{map[string]any{"name": "x"}}})
		id := r.str("run_id")
		sc.must(200, "POST", "/v1/runs/"+id+"/phases/step_start", map[string]any{})
		sc.must(200, "POST", "/v1/runs/"+id+"/phases/before_inference", map[string]any{"request": map[string]any{}})
		sc.must(200, "POST", "/v1/runs/"+id+"/phases/after_inference",
			map[string]any{"response": map[string]any{"tool_calls": []any{map[string]any{"id": "c1", "name": "x", "args": map[string]any{}}}}})
		d := sc.must(200, "POST", "/v1/runs/"+id+"/phases/tool_gate", map[string]any{"call": map[string]any{"id": "c1", "name": "x"}})
		if d.str("decision") != "block" || d.str("reason") != want {
			t.Errorf("agent %s: %s, want the tie to go to %s", agent, d.raw, want)
		}
	}
}
