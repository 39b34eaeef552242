package server

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// codexPolicyLua blocks with an empty reason, stops the run when the
// model calls a deploy, and rewrites ls.
const codexPolicyLua = `local awaken = require("awaken")
local p = awaken.plugin { id = "codexpolicy" }
p:tool_gate(function(ctx, call)
  local cmd = call.args.command
  if type(cmd) ~= "string" then return end
  if cmd:find("shred", 1, true) then return awaken.block("") end
  if cmd == "ls" then return awaken.rewrite({ command = "ls -la" }) end
  if cmd:find("git push", 1, true) then return awaken.suspend { message = "Push?" } end
end)
p:on("before_tool_execute", function(ctx)
  if tostring(ctx.tool.args.command):find("deploy", 1, true) then ctx:stop("budget", "no deploys today") end
end)
return p
`

// Codex reads a PreToolUse reply strictly: a deny without a non-empty
// permissionDecisionReason, or any reply with continue:false or
// stopReason, is an invalid hook output, which Codex logs and ignores,
// so the call runs (codex-rs/hooks output_parser). Its PermissionRequest
// likewise refuses continue:false and updatedInput. So on these events
// every deny carries a reason, and a plugin's stop is said as the deny's
// reason, never as continue:false.
func TestCodexRepliesCodexAccepts(t *testing.T) {
	sc := newSidecar(t, project(t, "", map[string]string{"codexpolicy.lua": codexPolicyLua}), Options{Log: quietLog()})
	event := func(session, name, command string) map[string]any {
		return map[string]any{"session_id": session, "turn_id": "turn-1", "model": "gpt-5-codex", "cwd": "/home/dev/shop",
			"permission_mode": "default", "hook_event_name": name, "tool_name": "Bash", "tool_use_id": "call_" + session,
			"tool_input": map[string]any{"command": command}, "transcript_path": nil}
	}
	for _, tc := range []struct {
		name, event, command string
		behavior             string // PermissionRequest: the decision's behavior
		reason               string // a part of the reason the model reads
	}{
		{"empty block reason", "PreToolUse", "shred -u secrets.txt", "", "codexpolicy"},
		{"a plugin stops the run", "PreToolUse", "make deploy", "", "no deploys today"},
		{"ask", "PreToolUse", "git push origin main", "", "Push?"},
		{"stop at PermissionRequest", "PermissionRequest", "make deploy", "deny", "no deploys today"},
		{"rewrite at PermissionRequest", "PermissionRequest", "ls", "deny", "ls -la"},
		{"empty block at PermissionRequest", "PermissionRequest", "shred -u secrets.txt", "deny", "codexpolicy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			session := "codex-" + strings.ReplaceAll(tc.name, " ", "-")
			sc.must(200, "POST", "/v1/hooks/codex", map[string]any{"session_id": session, "turn_id": "turn-1", "model": "gpt-5-codex",
				"cwd": "/home/dev/shop", "permission_mode": "default", "hook_event_name": "UserPromptSubmit", "prompt": "go", "transcript_path": nil})
			r := sc.must(200, "POST", "/v1/hooks/codex", event(session, tc.event, tc.command))
			if _, ok := r.body["continue"]; ok {
				t.Errorf("continue in a %s reply, which Codex refuses (the call would run): %s", tc.event, r.raw)
			}
			if _, ok := r.body["stopReason"]; ok {
				t.Errorf("stopReason in a %s reply, which Codex refuses: %s", tc.event, r.raw)
			}
			spec, _ := r.body["hookSpecificOutput"].(map[string]any)
			var reason string
			if tc.event == "PreToolUse" {
				if spec["permissionDecision"] != "deny" {
					t.Fatalf("not denied: %s", r.raw)
				}
				reason, _ = spec["permissionDecisionReason"].(string)
			} else {
				d, _ := spec["decision"].(map[string]any)
				if d["behavior"] != tc.behavior || d["updatedInput"] != nil {
					t.Fatalf("decision %v, want behavior %s without updatedInput: %s", d, tc.behavior, r.raw)
				}
				reason, _ = d["message"].(string)
			}
			if strings.TrimSpace(reason) == "" || !strings.Contains(reason, tc.reason) {
				t.Fatalf("reason %q, want one that says %q: %s", reason, tc.reason, r.raw)
			}
		})
	}
}

// Codex's shell tools are decided as Bash {command} whatever they call the
// command: shell's argv, exec_command's cmd (with its workdir),
// shell_command's string, so a policy that gates Bash, as the reference
// policy does, sees each of them.
func TestCodexShellToolsAreBash(t *testing.T) {
	sc := newSidecar(t, filepath.Join("..", "testdata", "agents", "claude-code", "policy"), Options{Log: quietLog()})
	for i, tc := range []struct {
		tool  string
		input map[string]any
		deny  bool
	}{
		{"shell", map[string]any{"command": []string{"bash", "-lc", "rm -rf dist"}}, true},
		{"exec_command", map[string]any{"cmd": "rm -rf dist", "workdir": "/home/dev/shop"}, true},
		{"exec_command", map[string]any{"cmd": "npm test"}, false},
		{"shell_command", map[string]any{"command": "rm -rf dist", "workdir": "/home/dev/shop"}, true},
		{"local_shell", map[string]any{"command": []string{"rm", "-rf", "dist"}}, true},
	} {
		t.Run(fmt.Sprintf("%s %v", tc.tool, tc.input), func(t *testing.T) {
			session := fmt.Sprintf("codex-shell-%d", i)
			ev := map[string]any{"session_id": session, "turn_id": "turn-1", "model": "gpt-5-codex", "cwd": "/home/dev/shop",
				"permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": tc.tool, "tool_use_id": "call_" + session,
				"tool_input": tc.input, "transcript_path": nil}
			r := sc.must(200, "POST", "/v1/hooks/codex", ev)
			spec, _ := r.body["hookSpecificOutput"].(map[string]any)
			if denied := spec["permissionDecision"] == "deny"; denied != tc.deny {
				t.Fatalf("denied=%v, want %v: %s", denied, tc.deny, r.raw)
			}
		})
	}
	// A rewrite goes back under the name the tool gave its command.
	rw := newSidecar(t, project(t, "", map[string]string{"codexpolicy.lua": codexPolicyLua}), Options{Log: quietLog()})
	for _, tc := range []struct {
		tool, key string
	}{{"exec_command", "cmd"}, {"shell_command", "command"}} {
		session := "codex-rewrite-" + tc.tool
		ev := map[string]any{"session_id": session, "turn_id": "turn-1", "model": "gpt-5-codex", "cwd": "/home/dev/shop",
			"permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": tc.tool, "tool_use_id": "call_" + session,
			"tool_input": map[string]any{tc.key: "ls", "workdir": "/home/dev/shop"}, "transcript_path": nil}
		r := rw.must(200, "POST", "/v1/hooks/codex", ev)
		spec, _ := r.body["hookSpecificOutput"].(map[string]any)
		up, _ := spec["updatedInput"].(map[string]any)
		if spec["permissionDecision"] != "allow" || up[tc.key] != "ls -la" || len(up) != 1 {
			t.Errorf("%s: want updatedInput {%s: ls -la}: %s", tc.tool, tc.key, r.raw)
		}
	}
}
