package server

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/awaken-lua/awaken-lua/server/hooks"
)

// ccPolicyLua is a policy written for Claude Code's tools.
const ccPolicyLua = `local awaken = require("awaken")
local p = awaken.plugin { id = "ccpolicy" }
local turns = p:key("ccpolicy.turns", { scope = "thread", merge = "commutative", reducer = "add", default = 0, schema = { type = "integer" } })
local seen = p:key("ccpolicy.seen", { scope = "run", reducer = "append", default = {} })

p:on("run_start", function(ctx)
  if #ctx.messages == 0 and ctx.run.thread_id ~= "rollover" then
    ctx:schedule("runtime.add_context_message",
      { key = "ccpolicy.hello", content = "awaken-lua guards this session.", target = "system", kind = "ephemeral" })
  end
end)

p:on("before_inference", function(ctx)
  if ctx.run.step ~= 1 then return end
  for _, m in ipairs(ctx.messages) do
    if m.role == "user" then
      if m.content:find("explode", 1, true) then error("the prompt exploded") end
      if m.content:find("factorial", 1, true) then
        ctx:schedule("runtime.add_context_message",
          { key = "ccpolicy.tests", content = "Write the tests first.", target = "system", kind = "ephemeral" })
      end
    end
  end
end)

p:tool_gate(function(ctx, call)
  local cmd = call.args.command
  if call.name == "Bash" and type(cmd) == "string" then
    if cmd:find("rm ", 1, true) then return awaken.block("rm is not allowed") end
    if cmd:find("git push", 1, true) and not call.resume then
      return awaken.suspend { message = "Push to the remote?" }
    end
    if cmd == "ls" then return awaken.rewrite({ command = "ls -la", description = call.args.description }) end
  end
  if call.name == "Read" and type(call.args.file_path) == "string" and call.args.file_path:find("%.env$") then
    return awaken.set_result(awaken.error("secrets are off limits"))
  end
  if call.name == "mcp__github__delete_repo" then return awaken.block("deleting repositories is not allowed") end
  if call.name == "Explode" then error("the gate exploded") end
end)

p:on("after_tool_execute", function(ctx)
  ctx:update(seen, ctx.tool.name .. ":" .. ctx.tool.result.status)
  if ctx.tool.name == "Write" then
    ctx:schedule("runtime.add_context_message",
      { key = "ccpolicy.fmt", content = "Run the formatter on " .. tostring(ctx.tool.args.file_path) .. ".", target = "system", kind = "ephemeral" })
  end
  if ctx.tool.name == "Bash" and tostring(ctx.tool.args.command):find("deploy", 1, true) then
    ctx:stop("deployed", "one deploy per session")
  end
end)

-- ccpolicy.ended lists each call as its step ended: "id:status".
local ended = p:key("ccpolicy.ended", { scope = "run", reducer = "append", default = {} })
p:on("step_end", function(ctx)
  local calls = ctx:get("__runtime.tool_calls") or {}
  local ids = {}
  for id in pairs(calls) do ids[#ids + 1] = id end
  table.sort(ids)
  for _, id in ipairs(ids) do ctx:update(ended, id .. ":" .. calls[id].status) end
end)

p:on("run_end", function(ctx) ctx:update(turns, 1) end)
return p
`

func ccSidecar(t testing.TB, o Options) *sidecar {
	o.Log = quietLog()
	return newSidecar(t, project(t, "", map[string]string{"ccpolicy.lua": ccPolicyLua}), o)
}

// fixture loads testdata/claude-code/<name>.json (shaped as Claude Code
// sends it) and applies overrides; a nil override removes the field.
func fixture(t *testing.T, name string, overrides map[string]any) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "claude-code", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for k, v := range overrides {
		if v == nil {
			delete(m, k)
		} else {
			m[k] = v
		}
	}
	return m
}

// hook posts an event and checks the adapter's contract: always 200 with
// a JSON object.
func (sc *sidecar) hook(t *testing.T, body any, query string) map[string]any {
	t.Helper()
	r := sc.call("POST", "/v1/hooks/claude-code"+query, body)
	if r.status != 200 || r.header.Get("Content-Type") != "application/json" || r.body == nil {
		t.Fatalf("hook: %d %s %s", r.status, r.header.Get("Content-Type"), r.raw)
	}
	return r.body
}

func specific(out map[string]any) map[string]any {
	s, _ := out["hookSpecificOutput"].(map[string]any)
	return s
}

func wantDecision(t *testing.T, out map[string]any, decision, reasonPart string) map[string]any {
	t.Helper()
	s := specific(out)
	if s == nil || s["hookEventName"] != "PreToolUse" || s["permissionDecision"] != decision ||
		!strings.Contains(fmt.Sprint(s["permissionDecisionReason"]), reasonPart) {
		t.Fatalf("want %s with reason containing %q, got %s", decision, reasonPart, mustJSON(out))
	}
	return s
}

func wantContext(t *testing.T, out map[string]any, event, part string) {
	t.Helper()
	s := specific(out)
	if s == nil || s["hookEventName"] != event || !strings.Contains(fmt.Sprint(s["additionalContext"]), part) {
		t.Fatalf("want %s additionalContext containing %q, got %s", event, part, mustJSON(out))
	}
}

func wantEmpty(t *testing.T, out map[string]any) {
	t.Helper()
	if len(out) != 0 {
		t.Fatalf("want {}, got %s", mustJSON(out))
	}
}

func (sc *sidecar) ccRunID(t *testing.T, session string) string {
	t.Helper()
	v, _, err := sc.srv.agents.ClaudeCodeSession(context.Background(), session)
	if err != nil {
		t.Fatal(err)
	}
	return v.RunID
}

func (sc *sidecar) threadValue(t *testing.T, thread, key string) any {
	t.Helper()
	th, ok, err := sc.h.Store().Thread(context.Background(), thread)
	if err != nil || !ok {
		t.Fatalf("thread %s: %v %v", thread, ok, err)
	}
	return th.Values[key]
}

