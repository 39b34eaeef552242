package agentsettings

import (
	"path/filepath"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// CodexCommand is the command hook Codex CLI runs.
const CodexCommand = "awaken-lua hook --agent codex"

// CodexEvents are the Codex CLI events awaken-lua's hook handles.
var CodexEvents = []string{"SessionStart", "UserPromptSubmit", "PreToolUse", "PermissionRequest", "PostToolUse", "Stop"}

// CodexPath is Codex CLI's hooks file: <project>/.codex/hooks.json, or
// hooks.json in o.ConfigDir (~/.codex, or $CODEX_HOME) for the user scope.
func CodexPath(o Options) (string, error) {
	switch o.Scope {
	case User:
		if o.ConfigDir == "" {
			return "", errs.New(errs.ConfigInvalid, "the user scope needs Codex's directory (~/.codex or $CODEX_HOME)")
		}
		return filepath.Join(o.ConfigDir, "hooks.json"), nil
	case Project, "":
		if o.ProjectDir == "" {
			return "", errs.New(errs.ConfigInvalid, "the project scope needs the project directory")
		}
		return filepath.Join(o.ProjectDir, ".codex", "hooks.json"), nil
	}
	return "", errs.New(errs.ConfigInvalid, "Codex's hooks have the scopes project and user, not %q", o.Scope)
}

// InstallCodex merges awaken-lua's command hook into Codex CLI's
// hooks.json, which has Claude Code's shape ({"hooks": {event: [{matcher,
// hooks: [{type: "command", command}]}]}}), or removes it (o.Uninstall):
// the same merge as InstallClaudeCode, on Codex's events, command hooks
// only.
func InstallCodex(o Options) (Result, error) {
	o.codex, o.HTTP = true, false
	if o.Command == "" || o.Command == DefaultCommand {
		o.Command = CodexCommand
	}
	return InstallClaudeCode(o)
}
