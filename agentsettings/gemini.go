package agentsettings

import (
	"path/filepath"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// GeminiCommand is the command hook Gemini CLI runs.
const GeminiCommand = "awaken-lua hook --agent gemini"

// GeminiEvents are the Gemini CLI events awaken-lua's hook handles.
var GeminiEvents = []string{"SessionStart", "SessionEnd", "BeforeAgent", "AfterAgent", "BeforeTool", "AfterTool"}

// geminiTimeout is the hook timeout Gemini CLI reads, in milliseconds:
// over the command hook's own (awaken-lua hook --timeout, 20 s), so the
// hook answers, failing closed, before Gemini gives up on it.
const geminiTimeout = 30000

// GeminiPath is Gemini CLI's settings file: <project>/.gemini/settings.json,
// or settings.json in o.ConfigDir (~/.gemini) for the user scope.
func GeminiPath(o Options) (string, error) {
	switch o.Scope {
	case User:
		if o.ConfigDir == "" {
			return "", errs.New(errs.ConfigInvalid, "the user scope needs Gemini CLI's directory (~/.gemini)")
		}
		return filepath.Join(o.ConfigDir, "settings.json"), nil
	case Project, "":
		if o.ProjectDir == "" {
			return "", errs.New(errs.ConfigInvalid, "the project scope needs the project directory")
		}
		return filepath.Join(o.ProjectDir, ".gemini", "settings.json"), nil
	}
	return "", errs.New(errs.ConfigInvalid, "Gemini CLI's settings have the scopes project and user, not %q", o.Scope)
}

// InstallGemini merges awaken-lua's command hook into Gemini CLI's
// settings.json ("hooks": {event: [{matcher, hooks: [{type: "command",
// command, timeout (ms)}]}]}, as Claude Code's, and "enabled": true), or
// removes it (o.Uninstall). Other settings and hooks are left as they are.
func InstallGemini(o Options) (Result, error) {
	o.gemini, o.HTTP = true, false
	if o.Command == "" || o.Command == DefaultCommand {
		o.Command = GeminiCommand
	}
	if o.Timeout == 0 {
		o.Timeout = geminiTimeout
	}
	return InstallClaudeCode(o)
}