// A whole Claude Code session, event by event, with the payloads Claude
// Code sends.
func TestClaudeCodeSession(t *testing.T) {
	sc := ccSidecar(t, Options{Token: "cc-token"})

	out := sc.hook(t, fixture(t, "session_start", nil), "")
	wantContext(t, out, "SessionStart", "awaken-lua guards this session.")

	out = sc.hook(t, fixture(t, "user_prompt_submit", nil), "")
	wantContext(t, out, "UserPromptSubmit", "Write the tests first.")

	// Allowed: no decision, so Claude Code's own permission rules apply.
	wantEmpty(t, sc.hook(t, fixture(t, "pre_tool_use_write", nil), ""))
	out = sc.hook(t, fixture(t, "post_tool_use_write", nil), "")
	wantContext(t, out, "PostToolUse", "Run the formatter on /path/to/file.txt.")

	// A retried PreToolUse gets the same answer.
	wantEmpty(t, sc.hook(t, fixture(t, "pre_tool_use_write", map[string]any{"tool_use_id": "toolu_01W2"}), ""))
	wantEmpty(t, sc.hook(t, fixture(t, "pre_tool_use_write", map[string]any{"tool_use_id": "toolu_01W2"}), ""))
	sc.hook(t, fixture(t, "post_tool_use_write", map[string]any{"tool_use_id": "toolu_01W2"}), "")

	wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_bash_rm", nil), ""), "deny", "rm is not allowed")

	s := wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_bash_ls", nil), ""), "allow", "rewrote")
	if in, _ := s["updatedInput"].(map[string]any); in["command"] != "ls -la" || in["description"] != "List files in the current directory" {
		t.Fatalf("updatedInput: %v", s["updatedInput"])
	}
	sc.hook(t, fixture(t, "post_tool_use_bash_ls", nil), "")

	// The first call of an MCP tool, in an inference opened before anyone
	// knew of it: it fails there as "not available", then the plugin
	// decides about it in a fresh step.
	lsRun := sc.ccRunID(t, "abc123")
	wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_mcp", nil), ""), "deny", "deleting repositories is not allowed")
	if ended := mustJSON(sc.must(200, "GET", "/v1/runs/"+lsRun, nil).body["state"].(map[string]any)["ccpolicy.ended"]); ended != `["toolu_01LS:succeeded","toolu_01MCP:failed"]` {
		t.Fatalf("calls of the ls run: %s", ended)
	}
	wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_read_env", nil), ""), "deny", "secrets are off limits")

	// Suspend is "ask"; the PostToolUse after it means the user approved.
	wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_git_push", nil), ""), "ask", "Push to the remote?")
	id := sc.ccRunID(t, "abc123")
	sc.hook(t, fixture(t, "post_tool_use_git_push", nil), "")
	got := sc.must(200, "GET", "/v1/runs/"+id, nil)
	calls := got.body["state"].(map[string]any)["__runtime.tool_calls"]
	if !strings.Contains(mustJSON(got.body["state"]), `"Bash:success"`) || got.str("status") != "running" {
		t.Fatalf("the approved push should have run: %s\n%v", got.raw, calls)
	}

	wantEmpty(t, sc.hook(t, fixture(t, "stop", nil), ""))
	if st := sc.must(200, "GET", "/v1/runs/"+id, nil); st.str("termination") != "natural" || st.str("status") != "done" {
		t.Fatalf("Stop ends the run naturally: %s", st.raw)
	}
	// Runs on the thread: the session start, the prompt's run (ended by the
	// rm block), the next (ended by the MCP block) and the last (by Stop).
	if n := sc.threadValue(t, "abc123", "ccpolicy.turns"); n != 4.0 {
		t.Fatalf("turns on the thread: %v", n)
	}
	wantEmpty(t, sc.hook(t, fixture(t, "session_end", nil), ""))
	if sc.ccRunID(t, "abc123") != "" {
		t.Fatal("SessionEnd should forget the session")
	}
	// The token is required like everywhere else.
	if r := sc.call("POST", "/v1/hooks/claude-code", fixture(t, "stop", nil), "Authorization", ""); r.status != 401 {
		t.Fatalf("no token: %d", r.status)
	}
}

// Whatever fails, Claude Code gets 200: PreToolUse is denied (fail
// closed), other events get {}.
func TestClaudeCodeFailures(t *testing.T) {
	sc := ccSidecar(t, Options{BodyLimit: 2048})
	wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_write", map[string]any{"session_id": "f1", "tool_name": "Explode"}), ""),
		"deny", "the gate exploded")
	wantDecision(t, sc.hook(t, `{"hook_event_name": "PreToolUse", "session_id": `, ""), "deny", "not valid JSON")
	wantEmpty(t, sc.hook(t, `{"hook_event_name": "Stop", `, ""))
	// A body that names no event: the hook command's --event does.
	wantDecision(t, sc.hook(t, `not json`, "?event=PreToolUse"), "deny", "not valid JSON")
	wantDecision(t, sc.hook(t, `{"session_id": "f1"}`, "?event=PreToolUse"), "deny", "tool_name")
	wantEmpty(t, sc.hook(t, `not json`, "?event=Stop"))
	// The body's own event wins over --event, even when it breaks after it.
	wantDecision(t, sc.hook(t, `{"hook_event_name": "PreToolUse", "session_id": `, "?event=PostToolUse"), "deny", "not valid JSON")
	// PermissionRequest fails closed as PreToolUse does.
	for _, body := range []any{`not json`,
		fixture(t, "pre_tool_use_write", map[string]any{"hook_event_name": "PermissionRequest", "session_id": ""})} {
		if r := mustJSON(sc.hook(t, body, "?event=PermissionRequest")); !strings.Contains(r, `"behavior":"deny"`) || !strings.Contains(r, "fail closed") {
			t.Fatalf("a PermissionRequest that cannot be evaluated: %s", r)
		}
	}
	big := fixture(t, "pre_tool_use_write", map[string]any{"session_id": "f1",
		"tool_input": map[string]any{"file_path": "/big", "content": strings.Repeat("x", 4096)}})
	wantDecision(t, sc.hook(t, big, ""), "deny", "body limit")
	wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_write", map[string]any{"session_id": nil}), ""), "deny", "session_id")
	wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_write", map[string]any{"session_id": 5}), ""), "deny", "session_id must be a string, not a JSON integer")
	wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_write", map[string]any{"session_id": "f1", "tool_name": nil}), ""), "deny", "tool_name")
	wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_write", map[string]any{"session_id": "f2"}), "?agent=nobody"), "deny", "unknown agent")
	// A plugin failing outside the gate: {} and the session goes on.
	wantEmpty(t, sc.hook(t, fixture(t, "user_prompt_submit", map[string]any{"session_id": "f3", "prompt": "explode"}), ""))
	wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_bash_rm", map[string]any{"session_id": "f3"}), ""), "deny", "rm is not allowed")
	wantEmpty(t, sc.hook(t, map[string]any{"hook_event_name": "Notification", "session_id": "f3", "message": "Claude needs your permission"}, ""))
	wantEmpty(t, sc.hook(t, `[]`, ""))
	wantEmpty(t, sc.hook(t, ``, ""))
	// Overloaded: PreToolUse is denied, others pass.
	for i := 0; i < cap(sc.srv.sem); i++ {
		sc.srv.sem <- struct{}{}
	}
	pre := sc.hook(t, fixture(t, "pre_tool_use_write", map[string]any{"session_id": "f4"}), "")
	stop := sc.hook(t, fixture(t, "stop", map[string]any{"session_id": "f4"}), "")
	for i := 0; i < cap(sc.srv.sem); i++ {
		<-sc.srv.sem
	}
	wantDecision(t, pre, "deny", "overloaded")
	wantEmpty(t, stop)
}

