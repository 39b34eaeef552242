package agentsettings

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestInstallCursor(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ".cursor", "hooks.json")
	os.MkdirAll(filepath.Dir(p), 0o755)
	// The user's own hooks stay.
	os.WriteFile(p, []byte(`{"version": 1, "hooks": {"afterFileEdit": [{"command": "./format.sh"}], "beforeShellExecution": [{"command": "./audit.sh"}]}}`+"\n"), 0o644)
	now := time.Date(2026, 11, 24, 5, 0, 0, 0, time.UTC)
	o := Options{ProjectDir: dir, Now: func() time.Time { return now }}
	res, err := InstallCursor(o)
	if err != nil || res.Added != len(CursorEvents) || res.Backup == "" {
		t.Fatalf("install: %+v %v", res, err)
	}
	var got struct {
		Version int
		Hooks   map[string][]map[string]any
	}
	b, _ := os.ReadFile(p)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.Version != 1 || len(got.Hooks["afterFileEdit"]) != 1 || got.Hooks["afterFileEdit"][0]["command"] != "./format.sh" {
		t.Fatalf("the user's hooks changed:\n%s", b)
	}
	shell := got.Hooks["beforeShellExecution"]
	if len(shell) != 2 || shell[0]["command"] != "./audit.sh" || shell[1]["command"] != CursorCommand+" --event beforeShellExecution" {
		t.Fatalf("beforeShellExecution: %v", shell)
	}
	// A second install changes nothing.
	now = now.Add(time.Second)
	if res, err := InstallCursor(o); err != nil || res.Changed || res.Added+res.Updated != 0 {
		t.Fatalf("second install: %+v %v", res, err)
	}
	// Uninstall takes out exactly awaken-lua's entries.
	o.Uninstall = true
	res, err = InstallCursor(o)
	if err != nil || res.Removed != len(CursorEvents) {
		t.Fatalf("uninstall: %+v %v", res, err)
	}
	b, _ = os.ReadFile(p)
	if strings.Contains(string(b), "awaken-lua") || !strings.Contains(string(b), "./audit.sh") || !strings.Contains(string(b), "./format.sh") {
		t.Fatalf("after uninstall:\n%s", b)
	}
}

func TestInstallCursorRefusesOtherVersions(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ".cursor", "hooks.json")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte(`{"version": 2, "hooks": {}}`), 0o644)
	if _, err := InstallCursor(Options{ProjectDir: dir}); err == nil || !strings.Contains(err.Error(), "version") {
		t.Fatalf("err = %v", err)
	}
}

// The README's Cursor snippet is hooks.json as Cursor reads it, with
// events and a command the installer writes.
func TestReadmeCursorSnippet(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "### Cursor\n")
	if !ok {
		t.Fatal("the README has no Cursor section")
	}
	_, rest, ok = strings.Cut(rest, "```json\n")
	snippet, _, ok2 := strings.Cut(rest, "```")
	if !ok || !ok2 {
		t.Fatal("the Cursor section has no JSON snippet")
	}
	var got struct {
		Version int
		Hooks   map[string][]map[string]any
	}
	if err := json.Unmarshal([]byte(snippet), &got); err != nil {
		t.Fatalf("the snippet is not JSON: %v", err)
	}
	known := map[string]bool{}
	for _, e := range CursorEvents {
		known[e] = true
	}
	if got.Version != 1 || len(got.Hooks) == 0 {
		t.Fatalf("snippet: %+v", got)
	}
	for event, hooks := range got.Hooks {
		closed, _ := hooks[0]["failClosed"].(bool)
		if !known[event] || len(hooks) != 1 || hooks[0]["command"] != CursorCommand+" --event "+event ||
			hooks[0]["timeout"] != float64(DefaultTimeout) || closed != cursorFailClosed[event] {
			t.Errorf("snippet event %s: %v", event, hooks)
		}
	}
}

