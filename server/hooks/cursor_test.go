package hooks

import (
	"fmt"
	"testing"
)

// Cursor's before events whose after event never comes are kept per
// conversation; the conversations are bounded by MaxSessions.
func TestCursorPendingIsBounded(t *testing.T) {
	cu := newCursor(newClaudeCode(Options{MaxSessions: 3}))
	for i := range 10 {
		cu.begin(fmt.Sprintf("conv-%d", i), "Shell", map[string]any{"command": "ls"})
		if n := len(cu.pending); n > 3 {
			t.Fatalf("after %d conversations: %d kept, want at most 3", i+1, n)
		}
	}
	// The newest conversation's call is still found by its after event.
	if id := cu.end("conv-9", "Shell", map[string]any{"command": "ls"}); id == "" {
		t.Fatal("the newest conversation's call was forgotten")
	}
}
