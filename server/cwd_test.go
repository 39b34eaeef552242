package server

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/server/hooks"
)

// cwdProbeLua denies every call but Probe's with the working directory its
// gate read, and notes the one each step start and run end read.
const cwdProbeLua = `local awaken = require("awaken")
local p = awaken.plugin { id = "cwdprobe" }
local steps = p:key("cwdprobe.steps", { scope = "run", reducer = "append", default = {} })
local ended = p:key("cwdprobe.end", { scope = "run", default = "" })
p:on("step_start", function(ctx) ctx:update(steps, ctx.run.cwd or "nil") end)
p:on("run_end", function(ctx) ctx:update(ended, ctx.run.cwd or "nil") end)
p:tool_gate(function(ctx, call)
  if call.name == "Probe" then return nil end
  return awaken.block("cwd=" .. tostring(ctx.run.cwd))
end)
return p
`

// Every agent's hook events hand their cwd to the run: the gate of an
// event's call reads that event's directory, an event without one gives
// none, and a cwd past hooks.MaxCwd fails the event closed.
func TestHookEventsCarryCwd(t *testing.T) {
	sc := newSidecar(t, project(t, "", map[string]string{"cwdprobe.lua": cwdProbeLua}), Options{Log: quietLog()})
	pre := func(session, id, cwd string) map[string]any {
		ev := map[string]any{"session_id": session, "hook_event_name": "PreToolUse", "tool_name": "Read",
			"tool_input": map[string]any{"file_path": "/x"}, "tool_use_id": id}
		if cwd != "" {
			ev["cwd"] = cwd
		}
		return ev
	}
	sc.hook(t, map[string]any{"session_id": "s1", "hook_event_name": "UserPromptSubmit", "prompt": "hi", "cwd": "/home/dev/shop"}, "")
	id := sc.ccRunID(t, "s1")
	wantDecision(t, sc.hook(t, pre("s1", "t1", "/home/dev/shop/api"), ""), "deny", "cwd=/home/dev/shop/api")
	wantDecision(t, sc.hook(t, pre("s1", "t2", "/home/dev/shop"), ""), "deny", "cwd=/home/dev/shop")
	wantDecision(t, sc.hook(t, pre("s1", "t3", ""), ""), "deny", "cwd=nil")
	wantDecision(t, sc.hook(t, pre("s1", "t4", "/"+strings.Repeat("d", hooks.MaxCwd)), ""), "deny", "cwd must be a path of at most 4096 bytes")
	// The prompt's step started in its event's directory, and the gate of
	// t1, in that step, read t1's (a block ends the run; each later
	// PreToolUse starts another, in its own directory).
	if steps := mustJSON(sc.must(200, "GET", "/v1/runs/"+id, nil).body["state"].(map[string]any)["cwdprobe.steps"]); steps != `["/home/dev/shop"]` {
		t.Fatalf("the steps of the run of t1 read %s", steps)
	}

	// A subagent's run that SessionEnd ends reads SessionEnd's directory.
	sc.hook(t, map[string]any{"session_id": "s2", "hook_event_name": "PreToolUse", "tool_name": "Probe", "tool_input": map[string]any{},
		"tool_use_id": "p1", "agent_id": "a1", "cwd": "/home/dev/sub"}, "")
	subRun := sc.ccRunID(t, "s2/subagent/a1")
	sc.hook(t, map[string]any{"session_id": "s2", "hook_event_name": "SessionEnd", "reason": "exit", "cwd": "/home/dev/end"}, "")
	if got := sc.must(200, "GET", "/v1/runs/"+subRun, nil).body["state"].(map[string]any)["cwdprobe.end"]; got != "/home/dev/end" {
		t.Fatalf("the subagent's run ended in %v", got)
	}

	for _, tc := range []struct {
		agent, path string
		event       map[string]any
	}{
		{"codex", "/v1/hooks/codex", map[string]any{"session_id": "c1", "cwd": "/home/dev/codex", "hook_event_name": "PreToolUse",
			"turn_id": "turn-1", "model": "gpt-5-codex", "tool_name": "shell", "tool_use_id": "call_1",
			"tool_input": map[string]any{"command": []any{"bash", "-lc", "ls"}}}},
		{"gemini", "/v1/hooks/gemini", map[string]any{"session_id": "g1", "cwd": "/home/dev/gemini", "hook_event_name": "BeforeTool",
			"tool_name": "read_file", "tool_input": map[string]any{"absolute_path": "/home/dev/gemini/a.ts"}}},
		{"copilot", "/v1/hooks/copilot?event=preToolUse", map[string]any{"timestamp": 1764000002000, "cwd": "/home/dev/copilot",
			"toolName": "view", "toolArgs": `{"path": "/home/dev/copilot/a.ts"}`}},
		{"cursor", "/v1/hooks/cursor", map[string]any{"conversation_id": "u1", "generation_id": "g-1", "hook_event_name": "beforeShellExecution",
			"command": "npm test", "cwd": "/home/dev/cursor"}},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			r := sc.call("POST", tc.path, tc.event)
			want := "cwd=" + tc.event["cwd"].(string)
			if r.status != 200 || !strings.Contains(string(r.raw), want) {
				t.Fatalf("%d %s, want a denial with %q", r.status, r.raw, want)
			}
		})
	}
}