// Claude Code runs read-only tools in parallel: their calls join one step,
// and the step closes when the last result arrives.
func TestClaudeCodeParallelCalls(t *testing.T) {
	sc := ccSidecar(t, Options{})
	const sid = "par"
	sc.hook(t, fixture(t, "user_prompt_submit", map[string]any{"session_id": sid, "prompt": "look around"}), "")
	pre := func(id, tool string, input map[string]any) map[string]any {
		return fixture(t, "pre_tool_use_write", map[string]any{"session_id": sid, "tool_use_id": id, "tool_name": tool, "tool_input": input})
	}
	post := func(id, tool string, input map[string]any) map[string]any {
		return fixture(t, "post_tool_use_write", map[string]any{"session_id": sid, "tool_use_id": id, "tool_name": tool,
			"tool_input": input, "tool_response": map[string]any{"ok": true}})
	}
	// Agent is the subagent tool of current Claude Code (Task before it).
	inputs := map[string]map[string]any{
		"toolu_A": {"file_path": "/a.go"}, "toolu_B": {"pattern": "TODO"}, "toolu_C": {"pattern": "*.go"},
		"toolu_D": {"subagent_type": "Explore", "description": "look", "prompt": "find the tests"},
	}
	tools := map[string]string{"toolu_A": "Read", "toolu_B": "Grep", "toolu_C": "Glob", "toolu_D": "Agent"}
	var wg sync.WaitGroup
	for id := range inputs {
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			if out := sc.hook(t, pre(id, tools[id], inputs[id]), ""); len(out) != 0 {
				t.Errorf("%s: %s", id, mustJSON(out))
			}
		}(id)
	}
	wg.Wait()
	runID := sc.ccRunID(t, sid)
	st := sc.must(200, "GET", "/v1/runs/"+runID, nil)
	if st.num("step") != 1 {
		t.Fatalf("parallel calls should share step 1: %s", st.raw)
	}
	for id := range inputs {
		wg.Add(1)
		go func(id string) {
			defer wg.Done()
			sc.hook(t, post(id, tools[id], inputs[id]), "")
		}(id)
	}
	wg.Wait()
	st = sc.must(200, "GET", "/v1/runs/"+runID, nil)
	state := mustJSON(st.body["state"])
	for _, want := range []string{`"Read:success"`, `"Grep:success"`, `"Glob:success"`, `"Agent:success"`} {
		if !strings.Contains(state, want) {
			t.Fatalf("after the results, state lacks %s: %s", want, state)
		}
	}
	if st.num("step") != 2 {
		t.Fatalf("the last result closes the step and opens the next inference: %s", st.raw)
	}
}

// A tool that is not built in (an MCP tool) is offered from its first use
// on. A call to a tool its step did not offer fails as "not available"
// and runs in a fresh step that offers it: A (tool X) in steps 1 and 2, its
// result ends step 2, B (tool Y) in steps 3 and 4. Step 4 offers Y and,
// because the session used it, X: C (tool X) joins step 4 and does not
// fail.
func TestClaudeCodeOffersToolsTheSessionUsed(t *testing.T) {
	sc := ccSidecar(t, Options{})
	const sid = "mcp-offer"
	sc.hook(t, fixture(t, "user_prompt_submit", map[string]any{"session_id": sid, "prompt": "look around"}), "")
	for _, c := range []struct{ id, tool string }{{"toolu_A", "mcp__srv__x"}, {"toolu_B", "mcp__srv__y"}, {"toolu_C", "mcp__srv__x"}} {
		in := map[string]any{"session_id": sid, "tool_use_id": c.id, "tool_name": c.tool, "tool_input": map[string]any{"q": c.id}}
		if out := sc.hook(t, fixture(t, "pre_tool_use_write", in), ""); len(out) != 0 {
			t.Fatalf("%s: %s", c.id, mustJSON(out))
		}
		if c.id == "toolu_A" {
			in["tool_response"] = map[string]any{"ok": true}
			sc.hook(t, fixture(t, "post_tool_use_write", in), "")
		}
	}
	st := sc.must(200, "GET", "/v1/runs/"+sc.ccRunID(t, sid), nil)
	ended := mustJSON(st.body["state"].(map[string]any)["ccpolicy.ended"])
	if st.num("step") != 4 || ended != `["toolu_A:failed","toolu_A:succeeded","toolu_B:failed"]` {
		t.Fatalf("C should join step 4 without failing: step %v, ended %s", st.num("step"), ended)
	}
}

// "ask" without a PostToolUse means the user said no: the call is
// cancelled when the turn ends.
func TestClaudeCodeAskDenied(t *testing.T) {
	sc := ccSidecar(t, Options{})
	sc.hook(t, fixture(t, "user_prompt_submit", map[string]any{"session_id": "deny"}), "")
	wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_git_push", map[string]any{"session_id": "deny"}), ""), "ask", "Push")
	id := sc.ccRunID(t, "deny")
	wantEmpty(t, sc.hook(t, fixture(t, "stop", map[string]any{"session_id": "deny"}), ""))
	st := sc.must(200, "GET", "/v1/runs/"+id, nil)
	ended := mustJSON(st.body["state"].(map[string]any)["ccpolicy.ended"])
	if ended != `["toolu_01PUSH:cancelled"]` || st.str("termination") != "natural" {
		t.Fatalf("the unanswered push should be cancelled: %s", st.raw)
	}
}

