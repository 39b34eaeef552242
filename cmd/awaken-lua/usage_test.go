package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommandsRefuseStrayArguments: check, dev and version take no
// positional argument. `dev myproject` watched the current directory and
// `check scripts/x.lua` checked everything, each silently; they are bad
// usage (exit 2), with the way to name a project. help version prints the
// usage, not the version.
func TestCommandsRefuseStrayArguments(t *testing.T) {
	dir := project(t, "", map[string]string{"scripts/ask.lua": gatePlugin})
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // a dev that starts anyway stops at once rather than hang the test
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"check", dir}, `awaken-lua check: unexpected argument "` + dir + `"; check takes no arguments: it checks the project of ./awaken.toml, or give one with --config ` + filepath.Join(dir, "awaken.toml")},
		{[]string{"dev", dir}, `awaken-lua dev: unexpected argument "` + dir + `"; dev takes no arguments: it works on the project of ./awaken.toml, or give one with --config ` + filepath.Join(dir, "awaken.toml")},
		{[]string{"check", "scripts/ask.lua"}, `awaken-lua check: unexpected argument "scripts/ask.lua"; check takes no arguments: it checks the project of ./awaken.toml, or give one with --config PATH`},
		{[]string{"version", "extra"}, `awaken-lua version: unexpected argument "extra"`},
	} {
		var out, errOut bytes.Buffer
		code := cli(ctx, tc.args, strings.NewReader(""), &out, &errOut)
		if code != exitUsage || out.String() != "" || !strings.HasPrefix(errOut.String(), tc.want+"\n") {
			t.Errorf("%v: exit %d (want %d), stdout %q, stderr %q (want it to start %q)", tc.args, code, exitUsage, out.String(), errOut.String(), tc.want)
		}
	}
	if code, out, _ := awaken(t, "", "help", "version"); code != exitOK || !strings.HasPrefix(out, "usage: awaken-lua version") {
		t.Errorf("help version: exit %d, stdout %q", code, out)
	}
	if code, out, _ := awaken(t, "", "version"); code != exitOK || !strings.HasPrefix(out, "awaken-lua ") {
		t.Errorf("version: exit %d, stdout %q", code, out)
	}
}

// TestEvalEmptyTool: eval "" is bad usage (exit 2) that says what to
// give; it ran the gate and failed with the sidecar's bad_request about
// "tools[0]", exit 1, as if a plugin had refused the call.
func TestEvalEmptyTool(t *testing.T) {
	dir := project(t, "", map[string]string{"scripts/ask.lua": gatePlugin})
	code, out, errOut := awaken(t, "", "--config", filepath.Join(dir, "awaken.toml"), "eval", "", "{}")
	const want = "config_invalid: TOOL is empty; name the tool of the call, such as: awaken-lua eval fs_read '{\"path\": \".env\"}'\n"
	if code != exitUsage || out != "" || errOut != want {
		t.Fatalf("eval \"\": exit %d, stdout %q, stderr %q (want %q)", code, out, errOut, want)
	}
}
