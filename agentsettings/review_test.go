package agentsettings

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A hook at this machine's sidecar written with another spelling of the
// loopback host (127.1, localhost., [::1], 0x7f.0.0.1) is awaken-lua's:
// install replaces it rather than adding a second, uninstall takes it out.
func TestLoopbackSpellingsAreOurs(t *testing.T) {
	for _, host := range []string{"127.1", "localhost.", "LOCALHOST", "127.0.1", "2130706433", "0x7f.0.0.1", "[::1]"} {
		t.Run(host, func(t *testing.T) {
			dir := t.TempDir()
			p := writeSettings(t, dir, `{"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "http", "url": "http://`+host+`:7878/v1/hooks/claude-code"}]}]}}`)
			o := opts(dir)
			o.Uninstall = true
			res, err := InstallClaudeCode(o)
			if err != nil || res.Removed != 1 {
				t.Fatalf("uninstall: %+v %v\n%s", res, err, readFile(t, p))
			}
		})
	}
	// Not this machine: the user's.
	for _, host := range []string{"127.1.example.com", "localhost.example.com", "10.0.0.1", "1.2.3.4.5"} {
		dir := t.TempDir()
		p := writeSettings(t, dir, `{"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "http", "url": "http://`+host+`:7878/v1/hooks/claude-code"}]}]}}`)
		o := opts(dir)
		o.Uninstall = true
		if res, err := InstallClaudeCode(o); err != nil || res.Removed != 0 || !strings.Contains(readFile(t, p), host) {
			t.Fatalf("%s: %+v %v", host, res, err)
		}
	}
}

type agentCase struct {
	name    string
	install func(Options) (Result, error)
	file    string
}

var mergedAgents = []agentCase{
	{"claude-code", InstallClaudeCode, ".claude/settings.json"},
	{"codex", InstallCodex, ".codex/hooks.json"},
	{"cursor", InstallCursor, ".cursor/hooks.json"},
	{"gemini", InstallGemini, ".gemini/settings.json"},
}

// Hooks installed with a --command of another name are found by an
// uninstall run without it: they have install's shape, hook --agent A
// --event E.
func TestUninstallFindsHooksOfAnotherCommand(t *testing.T) {
	for _, a := range mergedAgents {
		for _, cmd := range []string{"/opt/tools/al hook --agent " + a.name, "/opt/tools/al hook --suspend defer", `"/opt/my tools/awaken-lua" hook`} {
			t.Run(a.name+"/"+cmd, func(t *testing.T) {
				dir := t.TempDir()
				p := filepath.Join(dir, filepath.FromSlash(a.file))
				o := opts(dir)
				o.Command = cmd
				if _, err := a.install(o); err != nil {
					t.Fatal(err)
				}
				o.Command = ""
				if res, err := a.install(o); err != nil || res.Updated == 0 || res.Added != 0 {
					t.Fatalf("install with the default command: %+v %v\n%s", res, err, readFile(t, p))
				}
				o.Command = cmd
				if _, err := a.install(o); err != nil {
					t.Fatal(err)
				}
				o.Command = ""
				o.Uninstall = true
				res, err := a.install(o)
				if err != nil || res.Removed == 0 {
					t.Fatalf("uninstall: %+v %v", res, err)
				}
				// Not what a default install writes: kept as {}, backed up.
				if got := readFile(t, p); got != "{}\n" {
					t.Fatalf("left behind:\n%s", got)
				}
			})
		}
	}
}

// A user's own awaken-lua hook command (no --event, no --agent: not the
// shape install writes), or another program's hook subcommand, stays
// through install and uninstall.
func TestUserAwakenHookCommandIsTheirs(t *testing.T) {
	const mine = `awaken-lua hook --local --config x.toml`
	const other = `/usr/bin/other hook --agent mine --event Stop`
	dir := t.TempDir()
	p := writeSettings(t, dir, `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "`+mine+`"}, {"type": "command", "command": "`+other+`"}]}]}}`)
	for _, uninstall := range []bool{false, true} {
		o := opts(dir)
		o.Uninstall = uninstall
		if _, err := InstallClaudeCode(o); err != nil {
			t.Fatal(err)
		}
		stop := hooksOf(t, readFile(t, p))["Stop"]
		if len(stop) == 0 || len(stop[0].Hooks) != 2 || stop[0].Hooks[0]["command"] != mine || stop[0].Hooks[1]["command"] != other {
			t.Fatalf("uninstall %v: the user's hooks changed: %+v", uninstall, stop)
		}
		if want := map[bool]int{false: 2, true: 1}[uninstall]; len(stop) != want {
			t.Fatalf("uninstall %v: %d groups, want %d: %+v", uninstall, len(stop), want, stop)
		}
	}
	// Cursor's too.
	cp := filepath.Join(dir, ".cursor", "hooks.json")
	os.MkdirAll(filepath.Dir(cp), 0o755)
	os.WriteFile(cp, []byte(`{"version": 1, "hooks": {"stop": [{"command": "`+mine+`"}]}}`), 0o644)
	for _, uninstall := range []bool{false, true} {
		o := opts(dir)
		o.Uninstall = uninstall
		if _, err := InstallCursor(o); err != nil {
			t.Fatal(err)
		}
		if got := readFile(t, cp); !strings.Contains(got, mine) {
			t.Fatalf("uninstall %v: the user's hook is gone:\n%s", uninstall, got)
		}
	}
}