// A plugin's stop stops Claude; the step limit only starts a new run.
func TestClaudeCodeStops(t *testing.T) {
	sc := ccSidecar(t, Options{})
	sc.hook(t, fixture(t, "user_prompt_submit", map[string]any{"session_id": "dep"}), "")
	deploy := map[string]any{"session_id": "dep", "tool_use_id": "toolu_D", "tool_input": map[string]any{"command": "make deploy"}}
	wantEmpty(t, sc.hook(t, fixture(t, "pre_tool_use_bash_ls", deploy), ""))
	out := sc.hook(t, fixture(t, "post_tool_use_bash_ls", deploy), "")
	if out["continue"] != false || !strings.Contains(fmt.Sprint(out["stopReason"]), "one deploy per session") {
		t.Fatalf("a plugin stop should stop Claude: %s", mustJSON(out))
	}

	// The same stop from a call whose PostToolUse never came, as the
	// PostToolBatch ends its step.
	deploy2 := map[string]any{"session_id": "dep2", "tool_use_id": "toolu_D2", "tool_input": map[string]any{"command": "make deploy"}}
	sc.hook(t, fixture(t, "user_prompt_submit", map[string]any{"session_id": "dep2"}), "")
	wantEmpty(t, sc.hook(t, fixture(t, "pre_tool_use_bash_ls", deploy2), ""))
	out = sc.hook(t, map[string]any{"session_id": "dep2", "hook_event_name": "PostToolBatch", "tool_calls": []any{}}, "")
	if out["continue"] != false || !strings.Contains(fmt.Sprint(out["stopReason"]), "one deploy per session") {
		t.Fatalf("a plugin stop at PostToolBatch should stop Claude: %s", mustJSON(out))
	}

	// agent "short" has max_steps = 2: a long turn rolls over to new runs.
	const sid = "rollover"
	sc.hook(t, fixture(t, "user_prompt_submit", map[string]any{"session_id": sid}), "?agent=short")
	for i := 0; i < 7; i++ {
		id := fmt.Sprintf("toolu_%d", i)
		pre := sc.hook(t, fixture(t, "pre_tool_use_write", map[string]any{"session_id": sid, "tool_use_id": id}), "?agent=short")
		if len(pre) != 0 {
			t.Fatalf("call %d: %s", i, mustJSON(pre))
		}
		post := sc.hook(t, fixture(t, "post_tool_use_write", map[string]any{"session_id": sid, "tool_use_id": id}), "?agent=short")
		if post["continue"] == false {
			t.Fatalf("the step limit must not stop Claude: %s", mustJSON(post))
		}
	}
	wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_bash_rm", map[string]any{"session_id": sid}), "?agent=short"), "deny", "rm")
	sc.hook(t, fixture(t, "stop", map[string]any{"session_id": sid}), "?agent=short")
	if n := sc.threadValue(t, sid, "ccpolicy.turns"); n.(float64) < 4 {
		t.Fatalf("a 7-call turn on a 2-step agent should span several runs, got %v", n)
	}
}

// Claude Code versions without tool_use_id: the call is matched by tool
// and input.
func TestClaudeCodeWithoutToolUseID(t *testing.T) {
	sc := ccSidecar(t, Options{})
	sc.hook(t, fixture(t, "user_prompt_submit", map[string]any{"session_id": "old"}), "")
	wantEmpty(t, sc.hook(t, fixture(t, "pre_tool_use_write", map[string]any{"session_id": "old", "tool_use_id": nil}), ""))
	out := sc.hook(t, fixture(t, "post_tool_use_write", map[string]any{"session_id": "old", "tool_use_id": nil}), "")
	wantContext(t, out, "PostToolUse", "Run the formatter")
}

// ccContinueLua asks the model to go on whenever it answered without tool
// calls: runtime.continue, which Stop maps to decision block.
const ccContinueLua = `local awaken = require("awaken")
local p = awaken.plugin { id = "reviewer" }
p:on("after_inference", function(ctx)
  if #ctx.response.tool_calls == 0 then
    ctx:schedule("runtime.continue", { content = "Run the tests before you finish." })
  end
end)
return p
`

func TestClaudeCodeStopContinues(t *testing.T) {
	sc := newSidecar(t, project(t, "\n[agents.reviewed]\ntools = []\nmax_continues = 1\n",
		map[string]string{"reviewer.lua": ccContinueLua}), Options{Log: quietLog()})
	q := "?agent=reviewed"
	sc.hook(t, fixture(t, "user_prompt_submit", nil), q)
	session := fixture(t, "stop", nil)["session_id"].(string)
	first := sc.ccRunID(t, session)
	out := sc.hook(t, fixture(t, "stop", nil), q)
	if out["decision"] != "block" || out["reason"] != "Run the tests before you finish." {
		t.Fatalf("the first Stop: want decision block with the continue's content, got %s", mustJSON(out))
	}
	if got := sc.ccRunID(t, session); got != first || got == "" {
		t.Fatalf("after a continue the run stays open: run %q, was %q", got, first)
	}
	// Claude Code goes on: a tool call belongs to the same run's next step.
	wantEmpty(t, sc.hook(t, fixture(t, "pre_tool_use_bash_ls", nil), q))
	if got := sc.ccRunID(t, session); got != first {
		t.Fatalf("the call after a continue opened run %q, not the continued %q", got, first)
	}
	sc.hook(t, fixture(t, "post_tool_use_bash_ls", nil), q)
	// The bound of one continue is spent: this Stop ends the run.
	wantEmpty(t, sc.hook(t, fixture(t, "stop", map[string]any{"stop_hook_active": true}), q))
	if got := sc.ccRunID(t, session); got != "" {
		t.Fatalf("the run %s is still open after the last Stop", got)
	}
}

// TestClaudeCodePermissionRequest: before Claude Code asks its user, a
// blocked call is denied (gated now when no PreToolUse came, or by its
// PreToolUse's decision), a rewrite is allowed with its input, and an
// allowed or suspended call is left to the user.
func TestClaudeCodePermissionRequest(t *testing.T) {
	sc := ccSidecar(t, Options{})
	perm := func(name string, over map[string]any) map[string]any {
		ev := fixture(t, name, over)
		ev["hook_event_name"] = "PermissionRequest"
		delete(ev, "tool_use_id")
		return sc.hook(t, ev, "")
	}
	decision := func(out map[string]any) map[string]any {
		s := specific(out)
		if s == nil || s["hookEventName"] != "PermissionRequest" {
			t.Fatalf("not a PermissionRequest answer: %s", mustJSON(out))
		}
		d, _ := s["decision"].(map[string]any)
		return d
	}
	// No PreToolUse before: the gate runs now.
	if d := decision(perm("pre_tool_use_bash_rm", nil)); d["behavior"] != "deny" || !strings.Contains(fmt.Sprint(d["message"]), "rm is not allowed") {
		t.Fatalf("rm: %v", d)
	}
	if d := decision(perm("pre_tool_use_bash_ls", map[string]any{"session_id": "s2"})); d["behavior"] != "allow" ||
		d["updatedInput"].(map[string]any)["command"] != "ls -la" {
		t.Fatalf("a rewrite: %v", d)
	}
	wantEmpty(t, perm("pre_tool_use_write", map[string]any{"session_id": "s3"}))
	wantEmpty(t, perm("pre_tool_use_git_push", map[string]any{"session_id": "s4"}))
	// After the PreToolUse, its decision answers, without a second gate.
	sc.hook(t, fixture(t, "pre_tool_use_read_env", map[string]any{"session_id": "s5"}), "")
	if d := decision(perm("pre_tool_use_read_env", map[string]any{"session_id": "s5"})); d["behavior"] != "deny" ||
		!strings.Contains(fmt.Sprint(d["message"]), "secrets are off limits") {
		t.Fatalf("a set_result: %v", d)
	}
}

