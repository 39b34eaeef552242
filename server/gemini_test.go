package server

import (
	"fmt"
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

// Gemini CLI's search tools are decided as Claude Code's (grep_search,
// the current name of search_file_content, is Grep; glob is Glob, and so
// is list_directory, a listing of one directory), with their directory
// argument dir_path as Claude Code's path, so a Read rule on a directory
// covers searching and listing it as it does for Claude Code.
func TestGeminiSearchToolsFollowReadRules(t *testing.T) {
	sc := pastedSidecar(t, "Read(./secrets/**)")
	for i, tc := range []struct {
		tool  string
		input map[string]any
		deny  bool
	}{
		{"grep_search", map[string]any{"pattern": "PASSWORD", "dir_path": "secrets/"}, true},
		{"search_file_content", map[string]any{"pattern": "PASSWORD", "dir_path": "secrets/"}, true},
		{"glob", map[string]any{"pattern": "*.pem", "dir_path": "secrets/"}, true},
		{"grep_search", map[string]any{"pattern": "TODO", "dir_path": "src/"}, false},
		{"list_directory", map[string]any{"dir_path": "secrets/"}, true},
		{"list_directory", map[string]any{"dir_path": "secrets/keys"}, true},
		{"list_directory", map[string]any{"dir_path": "src"}, false},
		{"grep_search", map[string]any{"pattern": "TODO"}, false},
	} {
		ev := map[string]any{"session_id": fmt.Sprintf("gem-search-%d", i), "transcript_path": "/tmp/t.json", "cwd": "/home/dev/shop",
			"timestamp": "2026-11-24T09:03:00.000Z", "hook_event_name": "BeforeTool", "tool_name": tc.tool, "tool_input": tc.input}
		r := sc.must(200, "POST", "/v1/hooks/gemini", ev)
		if denied := r.str("decision") == "deny"; denied != tc.deny {
			t.Errorf("%s %v: denied=%v, want %v: %s", tc.tool, tc.input, denied, tc.deny, r.raw)
		}
		// Claude Code decides its own Grep on the same directory alike.
		cc := fixture(t, "pre_tool_use_bash_ls", map[string]any{"session_id": fmt.Sprintf("cc-search-%d", i), "cwd": "/home/dev/shop",
			"tool_name": "Grep", "tool_input": map[string]any{"pattern": "x", "path": tc.input["dir_path"]}})
		if tc.input["dir_path"] == nil {
			cc["tool_input"] = map[string]any{"pattern": "x"}
		}
		out := sc.must(200, "POST", "/v1/hooks/claude-code", cc)
		if denied := strings.Contains(string(out.raw), `"deny"`); denied != tc.deny {
			t.Errorf("calibration: Claude Code's Grep in %v: denied=%v, want %v: %s", tc.input["dir_path"], denied, tc.deny, out.raw)
		}
	}
}

// An argument given under two of its names (read_file's absolute_path and
// file_path, glob's path and dir_path) is denied: whichever name the rules
// judged, the tool might use the other. Go's maps make the order random,
// so each is posted many times.
func TestGeminiArgumentUnderTwoNames(t *testing.T) {
	sc := pastedSidecar(t, "Read(./secrets/**)")
	for _, tc := range []struct {
		tool  string
		input map[string]any
	}{
		{"read_file", map[string]any{"absolute_path": "/home/dev/shop/secrets/key.pem", "file_path": "/home/dev/shop/README.md"}},
		{"grep_search", map[string]any{"pattern": "PASSWORD", "path": "src/", "dir_path": "secrets/"}},
	} {
		for i := range 24 {
			ev := map[string]any{"session_id": fmt.Sprintf("gem-two-%s-%d", tc.tool, i), "transcript_path": "/tmp/t.json", "cwd": "/home/dev/shop",
				"timestamp": "2026-11-24T09:03:00.000Z", "hook_event_name": "BeforeTool", "tool_name": tc.tool, "tool_input": tc.input}
			r := sc.must(200, "POST", "/v1/hooks/gemini", ev)
			if r.str("decision") != "deny" || !strings.Contains(r.str("reason"), "give one") {
				t.Fatalf("%s %v (try %d): %s", tc.tool, tc.input, i, r.raw)
			}
		}
	}
}

// Gemini CLI names an MCP tool mcp_<server>_<tool> (server__tool in
// earlier versions), which no Claude Code rule names; its mcp_context
// gives the server and the tool's own name, so the call is decided as
// mcp__<server>__<tool> and Claude Code's MCP rules apply to it.
func TestGeminiMCPToolsFollowMCPRules(t *testing.T) {
	for i, tc := range []struct {
		rule, tool string
		ctx        map[string]any
		deny       bool
	}{
		{"mcp__github__create_issue", "mcp_github_create_issue", map[string]any{"server_name": "github", "tool_name": "create_issue", "url": "https://api.example.com/mcp"}, true},
		{"mcp__github", "mcp_github_create_issue", map[string]any{"server_name": "github", "tool_name": "create_issue"}, true},
		{"mcp__github", "github__create_issue", map[string]any{"server_name": "github", "tool_name": "create_issue", "command": "npx", "args": []string{"gh-mcp"}}, true},
		{"mcp__github", "mcp_gitlab_create_issue", map[string]any{"server_name": "gitlab", "tool_name": "create_issue"}, false},
		{"mcp__github__create_issue", "mcp_github_list_issues", map[string]any{"server_name": "github", "tool_name": "list_issues"}, false},
		{"mcp__github", "mcp_github_create_issue", map[string]any{"tool_name": "create_issue"}, true}, // no server: fails closed
	} {
		t.Run(tc.rule+" "+tc.tool, func(t *testing.T) {
			sc := pastedSidecar(t, tc.rule)
			ev := map[string]any{"session_id": fmt.Sprintf("gem-mcp-%d", i), "transcript_path": "/tmp/t.json", "cwd": "/home/dev/shop",
				"timestamp": "2026-11-24T09:03:00.000Z", "hook_event_name": "BeforeTool", "tool_name": tc.tool,
				"tool_input": map[string]any{"title": "flaky checkout"}, "mcp_context": tc.ctx}
			r := sc.must(200, "POST", "/v1/hooks/gemini", ev)
			if denied := r.str("decision") == "deny"; denied != tc.deny {
				t.Fatalf("denied=%v, want %v: %s", denied, tc.deny, r.raw)
			}
		})
	}
}
