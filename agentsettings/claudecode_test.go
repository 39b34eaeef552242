package agentsettings

import (
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var stamp = time.Date(2026, 8, 22, 16, 12, 0, 0, time.UTC)

func opts(dir string) Options {
	return Options{ProjectDir: dir, Now: func() time.Time { return stamp }}
}

func settingsPath(dir string) string { return filepath.Join(dir, ".claude", "settings.json") }

func writeSettings(t *testing.T, dir, text string) string {
	t.Helper()
	p := settingsPath(dir)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// hooksOf decodes a settings file's hooks.
func hooksOf(t *testing.T, text string) map[string][]struct {
	Matcher *string          `json:"matcher"`
	Hooks   []map[string]any `json:"hooks"`
} {
	t.Helper()
	var s struct {
		Hooks map[string][]struct {
			Matcher *string          `json:"matcher"`
			Hooks   []map[string]any `json:"hooks"`
		} `json:"hooks"`
	}
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		t.Fatalf("settings are not JSON: %v\n%s", err, text)
	}
	return s.Hooks
}

// backups lists the backup files next to p.
func backups(t *testing.T, p string) []string {
	t.Helper()
	m, err := filepath.Glob(p + ".*.bak")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestInstallIntoEmptyProject(t *testing.T) {
	dir := t.TempDir()
	res, err := InstallClaudeCode(opts(dir))
	if err != nil {
		t.Fatal(err)
	}
	p := settingsPath(dir)
	if res.Path != p || !res.Changed || res.Added != len(ClaudeCodeEvents) || res.Backup != "" {
		t.Fatalf("result %+v", res)
	}
	got := readFile(t, p)
	golden := filepath.Join("testdata", "claude-code", "fresh.settings.json")
	if *update {
		os.MkdirAll(filepath.Dir(golden), 0o755)
		os.WriteFile(golden, []byte(got), 0o644)
	}
	if want := readFile(t, golden); got != want {
		t.Errorf("fresh settings differ from %s (go test -update rewrites it):\n%s", golden, got)
	}
	hooks := hooksOf(t, got)
	for _, event := range ClaudeCodeEvents {
		groups := hooks[event]
		if len(groups) != 1 || len(groups[0].Hooks) != 1 {
			t.Fatalf("%s: %+v", event, groups)
		}
		h := groups[0].Hooks[0]
		if h["type"] != "command" || h["command"] != DefaultCommand+" --event "+event || h["timeout"] != float64(DefaultTimeout) {
			t.Errorf("%s handler %v", event, h)
		}
		if m := groups[0].Matcher; toolEvents[event] != (m != nil && *m == "*") {
			t.Errorf("%s matcher %v", event, m)
		}
	}
	if len(backups(t, p)) != 0 {
		t.Error("a new file was backed up")
	}
}

const userSettings = `{
  "model": "claude-sonnet-5",
  "permissions": {
    "allow": ["Bash(npm run *)"],
    "deny": ["Read(./.env)"]
  },
  "hooks": {
    "PostToolUse": [
      {
        "matcher": "Edit|Write",
        "hooks": [
          { "type": "command", "command": "prettier --write \"$CLAUDE_PROJECT_DIR\"", "timeout": 1.50 }
        ]
      }
    ],
    "Notification": [
      { "hooks": [ { "type": "command", "command": "notify-send \u00e9t\u00e9" } ] }
    ],
    "CwdChanged": []
  },
  "cleanupPeriodDays": 30,
  "statusLine": { "type": "command", "command": "~/bin/status" }
}
`

func TestInstallKeepsUserHooksAndKeys(t *testing.T) {
	dir := t.TempDir()
	p := writeSettings(t, dir, userSettings)
	res, err := InstallClaudeCode(opts(dir))
	if err != nil {
		t.Fatal(err)
	}
	if !res.Changed || res.Added != len(ClaudeCodeEvents) {
		t.Fatalf("result %+v", res)
	}
	// The backup holds the file as it was.
	if res.Backup != p+".20260822T161200Z.bak" || readFile(t, res.Backup) != userSettings {
		t.Errorf("backup %q does not hold the old file", res.Backup)
	}
	got := readFile(t, p)
	// Other keys keep their order and their spelling.
	order := []string{`"model"`, `"permissions"`, `"hooks"`, `"cleanupPeriodDays"`, `"statusLine"`}
	last := -1
	for _, k := range order {
		i := strings.Index(got, k)
		if i < last {
			t.Errorf("key %s moved:\n%s", k, got)
		}
		last = i
	}
	for _, s := range []string{`"timeout": 1.50`, `notify-send \u00e9t\u00e9`, `"prettier --write \"$CLAUDE_PROJECT_DIR\""`} {
		if !strings.Contains(got, s) {
			t.Errorf("%s was respelled:\n%s", s, got)
		}
	}
	hooks := hooksOf(t, got)
	post := hooks["PostToolUse"]
	if len(post) != 2 || *post[0].Matcher != "Edit|Write" || post[0].Hooks[0]["command"] != `prettier --write "$CLAUDE_PROJECT_DIR"` {
		t.Errorf("the user's PostToolUse hook changed: %+v", post)
	}
	if len(hooks["Notification"]) != 1 {
		t.Errorf("Notification: %+v", hooks["Notification"])
	}

	// A second install changes nothing: same bytes, no new backup.
	res, err = InstallClaudeCode(opts(dir))
	if err != nil {
		t.Fatal(err)
	}
	if res.Changed || res.Added+res.Updated+res.Removed != 0 || res.Backup != "" {
		t.Errorf("second install: %+v", res)
	}
	if readFile(t, p) != got || len(backups(t, p)) != 1 {
		t.Error("a second install changed the file or backed it up again")
	}

	// Uninstall removes ours only: the file is as it was.
	res, err = InstallClaudeCode(Options{ProjectDir: dir, Uninstall: true, Now: func() time.Time { return stamp.Add(time.Second) }})
	if err != nil {
		t.Fatal(err)
	}
	if res.Removed != len(ClaudeCodeEvents) || !res.Changed {
		t.Errorf("uninstall: %+v", res)
	}
	if after := readFile(t, p); after != userSettings {
		t.Errorf("install then uninstall did not give back the file:\n%s", after)
	}
	res, err = InstallClaudeCode(Options{ProjectDir: dir, Uninstall: true})
	if err != nil || res.Changed {
		t.Errorf("a second uninstall: %+v, %v", res, err)
	}
}

func TestInstallHTTP(t *testing.T) {
	dir := t.TempDir()
	if _, err := InstallClaudeCode(opts(dir)); err != nil {
		t.Fatal(err)
	}
	o := opts(dir)
	o.HTTP = true
	res, err := InstallClaudeCode(o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Updated != len(ClaudeCodeEvents)-1 || res.Added != 0 {
		t.Errorf("switching to HTTP hooks: %+v", res)
	}
	hooks := hooksOf(t, readFile(t, settingsPath(dir)))
	for _, event := range ClaudeCodeEvents {
		if len(hooks[event]) != 1 || len(hooks[event][0].Hooks) != 1 {
			t.Fatalf("%s: %+v", event, hooks[event])
		}
		h := hooks[event][0].Hooks[0]
		if event == "SessionStart" {
			if h["type"] != "command" {
				t.Errorf("SessionStart must stay a command hook: %v", h)
			}
			continue
		}
		headers, _ := h["headers"].(map[string]any)
		env, _ := h["allowedEnvVars"].([]any)
		if h["type"] != "http" || h["url"] != DefaultURL+"?event="+event || headers["Authorization"] != "Bearer $AWAKEN_TOKEN" ||
			len(env) != 1 || env[0] != "AWAKEN_TOKEN" {
			t.Errorf("%s handler %v", event, h)
		}
	}
	if res, _ := InstallClaudeCode(o); res.Changed {
		t.Errorf("a second HTTP install changed the file: %+v", res)
	}
	o.TokenEnv = "-"
	if _, err := InstallClaudeCode(o); err != nil {
		t.Fatal(err)
	}
	h := hooksOf(t, readFile(t, settingsPath(dir)))["PreToolUse"][0].Hooks[0]
	if _, ok := h["headers"]; ok {
		t.Errorf("TokenEnv \"-\" still sends a token: %v", h)
	}
}

func TestInstallNormalizesOurEntries(t *testing.T) {
	dir := t.TempDir()
	p := writeSettings(t, dir, `{"hooks": {
  "PreToolUse": [
    {"matcher": "Bash", "hooks": [{"type": "command", "command": "/usr/local/bin/awaken-lua hook --agent claude-code"}, {"type": "command", "command": "guard.sh"}]},
    {"hooks": [{"type": "http", "url": "http://localhost:9999/v1/hooks/claude-code?agent=cc"}]}
  ],
  "Stop": [{"hooks": [{"type": "command", "command": "awaken-lua hook --agent claude-code", "timeout": 5}]}]
}}`)
	res, err := InstallClaudeCode(opts(dir))
	if err != nil {
		t.Fatal(err)
	}
	hooks := hooksOf(t, readFile(t, p))
	pre := hooks["PreToolUse"]
	// Both copies go; the user's guard.sh stays in its group; ours gets
	// a group of its own that fires on every tool.
	if len(pre) != 2 || len(pre[0].Hooks) != 1 || pre[0].Hooks[0]["command"] != "guard.sh" ||
		*pre[1].Matcher != "*" || pre[1].Hooks[0]["command"] != DefaultCommand+" --event PreToolUse" {
		t.Errorf("PreToolUse: %+v", pre)
	}
	// An entry alone in a group that fires every time is updated in place.
	if stop := hooks["Stop"]; len(stop) != 1 || stop[0].Hooks[0]["timeout"] != float64(DefaultTimeout) {
		t.Errorf("Stop: %+v", stop)
	}
	if res.Updated != 2 || res.Added != len(ClaudeCodeEvents)-2 {
		t.Errorf("result %+v", res)
	}
}

// A value of the wrong JSON type is not taken for the wanted one because
// it prints the same: "30" is not 30, and is put right.
func TestInstallFixesATimeoutGivenAsAString(t *testing.T) {
	dir := t.TempDir()
	p := writeSettings(t, dir, `{"hooks":{"Stop":[{"hooks":[{"type":"command","command":"awaken-lua hook --agent claude-code --event Stop","timeout":"30"}]}]}}`)
	res, err := InstallClaudeCode(opts(dir))
	if err != nil {
		t.Fatal(err)
	}
	if stop := hooksOf(t, readFile(t, p))["Stop"]; res.Updated != 1 || len(stop) != 1 || stop[0].Hooks[0]["timeout"] != float64(DefaultTimeout) {
		t.Fatalf("%+v: %+v", res, stop)
	}
	for _, c := range [][2]string{{`"30"`, `30`}, {`null`, `"<nil>"`}, {`true`, `"true"`}} {
		if equal(&node{kind: 's', raw: []byte(c[0])}, &node{kind: 's', raw: []byte(c[1])}) {
			t.Errorf("%s equals %s", c[0], c[1])
		}
	}
	if !equal(&node{kind: 's', raw: []byte(`30`)}, &node{kind: 's', raw: []byte(`3e1`)}) {
		t.Error("30 is not 3e1")
	}
}

// An HTTP hook of the same path on another machine is the user's (a
// company's own service): install and uninstall leave it; ours are the
// ones on this machine or at the install's --url.
func TestInstallLeavesAnotherHostsHook(t *testing.T) {
	dir := t.TempDir()
	const theirs = `{"type": "http", "url": "https://audit.corp.example/v1/hooks/claude-code"}`
	p := writeSettings(t, dir, `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [`+theirs+`]},
  {"hooks": [{"type": "http", "url": "http://127.0.0.1:9999/v1/hooks/claude-code"}]}]}}`)
	for _, uninstall := range []bool{false, true} {
		o := opts(dir)
		o.Uninstall = uninstall
		if _, err := InstallClaudeCode(o); err != nil {
			t.Fatal(err)
		}
		pre := hooksOf(t, readFile(t, p))["PreToolUse"]
		if len(pre) == 0 || pre[0].Hooks[0]["url"] != "https://audit.corp.example/v1/hooks/claude-code" {
			t.Fatalf("uninstall %v: the user's hook is gone: %+v", uninstall, pre)
		}
		// The old hook on this machine was ours: replaced, then removed.
		if want := map[bool]int{false: 2, true: 1}[uninstall]; len(pre) != want {
			t.Errorf("uninstall %v: %d groups, want %d: %+v", uninstall, len(pre), want, pre)
		}
	}
}

func TestInstallRefusesBadFiles(t *testing.T) {
	tests := []struct{ name, text, want string }{
		{"invalid JSON", "{\n  \"model\": \"x\",\n  \"hooks\": {,}\n}\n", ":3:13: config_invalid: not valid JSON"},
		{"not an object", `["a"]`, "holds a JSON array, not an object"},
		{"hooks not an object", `{"hooks": []}`, `"hooks" is a JSON array, not an object of events`},
		{"event not a list", `{"hooks": {"Stop": {}}}`, "hooks.Stop is a JSON object, not a list of matcher groups"},
		{"group not an object", `{"hooks": {"Stop": [1]}}`, "hooks.Stop[0] is a JSON number, not a matcher group"},
		{"handlers not a list", `{"hooks": {"Stop": [{"hooks": "x"}]}}`, "hooks.Stop[0].hooks is a JSON string"},
		{"hooks twice", `{"hooks": {}, "hooks": {}}`, `"hooks" is given twice`},
		{"event twice", `{"hooks": {"Stop": [], "Stop": []}}`, "hooks.Stop is given twice"},
		{"comment", "{\n  // mine\n  \"a\": 1\n}", "a comment or a trailing comma"},
		{"trailing comma", "{\"a\": [1,],}", "a comment or a trailing comma"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := writeSettings(t, dir, tc.text)
			for _, uninstall := range []bool{false, true} {
				o := opts(dir)
				o.Uninstall = uninstall
				_, err := InstallClaudeCode(o)
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("error %v, want one saying %q", err, tc.want)
				}
				if !errors.Is(err, errs.ConfigInvalid) {
					t.Errorf("error %v is not config_invalid", err)
				}
			}
			if readFile(t, p) != tc.text {
				t.Error("a refused file was changed")
			}
			entries, _ := os.ReadDir(filepath.Dir(p))
			if len(entries) != 1 {
				t.Errorf("files left next to it: %v", entries)
			}
		})
	}
}

func TestInstallScopesAndFiles(t *testing.T) {
	dir, cfg := t.TempDir(), t.TempDir()
	for scope, want := range map[Scope]string{
		Project: filepath.Join(dir, ".claude", "settings.json"),
		Local:   filepath.Join(dir, ".claude", "settings.local.json"),
		User:    filepath.Join(cfg, "settings.json"),
	} {
		o := opts(dir)
		o.Scope, o.ConfigDir = scope, cfg
		res, err := InstallClaudeCode(o)
		if err != nil || res.Path != want || !res.Changed {
			t.Errorf("scope %s: %+v, %v", scope, res, err)
		}
	}
	if _, err := InstallClaudeCode(Options{Scope: "usr", ProjectDir: dir}); err == nil || !strings.Contains(err.Error(), `did you mean "user"`) {
		t.Errorf("an unknown scope: %v", err)
	}
	if _, err := InstallClaudeCode(Options{Scope: User}); err == nil {
		t.Error("the user scope without a directory was accepted")
	}
	if _, err := InstallClaudeCode(Options{ProjectDir: dir, Command: "hook.sh"}); err == nil {
		t.Error("a command that is not awaken-lua hook was accepted")
	}
	if _, err := InstallClaudeCode(Options{ProjectDir: dir, HTTP: true, URL: "http://x/hooks"}); err == nil {
		t.Error("a URL that is not the Claude Code endpoint was accepted")
	}
}

func TestInstallKeepsModeLinkAndFormat(t *testing.T) {
	dir := t.TempDir()
	// A symbolic link (a dotfiles manager's) is written through.
	real := filepath.Join(dir, "dotfiles", "settings.json")
	os.MkdirAll(filepath.Dir(real), 0o755)
	if err := os.WriteFile(real, []byte(`{"theme":"dark","hooks":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	os.MkdirAll(filepath.Join(dir, ".claude"), 0o755)
	if err := os.Symlink(real, settingsPath(dir)); err != nil {
		t.Fatal(err)
	}
	res, err := InstallClaudeCode(opts(dir))
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(settingsPath(dir)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Error("the symbolic link was replaced")
	}
	fi, _ := os.Stat(real)
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", fi.Mode().Perm())
	}
	got := readFile(t, real)
	// A file on one line stays on one line.
	if strings.Count(got, "\n") != 0 || !strings.HasPrefix(got, `{"theme":"dark","hooks":{"SessionStart":[`) {
		t.Errorf("format changed: %s", got)
	}
	if res.Backup != real+".20260822T161200Z.bak" {
		t.Errorf("backup %q", res.Backup)
	}
	// Backups never overwrite one another.
	o := opts(dir)
	o.HTTP = true
	res2, err := InstallClaudeCode(o)
	if err != nil || res2.Backup != real+".20260822T161200Z-2.bak" {
		t.Errorf("second backup %q, %v", res2.Backup, err)
	}
}

func TestInstallEmptyFileAndWarnings(t *testing.T) {
	dir := t.TempDir()
	p := writeSettings(t, dir, "  \n")
	res, err := InstallClaudeCode(opts(dir))
	if err != nil || res.Added != len(ClaudeCodeEvents) {
		t.Fatalf("an empty file: %+v, %v", res, err)
	}
	writeSettings(t, dir, `{"disableAllHooks": true}`)
	res, err = InstallClaudeCode(opts(dir))
	if err != nil || len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "disableAllHooks") {
		t.Errorf("disableAllHooks: %+v, %v", res, err)
	}
	_ = p
}

// Each handler names its event and agent, unless the command or URL the
// user gave names them already.
func TestHandlersNameTheirEvent(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"awaken-lua hook", "awaken-lua hook --agent claude-code --event Stop"},
		{"awaken-lua hook --suspend defer", "awaken-lua hook --suspend defer --agent claude-code --event Stop"},
		{"awaken-lua hook --agent codex --event PreToolUse", "awaken-lua hook --agent codex --event PreToolUse"},
		{"awaken-lua hook --agent=codex --event=PreToolUse", "awaken-lua hook --agent=codex --event=PreToolUse"},
		{"awaken-lua hook --event PreToolUse", "awaken-lua hook --event PreToolUse --agent claude-code"},
		{"awaken-lua hook --events-log x", "awaken-lua hook --events-log x --agent claude-code --event Stop"},
	} {
		if got := eventCommand(tc.in, "claude-code", "Stop"); got != tc.want {
			t.Errorf("eventCommand(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{
		{"http://h/v1/hooks/claude-code", "http://h/v1/hooks/claude-code?event=Stop"},
		{"http://h/v1/hooks/claude-code?suspend=defer", "http://h/v1/hooks/claude-code?event=Stop&suspend=defer"},
		{"http://h/v1/hooks/claude-code?event=PreToolUse", "http://h/v1/hooks/claude-code?event=PreToolUse"},
	} {
		if got := eventURL(tc.in, "Stop"); got != tc.want {
			t.Errorf("eventURL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// A symbolic link to a file not written yet (a dotfiles manager's) is
// written through, not replaced by a regular file.
func TestInstallThroughDanglingLink(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "dotfiles"), 0o755)
	os.MkdirAll(filepath.Join(dir, ".claude"), 0o755)
	if err := os.Symlink(filepath.Join("..", "dotfiles", "settings.json"), settingsPath(dir)); err != nil {
		t.Fatal(err)
	}
	if _, err := InstallClaudeCode(opts(dir)); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(settingsPath(dir)); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatal("the symbolic link was replaced by a regular file")
	}
	if got := readFile(t, filepath.Join(dir, "dotfiles", "settings.json")); !strings.Contains(got, DefaultCommand) {
		t.Fatalf("the link's target:\n%s", got)
	}
}

// A link's ".." after a component that is itself a link leaves that
// link's target, as the system reads it: the file written is the one the
// agent reads, not a new one beside the link.
func TestInstallThroughLinkDotDot(t *testing.T) {
	for _, rel := range []bool{true, false} {
		for _, exists := range []bool{true, false} {
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, ".claude"), 0o755)
			os.MkdirAll(filepath.Join(dir, "dotfiles", "claude"), 0o755)
			os.Symlink(filepath.Join(dir, "dotfiles", "claude"), filepath.Join(dir, ".claude", "sub"))
			real := filepath.Join(dir, "dotfiles", "claude.json")
			if exists {
				os.WriteFile(real, []byte(`{"model":"m"}`), 0o644)
			}
			link := "sub/../claude.json" // not filepath.Join, which cleans it
			if !rel {
				link = filepath.Join(dir, ".claude") + "/" + link
			}
			os.Symlink(link, settingsPath(dir))
			if _, err := InstallClaudeCode(opts(dir)); err != nil {
				t.Fatal(err)
			}
			if got := readFile(t, real); !strings.Contains(got, DefaultCommand) {
				t.Fatalf("relative %v, existing %v: the link's target:\n%s", rel, exists, got)
			}
			if left, _ := filepath.Glob(filepath.Join(dir, ".claude", "*.json*")); len(left) != 1 {
				t.Fatalf("relative %v, existing %v: files beside the link: %v", rel, exists, left)
			}
		}
	}
}

// Keys keep their spelling (escapes, characters json.Marshal would
// escape) when the object that holds them changes, so an install and an
// uninstall give back the file as it was.
func TestInstallKeepsKeySpelling(t *testing.T) {
	dir := t.TempDir()
	const orig = `{"k\u00e9y":1,"a<b&c":2,"\/x":3}` + "\n"
	p := writeSettings(t, dir, orig)
	if _, err := InstallClaudeCode(opts(dir)); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, p); !strings.HasPrefix(got, `{"k\u00e9y":1,"a<b&c":2,"\/x":3,"hooks":{`) {
		t.Fatalf("after install:\n%s", got)
	}
	o := opts(dir)
	o.Uninstall = true
	if _, err := InstallClaudeCode(o); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, p); got != orig {
		t.Fatalf("after uninstall:\n%s\nwant\n%s", got, orig)
	}
}

// A file whose lines end in CRLF keeps them: what install writes ends
// its lines the same way, and uninstall gives back the file as it was.
func TestInstallKeepsCRLF(t *testing.T) {
	dir := t.TempDir()
	const orig = "{\r\n  \"model\": \"m\",\r\n  \"env\": {\r\n    \"A\": \"1\"\r\n  }\r\n}\r\n"
	p := writeSettings(t, dir, orig)
	if _, err := InstallClaudeCode(opts(dir)); err != nil {
		t.Fatal(err)
	}
	got := readFile(t, p)
	if strings.Count(got, "\n") != strings.Count(got, "\r\n") || !strings.Contains(got, DefaultCommand) {
		t.Fatalf("after install: %q", got)
	}
	o := opts(dir)
	o.Uninstall = true
	if _, err := InstallClaudeCode(o); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, p); got != orig {
		t.Fatalf("after uninstall: %q", got)
	}
}

// A settings file the agent creates while install writes a new one is
// not overwritten: the new file takes its place only if there is none.
func TestInstallDoesNotClobberAFileCreatedMeanwhile(t *testing.T) {
	dir := t.TempDir()
	p, tmp := filepath.Join(dir, "settings.json"), filepath.Join(dir, ".settings.json.1.tmp")
	const theirs, ours = `{"model":"written by Claude Code"}`, `{"hooks":{}}`
	for _, f := range [][2]string{{p, theirs}, {tmp, ours}} {
		if err := os.WriteFile(f[0], []byte(f[1]), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := commit(tmp, p, false); err == nil || !strings.Contains(err.Error(), "install again") {
		t.Fatalf("err %v", err)
	}
	if got := readFile(t, p); got != theirs {
		t.Fatalf("the agent's file was overwritten:\n%s", got)
	}
	os.Remove(p)
	if err := commit(tmp, p, false); err != nil || readFile(t, p) != ours {
		t.Fatalf("with no file there: %v", err)
	}
}
