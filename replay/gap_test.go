package replay_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A line of the journal that cannot be read in the middle of a run is
// the journal's damage, not the candidate's: replaying against the same
// plugins reports the line as a problem and no flip.
func TestReplayCorruptLineIsNoFlip(t *testing.T) {
	cfg, jdir := project(t, "v1", "")
	recordRuns(t, cfg)
	files, _ := filepath.Glob(filepath.Join(jdir, "*"))
	if len(files) != 1 {
		t.Fatalf("journal files %v", files)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	// The first run's first tool_gate record.
	hit := -1
	for i, l := range lines {
		if strings.Contains(l, `"phase":"tool_gate"`) {
			hit = i
			break
		}
	}
	if hit < 0 {
		t.Fatal("no tool_gate record")
	}
	lines[hit] = "{not json"
	if err := os.WriteFile(files[0], []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	rep := replayWith(t, cfg, "v1", jdir)
	var probs []string
	for _, p := range rep.Problems {
		probs = append(probs, p.String())
	}
	if len(rep.Flips) != 0 || len(probs) != 2 || !strings.Contains(probs[1], "its records from here on are left out") {
		t.Errorf("a corrupt line: flips %v, problems %v", kinds(rep), probs)
	}
	// What was read is replayed: against v2, the flips before the lost
	// line and in the runs after it are found; the gate flip after it is
	// not (its record is left out).
	if got := strings.Join(kinds(replayWith(t, cfg, "v2", jdir)), "\n"); got != "context changed@before_inference step 1 policy\ntermination changed@after_inference step 1 " {
		t.Errorf("against v2: %s", got)
	}
}
