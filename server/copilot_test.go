package server

import (
	"fmt"
	"strings"
	"testing"
)

// Copilot CLI's view reads path, which is decided as Claude Code's
// file_path: a call that gives file_path as well names one argument twice,
// and is denied whichever the rules would have judged.
func TestCopilotArgumentUnderTwoNames(t *testing.T) {
	sc := pastedSidecar(t, "Read(./secrets/**)")
	for i := range 24 {
		ev := map[string]any{"timestamp": 1764000002000, "cwd": fmt.Sprintf("/home/dev/shop%d", i), "toolName": "view",
			"toolArgs": `{"path": "secrets/key.pem", "file_path": "README.md"}`}
		r := sc.must(200, "POST", "/v1/hooks/copilot?event=preToolUse", ev)
		if r.str("permissionDecision") != "deny" || !strings.Contains(r.str("permissionDecisionReason"), "give one") {
			t.Fatalf("try %d: %s", i, r.raw)
		}
	}
}
