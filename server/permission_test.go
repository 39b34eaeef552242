package server

import (
	"fmt"
	"testing"
)

// A pasted permissions block allows git and ls, and asks for the rest
// (default "ask"). su -c and runuser -c run their script as another user,
// and ssh runs its remote command on another machine: like sudo, the
// program that runs the command must be allowed as well as the command, so
// an allow of git or ls does not cover them, and Claude Code is told to
// ask rather than left to its own rules.
func TestClaudeCodeAllowDoesNotCoverSuOrSsh(t *testing.T) {
	extra := `
[plugins.permission]
default = "ask"

[plugins.permission.claude_code]
allow = ["Bash(git *)", "Bash(ls *)"]
`
	sc := newSidecar(t, project(t, extra, map[string]string{"noop.lua": `return require("awaken").plugin {}`}), Options{Log: quietLog()})
	for i, tc := range []struct {
		command string
		ask     bool
	}{
		{"git status", false},
		{"ls -la && git status", false},
		{"bash -c 'git status'", false}, // a shell's script is judged instead of the shell
		{"sudo git status", true},
		{"su -c 'git status' root", true},
		{"su - deploy -c 'ls -la'", true},
		{"runuser -c 'git status' app", true},
		{"runuser -u app -- git status", true},
		{"ssh prod ls", true},
		{"ssh prod 'git status'", true},
		{"ssh -o RemoteCommand='ls' prod", true},
	} {
		t.Run(tc.command, func(t *testing.T) {
			ev := fixture(t, "pre_tool_use_bash_ls", map[string]any{"session_id": fmt.Sprintf("allow-%d", i),
				"tool_use_id": fmt.Sprintf("toolu_%d", i), "tool_input": map[string]any{"command": tc.command}})
			out := sc.hook(t, ev, "")
			if !tc.ask {
				wantEmpty(t, out)
				return
			}
			wantDecision(t, out, "ask", "asked by the permission default")
		})
	}
}
