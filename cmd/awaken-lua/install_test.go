package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInstallUninstallRoundTrip: the command as a user runs it. Hooks
// installed under another --command are found by a plain --uninstall;
// a project install made .claude/ for goes with it; a {} that was there
// stays as it was.
func TestInstallUninstallRoundTrip(t *testing.T) {
	work := t.TempDir()
	if out, errOut, code := runChild(t, work, nil, nil, "install", "claude-code", "--command", "/opt/tools/al hook"); code != 0 {
		t.Fatalf("install: exit %d %s %s", code, out, errOut)
	}
	out, errOut, code := runChild(t, work, nil, nil, "install", "claude-code", "--uninstall")
	if code != 0 || !strings.Contains(out, "removed 11 awaken-lua hooks") {
		t.Fatalf("uninstall: exit %d %s %s", code, out, errOut)
	}
	// Not what a default install writes, so kept as {} with a backup.
	settings := filepath.Join(work, ".claude", "settings.json")
	if b, err := os.ReadFile(settings); err != nil || string(b) != "{}\n" {
		t.Fatalf("after uninstall: %q %v", b, err)
	}
	os.RemoveAll(filepath.Join(work, ".claude"))
	runChild(t, work, nil, nil, "install", "claude-code")
	if out, errOut, code := runChild(t, work, nil, nil, "install", "claude-code", "--uninstall"); code != 0 || !strings.Contains(out, "and the file") {
		t.Fatalf("uninstall: exit %d %s %s", code, out, errOut)
	}
	if _, err := os.Stat(filepath.Join(work, ".claude")); !os.IsNotExist(err) {
		t.Fatalf(".claude/ is left: %v", err)
	}
	os.MkdirAll(filepath.Dir(settings), 0o755)
	os.WriteFile(settings, []byte(`{"hooks": {}}`), 0o644)
	runChild(t, work, nil, nil, "install", "claude-code")
	if out, errOut, code := runChild(t, work, nil, nil, "install", "claude-code", "--uninstall"); code != 0 || !strings.Contains(out, "kept as") {
		t.Fatalf("uninstall: exit %d %s %s", code, out, errOut)
	}
	if b, err := os.ReadFile(settings); err != nil || string(b) != `{"hooks": {}}` {
		t.Fatalf("after uninstall: %q %v", b, err)
	}
}

// TestUninstallNothingInstalled: --uninstall where awaken-lua installed
// nothing (another directory, another --scope) says there was nothing to
// remove and where it looked, not "already up to date", which reads as if
// the hooks were there and left in place.
func TestUninstallNothingInstalled(t *testing.T) {
	work := t.TempDir()
	for _, agent := range []string{"claude-code", "codex", "cursor", "gemini", "copilot"} {
		out, errOut, code := runChild(t, work, nil, nil, "install", agent, "--uninstall")
		if code != 0 || strings.Contains(out, "up to date") || !strings.Contains(out, "no awaken-lua hooks to remove") {
			t.Fatalf("%s: uninstall with nothing installed: exit %d %q %q", agent, code, out, errOut)
		}
	}
	if entries, _ := os.ReadDir(work); len(entries) != 0 {
		t.Fatalf("uninstall wrote %v", entries)
	}
}

// TestConfigRefusedWhereUnread: init and install read no awaken.toml, so
// a --config given to them (before or after the command) is refused
// rather than dropped without a word: install's hooks would not carry it,
// and init writes the project's own. Their help does not offer it.
func TestConfigRefusedWhereUnread(t *testing.T) {
	work := t.TempDir()
	for _, args := range [][]string{
		{"init", "--config", "x.toml", "p"},
		{"--config", "x.toml", "init", "p"},
		{"install", "claude-code", "--config", "x.toml"},
		{"--config", "x.toml", "install", "claude-code"},
	} {
		out, errOut, code := runChild(t, work, nil, nil, args...)
		if code != 2 || !strings.Contains(errOut, "reads no awaken.toml") {
			t.Fatalf("%v: exit %d %q %q", args, code, out, errOut)
		}
	}
	if entries, _ := os.ReadDir(work); len(entries) != 0 {
		t.Fatalf("a refused command wrote %v", entries)
	}
	for _, c := range []string{"init", "install"} {
		if out, _, _ := runChild(t, work, nil, nil, "help", c); strings.Contains(out, "-config") {
			t.Fatalf("help %s offers --config:\n%s", c, out)
		}
	}
}
