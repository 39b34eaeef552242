package hooks

import (
	"cmp"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
)

// The Codex CLI adapter (POST /v1/hooks/codex): Codex's hook events are
// Claude Code's (session_id, hook_event_name, tool_name, tool_input,
// tool_use_id), plus turn_id and model, so the Claude Code adapter decides
// them; two things differ:
//
//   - Codex's shell tools (shell, shell_command, exec_command with its
//     cmd, local_shell) take the command as a string or an argv array
//     ("bash", "-lc", "..."): each is decided as Bash {command}, so
//     Bash(rm *) rules and the shell parser apply;
//   - Codex enforces a PreToolUse deny but not ask, so ask answers deny
//     (the safe side), with the reason saying a person must approve;
//   - Codex reads PreToolUse and PermissionRequest replies strictly: one
//     with continue:false or stopReason, or a PermissionRequest decision
//     with updatedInput, is an invalid output that Codex logs and
//     ignores, so the call would go on as if no hook had answered. A
//     plugin's stop is said as the deny's reason instead, and a rewrite
//     at PermissionRequest, which Codex cannot apply there, is a deny that
//     names the arguments the policy wanted.

// codexShellTools are Codex's names for running a command, with the
// argument that holds it (exec_command's is cmd).
var codexShellTools = map[string]string{"shell": "command", "shell_command": "command", "exec_command": "cmd",
	"local_shell": "command", "container.exec": "command"}

func (cc *claudeCode) handleCodex(w http.ResponseWriter, r *http.Request) error {
	return serveHook(&cc.o, w, r, cc.codexProto)
}

// serveCodex answers a Codex event as its Claude Code counterpart. Codex's
// hook cannot ask, so an ask is answered deny.
func (cc *claudeCode) serveCodex(ctx context.Context, r *http.Request, in *ccInput, agent string) ccOutput {
	key := codexShell(in)
	out := cc.dispatch(ctx, *in, agent)
	if spec := out.HookSpecificOutput; spec != nil && spec.UpdatedInput != nil && key != "" && key != "command" {
		// A rewrite goes back under the tool's own name for the command.
		spec.UpdatedInput = fromClaudeCode(spec.UpdatedInput, map[string]string{"command": key})
	}
	if spec := out.HookSpecificOutput; spec != nil && spec.PermissionDecision == "ask" {
		spec.PermissionDecisionReason, _ = spec.denial("Codex")
		spec.PermissionDecision = "deny"
		cc.o.Log.LogAttrs(r.Context(), slog.LevelInfo, "Codex cannot ask: an ask is answered deny", slog.String("session_id", in.SessionID))
	}
	switch in.HookEventName {
	case evPreToolUse, evPermissionRequest:
		return codexPermission(in.HookEventName, out)
	}
	return out
}

// codexPermission makes a PreToolUse or PermissionRequest reply one Codex
// accepts: without continue:false and stopReason (a stopped run's call is
// denied with the stop as its reason), and without a PermissionRequest
// rewrite (denied, naming the arguments the policy wanted).
func codexPermission(event string, out ccOutput) ccOutput {
	stop := ""
	if out.Continue != nil && !*out.Continue {
		stop = cmp.Or(strings.TrimSpace(out.StopReason), "awaken-lua: a plugin stopped the run")
	}
	out.Continue, out.StopReason = nil, ""
	spec := out.HookSpecificOutput
	if event == evPreToolUse {
		if stop != "" && (spec == nil || spec.PermissionDecision != "deny") {
			out.HookSpecificOutput = &ccSpecific{HookEventName: evPreToolUse, PermissionDecision: "deny", PermissionDecisionReason: stop}
		}
		if spec := out.HookSpecificOutput; spec != nil && spec.PermissionDecision == "deny" && strings.TrimSpace(spec.PermissionDecisionReason) == "" {
			spec.PermissionDecisionReason = "awaken-lua denied this call" // Codex ignores a deny without a reason
		}
		return out
	}
	var d *ccPermission
	if spec != nil {
		d = spec.Decision
	}
	switch {
	case stop != "" && (d == nil || d.Behavior != "deny"):
		d = &ccPermission{Behavior: "deny", Message: stop}
	case d != nil && d.UpdatedInput != nil:
		b, _ := json.Marshal(d.UpdatedInput)
		d = &ccPermission{Behavior: "deny", Message: "the policy would run this call with other arguments, which Codex cannot do when it asks for permission, so it is denied: " + string(b)}
	}
	if d != nil {
		out.HookSpecificOutput = &ccSpecific{HookEventName: evPermissionRequest, Decision: d}
	}
	return out
}

// codexShell renames Codex's shell tool to Bash with the command as one
// string, unwrapping "bash -lc <script>", and returns the argument the
// command came in ("" when the call is left as it was).
func codexShell(in *ccInput) string {
	key := codexShellTools[in.ToolName]
	if key == "" {
		return ""
	}
	args, _ := in.ToolInput.(map[string]any)
	if args == nil {
		return ""
	}
	var cmd string
	switch c := args[key].(type) {
	case string:
		cmd = c
	case []any:
		argv := make([]string, 0, len(c))
		for _, a := range c {
			s, ok := a.(string)
			if !ok {
				return "" // not an argv: leave the call as Codex named it
			}
			argv = append(argv, s)
		}
		if len(argv) == 3 && (argv[0] == "bash" || argv[0] == "sh" || argv[0] == "zsh") && (argv[1] == "-lc" || argv[1] == "-c") {
			cmd = argv[2]
		} else {
			cmd = shellJoin(argv)
		}
	default:
		return ""
	}
	next := map[string]any{"command": cmd}
	for k, v := range args {
		if k != key && k != "command" {
			next[k] = v
		}
	}
	in.ToolName, in.ToolInput = "Bash", next
	return key
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
