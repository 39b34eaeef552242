package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/journal"
)

// TestHookLocalJournal plays the recorded Claude Code session through
// `hook --local`, each event a process of its own with the journal on and
// a ticket timeout: a run carried from process to process must be
// journaled as one run (one header, every phase once and in order, one
// end), the journal verifies, and replay of the same plugins agrees with
// it everywhere. The session also has a push answered "ask" that its
// user approves, in a later process, after the ticket timeout: the call
// ran, and replay must not expire it.
func TestHookLocalJournal(t *testing.T) {
	dir, events := recordedEvents(t)
	// The reference policy asks again when the approved call is gated
	// again; this one lets an approved call through.
	src, err := os.ReadFile(filepath.Join(dir, "policy", "reference.lua"))
	if err != nil {
		t.Fatal(err)
	}
	policy := t.TempDir()
	lua := strings.Replace(string(src), "for _, c in ipairs(cmds) do\n    for _, prefix in ipairs(ctx.config.ask) do",
		"for _, c in ipairs(cmds) do\n    if call.resume then break end\n    for _, prefix in ipairs(ctx.config.ask) do", 1)
	if lua == string(src) {
		t.Fatal("the reference policy changed: patch it again")
	}
	if err := os.WriteFile(filepath.Join(policy, "reference.lua"), []byte(lua), 0o644); err != nil {
		t.Fatal(err)
	}
	work := localProject(t, policy)
	cfg := filepath.Join(work, "awaken.toml")
	src, err = os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	patched := strings.Replace(string(src), "[runtime]\n", "[runtime]\nticket_timeout = \"1ms\"\n", 1) + "\n[journal]\npath = \"journal\"\n"
	if patched == string(src)+"\n[journal]\npath = \"journal\"\n" {
		t.Fatal("localProject's configuration has no [runtime] table to patch")
	}
	if err := os.WriteFile(cfg, []byte(patched), 0o644); err != nil {
		t.Fatal(err)
	}
	late := `{"session_id":"s2","cwd":"/tmp","hook_event_name":"%s","tool_name":"Bash","tool_input":{"command":"git push origin main"},"tool_use_id":"toolu_push"%s}`
	bodies := [][]byte{
		[]byte(fmt.Sprintf(late, "PreToolUse", "")),
		[]byte(fmt.Sprintf(late, "PostToolUse", `,"tool_response":{"stdout":"pushed"}`)),
		[]byte(`{"session_id":"s2","cwd":"/tmp","hook_event_name":"Stop","stop_hook_active":true}`),
	}
	for _, ev := range events {
		body, err := os.ReadFile(ev)
		if err != nil {
			t.Fatal(err)
		}
		bodies = append(bodies, body)
	}
	for i, body := range bodies {
		out, errOut, code := runChild(t, work, nil, body, "hook", "--local")
		if code != 0 || (i == 0 && !strings.Contains(out, `"ask"`)) {
			t.Fatalf("%s: exit %d, stdout %s, stderr %s", body, code, out, errOut)
		}
	}
	jdir := filepath.Join(work, "journal")
	headers, ends := map[string]int{}, map[string]int{}
	phases := map[string][]string{}
	problems, err := journal.Read([]string{jdir}, func(_ journal.Pos, rec *journal.Record) error {
		switch rec.Rec {
		case journal.KindRun:
			headers[rec.RunID]++
		case journal.KindEnd:
			ends[rec.RunID]++
		case journal.KindPhase:
			if headers[rec.RunID] == 0 || ends[rec.RunID] != 0 {
				t.Errorf("run %s: %s record outside its header and end", rec.RunID, rec.Phase)
			}
			phases[rec.RunID] = append(phases[rec.RunID], rec.Phase)
		}
		return nil
	})
	if err != nil || len(problems) != 0 {
		t.Fatalf("read: %v %v", problems, err)
	}
	for id, n := range headers {
		if n != 1 || ends[id] > 1 {
			t.Errorf("run %s: %d headers, %d ends; phases %v", id, n, ends[id], phases[id])
		}
	}
	code, out, errOut := awaken(t, "", "--config", filepath.Join(work, "awaken.toml"), "journal", "verify")
	if code != exitOK {
		t.Fatalf("journal verify: exit %d, %s %s", code, out, errOut)
	}
	code, out, errOut = awaken(t, "", "--config", filepath.Join(work, "awaken.toml"), "replay")
	if code != exitOK || errOut != "" || strings.Contains(out, "skipped") {
		t.Fatalf("replay of the same plugins: exit %d\n%s\n%s\nphases: %v", code, out, errOut, phases)
	}
	var expired []string
	journal.Read([]string{jdir}, func(_ journal.Pos, rec *journal.Record) error {
		expired = append(expired, rec.Expired...)
		return nil
	})
	if len(expired) != 0 {
		t.Fatalf("the push its user approved late was expired: %v", expired)
	}
}