// A settings file that was there before install, with nothing in it
// (or only what install adds to), is there after uninstall as it was:
// uninstall deletes only a file install created.
func TestUninstallKeepsATrivialFileThatWasThere(t *testing.T) {
	for _, a := range mergedAgents {
		texts := []string{"{}\n", `{"hooks":{}}`, "", "{ }\r\n"}
		if a.name == "cursor" {
			texts = append(texts, `{"version": 1, "hooks": {}}`+"\n")
		}
		if a.name == "gemini" {
			texts = append(texts, `{"hooks": {"enabled": true}}`+"\n")
		}
		for _, text := range texts {
			t.Run(a.name+"/"+text, func(t *testing.T) {
				dir := t.TempDir()
				p := filepath.Join(dir, filepath.FromSlash(a.file))
				os.MkdirAll(filepath.Dir(p), 0o755)
				os.WriteFile(p, []byte(text), 0o644)
				o := opts(dir)
				for range 2 { // a second install changes nothing
					if _, err := a.install(o); err != nil {
						t.Fatal(err)
					}
				}
				o.Uninstall = true
				res, err := a.install(o)
				if err != nil || res.Deleted || res.Backup == "" {
					t.Fatalf("uninstall: %+v %v", res, err)
				}
				if got := readFile(t, p); got != text {
					t.Fatalf("after uninstall %q, want %q", got, text)
				}
				if res, err := a.install(o); err != nil || res.Changed {
					t.Fatalf("second uninstall: %+v %v", res, err)
				}
			})
		}
	}
	// A file install created goes, also after a reinstall with other
	// options backed up install's own file.
	dir := t.TempDir()
	o := opts(dir)
	o.Timeout = 20
	InstallClaudeCode(o)
	o.Timeout = 0
	if res, err := InstallClaudeCode(o); err != nil || res.Backup == "" {
		t.Fatalf("reinstall: %+v %v", res, err)
	}
	o.Uninstall = true
	if res, err := InstallClaudeCode(o); err != nil || !res.Deleted {
		t.Fatalf("uninstall: %+v %v", res, err)
	}
}

// The directories an install into a fresh project made (.claude/,
// .github/hooks/ and .github/, ...) go with the file uninstall deletes;
// a directory with anything else in it stays.
func TestUninstallRemovesTheDirectoriesItEmptied(t *testing.T) {
	for _, a := range append(mergedAgents, agentCase{"copilot", InstallCopilot, ".github/hooks/awaken.json"}) {
		t.Run(a.name, func(t *testing.T) {
			dir := t.TempDir()
			o := opts(dir)
			if _, err := a.install(o); err != nil {
				t.Fatal(err)
			}
			o.Uninstall = true
			if res, err := a.install(o); err != nil || !res.Deleted {
				t.Fatalf("uninstall: %+v %v", res, err)
			}
			if ents, _ := os.ReadDir(dir); len(ents) != 0 {
				t.Fatalf("left in the project: %v", ents)
			}
			// Something else beside it: that directory stays.
			top := strings.Split(a.file, "/")[0]
			if _, err := a.install(Options{ProjectDir: dir, Now: o.Now}); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, top, "mine"), []byte("x"), 0o644)
			if res, err := a.install(o); err != nil || !res.Deleted {
				t.Fatalf("uninstall: %+v %v", res, err)
			}
			if _, err := os.Stat(filepath.Join(dir, top, "mine")); err != nil {
				t.Fatal(err)
			}
		})
	}
	// The user scope's directory is the agent's own: it stays.
	cfg := filepath.Join(t.TempDir(), ".claude")
	o := Options{Scope: User, ConfigDir: cfg, Now: opts("").Now}
	InstallClaudeCode(o)
	o.Uninstall = true
	if res, err := InstallClaudeCode(o); err != nil || !res.Deleted {
		t.Fatalf("uninstall: %+v %v", res, err)
	}
	if _, err := os.Stat(cfg); err != nil {
		t.Fatal(err)
	}
}

// A settings file with comments is never rewritten (that would drop
// them): install and uninstall refuse it, unchanged and without a
// backup, saying whether the agent itself reads it (Gemini CLI reads
// comments; Claude Code and Codex read plain JSON, and no agent trailing
// commas) and what to do.
func TestCommentsAreRefusedSayingWhatToDo(t *testing.T) {
	const comment = "{\n  // my theme\n  \"theme\": \"Dracula\", /* and hooks: */ \"hooks\": {}\n}\n"
	const comma = "{\n  // my theme\n  \"theme\": \"Dracula\",\n}\n"
	for _, c := range []struct {
		agent      agentCase
		text, want string
	}{
		{mergedAgents[3], comment, "Gemini CLI reads its comments"},
		{mergedAgents[3], comma, "Gemini CLI cannot read it either"},
		{mergedAgents[0], comment, "Claude Code cannot read it either"},
		{mergedAgents[1], comment, "Codex cannot read it either"},
		{mergedAgents[2], comment, "awaken-lua cannot keep"},
	} {
		for _, uninstall := range []bool{false, true} {
			dir := t.TempDir()
			p := filepath.Join(dir, filepath.FromSlash(c.agent.file))
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte(c.text), 0o644)
			o := opts(dir)
			o.Uninstall = uninstall
			_, err := c.agent.install(o)
			again := map[bool]string{false: "install again", true: "uninstall again"}[uninstall]
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), again) || !strings.Contains(err.Error(), "by hand") {
				t.Errorf("%s uninstall %v: %v", c.agent.name, uninstall, err)
			}
			if got := readFile(t, p); got != c.text || len(backups(t, p)) != 0 {
				t.Errorf("%s: the file changed:\n%s", c.agent.name, got)
			}
		}
	}
}
