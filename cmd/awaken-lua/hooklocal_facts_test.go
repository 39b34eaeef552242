package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/server"
)

// approvingPolicy is the reference policy of testdata/agents/claude-code
// changed so that a call its user approved is let through when it is gated
// again (the reference policy asks again), and so that a subagent's first
// stop is kept going too (the reference policy leaves subagents alone);
// it returns the policy's directory.
func approvingPolicy(t *testing.T) string {
	t.Helper()
	dir, _ := recordedEvents(t)
	src, err := os.ReadFile(filepath.Join(dir, "policy", "reference.lua"))
	if err != nil {
		t.Fatal(err)
	}
	lua := string(src)
	for _, edit := range [][2]string{
		{"for _, c in ipairs(cmds) do\n    for _, prefix in ipairs(ctx.config.ask) do",
			"for _, c in ipairs(cmds) do\n    if call.resume then break end\n    for _, prefix in ipairs(ctx.config.ask) do"},
		{`  if ctx.run.thread_id:find("/subagent/", 1, true) then return end` + "\n", ""},
	} {
		next := strings.Replace(lua, edit[0], edit[1], 1)
		if next == lua {
			t.Fatalf("the reference policy changed: patch it again (%q)", edit[0])
		}
		lua = next
	}
	policy := t.TempDir()
	if err := os.WriteFile(filepath.Join(policy, "reference.lua"), []byte(lua), 0o644); err != nil {
		t.Fatal(err)
	}
	return policy
}