func TestInstallCodex(t *testing.T) {
	dir := t.TempDir()
	o := Options{ProjectDir: dir}
	res, err := InstallCodex(o)
	if err != nil || res.Added != len(CodexEvents) || res.Path != filepath.Join(dir, ".codex", "hooks.json") {
		t.Fatalf("install: %+v %v", res, err)
	}
	b, _ := os.ReadFile(res.Path)
	var got struct {
		Hooks map[string][]struct {
			Matcher string
			Hooks   []map[string]any
		}
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	pre := got.Hooks["PreToolUse"]
	if len(got.Hooks) != len(CodexEvents) || len(pre) != 1 || pre[0].Hooks[0]["command"] != CodexCommand+" --event PreToolUse" || pre[0].Hooks[0]["type"] != "command" {
		t.Fatalf("hooks.json:\n%s", b)
	}
	if res, err := InstallCodex(o); err != nil || res.Changed {
		t.Fatalf("second install: %+v %v", res, err)
	}
	o.Uninstall = true
	if res, err := InstallCodex(o); err != nil || res.Removed != len(CodexEvents) {
		t.Fatalf("uninstall: %+v %v", res, err)
	}
}

func TestInstallGemini(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ".gemini", "settings.json")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte(`{"theme": "Dracula", "hooks": {"AfterTool": [{"matcher": "write_file", "hooks": [{"type": "command", "command": "./lint.sh"}]}]}}`+"\n"), 0o644)
	o := Options{ProjectDir: dir}
	res, err := InstallGemini(o)
	if err != nil || res.Added != len(GeminiEvents) || len(res.Warnings) != 1 {
		t.Fatalf("install: %+v %v", res, err)
	}
	b, _ := os.ReadFile(p)
	var got struct {
		Theme string
		Hooks map[string]json.RawMessage
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	var before []struct {
		Matcher string
		Hooks   []map[string]any
	}
	json.Unmarshal(got.Hooks["BeforeTool"], &before)
	if got.Theme != "Dracula" || string(got.Hooks["enabled"]) != "true" || !strings.Contains(string(got.Hooks["AfterTool"]), "./lint.sh") ||
		len(before) != 1 || before[0].Hooks[0]["command"] != GeminiCommand+" --event BeforeTool" || before[0].Hooks[0]["timeout"] != 30000.0 {
		t.Fatalf("settings.json:\n%s", b)
	}
	if res, err := InstallGemini(o); err != nil || res.Changed {
		t.Fatalf("second install: %+v %v", res, err)
	}
	o.Uninstall = true
	if res, err := InstallGemini(o); err != nil || res.Removed != len(GeminiEvents) {
		t.Fatalf("uninstall: %+v %v", res, err)
	}
	b, _ = os.ReadFile(p)
	if strings.Contains(string(b), "awaken-lua") || !strings.Contains(string(b), "./lint.sh") {
		t.Fatalf("after uninstall:\n%s", b)
	}
}

func TestInstallCopilot(t *testing.T) {
	dir := t.TempDir()
	other := filepath.Join(dir, ".github", "hooks", "team.json")
	os.MkdirAll(filepath.Dir(other), 0o755)
	os.WriteFile(other, []byte(`{"version": 1, "hooks": {}}`), 0o644)
	o := Options{ProjectDir: dir}
	res, err := InstallCopilot(o)
	if err != nil || res.Added != len(CopilotEvents) || res.Path != filepath.Join(dir, ".github", "hooks", "awaken.json") {
		t.Fatalf("install: %+v %v", res, err)
	}
	var got struct {
		Version int
		Hooks   map[string][]map[string]any
	}
	b, _ := os.ReadFile(res.Path)
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	pre := got.Hooks["preToolUse"]
	if got.Version != 1 || len(pre) != 1 || pre[0]["bash"] != "awaken-lua hook --agent copilot --event preToolUse" || pre[0]["type"] != "command" {
		t.Fatalf("awaken.json:\n%s", b)
	}
	if res, err := InstallCopilot(o); err != nil || res.Changed {
		t.Fatalf("second install: %+v %v", res, err)
	}
	o.Uninstall = true
	if res, err := InstallCopilot(o); err != nil || res.Removed != len(CopilotEvents) {
		t.Fatalf("uninstall: %+v %v", res, err)
	}
	if _, err := os.Stat(filepath.Join(dir, ".github", "hooks", "awaken.json")); !os.IsNotExist(err) {
		t.Fatal("awaken.json is still there")
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatal("another hooks file was touched")
	}
}

