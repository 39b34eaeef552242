package server

import (
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/server/hooks"
)

// An adapter that panics while it holds a run answers fail-closed and
// leaves the run unlocked: the session's next event is answered, not made
// to wait for ever (Claude Code would give up on the hook and let the tool
// run).
func TestClaudeCodePanicReleasesTheRun(t *testing.T) {
	sc := newSidecar(t, filepath.Join("..", "testdata", "agents", "claude-code", "policy"), Options{Log: quietLog()})
	s := sc.srv
	var boom atomic.Bool
	boom.Store(true)
	ad := hooks.New(hooks.Options{Runs: hookRuns{s}, BodyLimit: s.bodyLimit, MaxIDLen: maxIDLen, Slots: s.sem,
		HookAgent: s.hookAgent, Log: s.log, CheckBody: duplicateKey, Failed: s.noteStore,
		Decided: func(gate.Kind) {
			if boom.Swap(false) {
				panic("a bug in the adapter") // the run is locked here
			}
		}})
	decide := func(id string) (string, error) {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/v1/hooks/claude-code", strings.NewReader(
			`{"session_id":"s1","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"git status"},"tool_use_id":"`+id+`"}`))
		if err := ad.ClaudeCode(w, r); err != nil {
			return "", err
		}
		var out struct {
			Specific struct {
				Decision string `json:"permissionDecision"`
				Reason   string `json:"permissionDecisionReason"`
			} `json:"hookSpecificOutput"`
		}
		err := json.Unmarshal(w.Body.Bytes(), &out)
		return out.Specific.Decision + ":" + out.Specific.Reason, err
	}
	if got, err := decide("t1"); err != nil || !strings.HasPrefix(got, "deny:") || !strings.Contains(got, "internal error") {
		t.Fatalf("the event that panicked: %q %v, want a deny", got, err)
	}
	// The run must be free again. A leaked lock is taken back here, so the
	// test fails at once instead of hanging in the sidecar's close.
	id := s.threadHolder("s1")
	s.mu.Lock()
	e := s.runs[id]
	s.mu.Unlock()
	if e == nil {
		t.Fatalf("no run holds the session's thread (holder %q)", id)
	}
	if !e.mu.TryLock() {
		e.mu.Unlock()
		t.Fatal("the run stayed locked after the event that held it panicked")
	}
	e.mu.Unlock()
	if got, err := decide("t2"); err != nil || got != ":" { // Claude Code's allow is an empty reply
		t.Fatalf("the next event: %q %v, want it allowed", got, err)
	}
}