// TestHookLocalSessionFacts plays a Claude Code session through the
// sidecar and through `hook --local`, a process per event, with the audit
// plugin on: the replies, the threads and the audit records must be the
// same. The session needs what the adapter learns of a session besides
// its runs, which a process per event forgets unless it is carried:
//
//   - that the session sends PostToolUse: a call its user declined (no
//     PostToolUse) is recorded as failed, not with an unknown result;
//   - the tools it used in an earlier prompt, which every step offers: a
//     call of one is gated once, not failed "not available" first;
//   - a call answered "ask" whose user approved it (its PostToolUse came)
//     while another call of its step still ran: it is resumed and given
//     its result when the step ends, not cancelled;
//   - the subagents' runs a runtime.continue kept open at their
//     SubagentStop, and a subagent that never stopped: SessionEnd ends
//     their runs.
func TestHookLocalSessionFacts(t *testing.T) {
	policy := approvingPolicy(t)
	project := func() string {
		work := t.TempDir()
		cfg := "plugin_dir = " + quote(policy) + "\n\n[store]\nkind = \"file\"\npath = \"state\"\n\n[audit]\npath = \"audit.jsonl\"\n\n" +
			"[agents.default]\nplugins = [\"reference\", \"audit\"]\ntools = []\n\n[plugins.audit]\n"
		if err := os.WriteFile(filepath.Join(work, "awaken.toml"), []byte(cfg), 0o644); err != nil {
			t.Fatal(err)
		}
		return work
	}
	ev := func(format string, a ...any) localEvent {
		return localEvent{agent: "claude-code", body: []byte(`{"session_id":"f","cwd":"/tmp",` + fmt.Sprintf(format, a...) + `}`)}
	}
	call := func(event, id, tool, input, agent string) localEvent {
		extra := ""
		if event == "PostToolUse" {
			extra = `,"tool_response":{"ok":true}`
		}
		if agent != "" {
			extra += `,"agent_id":"` + agent + `","agent_type":"Explore"`
		}
		return ev(`"hook_event_name":%q,"tool_name":%q,"tool_input":%s,"tool_use_id":%q%s`, event, tool, input, id, extra)
	}
	const (
		mcp  = "mcp__db__query"
		sql  = `{"sql":"select 1"}`
		test = `{"command":"npm test"}`
		push = `{"command":"git push origin main"}`
	)
	read := func(path string) string { return `{"file_path":"` + path + `"}` }
	events := []localEvent{
		ev(`"hook_event_name":"UserPromptSubmit","prompt":"one"`),
		call("PreToolUse", "toolu_m1", mcp, sql, ""),
		call("PostToolUse", "toolu_m1", mcp, sql, ""),
		// Declined by its user: no PostToolUse.
		call("PreToolUse", "toolu_d1", "Bash", test, ""),
		call("PreToolUse", "toolu_r1", "Read", read("/a"), ""),
		call("PostToolUse", "toolu_r1", "Read", read("/a"), ""),
		ev(`"hook_event_name":"Stop","stop_hook_active":false`),
		ev(`"hook_event_name":"Stop","stop_hook_active":true`),
		// The next prompt offers the MCP tool from the start.
		ev(`"hook_event_name":"UserPromptSubmit","prompt":"two"`),
		call("PreToolUse", "toolu_m2", mcp, sql, ""),
		call("PostToolUse", "toolu_m2", mcp, sql, ""),
		// Asked beside a call that runs, and approved while it still does.
		call("PreToolUse", "toolu_r2", "Read", read("/b"), ""),
		call("PreToolUse", "toolu_p", "Bash", push, ""),
		call("PostToolUse", "toolu_p", "Bash", push, ""),
		call("PostToolUse", "toolu_r2", "Read", read("/b"), ""),
		ev(`"hook_event_name":"PostToolBatch","tool_calls":[]`),
		// A subagent kept going at its stop, and one that never stops.
		call("PreToolUse", "toolu_s1", "Read", read("/s"), "a1"),
		call("PostToolUse", "toolu_s1", "Read", read("/s"), "a1"),
		ev(`"hook_event_name":"SubagentStop","agent_id":"a1","agent_type":"Explore","last_assistant_message":"found it","stop_hook_active":false`),
		call("PreToolUse", "toolu_s2", "Read", read("/t"), "a2"),
		// Kept going at its stop without a call of its own before.
		ev(`"hook_event_name":"SubagentStop","agent_id":"a3","agent_type":"Explore","last_assistant_message":"nothing","stop_hook_active":false`),
		ev(`"hook_event_name":"Stop","stop_hook_active":false`),
		ev(`"hook_event_name":"SessionEnd","reason":"prompt_input_exit"`),
	}
	store := sidecarAndLocalIn(t, project, events)
	if left, _ := filepath.Glob(filepath.Join(store, "sessions", "*")); len(left) != 0 {
		t.Errorf("after SessionEnd the store keeps the session's record: %v", left)
	}
	audit, err := os.ReadFile(filepath.Join(filepath.Dir(store), "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	// What the sidecar records, which the comparison above holds --local to.
	for _, want := range []string{
		`"call_id":"toolu_d1"`, "Claude Code reported no result for this call",
		`"call_id":"toolu_p","cwd":"/tmp","decision":"allow","event":"tool_call"`,
	} {
		if !strings.Contains(string(audit), want) {
			t.Errorf("the audit lacks %s:\n%s", want, audit)
		}
	}
}

// What an event learned of a session is forgotten once the session has
// been idle as long as a sidecar keeps an idle session: the next event
// decides as a sidecar that swept the session would.
func TestHookLocalFactsIdle(t *testing.T) {
	dir, _ := recordedEvents(t)
	work := localProject(t, filepath.Join(dir, "policy"))
	send := func(session, body string) {
		t.Helper()
		ev := `{"session_id":"` + session + `","cwd":"/tmp",` + body + `}`
		if _, errOut, code := runChild(t, work, nil, []byte(ev), "hook", "--local"); code != 0 {
			t.Fatalf("%s: exit %d, stderr %s", ev, code, errOut)
		}
	}
	record := filepath.Join(work, "state", "sessions")
	seen := func(session string) []string {
		t.Helper()
		var rec struct {
			Facts map[string]struct {
				Seen []string `json:"seen"`
			} `json:"facts"`
		}
		raw, err := os.ReadFile(filepath.Join(record, session+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, &rec); err != nil {
			t.Fatal(err)
		}
		return rec.Facts[session].Seen
	}
	for _, session := range []string{"fresh", "idle"} {
		send(session, `"hook_event_name":"PreToolUse","tool_name":"mcp__db__query","tool_input":{},"tool_use_id":"toolu_1"`)
		// The run ends (no open step offers the tool any more).
		send(session, `"hook_event_name":"SessionStart","source":"resume"`)
		if got := seen(session); len(got) != 1 {
			t.Fatalf("%s: seen %v after a call of mcp__db__query", session, got)
		}
	}
	path := filepath.Join(record, "idle.json")
	raw, _ := os.ReadFile(path)
	var rec map[string]any
	if err := json.Unmarshal(raw, &rec); err != nil {
		t.Fatal(err)
	}
	rec["facts"].(map[string]any)["idle"].(map[string]any)["used"] = time.Now().Add(-server.DefaultIdleTimeout - time.Minute).Format(time.RFC3339Nano)
	raw, _ = json.Marshal(rec)
	if err := os.WriteFile(path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, session := range []string{"fresh", "idle"} {
		send(session, `"hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/a"},"tool_use_id":"toolu_2"`)
	}
	if got := seen("fresh"); len(got) != 1 {
		t.Fatalf("a session used a moment ago forgot the tools it used: %v", got)
	}
	if got := seen("idle"); len(got) != 0 {
		t.Fatalf("a session idle past %s still knows the tools it used: %v", server.DefaultIdleTimeout, got)
	}
}

// The agent a session's events run as (hook --as) is carried too: at
// SessionEnd the session ends its subagent's run, which it takes up only
// when the run is its agent's.
func TestHookLocalFactsAgent(t *testing.T) {
	dir, _ := recordedEvents(t)
	work := localProject(t, filepath.Join(dir, "policy"))
	f, err := os.OpenFile(filepath.Join(work, "awaken.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("\n[agents.other]\nplugins = [\"reference\"]\ntools = []\n")
	f.Close()
	for _, ev := range []string{
		`"hook_event_name":"PreToolUse","tool_name":"Read","tool_input":{"file_path":"/s"},"tool_use_id":"toolu_s","agent_id":"a1","agent_type":"Explore"`,
		`"hook_event_name":"SessionEnd","reason":"prompt_input_exit"`,
	} {
		body := `{"session_id":"as","cwd":"/tmp",` + ev + `}`
		if out, errOut, code := runChild(t, work, nil, []byte(body), "hook", "--local", "--as", "other"); code != 0 || strings.TrimSpace(out) != "{}" {
			t.Fatalf("%s: exit %d, stdout %s, stderr %s", body, code, out, errOut)
		}
	}
	if left := leftRuns(t, filepath.Join(work, "state")); len(left) != 0 {
		t.Fatalf("after SessionEnd the subagent's run is left: %v", left)
	}
}
