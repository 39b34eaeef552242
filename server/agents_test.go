package server

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
)

// agentEvents lists testdata/agents/<agent>'s recorded events in session
// order: each event file with its expected reply file.
func agentEvents(t *testing.T, agent string) (dir string, events []string) {
	t.Helper()
	dir = filepath.Join("..", "testdata", "agents", agent)
	all, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range all {
		if !strings.HasSuffix(f, ".reply.json") {
			events = append(events, f)
		}
	}
	sort.Strings(events)
	if len(events) == 0 {
		t.Fatalf("no events in %s", dir)
	}
	return dir, events
}

func readJSON(t *testing.T, path string) any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// TestClaudeCodeRecordedSession drives every recorded Claude Code event
// through POST /v1/hooks/claude-code, in order, on the reference policy
// and the default hook agent (no ?agent=), and compares each reply.
func TestClaudeCodeRecordedSession(t *testing.T) { recordedSession(t, "claude-code") }

// TestCursorRecordedSession is the same for Cursor's events, on the same
// reference policy, through POST /v1/hooks/cursor.
func TestCursorRecordedSession(t *testing.T) { recordedSession(t, "cursor") }

// TestCodexRecordedSession is the same for Codex CLI's events, through
// POST /v1/hooks/codex.
func TestCodexRecordedSession(t *testing.T) { recordedSession(t, "codex") }

// TestGeminiRecordedSession is the same for Gemini CLI's events, through
// POST /v1/hooks/gemini.
func TestGeminiRecordedSession(t *testing.T) { recordedSession(t, "gemini") }

// TestCopilotRecordedSession is the same for GitHub Copilot CLI's events,
// through POST /v1/hooks/copilot?event=<event> (the file names the event).
func TestCopilotRecordedSession(t *testing.T) { recordedSession(t, "copilot") }

// Copilot CLI sends hooks configured under PascalCase event names its VS
// Code compatible format (snake_case fields): decided the same, the
// decision given where either format reads it. An event without a session
// id is its working directory's session however deep the directory.
func TestCopilotVSCodeFormat(t *testing.T) {
	sc := newSidecar(t, filepath.Join("..", "testdata", "agents", "claude-code", "policy"), Options{Log: quietLog()})
	pre := func(session, cwd, command string) map[string]any {
		return map[string]any{"hook_event_name": "PreToolUse", "session_id": session, "timestamp": 1764000004000, "cwd": cwd,
			"tool_name": "bash", "tool_input": map[string]any{"command": command, "description": "x"}}
	}
	reason := "Bash(rm *) denies this command: rm -rf dist"
	for _, path := range []string{"/v1/hooks/copilot", "/v1/hooks/copilot?event=PreToolUse"} {
		r := sc.must(200, "POST", path, pre("vs-1", "/home/dev/shop", "rm -rf dist"))
		spec, _ := r.body["hookSpecificOutput"].(map[string]any)
		if r.str("permissionDecision") != "deny" || r.str("permissionDecisionReason") != reason ||
			spec["permissionDecision"] != "deny" || spec["permissionDecisionReason"] != reason || spec["hookEventName"] != "PreToolUse" {
			t.Errorf("%s: %s", path, r.raw)
		}
	}
	if r := sc.must(200, "POST", "/v1/hooks/copilot", pre("vs-1", "/home/dev/shop", "npm test")); string(r.raw) != "{}\n" {
		t.Errorf("an allowed command: %q", r.raw)
	}
	// A body that does not decode fails as the event ?event= names.
	if r := sc.must(200, "POST", "/v1/hooks/copilot?event=PreToolUse", `{"tool_name":`); !strings.Contains(string(r.raw), `"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"deny"`) {
		t.Errorf("not JSON: %s", r.raw)
	}
	deep := "/home/dev/" + strings.Repeat("d", 300)
	for _, body := range []map[string]any{
		{"timestamp": 1, "cwd": deep, "toolName": "view", "toolArgs": `{"path": "` + deep + `/README.md"}`},
		pre("", deep, "ls"),
	} {
		if r := sc.must(200, "POST", "/v1/hooks/copilot?event=preToolUse", body); strings.Contains(string(r.raw), "deny") {
			t.Errorf("a harmless call in a %d-byte cwd: %s", len(deep), r.raw)
		}
	}
}

// Gemini CLI's endpoint answers under the CLI's own name too.
func TestGeminiCLIRecordedSession(t *testing.T) { recordedSessionAt(t, "gemini", "gemini-cli") }

func recordedSession(t *testing.T, agent string) { recordedSessionAt(t, agent, agent) }

