package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDanglingConfigLink: an awaken.toml that is a link to a file that is
// not there (an unmounted volume, a moved dotfiles checkout) is the
// project's configuration that cannot be read, not "no awaken.toml here":
// run, check and serve ran the built-in demo's plugins in its place.
func TestDanglingConfigLink(t *testing.T) {
	wd := t.TempDir()
	target := filepath.Join(t.TempDir(), "gone", "awaken.toml")
	if err := os.Symlink(target, filepath.Join(wd, "awaken.toml")); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	want := "awaken.toml: config_invalid: cannot read the configuration file: awaken.toml is a link to " + target +
		", which does not exist; fix the link, or replace it with the file"
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"run", "hi"}, exitUsage},
		{[]string{"check"}, exitFailed},
		{[]string{"eval", "fs_read", "{}"}, exitUsage},
		{[]string{"test"}, exitUsage},
	} {
		out, errOut, code := runChild(t, wd, nil, nil, tc.args...)
		if code != tc.code || strings.Contains(errOut, "built-in demo") || !strings.Contains(out+errOut, want) {
			t.Errorf("%v: exit %d (want %d), stdout %q, stderr %q (want %q)", tc.args, code, tc.code, out, errOut, want)
		}
	}
	// The command hook denies the call (exit 2) saying what is wrong with
	// the link, not that it found no awaken.toml.
	pre := []byte(`{"session_id":"s1","cwd":"/tmp","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"ls"},"tool_use_id":"t1"}`)
	out, errOut, code := runChild(t, wd, nil, pre, "hook", "--local")
	if code != 2 || !strings.Contains(errOut, want) {
		t.Errorf("hook --local: exit %d (want 2), stdout %q, stderr %q (want %q)", code, out, errOut, want)
	}
}

// TestHugeConfigFile: --config naming a huge file is a configuration
// error, never an out-of-memory crash with a stack trace.
func TestHugeConfigFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "awaken.toml")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, 1<<30); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	const want = "config_invalid: cannot read the configuration file: it is larger than 16MiB"
	for _, tc := range []struct {
		args []string
		code int
	}{
		{[]string{"--config", path, "check"}, exitFailed},
		{[]string{"--config", path, "run", "hi"}, exitUsage},
	} {
		out, errOut, code := runChild(t, "", nil, nil, tc.args...)
		if code != tc.code || strings.Contains(errOut, "goroutine") || !strings.Contains(out+errOut, want) {
			t.Errorf("%v: exit %d (want %d), stdout %q, stderr %.300q", tc.args, code, tc.code, out, errOut)
		}
	}
}
