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

// Cursor's preToolUse Delete removes a file: it is decided as Claude
// Code's Write of that file, so Edit rules, and Read deny rules, cover it
// as they cover Write; a Delete whose path the adapter cannot find cannot
// be judged, and such rules deny it.
func TestCursorPreToolUseDeleteIsWrite(t *testing.T) {
	sc := pastedSidecar(t, "Edit(./secrets/**)")
	for i, tc := range []struct {
		name  string
		input map[string]any
		deny  bool
	}{
		{"path in a denied directory", map[string]any{"path": "/home/dev/shop/secrets/key.pem"}, true},
		{"target_path in a denied directory", map[string]any{"target_path": "secrets/key.pem"}, true},
		{"target_file in a denied directory", map[string]any{"target_file": "secrets/key.pem"}, true},
		{"file_path in a denied directory", map[string]any{"file_path": "secrets/key.pem"}, true},
		{"elsewhere", map[string]any{"path": "/home/dev/shop/src/old.go"}, false},
		{"no path", map[string]any{}, true},
		{"two paths", map[string]any{"path": "src/old.go", "target_path": "secrets/key.pem"}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := map[string]any{"conversation_id": fmt.Sprintf("cu-delete-%d", i), "generation_id": "g-1", "hook_event_name": "preToolUse",
				"workspace_roots": []string{"/home/dev/shop"}, "cwd": "/home/dev/shop", "tool_use_id": "tu-1",
				"tool_name": "Delete", "tool_input": tc.input}
			r := sc.must(200, "POST", "/v1/hooks/cursor", ev)
			if denied := r.str("permission") == "deny"; denied != tc.deny {
				t.Fatalf("denied=%v, want %v: %s", denied, tc.deny, r.raw)
			}
		})
	}
}

// Cursor's preToolUse names its file tools and their arguments its own
// way (Read, Write and Delete take path, Write its contents, StrReplace
// edits, EditNotebook takes target_notebook, Glob glob_pattern and
// target_directory, WebSearch search_term): each is decided as the Claude
// Code tool it is, so Read and Edit rules judge the file it touches. Under
// Cursor's names an edit escaped every Edit rule, and a Read or Write had
// no file_path to judge, so any Read or Edit deny rule denied them all.
func TestCursorPreToolUseFileTools(t *testing.T) {
	for i, tc := range []struct {
		rule, tool string
		input      map[string]any
		deny       bool
	}{
		{"Edit(./secrets/**)", "StrReplace", map[string]any{"path": "secrets/key.pem", "old_string": "a", "new_string": "b"}, true},
		{"Edit(./secrets/**)", "StrReplace", map[string]any{"path": "src/app.ts", "old_string": "a", "new_string": "b"}, false},
		{"Edit(./secrets/**)", "Write", map[string]any{"path": "/home/dev/shop/secrets/key.pem", "contents": "x"}, true},
		{"Edit(./secrets/**)", "Write", map[string]any{"path": "src/app.ts", "contents": "x"}, false},
		{"Edit(./secrets/**)", "EditNotebook", map[string]any{"target_notebook": "secrets/keys.ipynb", "cell_idx": 0, "old_string": "a", "new_string": "b"}, true},
		{"Read(./.env)", "Read", map[string]any{"path": ".env"}, true},
		{"Read(./.env)", "Read", map[string]any{"path": "src/app.ts", "offset": 1}, false},
		{"Read(./.env)", "StrReplace", map[string]any{"path": ".env", "old_string": "A=1", "new_string": "A=2"}, true},
		{"Read(./secrets/**)", "Glob", map[string]any{"glob_pattern": "*.pem", "target_directory": "secrets"}, true},
		{"Read(./secrets/**)", "Glob", map[string]any{"glob_pattern": "*.ts", "target_directory": "src"}, false},
		{"WebSearch(*leak*)", "WebSearch", map[string]any{"search_term": "leaked keys"}, true},
		{"WebSearch(*leak*)", "WebSearch", map[string]any{"search_term": "go generics"}, false},
	} {
		t.Run(fmt.Sprintf("%s %s %v", tc.rule, tc.tool, tc.input), func(t *testing.T) {
			sc := pastedSidecar(t, tc.rule)
			ev := map[string]any{"conversation_id": fmt.Sprintf("cu-file-%d", i), "generation_id": "g-1", "hook_event_name": "preToolUse",
				"workspace_roots": []string{"/home/dev/shop"}, "cwd": "/home/dev/shop", "tool_use_id": "tu-1",
				"tool_name": tc.tool, "tool_input": tc.input}
			r := sc.must(200, "POST", "/v1/hooks/cursor", ev)
			if denied := r.str("permission") == "deny"; denied != tc.deny {
				t.Fatalf("denied=%v, want %v: %s", denied, tc.deny, r.raw)
			}
		})
	}
}
