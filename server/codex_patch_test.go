package server

import (
	"fmt"
	"strings"
	"testing"
)

// Codex edits files with apply_patch, whose tool_input.command is the
// patch: Claude Code's Edit rules (and Read deny rules, which cover
// edits) apply to every file it adds, updates, deletes or moves to, as
// they do to Edit and Write. A deny rule matches when any of them
// matches; a patch that names no file cannot be judged, and is denied.
func TestCodexApplyPatchFollowsEditRules(t *testing.T) {
	patch := func(ops ...string) string {
		return "*** Begin Patch\n" + strings.Join(ops, "\n") + "\n*** End Patch\n"
	}
	for i, tc := range []struct {
		name, rule, patch string
		deny              bool
	}{
		{"update a denied file", "Edit(./secrets/**)", patch("*** Update File: secrets/key.pem", "@@", "-a", "+b"), true},
		{"add a file elsewhere", "Edit(./secrets/**)", patch("*** Add File: src/a.go", "+package a"), false},
		{"one of two files denied", "Edit(./secrets/**)", patch("*** Add File: src/a.go", "+package a", "*** Delete File: secrets/old.pem"), true},
		{"move into a denied directory", "Edit(./secrets/**)", patch("*** Update File: src/a.go", "*** Move to: secrets/a.go", "@@", "-a", "+b"), true},
		{"an absolute path", "Edit(./secrets/**)", patch("*** Delete File: /home/dev/shop/secrets/key.pem"), true},
		{"a Read deny rule covers an edit", "Read(./.env)", patch("*** Update File: .env", "@@", "-A=1", "+A=2"), true},
		{"Read elsewhere", "Read(./.env)", patch("*** Update File: src/a.go", "@@", "-a", "+b"), false},
		{"a patch that names no file", "Edit(./secrets/**)", "rm -rf secrets", true},
		{"an operation without its file", "Edit(./secrets/**)", patch("*** Add File: src/a.go", "+package a", "*** Delete File:"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := pastedSidecar(t, tc.rule)
			session := fmt.Sprintf("codex-patch-%d", i)
			ev := map[string]any{"session_id": session, "turn_id": "turn-1", "model": "gpt-5-codex", "cwd": "/home/dev/shop",
				"permission_mode": "default", "hook_event_name": "PreToolUse", "tool_name": "apply_patch", "tool_use_id": "call_" + session,
				"tool_input": map[string]any{"command": tc.patch}, "transcript_path": nil}
			r := sc.must(200, "POST", "/v1/hooks/codex", ev)
			spec, _ := r.body["hookSpecificOutput"].(map[string]any)
			if denied := spec["permissionDecision"] == "deny"; denied != tc.deny {
				t.Fatalf("denied=%v, want %v: %s", denied, tc.deny, r.raw)
			}
		})
	}
}
