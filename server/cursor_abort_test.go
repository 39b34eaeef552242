package server

import (
	"path/filepath"
	"strings"
	"testing"
)

// A Cursor stop the user aborted (or that ended in an error) ends the
// turn: a runtime.continue must not send a followup_message, which Cursor
// submits as the user's next message and so would start the agent again
// against the user's will. A completed stop still continues (the
// reference policy continues a session's first stop).
func TestCursorAbortedStopDoesNotContinue(t *testing.T) {
	sc := newSidecar(t, filepath.Join("..", "testdata", "agents", "claude-code", "policy"), Options{Log: quietLog()})
	ev := func(conv, event string, extra map[string]any) string {
		t.Helper()
		m := map[string]any{"conversation_id": conv, "generation_id": "g", "hook_event_name": event, "workspace_roots": []string{"/home/dev/shop"}}
		for k, v := range extra {
			m[k] = v
		}
		return string(sc.must(200, "POST", "/v1/hooks/cursor", m).raw)
	}
	for _, tc := range []struct {
		status string
		follow bool
	}{{"completed", true}, {"aborted", false}, {"error", false}} {
		t.Run(tc.status, func(t *testing.T) {
			conv := "cu-stop-" + tc.status
			ev(conv, "beforeSubmitPrompt", map[string]any{"prompt": "tidy up"})
			got := ev(conv, "stop", map[string]any{"status": tc.status, "loop_count": 0})
			if strings.Contains(got, "followup_message") != tc.follow {
				t.Fatalf("stop %s: %s (want a followup_message: %v)", tc.status, got, tc.follow)
			}
			if !tc.follow && sc.ccRunID(t, conv) != "" {
				t.Fatalf("stop %s left the run open", tc.status)
			}
		})
	}
}
