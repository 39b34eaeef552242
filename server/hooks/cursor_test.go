package hooks

import (
	"fmt"
	"testing"
)

// Cursor's before events whose after event never comes are kept per
// conversation; the conversations are bounded by MaxSessions.
func TestCursorPendingIsBounded(t *testing.T) {
	cu := newCursor(newClaudeCode(Options{MaxSessions: 3}))
	ls := map[string]any{"command": "ls"}
	for i := range 10 {
		cu.begin("busy", "Shell", ls) // a conversation that keeps going
		cu.begin(fmt.Sprintf("conv-%d", i), "Shell", ls)
		if n := len(cu.pending); n > 3 {
			t.Fatalf("after %d conversations: %d kept, want at most 3", i+1, n)
		}
	}
	// The newest conversation's call, and the busy one's, are still found
	// by their after events: the least recently used went.
	for _, conv := range []string{"conv-9", "busy"} {
		if id := cu.end(conv, "Shell", ls); id == "" {
			t.Fatalf("%s: its call was forgotten", conv)
		}
	}
}
