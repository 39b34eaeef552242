package hooks

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
)

// The Codex CLI adapter (POST /v1/hooks/codex): Codex's hook events are
// Claude Code's (session_id, hook_event_name, tool_name, tool_input,
// tool_use_id), plus turn_id and model, so the Claude Code adapter decides
// them; two things differ:
//
//   - Codex's shell tool (shell, exec_command, local_shell) takes the
//     command as an argv array ("bash", "-lc", "..."): it is decided as
//     Bash {command}, so Bash(rm *) rules and the shell parser apply;
//   - Codex enforces a PreToolUse deny but not ask, so ask answers deny
//     (the safe side), with the reason saying a person must approve.

// codexShellTools are Codex's names for running a command.
var codexShellTools = map[string]bool{"shell": true, "exec_command": true, "local_shell": true, "container.exec": true}

func (cc *claudeCode) handleCodex(w http.ResponseWriter, r *http.Request) error {
	return serveHook(&cc.o, w, r, cc.codexProto)
}

// serveCodex answers a Codex event as its Claude Code counterpart. Codex's
// hook cannot ask, so an ask is answered deny.
func (cc *claudeCode) serveCodex(ctx context.Context, r *http.Request, in *ccInput, agent string) ccOutput {
	codexShell(in)
	out := cc.dispatch(ctx, *in, agent)
	if spec := out.HookSpecificOutput; spec != nil && spec.PermissionDecision == "ask" {
		spec.PermissionDecisionReason, _ = spec.denial("Codex")
		spec.PermissionDecision = "deny"
		cc.o.Log.LogAttrs(r.Context(), slog.LevelInfo, "Codex cannot ask: an ask is answered deny", slog.String("session_id", in.SessionID))
	}
	return out
}

// codexShell renames Codex's shell tool to Bash with the command as one
// string, unwrapping "bash -lc <script>".
func codexShell(in *ccInput) {
	if !codexShellTools[in.ToolName] {
		return
	}
	args, _ := in.ToolInput.(map[string]any)
	if args == nil {
		return
	}
	var cmd string
	switch c := args["command"].(type) {
	case string:
		cmd = c
	case []any:
		argv := make([]string, 0, len(c))
		for _, a := range c {
			s, ok := a.(string)
			if !ok {
				return // not an argv: leave the call as Codex named it
			}
			argv = append(argv, s)
		}
		if len(argv) == 3 && (argv[0] == "bash" || argv[0] == "sh" || argv[0] == "zsh") && (argv[1] == "-lc" || argv[1] == "-c") {
			cmd = argv[2]
		} else {
			cmd = shellJoin(argv)
		}
	default:
		return
	}
	next := map[string]any{"command": cmd}
	for k, v := range args {
		if k != "command" {
			next[k] = v
		}
	}
	in.ToolName, in.ToolInput = "Bash", next
}

// shellJoin quotes argv as one shell command.
func shellJoin(argv []string) string {
	out := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && !strings.ContainsAny(a, " \t\n'\"\\$`;&|<>()*?[]{}~#!") {
			out[i] = a
			continue
		}
		out[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(out, " ")
}
