package server

import (
	"testing"
)

// A true retry of a PreToolUse whose call a plugin rewrote (same
// tool_use_id, same input as first sent) gets the kept decision again:
// the run keeps the rewritten arguments, but the agent resends what it
// sent the first time.
func TestClaudeCodeRetryOfRewrittenCall(t *testing.T) {
	sc := newSidecar(t, project(t, "", map[string]string{"ccedge.lua": ccEdgeLua}), Options{Log: quietLog()})
	for range 2 {
		s := specific(sc.hook(t, ccEdgeEvent("retry-rw", "PreToolUse", "toolu_rw1", "forget"), ""))
		if in, present := s["updatedInput"].(map[string]any); s["permissionDecision"] != "allow" || !present || len(in) != 0 {
			t.Fatalf("want allow with updatedInput {} (a retry too), got %s", mustJSON(s))
		}
	}
}