// pastedSidecar is a sidecar whose permission plugin has one pasted
// Claude Code deny rule and no project_dir, and allows everything else.
func pastedSidecar(t *testing.T, deny string) *sidecar {
	t.Helper()
	extra := fmt.Sprintf(`
[plugins.permission]
default = "allow"

[plugins.permission.claude_code]
deny = [%q]
`, deny)
	return newSidecar(t, project(t, extra, map[string]string{"noop.lua": `return require("awaken").plugin {}`}), Options{Log: quietLog()})
}

// A Claude Code user pastes the permissions block of their settings.json
// without project_dir: Read(./.env) is anchored at the directory each
// PreToolUse reports, as Claude Code anchors it, so the working
// directory's .env is denied and every other read goes on; an event
// without a cwd cannot be judged, and is denied (fail closed) as before.
func TestClaudeCodePastedBlockAnchorsAtCwd(t *testing.T) {
	sc := pastedSidecar(t, "Read(./.env)")
	for i, tc := range []struct {
		name, cwd, file string
		deny            bool
	}{
		{"the cwd's .env", "/home/dev/shop", "/home/dev/shop/.env", true},
		{"a source file", "/home/dev/shop", "/home/dev/shop/src/a.go", false},
		{"another directory's .env", "/home/dev/shop/api", "/home/dev/shop/.env", false},
		{"the .env of a cwd below", "/home/dev/shop/api", "/home/dev/shop/api/.env", true},
		{"an event without a cwd", "", "/home/dev/shop/src/a.go", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := fixture(t, "pre_tool_use_read_env", map[string]any{"session_id": "pasted",
				"tool_use_id": fmt.Sprintf("toolu_%d", i), "tool_input": map[string]any{"file_path": tc.file}})
			if tc.cwd == "" {
				delete(ev, "cwd")
			} else {
				ev["cwd"] = tc.cwd
			}
			out := sc.hook(t, ev, "")
			if !tc.deny {
				wantEmpty(t, out)
				return
			}
			reason := `Read is denied by the permission rule "Read(./.env)" (claude_code.deny[0])`
			wantDecision(t, out, "deny", reason)
		})
	}
}

