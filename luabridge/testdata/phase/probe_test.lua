local awaken = require("awaken")
local t = require("awaken.testing")

t.test("a phase runs where a run reaches it", function()
  local h = t.harness { plugins = { "probe" } }
  t.eq(h:phase("step_start", {}, { step = 3 }).state["probe.seen"], { step = 3 })
  t.eq(h:phase("run_end", {}, { step = 2 }).state["probe.seen"].termination, "natural")
end)

t.test("a call phase's call has passed the gate", function()
  local h = t.harness { plugins = { "probe" } }
  local function seen(tool, opts)
    tool.result = awaken.success("ok")
    local s = h:phase("after_tool_execute", { tool = tool }, opts).state["probe.seen"]
    return { s.decision, s.decided_by }
  end
  t.eq(seen { id = "c1", name = "shell" }, { "allow", "" })
  t.eq(seen { id = "c1", name = "shell", decision = "block", decided_by = "guard" }, { "block", "guard" })
  local calls = { c1 = { id = "c1", name = "shell", args = {}, status = "running", decision = "set_result", plugin = "cache" } }
  t.eq(seen({ id = "c1", name = "shell" }, { state = { ["__runtime.tool_calls"] = calls } }), { "set_result", "cache" })
  -- a suspended call does not run, and only an allowed one starts
  t.raises(function() seen { name = "shell", decision = "suspend" } end, "^invalid_transition")
  t.raises(function() h:phase("before_tool_execute", { tool = { name = "shell", decision = "block" } }) end, "^invalid_transition")
  t.raises(function() h:phase("after_tool_execute", {}) end, "input.tool")
end)

t.test("the thread keeps what a run keeps", function()
  local h = t.harness { plugins = { "probe" } }
  h:phase("step_start", {}, { thread = "a" })
  local r = h:phase("step_start", {}, { thread = "a" })
  t.eq({ r.state["probe.visits"], r.state["probe.scratch"] }, { 2, 1 })
  t.eq(h:phase("step_start", {}, { thread = "b" }).state["probe.visits"], 1)
  t.raises(function() h:phase("step_start", {}, { state = { ["probe.scratch"] = 4 } }) end, "^bad_request: opts.state.probe.scratch")
  t.raises(function() h:phase("run_start", {}, { state = { ["probe.visits"] = 4 } }) end, "run_start begins a run")
end)

t.test("run_end keeps the thread's conversation", function()
  local h = t.harness { plugins = { "probe" } }
  h:run { thread = "c", prompt = "remember me", turns = { { text = "hi" } } }
  h:phase("run_end", {}, { thread = "c" })
  local r = h:run { thread = "c", prompt = "again", turns = { { text = "ok" } } }
  t.eq(r.requests[1].messages[1].content, "remember me")
  -- a run starts on the thread's conversation
  local seen = h:phase("run_start", { messages = { { role = "user", content = "next" } } }, { thread = "c" }).state["probe.seen"]
  t.eq(seen.messages, 5)
end)
