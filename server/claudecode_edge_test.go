package server

import (
	"path/filepath"
	"strings"
	"testing"
)

// ccEdgeLua stops the run from after_inference when the model calls a
// deploy, and rewrites a call to "forget" to no arguments at all.
const ccEdgeLua = `local awaken = require("awaken")
local p = awaken.plugin { id = "ccedge" }
p:on("after_inference", function(ctx)
  for _, c in ipairs(ctx.response.tool_calls) do
    if tostring(c.args.command):find("deploy", 1, true) then ctx:stop("no_deploys", "deploys wait for Monday") end
  end
end)
p:tool_gate(function(ctx, call)
  if call.args.command == "forget" then return awaken.rewrite({}) end
end)
return p
`

func ccEdgeEvent(session, event, id, command string) map[string]any {
	return map[string]any{"session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": "/home/dev/shop",
		"permission_mode": "default", "hook_event_name": event, "tool_name": "Bash", "tool_use_id": id,
		"tool_input": map[string]any{"command": command}}
}

// A plugin that stops the run in after_inference, the phase a PreToolUse
// feeds the call to, denies the call with its stop as the reason, as a
// stop at tool_gate does; it was denied with an internal "the run is
// ending" error, and PermissionRequest got {}.
func TestClaudeCodeStopAtAfterInference(t *testing.T) {
	sc := newSidecar(t, project(t, "", map[string]string{"ccedge.lua": ccEdgeLua}), Options{Log: quietLog()})
	for _, event := range []string{"PreToolUse", "PermissionRequest"} {
		t.Run(event, func(t *testing.T) {
			out := sc.hook(t, ccEdgeEvent("stop-"+event, event, "toolu_d1", "make deploy"), "")
			s := specific(out)
			reason := s["permissionDecisionReason"]
			decision := s["permissionDecision"]
			if event == "PermissionRequest" {
				d, _ := s["decision"].(map[string]any)
				reason, decision = d["message"], d["behavior"]
			}
			if decision != "deny" || !strings.Contains(mustJSON(reason), "deploys wait for Monday") ||
				strings.Contains(mustJSON(out), "invalid_transition") {
				t.Fatalf("want a deny with the stop's reason, got %s", mustJSON(out))
			}
		})
	}
}

// A rewrite to no arguments is sent as an empty updatedInput: leaving it
// out would have Claude Code run the original input the policy replaced.
func TestClaudeCodeRewriteToNoArguments(t *testing.T) {
	sc := newSidecar(t, project(t, "", map[string]string{"ccedge.lua": ccEdgeLua}), Options{Log: quietLog()})
	s := specific(sc.hook(t, ccEdgeEvent("empty", "PreToolUse", "toolu_e1", "forget"), ""))
	in, present := s["updatedInput"].(map[string]any)
	if s["permissionDecision"] != "allow" || !present || len(in) != 0 {
		t.Fatalf("want allow with updatedInput {}, got %s", mustJSON(s))
	}
	s = specific(sc.hook(t, ccEdgeEvent("empty-perm", "PermissionRequest", "toolu_e2", "forget"), ""))
	d, _ := s["decision"].(map[string]any)
	if in, present := d["updatedInput"].(map[string]any); d["behavior"] != "allow" || !present || len(in) != 0 {
		t.Fatalf("want allow with updatedInput {}, got %s", mustJSON(s))
	}
}

// Copilot CLI likewise gets a rewrite to no arguments as modifiedArgs {}.
func TestCopilotRewriteToNoArguments(t *testing.T) {
	sc := newSidecar(t, project(t, "", map[string]string{"ccedge.lua": ccEdgeLua}), Options{Log: quietLog()})
	ev := map[string]any{"timestamp": 1764000002000, "cwd": "/home/dev/shop", "toolName": "bash",
		"toolArgs": `{"command": "forget"}`}
	r := sc.must(200, "POST", "/v1/hooks/copilot?event=preToolUse", ev)
	if m, present := r.body["modifiedArgs"].(map[string]any); r.str("permissionDecision") != "allow" || !present || len(m) != 0 {
		t.Fatalf("want allow with modifiedArgs {}, got %s", r.raw)
	}
}

// A PreToolUse that reuses a decided call's tool_use_id with other input
// is denied: the kept decision is about the input first sent, and Claude
// Code would run this one (the reference policy allowed ls, then was
// asked about rm -rf / under the same id and answered allow).
func TestClaudeCodeReusedToolUseIDWithOtherInput(t *testing.T) {
	sc := newSidecar(t, filepath.Join("..", "testdata", "agents", "claude-code", "policy"), Options{Log: quietLog()})
	wantEmpty(t, sc.hook(t, ccEdgeEvent("reuse", "PreToolUse", "toolu_r1", "ls"), ""))
	wantEmpty(t, sc.hook(t, ccEdgeEvent("reuse", "PreToolUse", "toolu_r1", "ls"), "")) // a true retry
	wantDecision(t, sc.hook(t, ccEdgeEvent("reuse", "PreToolUse", "toolu_r1", "rm -rf /"), ""), "deny", "already decided")
	s := specific(sc.hook(t, ccEdgeEvent("reuse", "PermissionRequest", "toolu_r1", "rm -rf /"), ""))
	if d, _ := s["decision"].(map[string]any); d["behavior"] == "allow" {
		t.Fatalf("PermissionRequest allowed other input under a decided id: %s", mustJSON(s))
	}
}