// A headless Claude Code's host reads the session (GET
// /v1/hooks/claude-code/sessions/{id}) and decides the deferred call
// through the API: neither is an event of the agent's, so the run keeps
// the directory the call was made in, in memory and in what it saves.
func TestClaudeCodeSessionViewKeepsCwd(t *testing.T) {
	sc := ccSidecar(t, Options{})
	ev := func(name string) map[string]any {
		return sc.hook(t, fixture(t, name, map[string]any{"session_id": "headless", "cwd": "/home/dev/a"}), "?suspend=defer")
	}
	ev("user_prompt_submit")
	wantDecision(t, ev("pre_tool_use_git_push"), "defer", "Push to the remote?")
	id := sc.must(200, "GET", "/v1/hooks/claude-code/sessions/headless", nil).str("run_id")
	sc.must(200, "POST", "/v1/runs/"+id+"/resume", map[string]any{"decisions": []any{
		map[string]any{"target": "toolu_01PUSH", "action": "resume"}}})
	sc.srv.mu.Lock()
	e := sc.srv.runs[id]
	sc.srv.mu.Unlock()
	if e == nil {
		t.Fatalf("run %s is not in memory", id)
	}
	if got := e.sess.Cwd(); got != "/home/dev/a" {
		t.Fatalf("after the session view and the resume the run's cwd is %q, want /home/dev/a", got)
	}
	if got := e.sess.Checkpoint().Cwd; got != "/home/dev/a" {
		t.Fatalf("the checkpoint's cwd is %q", got)
	}
}

// Codex runs a shell call in the directory its workdir names (Gemini CLI
// in its dir_path): a pasted
// Edit(./.env) deny holds for a write there to ../.env, which from the
// session's cwd alone would look like a write outside it.
func TestCodexWorkdirAnchorsWrites(t *testing.T) {
	sc := pastedSidecar(t, "Edit(./.env)")
	for i, tc := range []struct {
		name, workdir, script string
		deny                  bool
	}{
		{"a write to the project's .env from a subdirectory", "/home/dev/shop/api", "echo x > ../.env", true},
		{"a write to the subdirectory's own file", "/home/dev/shop/api", "echo x > notes.txt", false},
		{"a relative workdir", "api", "echo x > ../.env", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := map[string]any{"session_id": "codex-wd", "cwd": "/home/dev/shop", "hook_event_name": "PreToolUse",
				"turn_id": "turn-1", "model": "gpt-5-codex", "tool_name": "shell", "tool_use_id": fmt.Sprintf("call_%d", i),
				"tool_input": map[string]any{"command": []any{"bash", "-lc", tc.script}, "workdir": tc.workdir}}
			r := sc.call("POST", "/v1/hooks/codex", ev)
			denied := strings.Contains(string(r.raw), `"permissionDecision":"deny"`)
			if r.status != 200 || denied != tc.deny {
				t.Fatalf("%d %s, want denied=%v", r.status, r.raw, tc.deny)
			}
			// Gemini CLI's run_shell_command names it dir_path.
			gev := map[string]any{"session_id": "gemini-wd", "cwd": "/home/dev/shop", "hook_event_name": "BeforeTool",
				"tool_name": "run_shell_command", "tool_input": map[string]any{"command": tc.script, "dir_path": tc.workdir}}
			r = sc.call("POST", "/v1/hooks/gemini", gev)
			denied = strings.Contains(string(r.raw), `"decision":"deny"`)
			if r.status != 200 || denied != tc.deny {
				t.Fatalf("gemini: %d %s, want denied=%v", r.status, r.raw, tc.deny)
			}
		})
	}
}

// Cursor's file events carry no cwd: the workspace root that holds the
// file stands in, so a pasted Read(./.env) denies the workspace's .env
// and lets its other files be read.
func TestCursorWorkspaceRootAnchors(t *testing.T) {
	sc := pastedSidecar(t, "Read(./.env)")
	for _, tc := range []struct {
		name  string
		roots any
		file  string
		deny  bool
	}{
		{"the workspace's .env", []any{"/home/dev/shop"}, "/home/dev/shop/.env", true},
		{"a source file", []any{"/home/dev/shop"}, "/home/dev/shop/src/a.ts", false},
		{"the .env of the root that holds it", []any{"/home/dev/shop", "/home/dev/lib/"}, "/home/dev/lib/.env", true},
		{"another root's source file", []any{"/home/dev/shop", "/home/dev/lib"}, "/home/dev/lib/src/a.ts", false},
		{"no roots: cannot be judged", nil, "/home/dev/shop/src/a.ts", true},
		{"roots of the wrong type: cannot be judged", "/home/dev/shop", "/home/dev/shop/src/a.ts", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ev := map[string]any{"conversation_id": "cur-roots", "generation_id": "g-1", "hook_event_name": "beforeReadFile",
				"file_path": tc.file, "content": "x"}
			if tc.roots != nil {
				ev["workspace_roots"] = tc.roots
			}
			r := sc.call("POST", "/v1/hooks/cursor", ev)
			denied := strings.Contains(string(r.raw), `"permission":"deny"`)
			if r.status != 200 || denied != tc.deny {
				t.Fatalf("%d %s, want denied=%v", r.status, r.raw, tc.deny)
			}
		})
	}
}

