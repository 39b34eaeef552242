package server

import (
	"strings"
	"testing"
)

// A result transform (redaction) changes what the model may read; Gemini
// CLI replaces a tool's output only through AfterTool's decision "deny",
// whose reason is what the model reads instead. So a redacted output is
// answered that way, and the secret never reaches the model; an output
// nothing changed is answered {}.
func TestGeminiRedactsToolOutput(t *testing.T) {
	sc := newSidecar(t, project(t, "", map[string]string{"scrubber.lua": scrubLua}), Options{Log: quietLog()})
	ev := func(name string, extra map[string]any) map[string]any {
		m := map[string]any{"session_id": "gem-redact", "transcript_path": "/tmp/t.json", "cwd": "/home/dev/shop",
			"timestamp": "2026-11-24T09:03:00.000Z", "hook_event_name": name}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	sc.must(200, "POST", "/v1/hooks/gemini", ev("BeforeAgent", map[string]any{"prompt": "show the env"}))
	for _, tc := range []struct {
		name     string
		tool     string
		input    map[string]any
		response any
		want     string // "" for an output left as it was
	}{
		{"shell", "run_shell_command", map[string]any{"command": "env"},
			map[string]any{"llmContent": "GH_TOKEN=ghp_abc123\nHOME=/home/dev\n", "returnDisplay": "GH_TOKEN=ghp_abc123\n"},
			"GH_TOKEN=[REDACTED]\nHOME=/home/dev\n"},
		{"read a file", "read_file", map[string]any{"file_path": "/home/dev/shop/.npmrc"},
			map[string]any{"llmContent": "//registry/:_authToken=ghp_zzz9\n", "returnDisplay": ""},
			"//registry/:_authToken=[REDACTED]\n"},
		{"nothing secret", "run_shell_command", map[string]any{"command": "ls"},
			map[string]any{"llmContent": "README.md\n", "returnDisplay": "README.md\n"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			call := map[string]any{"tool_name": tc.tool, "tool_input": tc.input}
			if r := sc.must(200, "POST", "/v1/hooks/gemini", ev("BeforeTool", call)); strings.Contains(string(r.raw), "deny") {
				t.Fatalf("BeforeTool: %s", r.raw)
			}
			call["tool_response"] = tc.response
			r := sc.must(200, "POST", "/v1/hooks/gemini", ev("AfterTool", call))
			if strings.Contains(string(r.raw), "ghp_") {
				t.Fatalf("the secret reaches the model: %s", r.raw)
			}
			if tc.want == "" {
				if string(r.raw) != "{}\n" {
					t.Fatalf("an unchanged output: %s", r.raw)
				}
				return
			}
			if r.str("decision") != "deny" || r.str("reason") != tc.want {
				t.Fatalf("want decision deny with the redacted output %q as the reason, got %s", tc.want, r.raw)
			}
		})
	}
}
