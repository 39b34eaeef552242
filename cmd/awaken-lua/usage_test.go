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