// A client of the phase API names its working directory when it creates
// the run: the gate reads it as ctx.run.cwd, a pasted Read(./.env) is
// anchored there, a restored run keeps it, and a cwd past hooks.MaxCwd is
// refused before anything starts.
func TestCreateRunCwd(t *testing.T) {
	sc := newSidecar(t, project(t, "", map[string]string{"cwdprobe.lua": cwdProbeLua}), Options{Log: quietLog()})
	gate := func(body map[string]any) string {
		t.Helper()
		body["tools"] = []any{map[string]any{"name": "shell"}}
		id := sc.must(201, "POST", "/v1/runs", body).str("run_id")
		sc.must(200, "POST", "/v1/runs/"+id+"/phases/step_start", map[string]any{})
		sc.must(200, "POST", "/v1/runs/"+id+"/phases/before_inference", map[string]any{"request": map[string]any{}})
		sc.must(200, "POST", "/v1/runs/"+id+"/phases/after_inference", map[string]any{"response": map[string]any{
			"tool_calls": []any{map[string]any{"id": "c1", "name": "shell", "args": map[string]any{}}}}})
		return sc.must(200, "POST", "/v1/runs/"+id+"/phases/tool_gate", map[string]any{"call": map[string]any{"id": "c1", "name": "shell"}}).str("reason")
	}
	if got := gate(map[string]any{"cwd": "/home/dev/shop"}); got != "cwd=/home/dev/shop" {
		t.Fatalf("the gate read %q", got)
	}
	if got := gate(map[string]any{}); got != "cwd=nil" {
		t.Fatalf("without a cwd the gate read %q", got)
	}
	if r := sc.call("POST", "/v1/runs", map[string]any{"cwd": "/" + strings.Repeat("d", hooks.MaxCwd)}); r.status != 400 ||
		!strings.Contains(string(r.raw), "cwd must be a path of at most 4096 bytes") {
		t.Fatalf("a cwd past the bound: %d %s", r.status, r.raw)
	}

	pasted := pastedSidecar(t, "Read(./.env)")
	id := pasted.must(201, "POST", "/v1/runs", map[string]any{"cwd": "/home/dev/shop", "thread_id": "api-cwd",
		"tools": []any{map[string]any{"name": "Read"}}}).str("run_id")
	pasted.must(200, "POST", "/v1/runs/"+id+"/phases/step_start", map[string]any{})
	pasted.must(200, "POST", "/v1/runs/"+id+"/phases/before_inference", map[string]any{"request": map[string]any{}})
	pasted.must(200, "POST", "/v1/runs/"+id+"/phases/after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{
		map[string]any{"id": "r1", "name": "Read", "args": map[string]any{"file_path": "/home/dev/shop/.env"}},
		map[string]any{"id": "r2", "name": "Read", "args": map[string]any{"file_path": "/home/dev/shop/src/a.go"}}}}})
	// Out of memory and back: the restored run keeps its directory.
	pasted.srv.mu.Lock()
	e := pasted.srv.runs[id]
	pasted.srv.mu.Unlock()
	e.mu.Lock()
	if !pasted.srv.leave(e, time.Now(), slog.LevelInfo, "test") {
		t.Fatal("the run did not leave memory")
	}
	e.mu.Unlock()
	for call, want := range map[string]string{"r1": "block", "r2": "allow"} {
		d := pasted.must(200, "POST", "/v1/runs/"+id+"/phases/tool_gate", map[string]any{"call": map[string]any{"id": call, "name": "Read"}}).str("decision")
		if d != want {
			t.Fatalf("%s: %s, want %s", call, d, want)
		}
	}
}