// TestClaudeCodePostToolBatchEndsTheStep: the batch's calls whose
// PostToolUse never came are finished as failed, the step ends, and the
// next inference opens, so context messages the step's hooks scheduled
// reach Claude as the batch's additionalContext.
func TestClaudeCodePostToolBatchEndsTheStep(t *testing.T) {
	sc := ccSidecar(t, Options{})
	sc.hook(t, fixture(t, "user_prompt_submit", nil), "")
	sc.hook(t, fixture(t, "pre_tool_use_write", map[string]any{"tool_use_id": "toolu_A"}), "")
	sc.hook(t, fixture(t, "pre_tool_use_write", map[string]any{"tool_use_id": "toolu_B", "tool_input": map[string]any{"file_path": "b.txt", "content": "b"}}), "")
	sc.hook(t, fixture(t, "post_tool_use_write", map[string]any{"tool_use_id": "toolu_A"}), "")
	session := fixture(t, "user_prompt_submit", nil)["session_id"].(string)
	id := sc.ccRunID(t, session)
	state := func() string {
		return mustJSON(sc.must(200, "GET", "/v1/runs/"+id, nil).body["state"].(map[string]any)["ccpolicy.ended"])
	}
	if got := state(); got != "[]" && got != "null" {
		t.Fatalf("the step ended before the batch did: %s", got)
	}
	batch := fixture(t, "user_prompt_submit", nil)
	batch["hook_event_name"] = "PostToolBatch"
	wantContext(t, sc.hook(t, batch, ""), "PostToolBatch", "Run the formatter on b.txt.")
	if got := state(); got != `["toolu_A:succeeded","toolu_B:failed"]` {
		t.Fatalf("after PostToolBatch: %s", got)
	}
}

// TestClaudeCodePreToolUseOnlyStepsStaySmall: with only PreToolUse
// installed no call is seen to finish, and steps are capped instead of
// growing with the session.
func TestClaudeCodePreToolUseOnlyStepsStaySmall(t *testing.T) {
	sc := ccSidecar(t, Options{})
	for i := 0; i < 3*hooks.PreOnlyBatch; i++ {
		sc.hook(t, fixture(t, "pre_tool_use_write", map[string]any{"session_id": "pre", "tool_use_id": fmt.Sprintf("t%d", i),
			"tool_input": map[string]any{"file_path": fmt.Sprintf("f%d", i), "content": "x"}}), "")
	}
	id := sc.ccRunID(t, "pre")
	calls := sc.must(200, "GET", "/v1/runs/"+id, nil).body["state"].(map[string]any)["__runtime.tool_calls"].(map[string]any)
	if len(calls) == 0 || len(calls) > hooks.PreOnlyBatch {
		t.Fatalf("the open step holds %d calls, at most %d expected", len(calls), hooks.PreOnlyBatch)
	}
}

// TestClaudeCodeUnreportedCallKeepsStepsSmall: a session that sends
// PostToolUse but no PostToolBatch, one of whose calls never reports (its
// user declined it), would keep that step open for the rest of the turn;
// a step holds at most MaxStepCalls calls instead, and the declined call
// is recorded as failed when its step ends.
func TestClaudeCodeUnreportedCallKeepsStepsSmall(t *testing.T) {
	sc := ccSidecar(t, Options{})
	sc.hook(t, fixture(t, "user_prompt_submit", map[string]any{"session_id": "posts"}), "")
	call := func(event, id string) map[string]any {
		return fixture(t, event, map[string]any{"session_id": "posts", "tool_use_id": id,
			"tool_input": map[string]any{"file_path": id, "content": "x"}})
	}
	sc.hook(t, call("pre_tool_use_write", "t0"), "")
	sc.hook(t, call("post_tool_use_write", "t0"), "") // the session reports results
	sc.hook(t, call("pre_tool_use_write", "declined"), "")
	declinedIn := sc.ccRunID(t, "posts")
	for i := range 2 * hooks.MaxStepCalls {
		id := fmt.Sprint("t", i+1)
		sc.hook(t, call("pre_tool_use_write", id), "")
		sc.hook(t, call("post_tool_use_write", id), "")
		if i%64 != 0 {
			continue
		}
		run := sc.must(200, "GET", "/v1/runs/"+sc.ccRunID(t, "posts"), nil)
		calls := run.body["state"].(map[string]any)["__runtime.tool_calls"].(map[string]any)
		if len(calls) > hooks.MaxStepCalls {
			t.Fatalf("after %d calls the open step holds %d, at most %d expected", i+1, len(calls), hooks.MaxStepCalls)
		}
	}
	got := string(sc.must(200, "GET", "/v1/runs/"+sc.ccRunID(t, "posts"), nil).raw)
	if strings.Contains(got, `"declined"`) {
		t.Fatalf("the declined call's step is still open: %.300s", got)
	}
	ended := mustJSON(sc.must(200, "GET", "/v1/runs/"+declinedIn, nil).body["state"].(map[string]any)["ccpolicy.ended"])
	if !strings.Contains(ended, `"declined:failed"`) {
		t.Fatalf("the declined call was not recorded as failed when its step ended: %.300s", ended)
	}
}

// redactLua hides tokens in every tool result.
const redactLua = `local awaken = require("awaken")
local p = awaken.plugin { id = "redactor" }
p:result_transform(function(call, result, ctx)
  if type(result.data) == "string" then
    return awaken.success((result.data:gsub("ghp_%w+", "[REDACTED]")))
  end
  if type(result.data) == "table" and type(result.data.stdout) == "string" then
    local out = {}
    for k, v in pairs(result.data) do out[k] = v end
    out.stdout = out.stdout:gsub("ghp_%w+", "[REDACTED]")
    return awaken.success(out)
  end
  return result
end)
return p
`

