package server

import (
	"fmt"
	"path/filepath"
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

// Copilot CLI sends a PostToolUse of its VS Code compatible format with
// the tool's result as tool_result ({result_type, text_result_for_llm}),
// as the camelCase format's toolResult: the run records it as the call's
// result, so result transforms and the journal see what the tool said.
func TestCopilotPostToolUseResult(t *testing.T) {
	sc := newSidecar(t, filepath.Join("..", "testdata", "agents", "claude-code", "policy"), Options{Log: quietLog()})
	vs := func(event string) map[string]any {
		return map[string]any{"hook_event_name": event, "session_id": "vs-result", "timestamp": "2026-11-24T09:03:00.000Z",
			"cwd": "/home/dev/shop", "tool_name": "bash", "tool_input": map[string]any{"command": "ls"}}
	}
	camel := func() map[string]any {
		return map[string]any{"sessionId": "camel-result", "timestamp": 1764000004000, "cwd": "/home/dev/shop",
			"toolName": "bash", "toolArgs": `{"command": "ls"}`}
	}
	vsPost, camelPost := vs("PostToolUse"), camel()
	vsPost["tool_result"] = map[string]any{"result_type": "success", "text_result_for_llm": "README.md"}
	camelPost["toolResult"] = map[string]any{"resultType": "success", "textResultForLlm": "README.md"}
	for _, tc := range []struct {
		name, session, pre, post string
		preEv, postEv            map[string]any
	}{
		{"VS Code compatible", "vs-result", "PreToolUse", "PostToolUse", vs("PreToolUse"), vsPost},
		{"camelCase", "camel-result", "preToolUse", "postToolUse", camel(), camelPost},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc.must(200, "POST", "/v1/hooks/copilot?event="+tc.pre, tc.preEv)
			sc.must(200, "POST", "/v1/hooks/copilot?event="+tc.post, tc.postEv)
			st := sc.must(200, "GET", "/v1/runs/"+sc.ccRunID(t, tc.session), nil)
			if !strings.Contains(string(st.raw), "README.md") {
				t.Fatalf("the call's result is not recorded: %s", st.raw)
			}
		})
	}
}

// Copilot CLI's write_bash types its input into a shell session it
// started with an async bash call: what it types runs as a command there,
// so it is decided as Bash, whose deny rules see it.
func TestCopilotWriteBashIsBash(t *testing.T) {
	sc := pastedSidecar(t, "Bash(rm *)")
	for i, tc := range []struct {
		input string
		deny  bool
	}{
		{"rm -rf /\n", true},
		{"ls && rm -rf ~\n", true},
		{"ls\n", false},
	} {
		ev := map[string]any{"timestamp": 1764000002000, "cwd": fmt.Sprintf("/home/dev/wb%d", i), "toolName": "write_bash",
			"toolArgs": fmt.Sprintf(`{"sessionId": "s1", "input": %q, "delay": 5}`, tc.input)}
		r := sc.must(200, "POST", "/v1/hooks/copilot?event=preToolUse", ev)
		if denied := r.str("permissionDecision") == "deny"; denied != tc.deny {
			t.Errorf("write_bash %q: %s", tc.input, r.raw)
		}
	}
}
