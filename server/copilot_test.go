package server

import (
	"fmt"
	"strings"
	"testing"
)

// Copilot CLI's view reads path, which is decided as Claude Code's
// file_path: a call that gives file_path as well names one argument twice,
// and is denied whichever the rules would have judged.
func TestCopilotArgumentUnderTwoNames(t *testing.T) {
	sc := pastedSidecar(t, "Read(./secrets/**)")
	for i := range 24 {
		ev := map[string]any{"timestamp": 1764000002000, "cwd": fmt.Sprintf("/home/dev/shop%d", i), "toolName": "view",
			"toolArgs": `{"path": "secrets/key.pem", "file_path": "README.md"}`}
		r := sc.must(200, "POST", "/v1/hooks/copilot?event=preToolUse", ev)
		if r.str("permissionDecision") != "deny" || !strings.Contains(r.str("permissionDecisionReason"), "give one") {
			t.Fatalf("try %d: %s", i, r.raw)
		}
	}
}

// A PreToolUse of Copilot's VS Code compatible format that the adapter
// cannot evaluate (tool_input that is no object, no tool_name, one
// argument twice) is denied also where that format reads the decision,
// as a decided call is.
func TestCopilotVSCodeFormatFailsClosed(t *testing.T) {
	sc := pastedSidecar(t, "Read(./secrets/**)")
	for i, input := range []map[string]any{
		{"tool_name": "bash", "tool_input": "rm -rf /"},
		{"tool_input": map[string]any{"command": "ls"}},
		{"tool_name": "view", "tool_input": map[string]any{"path": "secrets/key.pem", "file_path": "README.md"}},
	} {
		ev := map[string]any{"hook_event_name": "PreToolUse", "session_id": fmt.Sprintf("vs-fail-%d", i), "cwd": "/home/dev/shop"}
		for k, v := range input {
			ev[k] = v
		}
		for _, path := range []string{"/v1/hooks/copilot", "/v1/hooks/copilot?event=PreToolUse"} {
			r := sc.must(200, "POST", path, ev)
			spec, _ := r.body["hookSpecificOutput"].(map[string]any)
			if r.str("permissionDecision") != "deny" || spec["permissionDecision"] != "deny" || spec["hookEventName"] != "PreToolUse" ||
				spec["permissionDecisionReason"] == "" {
				t.Errorf("%s %v: %s", path, input, r.raw)
			}
		}
	}
}