// TestClaudeCodeRedactsToolOutput: a result transform that changes a
// tool's output answers PostToolUse with updatedToolOutput, in the shape
// the tool's tool_response had (Bash's stdout, stderr, interrupted,
// isImage), and for an MCP tool with updatedMCPToolOutput too (Claude Code
// before v2.1.121 reads only that); a result it leaves alone gets neither.
func TestClaudeCodeRedactsToolOutput(t *testing.T) {
	sc := newSidecar(t, project(t, "", map[string]string{"redactor.lua": redactLua}), Options{Log: quietLog()})
	sc.hook(t, fixture(t, "user_prompt_submit", map[string]any{"session_id": "m"}), "")
	post := func(tool, id string, input map[string]any, response any) map[string]any {
		t.Helper()
		ev := map[string]any{"session_id": "m", "tool_name": tool, "tool_input": input, "tool_use_id": id}
		if out := sc.hook(t, fixture(t, "pre_tool_use_mcp", ev), ""); len(out) != 0 {
			t.Fatalf("%s: %s", id, mustJSON(out))
		}
		p := fixture(t, "post_tool_use_write", ev)
		p["tool_response"] = response
		return specific(sc.hook(t, p, ""))
	}
	s := post("mcp__github__get_token", "toolu_M1", map[string]any{}, "token ghp_abc123 issued")
	if s == nil || s["updatedToolOutput"] != "token [REDACTED] issued" || s["updatedMCPToolOutput"] != "token [REDACTED] issued" {
		t.Fatalf("MCP tool: want the redacted output in both fields: %v", s)
	}
	bash := map[string]any{"stdout": "GH_TOKEN=ghp_abc123\n", "stderr": "", "interrupted": false, "isImage": false}
	s = post("Bash", "toolu_B1", map[string]any{"command": "env"}, bash)
	want := `{"interrupted":false,"isImage":false,"stderr":"","stdout":"GH_TOKEN=[REDACTED]\n"}`
	if s == nil || mustJSON(s["updatedToolOutput"]) != want || s["updatedMCPToolOutput"] != nil {
		t.Fatalf("Bash: want updatedToolOutput %s and no updatedMCPToolOutput: %v", want, s)
	}
	if s := post("mcp__github__get_token", "toolu_M2", map[string]any{}, "nothing secret"); s != nil && (s["updatedToolOutput"] != nil || s["updatedMCPToolOutput"] != nil) {
		t.Fatalf("an unchanged MCP result: %v", s)
	}
	bash["stdout"] = "nothing secret\n"
	if s := post("Bash", "toolu_B2", map[string]any{"command": "env"}, bash); s != nil && s["updatedToolOutput"] != nil {
		t.Fatalf("an unchanged Bash result: %v", s)
	}
}

// scrubLua copies every result table, redacting tokens in its strings: a
// common way to write a redactor, and one whose copy loses what a Lua
// table cannot tell (an empty list from an empty object, a null member).
const scrubLua = `local awaken = require("awaken")
local p = awaken.plugin { id = "scrubber" }
local function scrub(v)
  if type(v) == "string" then return (v:gsub("ghp_%w+", "[REDACTED]")) end
  if type(v) ~= "table" then return v end
  local out = {}
  for k, x in pairs(v) do out[k] = scrub(x) end
  return out
end
p:result_transform(function(call, result, ctx)
  if result.status ~= "success" then return result end
  return awaken.success(scrub(result.data))
end)
return p
`

// A redactor that copies every output changes nothing Claude reads unless
// it changed a value, and a changed output keeps the tool's shape: its
// empty lists and null members as the tool gave them.
func TestClaudeCodeScrubbedOutputKeepsItsShape(t *testing.T) {
	sc := newSidecar(t, project(t, "", map[string]string{"scrubber.lua": scrubLua}), Options{Log: quietLog()})
	sc.hook(t, fixture(t, "user_prompt_submit", map[string]any{"session_id": "g"}), "")
	post := func(id string, response any) map[string]any {
		t.Helper()
		ev := map[string]any{"session_id": "g", "tool_name": "Glob", "tool_input": map[string]any{"pattern": "*.go"}, "tool_use_id": id}
		sc.hook(t, fixture(t, "pre_tool_use_mcp", ev), "")
		p := fixture(t, "post_tool_use_write", ev)
		p["tool_response"] = response
		return specific(sc.hook(t, p, ""))
	}
	glob := func(names ...any) map[string]any {
		return map[string]any{"filenames": names, "durationMs": 3, "numFiles": len(names), "truncated": false, "appliedLimit": nil}
	}
	if s := post("toolu_G1", glob()); s != nil && s["updatedToolOutput"] != nil {
		t.Fatalf("an output copied unchanged is no change: %v", s)
	}
	if s := post("toolu_G3", glob("a.go", nil, "b.go")); s != nil && s["updatedToolOutput"] != nil {
		t.Fatalf("a list with a null copied unchanged is no change: %v", s)
	}
	s := post("toolu_G2", glob("ghp_abc.txt", "b.go"))
	want := `{"appliedLimit":null,"durationMs":3,"filenames":["[REDACTED].txt","b.go"],"numFiles":2,"truncated":false}`
	if s == nil || mustJSON(s["updatedToolOutput"]) != want {
		t.Fatalf("want updatedToolOutput %s, got %v", want, s)
	}
}

// TestClaudeCodeSubagentStopContinues: a subagent's stop is a run of its
// own that runtime.continue keeps going ({"decision": "block"}) up to the
// agent's max_continues, per subagent.
func TestClaudeCodeSubagentStopContinues(t *testing.T) {
	sc := newSidecar(t, project(t, "\n[agents.reviewed]\ntools = []\nmax_continues = 1\n",
		map[string]string{"reviewer.lua": ccContinueLua}), Options{Log: quietLog(), HookAgent: "reviewed"})
	stop := func(agent string) map[string]any {
		return sc.hook(t, map[string]any{"session_id": "sub", "hook_event_name": "SubagentStop", "agent_id": agent,
			"agent_type": "Explore", "last_assistant_message": "found it", "stop_hook_active": false}, "")
	}
	for _, agent := range []string{"a1", "a2"} {
		if out := stop(agent); out["decision"] != "block" || out["reason"] != "Run the tests before you finish." {
			t.Fatalf("subagent %s, first stop: %s", agent, mustJSON(out))
		}
	}
	wantEmpty(t, stop("a1")) // a1's bound of one continue is spent
	wantEmpty(t, sc.hook(t, map[string]any{"session_id": "sub", "hook_event_name": "SubagentStop", "agent_id": ""}, ""))
}

