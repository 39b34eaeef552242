package hooks

import (
	"context"
	"fmt"
	"log/slog"
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

// An after event goes to the latest call with its tool and arguments (an
// earlier one is one Cursor never ran), and a call forgotten (denied)
// is not found again.
func TestCursorEndTakesTheLatest(t *testing.T) {
	cu := newCursor(newClaudeCode(Options{}))
	push := map[string]any{"command": "git push"}
	declined := cu.begin("c", "Shell", push)
	approved := cu.begin("c", "Shell", push)
	if id := cu.end("c", "Shell", push); id != approved {
		t.Fatalf("the after event went to %s, want %s (not the declined %s)", id, approved, declined)
	}
	denied := cu.begin("c", "Shell", map[string]any{"command": "rm -rf /"})
	cu.forget("c", denied)
	if id := cu.end("c", "Shell", map[string]any{"command": "rm -rf /"}); id != "" {
		t.Fatalf("a forgotten call was found: %s", id)
	}
}

// sessionOnlyRuns is Runs for events that find no run: a session that
// never started one.
type sessionOnlyRuns struct{ Runs }

func (sessionOnlyRuns) ThreadHolder(string) string { return "" }

// A conversation's sessionEnd forgets its calls whose after event never
// came: none is coming.
func TestCursorSessionEndForgetsPending(t *testing.T) {
	cu := newCursor(newClaudeCode(Options{Runs: sessionOnlyRuns{}, MaxIDLen: 256, Log: slog.New(slog.DiscardHandler)}))
	cu.begin("c", "Shell", map[string]any{"command": "git push"})
	cu.begin("other", "Shell", map[string]any{"command": "ls"})
	if out := cu.event(context.Background(), cursorInput{ConversationID: "c", HookEventName: cuSessionEnd}, ""); out != (cursorOutput{}) {
		t.Fatalf("sessionEnd: %+v", out)
	}
	if _, kept := cu.pending["c"]; kept || len(cu.pending["other"]) != 1 {
		t.Fatalf("after c's sessionEnd the pending calls are %v", cu.pending)
	}
}