// The README's snippets for Codex CLI, Gemini CLI and Copilot CLI name
// events the installers write, with the installers' commands.
func TestReadmeAgentSnippets(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	snippet := func(section string) []byte {
		_, rest, ok := strings.Cut(string(b), "### "+section+"\n")
		if !ok {
			t.Fatalf("the README has no %s section", section)
		}
		_, rest, _ = strings.Cut(rest, "```json\n")
		s, _, ok := strings.Cut(rest, "```")
		if !ok {
			t.Fatalf("the %s section has no JSON snippet", section)
		}
		return []byte(s)
	}
	in := func(list []string, s string) bool {
		for _, x := range list {
			if x == s {
				return true
			}
		}
		return false
	}
	for _, c := range []struct {
		section, command string
		events           []string
	}{{"Codex CLI", CodexCommand, CodexEvents}, {"Gemini CLI", GeminiCommand, GeminiEvents}} {
		var got struct {
			Hooks map[string]json.RawMessage
		}
		if err := json.Unmarshal(snippet(c.section), &got); err != nil {
			t.Fatalf("%s: %v", c.section, err)
		}
		for event, raw := range got.Hooks {
			if event == "enabled" {
				continue
			}
			var groups []struct{ Hooks []map[string]any }
			if err := json.Unmarshal(raw, &groups); err != nil || !in(c.events, event) || groups[0].Hooks[0]["command"] != c.command+" --event "+event {
				t.Errorf("%s snippet, %s: %s (%v)", c.section, event, raw, err)
			}
		}
	}
	var cp struct {
		Version int
		Hooks   map[string][]map[string]any
	}
	if err := json.Unmarshal(snippet("GitHub Copilot CLI"), &cp); err != nil || cp.Version != 1 {
		t.Fatalf("Copilot snippet: %v", err)
	}
	for event, hooks := range cp.Hooks {
		if !in(CopilotEvents, event) || hooks[0]["bash"] != "awaken-lua hook --agent copilot --event "+event {
			t.Errorf("Copilot snippet, %s: %v", event, hooks)
		}
	}
}

