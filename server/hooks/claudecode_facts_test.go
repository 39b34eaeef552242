package hooks

import (
	"fmt"
	"testing"
	"time"
)

// Restore leaves out a session idle past the idle timeout, as Sweep would
// have forgotten it, and keeps each session's last use, so that Facts
// keeps the subagents used last when it bounds them.
func TestRestoreKeepsLastUse(t *testing.T) {
	a := &Adapters{cc: newClaudeCode(Options{})}
	now := time.Now()
	facts := map[string]SessionFacts{
		"s":    {Posts: true, Used: now},
		"idle": {Posts: true, Used: now.Add(-2 * time.Hour)},
	}
	const extra = 10
	for i := range MaxSubagentFacts + extra {
		facts[fmt.Sprintf("s/subagent/a%03d", i)] = SessionFacts{Used: now.Add(-time.Duration(MaxSubagentFacts+extra-i) * time.Second)}
	}
	a.Restore(facts, time.Hour)
	got := a.Facts()
	if _, kept := got["idle"]; kept {
		t.Fatal("a session idle past the timeout was restored")
	}
	if !got["s"].Posts || !got["s"].Used.Equal(now) {
		t.Fatalf("the session's facts: %+v", got["s"])
	}
	subs := 0
	for i := range MaxSubagentFacts + extra {
		_, kept := got[fmt.Sprintf("s/subagent/a%03d", i)]
		if kept != (i >= extra) {
			t.Fatalf("subagent a%03d kept %v: Facts should keep the %d used last", i, kept, MaxSubagentFacts)
		}
		if kept {
			subs++
		}
	}
	if subs != MaxSubagentFacts {
		t.Fatalf("%d subagents kept, want %d", subs, MaxSubagentFacts)
	}
}
