package server

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// crossPolicy denies rm, rewrites `npm test` to run in CI mode, counts the
// prompts of a session in thread state and continues its first stop once.
const crossPolicy = `local awaken = require("awaken")
local p = awaken.plugin { id = "cross" }
local prompts = p:key("cross.prompts", { scope = "thread", merge = "commutative", reducer = "add", default = 0, schema = { type = "integer" } })
local continued = p:key("cross.continued", { scope = "thread", merge = "exclusive", schema = { type = "boolean" }, default = false })
p:on("run_start", function(ctx) ctx:update(prompts, 1) end)
p:tool_gate(function(ctx, call)
  if call.name ~= "Bash" then return nil end
  local cmd = tostring(call.args.command or "")
  if cmd:find("^rm ") then return awaken.block("rm is not allowed: " .. cmd) end
  if cmd == "npm test" then
    local args = {}
    for k, v in pairs(call.args) do args[k] = v end
    args.command = "npm test -- --ci"
    return awaken.rewrite(args)
  end
end)
p:on("after_inference", function(ctx)
  if #ctx.response.tool_calls > 0 or ctx:get(continued) then return end
  ctx:update(continued, true)
  ctx:schedule("runtime.continue", { content = "Run the tests once more." })
end)
return p
`

// step is one logical event of the session and what each agent's reply
// must say about it: allow, deny, rewrite (to the CI command) or
// continue; "" for no decision.
type crossStep struct {
	what string
	want string
}

var crossSession = []crossStep{
	{"prompt", ""},
	{"read", "allow"},
	{"rm", "deny"},
	{"npm", "rewrite"},
	{"stop", "continue"},
	{"stop-again", ""},
}

// nativeEvent is the logical step as the agent sends it.
func nativeEvent(agent, session, what string, n int) (path string, body map[string]any) {
	cmd := map[string]string{"rm": "rm -rf dist", "npm": "npm test"}[what]
	path = "/v1/hooks/" + agent
	switch agent {
	case "claude-code", "codex":
		body = map[string]any{"session_id": session, "cwd": "/w"}
		switch what {
		case "prompt":
			body["hook_event_name"], body["prompt"] = "UserPromptSubmit", "fix the test"
		case "read":
			body["hook_event_name"], body["tool_name"], body["tool_input"] = "PreToolUse", "Read", map[string]any{"file_path": "/w/a.ts"}
		case "rm", "npm":
			body["hook_event_name"], body["tool_name"], body["tool_input"] = "PreToolUse", "Bash", map[string]any{"command": cmd}
			if agent == "codex" {
				body["tool_name"], body["tool_input"] = "shell", map[string]any{"command": []any{"bash", "-lc", cmd}}
			}
		case "stop", "stop-again":
			body["hook_event_name"], body["stop_hook_active"] = "Stop", what == "stop-again"
		}
		if strings.HasPrefix(fmt.Sprint(body["hook_event_name"]), "Pre") {
			body["tool_use_id"] = fmt.Sprintf("t%d", n)
		}
	case "cursor":
		body = map[string]any{"conversation_id": session, "generation_id": "g"}
		switch what {
		case "prompt":
			body["hook_event_name"], body["prompt"] = "beforeSubmitPrompt", "fix the test"
		case "read":
			body["hook_event_name"], body["file_path"] = "beforeReadFile", "/w/a.ts"
		case "rm", "npm":
			body["hook_event_name"], body["command"] = "beforeShellExecution", cmd
		case "stop", "stop-again":
			body["hook_event_name"], body["status"] = "stop", "completed"
			if what == "stop-again" {
				body["loop_count"] = 1
			}
		}
	case "gemini":
		body = map[string]any{"session_id": session, "cwd": "/w", "timestamp": "2026-11-24T05:00:00Z"}
		switch what {
		case "prompt":
			body["hook_event_name"], body["prompt"] = "BeforeAgent", "fix the test"
		case "read":
			body["hook_event_name"], body["tool_name"], body["tool_input"] = "BeforeTool", "read_file", map[string]any{"absolute_path": "/w/a.ts"}
		case "rm", "npm":
			body["hook_event_name"], body["tool_name"], body["tool_input"] = "BeforeTool", "run_shell_command", map[string]any{"command": cmd}
		case "stop", "stop-again":
			body["hook_event_name"], body["prompt_response"], body["stop_hook_active"] = "AfterAgent", "done", what == "stop-again"
		}
	case "copilot":
		body = map[string]any{"sessionId": session, "cwd": "/w", "timestamp": 1764000000000}
		event := ""
		switch what {
		case "prompt":
			event, body["prompt"] = "userPromptSubmitted", "fix the test"
		case "read":
			event, body["toolName"], body["toolArgs"] = "preToolUse", "view", `{"path": "/w/a.ts"}`
		case "rm", "npm":
			b, _ := json.Marshal(map[string]any{"command": cmd})
			event, body["toolName"], body["toolArgs"] = "preToolUse", "bash", string(b)
		case "stop", "stop-again":
			event = "agentStop"
		}
		path += "?event=" + event
	}
	return path, body
}