// An uninstall after an install that created the file leaves nothing
// behind: no {} (nor Cursor's version, nor Gemini's hooks.enabled) and
// no backup of a file that held only awaken-lua's entries. A file the
// user had comes back as it was.
func TestUninstallLeavesNoFileOfOurs(t *testing.T) {
	type agent struct {
		name    string
		install func(Options) (Result, error)
		file    string
		user    string // a file of the user's, given back by uninstall
	}
	for _, a := range []agent{
		{"claude-code", InstallClaudeCode, ".claude/settings.json", `{"model":"m"}`},
		{"codex", InstallCodex, ".codex/hooks.json", `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"./mine"}]}]}}`},
		{"cursor", InstallCursor, ".cursor/hooks.json", `{"version":1,"hooks":{"stop":[{"command":"./mine"}]}}`},
		{"gemini", InstallGemini, ".gemini/settings.json", `{"theme":"Dracula"}`},
		{"copilot", InstallCopilot, ".github/hooks/awaken.json", ""},
	} {
		t.Run(a.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, filepath.FromSlash(a.file))
			o := opts(dir)
			if _, err := a.install(o); err != nil {
				t.Fatal(err)
			}
			o.Uninstall = true
			res, err := a.install(o)
			if err != nil || !res.Deleted || res.Backup != "" {
				t.Fatalf("uninstall: %+v %v", res, err)
			}
			left, _ := filepath.Glob(p + "*")
			if len(left) != 0 {
				t.Fatalf("left behind: %v", left)
			}
			if a.user == "" {
				return
			}
			os.MkdirAll(filepath.Dir(p), 0o755) // uninstall took the directory too
			os.WriteFile(p, []byte(a.user+"\n"), 0o644)
			o.Uninstall = false
			if _, err := a.install(o); err != nil {
				t.Fatal(err)
			}
			o.Uninstall = true
			if res, err := a.install(o); err != nil || res.Deleted {
				t.Fatalf("uninstall: %+v %v", res, err)
			}
			if got := readFile(t, p); got != a.user+"\n" {
				t.Fatalf("after uninstall:\n%s\nwant\n%s", got, a.user)
			}
		})
	}
	// Through a symbolic link, the file stays ({}), not the link dangling.
	dir := t.TempDir()
	real := filepath.Join(dir, "dotfiles.json")
	os.WriteFile(real, []byte("{}\n"), 0o644)
	os.MkdirAll(filepath.Join(dir, ".claude"), 0o755)
	os.Symlink(real, settingsPath(dir))
	InstallClaudeCode(opts(dir))
	o := opts(dir)
	o.Uninstall = true
	if res, err := InstallClaudeCode(o); err != nil || res.Deleted || readFile(t, real) != "{}\n" {
		t.Fatalf("through a link: %+v %v %q", res, err, readFile(t, real))
	}
}

// Copilot's file, edited by hand, is still backed up before uninstall
// removes it.
func TestUninstallCopilotKeepsAnEditedFile(t *testing.T) {
	dir := t.TempDir()
	o := opts(dir)
	res, err := InstallCopilot(o)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(res.Path, []byte(`{"version": 1, "hooks": {"sessionEnd": [{"type": "command", "bash": "./mine"}]}}`), 0o644)
	o.Uninstall = true
	res, err = InstallCopilot(o)
	if err != nil || !res.Deleted || res.Backup == "" || !strings.Contains(readFile(t, res.Backup), "./mine") {
		t.Fatalf("uninstall: %+v %v", res, err)
	}
}

// An event given twice (JSON.parse keeps the last) does not make
// uninstall drop the other copy's hooks or skip the next event.
func TestUninstallCursorDuplicateEvent(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ".cursor", "hooks.json")
	os.MkdirAll(filepath.Dir(p), 0o755)
	os.WriteFile(p, []byte(`{"version":1,"hooks":{"stop":[{"command":"./mine"}],"stop":[]}}`), 0o644)
	o := opts(dir)
	if _, err := InstallCursor(o); err != nil {
		t.Fatal(err)
	}
	o.Uninstall = true
	res, err := InstallCursor(o)
	if err != nil || res.Removed != len(CursorEvents) {
		t.Fatalf("uninstall: %+v %v", res, err)
	}
	if got := readFile(t, p); got != `{"version":1,"hooks":{"stop":[{"command":"./mine"}]}}` {
		t.Fatalf("after uninstall: %s", got)
	}
}