// recordedSessionAt posts agent's recorded events to /v1/hooks/<endpoint>.
func recordedSessionAt(t *testing.T, agent, endpoint string) {
	dir, events := agentEvents(t, agent)
	sc := newSidecar(t, filepath.Join("..", "testdata", "agents", "claude-code", "policy"), Options{Log: quietLog()})
	for _, f := range events {
		body := readJSON(t, f)
		want := readJSON(t, strings.TrimSuffix(f, ".json")+".reply.json")
		path := "/v1/hooks/" + endpoint
		if agent == "copilot" {
			path += "?event=" + strings.Split(filepath.Base(f), ".")[1]
		}
		r := sc.call("POST", path, body)
		if r.status != 200 {
			t.Fatalf("%s: status %d %s", filepath.Base(f), r.status, r.raw)
		}
		var got any
		if err := json.Unmarshal(r.raw, &got); err != nil {
			t.Fatalf("%s: %v", filepath.Base(f), err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %s, want %s", filepath.Base(f), r.raw, mustJSON(want))
		}
	}
	_ = dir
}

// TestHookAgent: hook events without ?agent= run as [server] hook_agent,
// and ?agent= still overrides it.
func TestHookAgent(t *testing.T) {
	dir := project(t, "\n[agents.open]\ntools = []\nplugins = [\"other\"]\n",
		map[string]string{"ccpolicy.lua": ccPolicyLua, "other.lua": "local awaken = require(\"awaken\")\nreturn awaken.plugin { id = \"other\" }\n"})
	sc := newSidecar(t, dir, Options{Log: quietLog(), HookAgent: "open"})
	rm := fixture(t, "pre_tool_use_bash_rm", nil)
	wantEmpty(t, sc.hook(t, rm, "")) // the hook agent has no policy
	rm["session_id"] = "another"
	wantDecision(t, sc.hook(t, rm, "?agent=default"), "deny", "rm is not allowed")
}

// A Cursor command the user declined never runs and gets no after event;
// asked again and approved, the command's result is the second call's,
// which reaches after_tool_execute, while the first ends cancelled.
func TestCursorDeclinedThenApproved(t *testing.T) {
	sc := ccSidecar(t, Options{})
	ev := func(event string, extra map[string]any) string {
		t.Helper()
		m := map[string]any{"conversation_id": "cu-again", "generation_id": "g", "hook_event_name": event, "workspace_roots": []string{"/home/dev/shop"}}
		for k, v := range extra {
			m[k] = v
		}
		return string(sc.must(200, "POST", "/v1/hooks/cursor", m).raw)
	}
	ev("beforeSubmitPrompt", map[string]any{"prompt": "push it"})
	push := map[string]any{"command": "git push origin main", "cwd": "/home/dev/shop"}
	for i := range 2 {
		if got := ev("beforeShellExecution", push); !strings.Contains(got, `"permission":"ask"`) {
			t.Fatalf("ask %d: %s", i+1, got)
		}
	}
	ev("afterShellExecution", map[string]any{"command": "git push origin main", "cwd": "/home/dev/shop", "output": "pushed"})
	id := sc.ccRunID(t, "cu-again")
	ev("stop", map[string]any{"status": "completed", "loop_count": 1})
	st := sc.must(200, "GET", "/v1/runs/"+id, nil).body["state"].(map[string]any)
	if seen, ended := mustJSON(st["ccpolicy.seen"]), mustJSON(st["ccpolicy.ended"]); !strings.Contains(seen, "Bash:success") ||
		!regexp.MustCompile(`cursor_[A-Z2-7]+_2:succeeded`).MatchString(ended) {
		t.Fatalf("the approved push: seen %s, ended %s", seen, ended)
	}
}

// Cursor's beforeReadFile carries the file's content, which the adapter
// never reads: a file larger than the body limit is decided by its path
// (read or denied by the policy, not denied as too large), wherever the
// content comes in the event.
func TestCursorReadsLargeFiles(t *testing.T) {
	sc := pastedSidecar(t, "Read(./.env)")
	content := strings.Repeat("x", 2*DefaultBodyLimit)
	for _, tc := range []struct {
		name, body string
		deny       bool
	}{
		{"content last", `{"conversation_id":"cu-big","generation_id":"g","hook_event_name":"beforeReadFile","workspace_roots":["/home/dev/shop"],` +
			`"file_path":"/home/dev/shop/package-lock.json","content":"` + content + `"}`, false},
		{"content first", `{"content":"` + content + `","conversation_id":"cu-big","generation_id":"g","hook_event_name":"beforeReadFile",` +
			`"workspace_roots":["/home/dev/shop"],"file_path":"/home/dev/shop/data.csv"}`, false},
		{"a denied file", `{"conversation_id":"cu-big","generation_id":"g","content":"` + content + `","hook_event_name":"beforeReadFile",` +
			`"workspace_roots":["/home/dev/shop"],"file_path":"/home/dev/shop/.env"}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sc.must(200, "POST", "/v1/hooks/cursor", tc.body)
			if denied := strings.Contains(string(r.raw), `"permission":"deny"`); denied != tc.deny {
				t.Fatalf("denied=%v, want %v: %s", denied, tc.deny, r.raw)
			}
			if tc.deny && !strings.Contains(string(r.raw), "Read(./.env)") {
				t.Fatalf("denied for another reason: %s", r.raw)
			}
		})
	}
}

// Options.HookFailed sees the error of a hook event that failed (answered
// failing closed), with its code, and nothing of one that succeeded.
func TestHookFailedSeesTheError(t *testing.T) {
	var mu sync.Mutex
	var seen []error
	sc := newSidecar(t, filepath.Join("..", "testdata", "agents", "claude-code", "policy"), Options{Log: quietLog(),
		HookFailed: func(err error) { mu.Lock(); seen = append(seen, err); mu.Unlock() }})
	pre := map[string]any{"hook_event_name": "PreToolUse", "session_id": "s1", "tool_name": "Bash",
		"tool_input": map[string]any{"command": "npm test"}, "tool_use_id": "toolu_1"}
	sc.must(200, "POST", "/v1/hooks/claude-code", pre)
	pre["session_id"] = ""
	if r := sc.must(200, "POST", "/v1/hooks/claude-code", pre); !strings.Contains(string(r.raw), `"permissionDecision":"deny"`) {
		t.Fatalf("no session: %s", r.raw)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || !strings.Contains(seen[0].Error(), "session_id") {
		t.Fatalf("HookFailed saw %v, want the one failure", seen)
	}
}
