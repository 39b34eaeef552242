package agentsettings

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// CursorCommand is the command hook Cursor runs.
const CursorCommand = "awaken-lua hook --agent cursor"

// CursorEvents are the Cursor events awaken-lua's hook handles.
var CursorEvents = []string{"sessionStart", "sessionEnd", "beforeSubmitPrompt", "beforeShellExecution", "afterShellExecution",
	"beforeMCPExecution", "afterMCPExecution", "beforeReadFile", "stop"}

// cursorFailClosed are the Cursor events that decide a tool's permission:
// Cursor lets the tool run when their hook fails (awaken-lua not on the
// PATH Cursor runs hooks with, a crash, a timeout) unless the entry says
// failClosed.
var cursorFailClosed = map[string]bool{"beforeShellExecution": true, "beforeMCPExecution": true, "beforeReadFile": true}

// CursorPath is Cursor's hooks file: <project>/.cursor/hooks.json, or
// ~/.cursor/hooks.json for the user scope (o.ConfigDir is ~/.cursor).
func CursorPath(o Options) (string, error) {
	switch o.Scope {
	case User:
		if o.ConfigDir == "" {
			return "", errs.New(errs.ConfigInvalid, "the user scope needs Cursor's user directory (~/.cursor)")
		}
		return filepath.Join(o.ConfigDir, "hooks.json"), nil
	case Project, "":
		if o.ProjectDir == "" {
			return "", errs.New(errs.ConfigInvalid, "the project scope needs the project directory")
		}
		return filepath.Join(o.ProjectDir, ".cursor", "hooks.json"), nil
	}
	return "", errs.New(errs.ConfigInvalid, "Cursor's hooks have the scopes project and user, not %q", o.Scope)
}

// InstallCursor merges awaken-lua's command hook into Cursor's hooks.json
// ({"version": 1, "hooks": {event: [{"command": ..., "timeout": ...}]}},
// failClosed on the tool-permission events), or removes it
// (o.Uninstall): one entry per event, other hooks untouched, a backup of
// the file first. Cursor has no HTTP hooks: the command hook forwards to
// the sidecar and fails closed.
func InstallCursor(o Options) (Result, error) {
	o = defaults(o)
	if o.Command == DefaultCommand {
		o.Command = CursorCommand
	}
	if !o.isOurCommand(o.Command) {
		return Result{}, errs.New(errs.ConfigInvalid, "the hook command %q must run awaken-lua hook (like %q)", o.Command, CursorCommand)
	}
	p, err := CursorPath(o)
	if err != nil {
		return Result{}, err
	}
	return o.editFile(p, "cursor", Options.mergeCursor, nil)
}

// cursorOurs reports whether a Cursor hook entry is awaken-lua's.
func (o Options) cursorOurs(h *node, event string) bool {
	if h.kind != '{' {
		return false
	}
	c, _ := h.get("command")
	s, ok := c.text()
	return ok && o.installed(s, event)
}

func (o Options) mergeCursor(root *node, res *Result) error {
	if v, _ := root.get("version"); v == nil && !o.Uninstall {
		root.set("version", number(1))
	} else if v != nil && string(v.raw) != "1" {
		return fmt.Errorf(`"version" is %s; awaken-lua knows Cursor's hooks version 1`, v.raw)
	}
	hooks, n := root.get("hooks")
	switch {
	case n > 1:
		return errors.New(`"hooks" is given twice; keep one and install again`)
	case hooks == nil:
		if o.Uninstall {
			return nil
		}
		hooks = object()
		root.set("hooks", hooks)
	case hooks.kind != '{':
		return fmt.Errorf(`"hooks" is a JSON %s, not an object of events`, kindName(hooks))
	}
	for i, event := range hooks.keys {
		if hooks.vals[i].kind != '[' {
			return fmt.Errorf("hooks.%s is a JSON %s, not a list of hooks", event, kindName(hooks.vals[i]))
		}
	}
	if o.Uninstall {
		for i := 0; i < len(hooks.keys); i++ {
			list, event := hooks.vals[i], hooks.keys[i]
			var kept []*node
			for _, h := range list.elems {
				if !o.cursorOurs(h, event) {
					kept = append(kept, h)
				}
			}
			if removed := len(list.elems) - len(kept); removed > 0 {
				res.Removed += removed
				list.setElems(kept)
				if len(kept) == 0 {
					hooks.delAt(i)
					i--
				}
			}
		}
		if res.Removed > 0 && len(hooks.keys) == 0 {
			root.del("hooks")
			if v, _ := root.get("version"); len(root.keys) == 1 && v != nil && string(v.raw) == "1" {
				root.del("version") // install's, with no hook left
			}
		}
		return nil
	}
	for _, event := range CursorEvents {
		want := object()
		want.set("command", str(eventCommand(o.Command, "cursor", event)))
		// In seconds, above the hook command's own timeout, so that its
		// answer (fail closed, when it has none) comes first.
		want.set("timeout", number(o.Timeout))
		if cursorFailClosed[event] {
			want.set("failClosed", boolean(true))
		}
		list, _ := hooks.get(event)
		if list == nil {
			list = array()
			hooks.set(event, list)
		}
		var ours []int
		for i, h := range list.elems {
			if o.cursorOurs(h, event) {
				ours = append(ours, i)
			}
		}
		switch {
		case len(ours) == 1 && equal(list.elems[ours[0]], want):
		case len(ours) == 1:
			list.elems[ours[0]] = want
			list.dirty = true
			res.Updated++
		default:
			var kept []*node
			for _, h := range list.elems {
				if !o.cursorOurs(h, event) {
					kept = append(kept, h)
				}
			}
			if len(ours) > 0 {
				res.Updated++
			} else {
				res.Added++
			}
			list.setElems(append(kept, want))
		}
	}
	return nil
}
