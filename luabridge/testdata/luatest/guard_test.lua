local awaken = require("awaken")
local t = require("awaken.testing")

t.test("rm is blocked", function()
  local h = t.harness { plugins = { "guard" }, config = { guard = { deny = { "rm" } } } }
  local d = h:gate { name = "shell", args = { cmd = "rm -rf /" } }
  t.eq(d.decision, "block")
  t.eq(d.reason, "'rm' is not allowed")
end)

t.test("ls is allowed", function()
  local h = t.harness { plugins = { "guard" } }
  local d = h:gate { name = "shell", args = { cmd = "ls" } }
  t.eq(d, { decision = "allow", args = { cmd = "ls" } })
end)

t.test("a whole run", function()
  local h = t.harness { plugins = { "guard" } }
  local r = h:run { prompt = "tidy up", turns = {
    { tool_calls = { { name = "shell", args = { cmd = "rm x" } } } } },
    tools = { shell = function(args) return awaken.success("ok") end } }
  t.eq(r.termination, "blocked:'rm' is not allowed")
  t.eq(r.steps, 1)
  t.eq(r.requests[1].tools, { "shell" })
end)

t.test("phases count calls", function()
  local h = t.harness { plugins = { "guard" } }
  local r = h:phase("after_tool_execute", { tool = { name = "shell", args = {}, result = awaken.success("x") } })
  t.eq(r.state["guard.calls"], 1)
  t.eq(r.effects[1].key, "runtime.audit")
  t.eq(r.effects[1].payload, { tool = "shell", status = "success" })
  local r2 = h:phase("after_tool_execute", { tool = { name = "shell", args = {}, result = awaken.success("x") } }, { state = { ["guard.calls"] = 5 } })
  t.eq(r2.state["guard.calls"], 6)
  t.eq(r2.pending_actions[1].key, "runtime.add_context_message")
  t.eq(r2.pending_actions[1].phase, "before_inference")
end)

t.test("errors start with their code", function()
  local h = t.harness { plugins = { "guard" } }
  t.raises(function() h:phase("step_start", {}, { state = { ["guard.nope"] = 1 } }) end, "^unknown_key")
  t.match("hello world", "^hello")
end)
