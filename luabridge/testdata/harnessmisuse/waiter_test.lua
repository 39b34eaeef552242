-- Harness arguments of the wrong shape raise, naming the field, instead
-- of being taken as absent (a test that then passes for the wrong reason).
local t = require("awaken.testing")

t.test("a misspelt tool call field", function()
  local h = t.harness { plugins = { "waiter" } }
  t.raises(function() h:gate { name = "x", arguments = { cmd = "rm" } } end, 'no field "arguments"')
  t.raises(function() h:phase("before_tool_execute", { tool = { name = "x", arg = {} } }) end, 'did you mean "args"')
  t.raises(function() h:gate { name = "x", args = "rm" } end, "args must be a table")
end)

t.test("opts of the wrong type", function()
  local h = t.harness { plugins = { "waiter" } }
  t.raises(function() h:gate({ name = "x" }, { thread = 1 }) end, "opts.thread must be")
  t.raises(function() h:gate({ name = "x" }, { state = "x" }) end, "opts.state must be")
  t.raises(function() h:gate({ name = "x" }, { step = "2" }) end, "opts.step must be")
end)

t.test("harness spec fields of the wrong type", function()
  t.raises(function() t.harness { plugins = { "waiter" }, agent = { max_steps = "1" } } end, "agent.max_steps must be a number")
  t.raises(function() t.harness { plugins = { "waiter" }, now = "2026" } end, "now must be")
end)

t.test("a misspelt h:resume field", function()
  local h = t.harness { plugins = { "waiter" } }
  local r = h:run { turns = { { tool_calls = { { id = "c1", name = "deploy" } } } }, tools = { deploy = function() return "ok" end } }
  t.eq(r.termination, "suspended")
  t.raises(function() h:resume { decision = { { target = "c1", action = "resume" } }, turns = { { text = "done" } } } end,
    'unknown field "decision" %(did you mean "decisions"%?%)')
  t.raises(function() h:resume { after = 7200, decisions = { { target = "c1", action = "resume" } } } end, 'got the number "7200"')
  t.raises(function() h:run { thread = 2, turns = {} } end, "thread must be a string")
end)

t.test("turns and tools of the wrong shape", function()
  local h = t.harness { plugins = { "waiter" } }
  t.raises(function() h:run { prompt = "go", turns = { text = "done" } } end, "turns must be a list")
  t.raises(function() h:run { prompt = "go", turns = "done" } end, "turns must be a list")
  t.raises(function() h:run { turns = { { text = "x" } }, tools = function() end } end, "tools must be a table")
  t.eq(h:run { prompt = "go", turns = { { text = "done" } }, tools = {} }.termination, "natural")
  t.eq(h:run { prompt = "go", turns = {} }.termination ~= nil, true)
end)

t.test("misspelt turns and decisions", function()
  local h = t.harness { plugins = { "waiter" } }
  t.raises(function() h:run { prompt = "go", turns = { { txt = "done" } } } end, 'turns%[1%] has no field "txt" %(did you mean "text"%?%)')
  t.raises(function() h:run { prompt = "go", turns = { { tool_calls = { { name = "x", arg = {} } } } } } end,
    'turns%[1%]: tool_calls%[1%] has no field "arg" %(did you mean "args"%?%)')
  local r = h:run { turns = { { tool_calls = { { id = "c1", name = "deploy" } } } }, tools = { deploy = function() return "ok" end } }
  t.eq(r.termination, "suspended")
  t.raises(function() h:resume { decisions = { { target = "c1", action = "cancel", reson = "no" } } } end,
    'decisions%[1%] has no field "reson" %(did you mean "reason"%?%)')
  t.raises(function() h:resume { decisions = { target = "c1", action = "cancel" } } end, "decisions must be a list")
  t.eq(h:resume { decisions = { { target = "c1", action = "cancel", reason = "no" } }, turns = { { text = "ok" } } }.termination, "natural")
end)