// agentOutcome reads an agent's reply as allow, deny, rewrite, continue or "".
func agentOutcome(agent string, r map[string]any) string {
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	spec, _ := r["hookSpecificOutput"].(map[string]any)
	switch agent {
	case "claude-code", "codex":
		if r["decision"] == "block" {
			return "continue"
		}
		if spec == nil {
			return ""
		}
		if spec["updatedInput"] != nil {
			if in, _ := spec["updatedInput"].(map[string]any); in["command"] == "npm test -- --ci" {
				return "rewrite"
			}
		}
		return str(spec, "permissionDecision")
	case "cursor":
		if str(r, "followup_message") != "" {
			return "continue"
		}
		return str(r, "permission")
	case "gemini":
		if spec != nil && spec["tool_input"] != nil {
			if in, _ := spec["tool_input"].(map[string]any); in["command"] == "npm test -- --ci" {
				return "rewrite"
			}
		}
		if r["decision"] == "deny" && strings.Contains(str(r, "reason"), "Run the tests") {
			return "continue"
		}
		return str(r, "decision")
	case "copilot":
		if r["decision"] == "block" {
			return "continue"
		}
		if m, _ := r["modifiedArgs"].(map[string]any); m["command"] == "npm test -- --ci" {
			return "rewrite"
		}
		return str(r, "permissionDecision")
	}
	return "?"
}

// One policy, every agent: the same logical session (a prompt, a safe
// read, a denied rm -rf, a rewritten command, a stop the policy continues
// once, a second stop) through each adapter gets the same decisions, each
// in the agent's own reply, and leaves the same thread state. Cursor
// cannot run a rewritten command, so there the rewrite is a deny (its
// documented safe side).
func TestOnePolicyEveryAgent(t *testing.T) {
	dir := project(t, "", map[string]string{"cross.lua": crossPolicy})
	sc := newSidecar(t, dir, Options{Log: quietLog()})
	agents := []string{"claude-code", "codex", "cursor", "gemini", "copilot"}
	var states []map[string]any
	for ai, agent := range agents {
		session := fmt.Sprint("s", ai) // short ids are ids too
		for i, st := range crossSession {
			path, body := nativeEvent(agent, session, st.what, i)
			r := sc.call("POST", path, body)
			if r.status != 200 {
				t.Fatalf("%s %s: %d %s", agent, st.what, r.status, r.raw)
			}
			want := st.want
			if agent == "cursor" && want == "rewrite" {
				want = "deny"
			}
			got := agentOutcome(agent, r.body)
			if want == "allow" && got == "" {
				got = "allow" // no opinion: the agent's own flow runs the call
			}
			if got != want {
				t.Errorf("%s, %s: %q, want %q: %s", agent, st.what, got, want, r.raw)
			}
		}
		th, ok, err := sc.h.Store().Thread(context.Background(), session) // a session's thread has its id
		if err != nil || !ok {
			t.Fatalf("%s: thread %q: %v %v", agent, session, ok, err)
		}
		states = append(states, th.Values)
	}
	for i := 1; i < len(states); i++ {
		if !reflect.DeepEqual(states[i], states[0]) {
			t.Errorf("thread state after %s: %v; after %s: %v", agents[i], states[i], agents[0], states[0])
		}
	}
	if states[0]["cross.continued"] != true || states[0]["cross.prompts"] == nil {
		t.Errorf("thread state: %v", states[0])
	}
	t.Logf("thread state of every agent's session: %v", states[0])
}
