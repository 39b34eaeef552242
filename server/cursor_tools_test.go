package server

import (
	"fmt"
	"testing"
)

// Cursor's preToolUse names its shell tool Shell, with the command in
// tool_input.command and the directory it runs in as working_directory:
// it is decided as Claude Code's Bash, so a Bash deny rule applies to it
// as it does to beforeShellExecution.
func TestCursorPreToolUseShellIsBash(t *testing.T) {
	sc := pastedSidecar(t, "Bash(rm *)")
	for i, tc := range []struct {
		name  string
		event string
		input map[string]any
		deny  bool
	}{
		{"preToolUse rm", "preToolUse", map[string]any{"tool_name": "Shell", "tool_input": map[string]any{"command": "rm -rf dist"}}, true},
		{"preToolUse rm in a working_directory", "preToolUse", map[string]any{"tool_name": "Shell",
			"tool_input": map[string]any{"command": "cd .. && rm -rf dist", "working_directory": "/home/dev/shop/web"}}, true},
		{"preToolUse npm test", "preToolUse", map[string]any{"tool_name": "Shell", "tool_input": map[string]any{"command": "npm test"}}, false},
		{"preToolUse one argument twice", "preToolUse", map[string]any{"tool_name": "Shell",
			"tool_input": map[string]any{"command": "ls", "working_directory": "/home/dev/shop", "workdir": "/"}}, true},
		{"beforeShellExecution rm (calibration)", "beforeShellExecution", map[string]any{"command": "rm -rf dist"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conv := fmt.Sprintf("cu-shell-%d", i)
			ev := map[string]any{"conversation_id": conv, "generation_id": "g-1", "hook_event_name": tc.event,
				"workspace_roots": []string{"/home/dev/shop"}, "cwd": "/home/dev/shop", "tool_use_id": "tu-1"}
			for k, v := range tc.input {
				ev[k] = v
			}
			r := sc.must(200, "POST", "/v1/hooks/cursor", ev)
			if denied := r.str("permission") == "deny"; denied != tc.deny {
				t.Fatalf("denied=%v, want %v: %s", denied, tc.deny, r.raw)
			}
		})
	}
}