// Claude Code compacts a long conversation, in the middle of a turn too,
// and then sends SessionStart with source "compact": a turn still open
// goes on in its run, where a new session or a compaction between turns
// greets the session as at its start.
func TestClaudeCodeCompactionKeepsTheTurn(t *testing.T) {
	sc := ccSidecar(t, Options{})
	s := map[string]any{"session_id": "compacted"}
	sc.hook(t, fixture(t, "user_prompt_submit", s), "")
	wantEmpty(t, sc.hook(t, fixture(t, "pre_tool_use_write", s), ""))
	run := sc.ccRunID(t, "compacted")
	wantEmpty(t, sc.hook(t, fixture(t, "session_start", map[string]any{"session_id": "compacted", "source": "compact"}), ""))
	sc.hook(t, fixture(t, "post_tool_use_write", s), "")
	if now := sc.ccRunID(t, "compacted"); now != run {
		t.Fatalf("the turn should go on in run %s, is in %q", run, now)
	}
	st := sc.must(200, "GET", "/v1/runs/"+run, nil)
	if st.str("status") != "running" || mustJSON(st.body["state"].(map[string]any)["ccpolicy.seen"]) != `["Write:success"]` {
		t.Fatalf("the call made before the compaction should finish in the turn: %s", st.raw)
	}
	sc.hook(t, fixture(t, "stop", s), "")
	out := sc.hook(t, fixture(t, "session_start", map[string]any{"session_id": "compacted", "source": "compact"}), "")
	wantContext(t, out, "SessionStart", "awaken-lua guards this session.")
}

// A subagent's tool events (they carry its agent_id) are its own run's, on
// the thread <session>/subagent/<agent_id>: the main agent's batch ending
// does not end the subagent's call in flight, the call's result reaches
// after_tool_execute, and the subagent's SubagentStop answers that same
// run, which a runtime.continue keeps open for the subagent's next calls.
func TestClaudeCodeSubagentToolCalls(t *testing.T) {
	sc := newSidecar(t, project(t, "\n[agents.reviewed]\ntools = []\nmax_continues = 1\n",
		map[string]string{"ccpolicy.lua": ccPolicyLua, "reviewer.lua": ccContinueLua}), Options{Log: quietLog(), HookAgent: "reviewed"})
	const sid = "sa"
	read := func(id, file, agent string) map[string]any {
		ev := map[string]any{"session_id": sid, "tool_use_id": id, "tool_name": "Read", "tool_input": map[string]any{"file_path": file}}
		if agent != "" {
			ev["agent_id"], ev["agent_type"] = agent, "Explore"
		}
		return ev
	}
	pre := func(ev map[string]any) {
		t.Helper()
		if out := sc.hook(t, fixture(t, "pre_tool_use_write", ev), ""); specific(out)["permissionDecision"] != nil {
			t.Fatalf("%v: %s", ev["tool_use_id"], mustJSON(out))
		}
	}
	post := func(ev map[string]any) {
		t.Helper()
		p := fixture(t, "post_tool_use_write", ev)
		p["tool_response"] = map[string]any{"ok": true}
		sc.hook(t, p, "")
	}
	subStopOf := func(agent string) map[string]any {
		return sc.hook(t, map[string]any{"session_id": sid, "hook_event_name": "SubagentStop", "agent_id": agent,
			"agent_type": "Explore", "last_assistant_message": "found it", "stop_hook_active": false}, "")
	}
	subStop := func() map[string]any { return subStopOf("a1") }
	state := func(run string) map[string]any {
		t.Helper()
		return sc.must(200, "GET", "/v1/runs/"+run, nil).body["state"].(map[string]any)
	}
	sc.hook(t, fixture(t, "user_prompt_submit", map[string]any{"session_id": sid}), "")
	main, s1 := read("toolu_M", "/m.go", ""), read("toolu_S1", "/s.go", "a1")
	pre(main)
	pre(s1)
	post(main)
	sc.hook(t, map[string]any{"session_id": sid, "hook_event_name": "PostToolBatch", "tool_calls": []any{}}, "")
	post(s1)
	mainRun, subRun := sc.ccRunID(t, sid), sc.ccRunID(t, sid+"/subagent/a1")
	if subRun == "" || subRun == mainRun {
		t.Fatalf("the subagent's calls should have a run of their own: main %q, subagent %q", mainRun, subRun)
	}
	if got := mustJSON(state(mainRun)["ccpolicy.ended"]); got != `["toolu_M:succeeded"]` {
		t.Fatalf("the main run's step should hold only its own call: %s", got)
	}
	st := state(subRun)
	if got := mustJSON(st["ccpolicy.seen"]); got != `["Read:success"]` {
		t.Fatalf("the subagent's result should reach after_tool_execute: %s", got)
	}
	if got := mustJSON(st["ccpolicy.ended"]); got != `["toolu_S1:succeeded"]` {
		t.Fatalf("the subagent's step: %s", got)
	}
	if out := subStop(); out["decision"] != "block" {
		t.Fatalf("the subagent's first stop should be continued: %s", mustJSON(out))
	}
	s2 := read("toolu_S2", "/t.go", "a1")
	pre(s2)
	post(s2)
	if again := sc.ccRunID(t, sid+"/subagent/a1"); again != subRun {
		t.Fatalf("the continued subagent's calls should stay in its run %s, are in %q", subRun, again)
	}
	wantEmpty(t, subStop()) // the one continue is spent
	got := sc.must(200, "GET", "/v1/runs/"+subRun, nil)
	if got.str("status") != "done" || mustJSON(got.body["state"].(map[string]any)["ccpolicy.seen"]) != `["Read:success","Read:success"]` {
		t.Fatalf("the subagent's run should end with both its calls: %s", got.raw)
	}
	if mainNow := sc.ccRunID(t, sid); mainNow != mainRun {
		t.Fatalf("the main run should be untouched: %q, was %q", mainNow, mainRun)
	}
	// A subagent that stops with a call still in flight: its run ends, the
	// stop is a run of its own, and the subagent's calls after the
	// continue join that one (whose one continue is then spent).
	pre(read("toolu_S3", "/u.go", "a2"))
	if out := subStopOf("a2"); out["decision"] != "block" {
		t.Fatalf("a2's first stop should be continued: %s", mustJSON(out))
	}
	s4 := read("toolu_S4", "/v.go", "a2")
	pre(s4)
	post(s4)
	if out := subStopOf("a2"); len(out) != 0 {
		t.Fatalf("a2's calls after the continue should have joined the continued run, whose continue is spent: %s", mustJSON(out))
	}
}

