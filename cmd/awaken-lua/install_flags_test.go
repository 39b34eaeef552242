package main

import (
	"os"
	"strings"
	"testing"
)

// TestInstallRefusesIgnoredFlags: --url is the address of Claude Code's
// HTTP hooks and --command is not used for Copilot CLI; given where they do
// nothing they were accepted and ignored (exit 0, settings written without
// them). They are bad usage that writes nothing.
func TestInstallRefusesIgnoredFlags(t *testing.T) {
	const url = "http://127.0.0.1:9999/v1/hooks/claude-code"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"install", "claude-code", "--url", url}, "awaken-lua install claude-code: --url is the address of the HTTP hooks; add --http, or leave --url out"},
		{[]string{"install", "cursor", "--url", url}, "awaken-lua install cursor: --url is the address of Claude Code's HTTP hooks; cursor runs the command hook, so leave --url out"},
		{[]string{"install", "copilot", "--command", "awaken-lua hook --timeout 5s"}, "awaken-lua install copilot: --command is not used for Copilot CLI, whose hook file runs awaken-lua hook --agent copilot per event; leave --command out"},
	} {
		wd, home := t.TempDir(), t.TempDir()
		out, errOut, code := runChild(t, wd, []string{"HOME=" + home, "CLAUDE_CONFIG_DIR=" + home}, nil, tc.args...)
		if code != exitUsage || out != "" || !strings.HasPrefix(errOut, tc.want+"\n") {
			t.Errorf("%v: exit %d (want %d), stdout %q, stderr %q (want %q)", tc.args, code, exitUsage, out, errOut, tc.want)
		}
		if left, _ := os.ReadDir(wd); len(left) != 0 {
			t.Errorf("%v wrote %v", tc.args, left)
		}
	}
}
