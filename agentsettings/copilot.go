package agentsettings

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// CopilotEvents are the GitHub Copilot CLI events awaken-lua's hook
// handles; each gets its own command, since Copilot's input does not name
// the event.
var CopilotEvents = []string{"sessionStart", "userPromptSubmitted", "preToolUse", "postToolUse", "agentStop", "sessionEnd"}

// CopilotPath is the hooks file awaken-lua owns in a repository:
// .github/hooks/awaken.json (Copilot CLI loads every .github/hooks/*.json).
func CopilotPath(o Options) (string, error) {
	if o.Scope != Project && o.Scope != "" {
		return "", errs.New(errs.ConfigInvalid, "Copilot CLI loads hooks from the repository only (the project scope), not %q", o.Scope)
	}
	if o.ProjectDir == "" {
		return "", errs.New(errs.ConfigInvalid, "the project scope needs the project directory")
	}
	return filepath.Join(o.ProjectDir, ".github", "hooks", "awaken.json"), nil
}

// InstallCopilot writes .github/hooks/awaken.json, a file of awaken-lua's
// own (other hook files are never touched): a command per event, for bash
// and PowerShell. Uninstall removes it. An existing file that differs is
// kept as a backup first.
func InstallCopilot(o Options) (Result, error) {
	o = defaults(o)
	p, err := CopilotPath(o)
	if err != nil {
		return Result{}, err
	}
	res := Result{Path: p}
	target, data, mode, exists, err := read(p)
	if err != nil {
		return res, err
	}
	hooks := map[string]any{}
	for _, ev := range CopilotEvents {
		cmd := "awaken-lua hook --agent copilot --event " + ev
		hooks[ev] = []any{map[string]any{"type": "command", "bash": cmd, "powershell": cmd, "timeoutSec": o.Timeout}}
	}
	out, _ := json.MarshalIndent(map[string]any{"version": 1, "hooks": hooks}, "", "  ")
	out = append(out, '\n')
	if o.Uninstall {
		if !exists {
			return res, nil
		}
		res.Removed = len(CopilotEvents)
		if bytes.Equal(data, out) && !isLink(p) {
			// As install wrote it: nothing of the user's to keep. A link's
			// target may be shared (other repositories link to it too):
			// it is backed up first, as an edited file.
			if err := deleteFile(target, data, &res); err != nil {
				return res, err
			}
			o.prune(p)
			return res, nil
		}
		if res.Backup, err = backup(target, data, mode, o.Now()); err != nil {
			return res, err
		}
		if err := os.Remove(target); err != nil {
			return res, err
		}
		res.Changed, res.Deleted = true, true
		o.prune(p)
		return res, nil
	}
	if exists && bytes.Equal(data, out) {
		return res, nil
	}
	if exists {
		res.Updated = len(CopilotEvents)
	} else {
		res.Added = len(CopilotEvents)
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return res, err
	}
	return res, writeFile(target, data, out, mode, exists, o.Now(), &res)
}
