package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
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
	if code != exitWaiting || !strings.HasSuffix(out, "\nfinish suspended\n") {
		t.Fatalf("first run: exit %d, want 3 and the trace ending \"finish suspended\"\n%s%s", code, out, errOut)
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
	summaryAgrees(t, out)
	if strings.Contains(out, "finish suspended") {
		t.Errorf("the run was answered and went on; the trace must not say it finished suspended:\n%s", out)
	}
	golden(t, "resume.trace.golden", normalize(out))

	// --json: the resumed run's run_finish has its duration too.
	cfg = resumeProject(t)
	if code, out, errOut = awaken(t, "", "--config", cfg, "run", "tidy"); code != exitWaiting {
		t.Fatalf("first run: exit %d\n%s%s", code, out, errOut)
	}
	thread = regexp.MustCompile(`thread_[0-9a-f]{16}`).FindString(out)
	code, out, errOut = awaken(t, "", "--config", cfg, "run", "--json", "--thread", thread, "--approve", "all")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if last := lines[len(lines)-1]; code != exitOK || strings.Contains(out, `"event":"run_start"`) ||
		!strings.Contains(last, `"event":"run_finish"`) || !strings.Contains(last, `"duration_ms":`) {
		t.Fatalf("--json resume: exit %d, the last line has no duration_ms:\n%s%s", code, out, errOut)
	}
}

// summaryAgrees checks a trace's summary line against the trace above it:
// as many steps and tool calls as it printed, and a time this test could
// have taken.
func summaryAgrees(t *testing.T, out string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "run ") || !strings.HasPrefix(lines[1], "step ") {
		t.Fatalf("a trace starts with the run's line, then its step's, before what the step did:\n%s", out)
	}
	var steps, calls int
	for _, l := range lines[:len(lines)-1] {
		switch {
		case regexp.MustCompile(`^step [0-9]+$`).MatchString(l):
			steps++
		case strings.HasPrefix(l, "  tool      "):
			calls++
		}
	}
	m := regexp.MustCompile(`^([0-9]+) steps? · ([0-9]+) tool calls? · [0-9]+ tokens · in (\S+)$`).FindStringSubmatch(lines[len(lines)-1])
	if m == nil {
		t.Fatalf("no summary line at the end:\n%s", out)
	}
	if want := fmt.Sprintf("%d %d", steps, calls); m[1]+" "+m[2] != want {
		t.Errorf("the summary says %s steps and %s tool calls; the trace prints %d and %d:\n%s", m[1], m[2], steps, calls, out)
	}
	if d, err := time.ParseDuration(m[3]); err != nil || d < 0 || d > time.Minute {
		t.Errorf("the summary's time %q is not this run's:\n%s", m[3], out)
	}
}