// A subagent that never sent its SubagentStop (interrupted, or still in
// the background) has its run ended at SessionEnd, like the main turn. A
// subagent's suspended call is asked even with ?suspend=defer: only a
// main-agent call can wait where the session's view shows it.
func TestClaudeCodeSessionEndEndsSubagentRuns(t *testing.T) {
	sc := ccSidecar(t, Options{})
	const sid = "se"
	sc.hook(t, fixture(t, "user_prompt_submit", map[string]any{"session_id": sid}), "")
	sub := map[string]any{"session_id": sid, "tool_use_id": "toolu_S", "tool_name": "Read", "agent_id": "a1",
		"agent_type": "Explore", "tool_input": map[string]any{"file_path": "/s.go"}}
	sc.hook(t, fixture(t, "pre_tool_use_write", sub), "")
	push := map[string]any{"session_id": sid, "tool_use_id": "toolu_P", "agent_id": "a2", "agent_type": "Explore"}
	wantDecision(t, sc.hook(t, fixture(t, "pre_tool_use_git_push", push), "?suspend=defer"), "ask", "Push")
	runs := []string{sc.ccRunID(t, sid+"/subagent/a1"), sc.ccRunID(t, sid+"/subagent/a2")}
	for _, id := range runs {
		if id == "" {
			t.Fatal("a subagent's run is missing")
		}
	}
	sc.hook(t, fixture(t, "session_end", map[string]any{"session_id": sid}), "")
	for _, id := range runs {
		if got := sc.must(200, "GET", "/v1/runs/"+id, nil); got.str("status") != "done" {
			t.Fatalf("a subagent's run should end at SessionEnd: %s", got.raw)
		}
	}
}

// A session whose run a client deleted (DELETE /v1/runs/{id}) goes on in a
// new run: the adapter forgets the run it cannot find instead of failing
// every later event.
func TestClaudeCodeRunDeletedUnderneath(t *testing.T) {
	sc := ccSidecar(t, Options{})
	s := map[string]any{"session_id": "gone-run"}
	sc.hook(t, fixture(t, "user_prompt_submit", s), "")
	id := sc.ccRunID(t, "gone-run")
	if id == "" {
		t.Fatal("no open run after the prompt")
	}
	sc.must(204, "DELETE", "/v1/runs/"+id, nil)
	// Allowed (no decision); the new run greets the session again.
	if out := specific(sc.hook(t, fixture(t, "pre_tool_use_write", s), "")); out["permissionDecision"] != nil {
		t.Fatalf("the write should be allowed: %v", out)
	}
	if next := sc.ccRunID(t, "gone-run"); next == "" || next == id {
		t.Fatalf("the session should go on in a new run, has %q", next)
	}
}

// A session takes up only a run of its own agent: a run that a /v1/runs
// client of another agent started on the session's thread id is ended,
// not decided with that agent's plugins.
func TestClaudeCodeAdoptsOnlyItsAgentsRun(t *testing.T) {
	sc := newSidecar(t, project(t, "\n[agents.other]\ntools = []\n", map[string]string{"ccpolicy.lua": ccPolicyLua}), Options{Log: quietLog()})
	foreign := sc.startRun(map[string]any{"thread_id": "shared-x", "agent": "other"})
	sc.phase(foreign, "step_start", nil)
	if d := specific(sc.hook(t, fixture(t, "pre_tool_use_bash_ls", map[string]any{"session_id": "shared-x"}), ""))["permissionDecision"]; d == "deny" {
		t.Fatal("ls denied")
	}
	if id := sc.ccRunID(t, "shared-x"); id == "" || id == foreign {
		t.Fatalf("the session's run is %q; want a new run, not %s", id, foreign)
	}
	if got := sc.must(200, "GET", "/v1/runs/"+foreign, nil); got.str("status") != "done" {
		t.Fatalf("the other agent's run: %s", got.raw)
	}
}

// A body that does not decode fails closed on the tool-permission event the
// hook command's --event (?event=) names, for every agent whose input
// names its event.
func TestHookEventFromQuery(t *testing.T) {
	sc := ccSidecar(t, Options{})
	for _, tc := range []struct{ path, want string }{
		{"/v1/hooks/claude-code?event=PreToolUse", `"permissionDecision":"deny"`},
		{"/v1/hooks/codex?event=PreToolUse", `"permissionDecision":"deny"`},
		{"/v1/hooks/gemini?event=BeforeTool", `"decision":"deny"`},
		{"/v1/hooks/cursor?event=beforeShellExecution", `"permission":"deny"`},
		{"/v1/hooks/claude-code?event=Stop", `{}`},
	} {
		r := sc.call("POST", tc.path, "not json")
		if r.status != 200 || !strings.Contains(string(r.raw), tc.want) {
			t.Errorf("%s: %d %s, want %s", tc.path, r.status, r.raw, tc.want)
		}
	}
}

// brokenRedactLua is a result transform that fails (a redaction that ran
// out of its budget on a large output, say).
const brokenRedactLua = `local awaken = require("awaken")
local p = awaken.plugin { id = "broken" }
p:result_transform(function(call, result, ctx)
  error("cannot read this output")
end)
return p
`

// TestClaudeCodeWithholdsOutputItCouldNotReview: when a result transform
// fails, Claude reads none of the tool's output (it may hold what the
// transform would have taken out), in the tool's shape, and the next
// event goes on.
func TestClaudeCodeWithholdsOutputItCouldNotReview(t *testing.T) {
	sc := newSidecar(t, project(t, "", map[string]string{"broken.lua": brokenRedactLua}), Options{Log: quietLog()})
	sc.hook(t, fixture(t, "user_prompt_submit", map[string]any{"session_id": "w"}), "")
	ev := map[string]any{"session_id": "w", "tool_name": "Bash", "tool_input": map[string]any{"command": "env"}, "tool_use_id": "toolu_W1"}
	if out := sc.hook(t, fixture(t, "pre_tool_use_mcp", ev), ""); len(out) != 0 {
		t.Fatalf("pre: %s", mustJSON(out))
	}
	p := fixture(t, "post_tool_use_write", ev)
	p["tool_response"] = map[string]any{"stdout": "PASSWORD=hunter2\n", "stderr": "", "interrupted": false, "isImage": false}
	s := specific(sc.hook(t, p, ""))
	got := mustJSON(s["updatedToolOutput"])
	if s == nil || strings.Contains(mustJSON(s), "hunter2") || !strings.Contains(got, `"stdout":"[awaken-lua withheld this output`) ||
		!strings.Contains(got, `"interrupted":false`) || !strings.Contains(got, "cannot read this output") {
		t.Fatalf("PostToolUse after a failed review: %v", s)
	}
	ev["tool_use_id"] = "toolu_W2"
	if out := sc.hook(t, fixture(t, "pre_tool_use_mcp", ev), ""); len(out) != 0 {
		t.Fatalf("the next call: %s", mustJSON(out))
	}
}