// A file holding only awaken-lua's hooks, but not as install writes them
// (the user's matcher, flags or timeout), is not deleted without a
// backup: uninstall leaves it as {} and keeps the old one beside it.
func TestUninstallKeepsAHandWrittenFile(t *testing.T) {
	for _, c := range []struct {
		name    string
		install func(Options) (Result, error)
		file    string
		text    string
	}{
		{"claude-code", InstallClaudeCode, ".claude/settings.json",
			`{"hooks":{"PreToolUse":[{"matcher":"Bash","hooks":[{"type":"command","command":"/opt/bin/awaken-lua hook --agent claude-code --policy /etc/policy.lua","timeout":5}]}]}}`},
		{"cursor", InstallCursor, ".cursor/hooks.json",
			`{"version":1,"hooks":{"beforeShellExecution":[{"command":"awaken-lua hook --agent cursor --policy p.lua"}]}}`},
		{"gemini", InstallGemini, ".gemini/settings.json",
			`{"hooks":{"enabled":true,"BeforeTool":[{"matcher":"run_shell_command","hooks":[{"type":"command","command":"awaken-lua hook --agent gemini"}]}]}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, filepath.FromSlash(c.file))
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte(c.text+"\n"), 0o644)
			o := opts(dir)
			o.Uninstall = true
			res, err := c.install(o)
			if err != nil || res.Removed != 1 || res.Deleted || res.Backup == "" {
				t.Fatalf("uninstall: %+v %v", res, err)
			}
			if got := readFile(t, res.Backup); got != c.text+"\n" {
				t.Fatalf("backup:\n%s", got)
			}
			if got := readFile(t, p); got != "{}\n" {
				t.Fatalf("after uninstall:\n%s", got)
			}
		})
	}
}

// Copilot's awaken.json as a link to a shared file: uninstall does not
// delete the target without a backup.
func TestUninstallCopilotThroughALinkKeepsABackup(t *testing.T) {
	dir := t.TempDir()
	o := opts(dir)
	res, err := InstallCopilot(o)
	if err != nil {
		t.Fatal(err)
	}
	shared := filepath.Join(dir, "team-awaken.json")
	if err := os.Rename(res.Path, shared); err != nil {
		t.Fatal(err)
	}
	os.Symlink(shared, res.Path)
	o.Uninstall = true
	res, err = InstallCopilot(o)
	if err != nil || res.Backup == "" {
		t.Fatalf("uninstall: %+v %v", res, err)
	}
	if got := readFile(t, res.Backup); !strings.Contains(got, "awaken-lua hook --agent copilot") {
		t.Fatalf("backup:\n%s", got)
	}
}

// Cursor lets a tool run when its hook fails (awaken-lua not on the PATH
// Cursor runs hooks with, a crash, a timeout) unless the entry says
// failClosed: the entries of the events that decide a tool's permission
// do, and each gives Cursor a timeout above the hook command's own, so
// the command's fail-closed answer comes first. An entry installed
// without them is updated.
func TestInstallCursorFailsClosed(t *testing.T) {
	for _, tc := range []struct {
		name, before string
		timeout      int
	}{
		{"a fresh file", "", 0},
		{"an install without failClosed", `{"version":1,"hooks":{"beforeShellExecution":[{"command":"awaken-lua hook --agent cursor --event beforeShellExecution"}]}}`, 0},
		{"a timeout of the user's", "", 45},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, ".cursor", "hooks.json")
			if tc.before != "" {
				os.MkdirAll(filepath.Dir(p), 0o755)
				os.WriteFile(p, []byte(tc.before), 0o644)
			}
			o := opts(dir)
			o.Timeout = tc.timeout
			if _, err := InstallCursor(o); err != nil {
				t.Fatal(err)
			}
			var got struct{ Hooks map[string][]map[string]any }
			if err := json.Unmarshal([]byte(readFile(t, p)), &got); err != nil {
				t.Fatal(err)
			}
			want := float64(DefaultTimeout)
			if tc.timeout != 0 {
				want = float64(tc.timeout)
			}
			permission := map[string]bool{"beforeShellExecution": true, "beforeMCPExecution": true, "beforeReadFile": true}
			for _, event := range CursorEvents {
				hooks := got.Hooks[event]
				if len(hooks) != 1 {
					t.Fatalf("%s: %v", event, hooks)
				}
				closed, _ := hooks[0]["failClosed"].(bool)
				if closed != permission[event] || hooks[0]["timeout"] != want {
					t.Errorf("%s: failClosed %v, timeout %v; want %v, %v", event, hooks[0]["failClosed"], hooks[0]["timeout"], permission[event], want)
				}
			}
		})
	}
}
