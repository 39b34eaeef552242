package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Over the file store, each call of a long step saves what it changed (a
// line of the run's log), not the whole run; a restarted sidecar restores
// the run from its base and log with every acknowledged decision.
func TestFileStoreSavesEachCallAsAChange(t *testing.T) {
	const n = 40
	dir := project(t, fileStore, nil)
	a := newSidecar(t, dir, Options{Log: quietLog()})
	id := a.startRun(map[string]any{"tools": []any{map[string]any{"name": "add"}, map[string]any{"name": "deploy"}}})
	a.phase(id, "step_start", nil)
	a.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
	var calls []any
	for i := range n {
		name := "add"
		if i%10 == 9 {
			name = "deploy" // suspended by the policy
		}
		calls = append(calls, call(fmt.Sprint("c", i), name, nil))
	}
	a.phase(id, "after_inference", map[string]any{"response": map[string]any{"tool_calls": calls}})
	var decisions []string
	for _, c := range calls {
		decisions = append(decisions, decisionOf(t, a.phase(id, "tool_gate", map[string]any{"call": c})))
	}
	logs, err := filepath.Glob(filepath.Join(dir, "store", "runs", "*.log"))
	if err != nil || len(logs) != 1 {
		t.Fatalf("the run's log: %v %v", logs, err)
	}
	log, err := os.ReadFile(logs[0])
	if err != nil {
		t.Fatal(err)
	}
	if lines := bytes.Count(log, []byte("\n")); lines < n {
		t.Fatalf("%d gates saved %d changes to the log; each must be one", n, lines)
	}
	a.close()

	b := newSidecar(t, dir, Options{Log: quietLog()})
	for i, c := range calls {
		if again := decisionOf(t, b.phase(id, "tool_gate", map[string]any{"call": c})); again != decisions[i] {
			t.Fatalf("gate %d after the restart:\n%s\nwas\n%s", i, again, decisions[i])
		}
	}
}

// decisionOf is a gate's reply without the run's revision (which a retry
// reports as it is now).
func decisionOf(t *testing.T, r reply) string {
	t.Helper()
	delete(r.body, "revision")
	b, err := json.Marshal(r.body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
