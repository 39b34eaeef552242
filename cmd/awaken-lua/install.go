package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/awaken-lua/awaken-lua/agentsettings"
	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// installMore is install's help after the flags: where each agent's
// hooks go.
const installMore = `The settings file, by agent and --scope:
  claude-code  project .claude/settings.json, local .claude/settings.local.json,
               user ~/.claude/settings.json ($CLAUDE_CONFIG_DIR)
  codex        project .codex/hooks.json, user ~/.codex/hooks.json ($CODEX_HOME)
  cursor       project .cursor/hooks.json, user ~/.cursor/hooks.json
  gemini       project .gemini/settings.json, user ~/.gemini/settings.json
  copilot      project .github/hooks/awaken.json (its own file)
A backup is kept first, other hooks are left as they are, and a second
install changes nothing. --uninstall deletes a file install created,
and gives back one that was there before as it was.`

// cmdInstall merges awaken-lua's hooks into a coding agent's settings
// (agentsettings): idempotent, with a backup first, other hooks untouched.
func cmdInstall(e *env) int {
	fs := e.flags("install")
	scope := fs.String("scope", "project", "project, local (claude-code only) or user: the settings file, see below")
	useHTTP := fs.Bool("http", false, "claude-code: install HTTP hooks instead of the command hook (Claude Code runs HTTP hooks fail-open: a sidecar that is down lets tools run)")
	uninstall := fs.Bool("uninstall", false, "remove awaken-lua's hooks instead")
	command := fs.String("command", "", "the command hook to install (default \"awaken-lua hook --agent AGENT\"; not for copilot)")
	hookURL := fs.String("url", "", "claude-code --http: the HTTP hook's address (default "+agentsettings.DefaultURL+")")
	args, err := parse(fs, e.args)
	if err != nil {
		return exitUsage
	}
	if len(args) == 1 && args[0] == "gemini-cli" {
		args[0] = "gemini" // the CLI's own name
	}
	if len(args) != 1 || (args[0] != "claude-code" && args[0] != "cursor" && args[0] != "codex" && args[0] != "gemini" && args[0] != "copilot") {
		fmt.Fprintln(e.stderr, "usage: awaken-lua install claude-code|codex|copilot|cursor|gemini [--scope project|local|user] [--http] [--uninstall]")
		if len(args) == 1 {
			fmt.Fprintf(e.stderr, "awaken-lua install: %q is not a supported agent%s; supported: claude-code, codex, copilot, cursor, gemini\n",
				args[0], errs.DidYouMean(args[0], []string{"claude-code", "codex", "copilot", "cursor", "gemini"}))
		}
		return exitUsage
	}
	agent := args[0]
	var s agentsettings.Scope
	switch *scope {
	case "project":
		s = agentsettings.Project
	case "local":
		s = agentsettings.Local
	case "user":
		s = agentsettings.User
	default:
		fmt.Fprintf(e.stderr, "awaken-lua install: --scope is project, local or user, not %q\n", *scope)
		return exitUsage
	}
	// Flags the install would not use are refused rather than dropped:
	// the user would believe the hooks call the address or command given.
	switch {
	case *hookURL != "" && agent != "claude-code":
		fmt.Fprintf(e.stderr, "awaken-lua install %s: --url is the address of Claude Code's HTTP hooks; %s runs the command hook, so leave --url out\n", agent, agent)
		return exitUsage
	case *hookURL != "" && !*useHTTP:
		fmt.Fprintln(e.stderr, "awaken-lua install claude-code: --url is the address of the HTTP hooks; add --http, or leave --url out")
		return exitUsage
	case *command != "" && agent == "copilot":
		fmt.Fprintln(e.stderr, "awaken-lua install copilot: --command is not used for Copilot CLI, whose hook file runs awaken-lua hook --agent copilot per event; leave --command out")
		return exitUsage
	}
	wd, err := os.Getwd()
	if err != nil {
		fmt.Fprintf(e.stderr, "awaken-lua install: %v\n", err)
		return exitFailed
	}
	var res agentsettings.Result
	if agent == "copilot" {
		if *useHTTP || s != agentsettings.Project {
			fmt.Fprintln(e.stderr, "awaken-lua install copilot: Copilot CLI runs command hooks from the repository (.github/hooks), the project scope")
			return exitUsage
		}
		res, err = agentsettings.InstallCopilot(agentsettings.Options{Uninstall: *uninstall, ProjectDir: wd})
	} else if agent == "gemini" {
		if *useHTTP || s == agentsettings.Local {
			fmt.Fprintln(e.stderr, "awaken-lua install gemini: Gemini CLI runs command hooks only, in the project or user scope")
			return exitUsage
		}
		cfgDir := ""
		if home, err := os.UserHomeDir(); err == nil {
			cfgDir = filepath.Join(home, ".gemini")
		}
		res, err = agentsettings.InstallGemini(agentsettings.Options{Scope: s, Uninstall: *uninstall, ProjectDir: wd,
			ConfigDir: cfgDir, Command: *command})
	} else if agent == "codex" {
		if *useHTTP || s == agentsettings.Local {
			fmt.Fprintln(e.stderr, "awaken-lua install codex: the command hook, in the project or user scope")
			return exitUsage
		}
		cfgDir := os.Getenv("CODEX_HOME")
		if cfgDir == "" {
			if home, err := os.UserHomeDir(); err == nil {
				cfgDir = filepath.Join(home, ".codex")
			}
		}
		res, err = agentsettings.InstallCodex(agentsettings.Options{Scope: s, Uninstall: *uninstall, ProjectDir: wd,
			ConfigDir: cfgDir, Command: *command})
	} else if agent == "cursor" {
		if *useHTTP || s == agentsettings.Local {
			fmt.Fprintln(e.stderr, "awaken-lua install cursor: Cursor runs command hooks only, in the project or user scope")
			return exitUsage
		}
		cfgDir := ""
		if home, err := os.UserHomeDir(); err == nil {
			cfgDir = filepath.Join(home, ".cursor")
		}
		res, err = agentsettings.InstallCursor(agentsettings.Options{Scope: s, Uninstall: *uninstall, ProjectDir: wd,
			ConfigDir: cfgDir, Command: *command})
	} else {
		cfgDir := os.Getenv("CLAUDE_CONFIG_DIR")
		if cfgDir == "" {
			if home, err := os.UserHomeDir(); err == nil {
				cfgDir = filepath.Join(home, ".claude")
			}
		}
		res, err = agentsettings.InstallClaudeCode(agentsettings.Options{Scope: s, HTTP: *useHTTP, Uninstall: *uninstall,
			ProjectDir: wd, ConfigDir: cfgDir, Command: *command, URL: *hookURL})
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "awaken-lua install: %v\n", err)
		return exitFailed
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(e.stderr, "warning: %s\n", w)
	}
	switch {
	case !res.Changed && *uninstall:
		fmt.Fprintf(e.stdout, "%s: no awaken-lua hooks to remove (installed in another directory or --scope?)\n", res.Path)
	case !res.Changed:
		fmt.Fprintf(e.stdout, "%s: already up to date\n", res.Path)
	case *uninstall && res.Deleted:
		fmt.Fprintf(e.stdout, "%s: removed %d awaken-lua hooks, and the file\n", res.Path, res.Removed)
	case *uninstall:
		fmt.Fprintf(e.stdout, "%s: removed %d awaken-lua hooks\n", res.Path, res.Removed)
	default:
		fmt.Fprintf(e.stdout, "%s: %d hooks added, %d updated\n", res.Path, res.Added, res.Updated)
	}
	if res.Backup != "" {
		fmt.Fprintf(e.stdout, "the previous file is kept as %s\n", res.Backup)
	}
	return exitOK
}
