package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// resumeProject is a project whose every call waits for a person
// (permission default = "ask"), with a file store, so a suspended run is
// answered by a second invocation.
func resumeProject(t *testing.T) string {
	t.Helper()
	dir := project(t, `[model]
script = "script.toml"
[store]
kind = "file"
[audit]
path = ""
[agents.default]
tools = ["fs_list"]
[plugins.permission]
default = "ask"
`, map[string]string{"script.toml": `[[turns]]
text = "Turn one."
[[turns.tool_calls]]
name = "fs_list"
args = { path = "." }

[[turns]]
text = "Turn two."
[[turns.tool_calls]]
name = "fs_list"
args = { path = "." }

[[turns]]
text = "All done."
`})
	return filepath.Join(dir, "awaken.toml")
}

// TestResumeInAnotherInvocation: a run suspended by one invocation and
// answered by the next continues the script where it stopped.
func TestResumeInAnotherInvocation(t *testing.T) {
	cfg := resumeProject(t)
	code, out, errOut := awaken(t, "", "--config", cfg, "run", "tidy")
	if code != exitWaiting {
		t.Fatalf("first run: exit %d\n%s%s", code, out, errOut)
	}
	thread := regexp.MustCompile(`thread_[0-9a-f]{16}`).FindString(out)
	code, out, errOut = awaken(t, "", "--config", cfg, "run", "--thread", thread, "--approve", "all")
	if code != exitOK {
		t.Fatalf("resume: exit %d\n%s%s", code, out, errOut)
	}
	if strings.Contains(out, "Turn one.") || !strings.Contains(out, "Turn two.") || !strings.Contains(out, "answer    All done.") ||
		!strings.Contains(out, "finish natural") {
		t.Fatalf("the resumed run must continue the script at its second turn:\n%s", out)
	}
}
