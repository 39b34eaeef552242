local awaken = require("awaken")
local t = require("awaken.testing")

local function harness(config, agent)
  return t.harness { plugins = { "budget" }, config = { budget = config }, agent = agent }
end

-- n turns that each call the given tools, then a final answer.
local function turns(n, names)
  local out = {}
  for i = 1, n do
    local calls = {}
    for j, name in ipairs(names) do calls[j] = { name = name, args = { i = i } } end
    out[i] = { tool_calls = calls }
  end
  out[n + 1] = { text = "done" }
  return out
end

-- Tools that count their runs in ran[name].
local function counting_tools(ran, names)
  local tools = {}
  for _, name in ipairs(names) do
    tools[name] = function() ran[name] = (ran[name] or 0) + 1; return awaken.success("ok") end
  end
  return tools
end

local function warnings(req)
  local out = {}
  for _, m in ipairs(req.messages) do
    if m.content:find("^Budget:") then out[#out + 1] = m.content end
  end
  return out
end

local function tool_messages(r)
  local out = {}
  for _, m in ipairs(r.messages) do
    if m.role == "tool" then out[#out + 1] = m.content end
  end
  return out
end

t.test("max_steps stops the run at the limit", function()
  local h = harness { max_steps = 3 }
  local r = h:run { prompt = "go", turns = turns(10, { "a" }), tools = counting_tools({}, { "a" }) }
  t.eq(r.termination, "stopped:budget_steps")
  t.eq(r.steps, 3)
end)

t.test("a run that ends naturally at the step limit is not stopped", function()
  local h = harness { max_steps = 2 }
  local r = h:run { prompt = "go", turns = turns(1, { "a" }), tools = counting_tools({}, { "a" }) }
  t.eq(r.termination, "natural")
  t.eq(r.steps, 2)
end)

t.test("max_steps holds when another plugin continues the run past it", function()
  -- verify continues a run that edited files without testing: step 2
  -- answers without tool calls, at the limit, and is continued
  local h = t.harness { plugins = { "budget", "verify" }, config = { budget = { max_steps = 2 } } }
  local ran = 0
  local function write() ran = ran + 1; return awaken.success("ok") end
  local r = h:run { prompt = "go", turns = {
    { tool_calls = { { name = "Write", args = { file_path = "a" } } } },
    { text = "finished" },
    { tool_calls = { { name = "Write", args = { file_path = "b" } } } },
    { text = "done" },
  }, tools = { Write = write } }
  t.eq(r.termination, "stopped:budget_steps")
  t.eq(#r.requests, 2, "no inference past the limit")
  t.eq(ran, 1, "no call past the limit")
end)

t.test("max_steps warns once at warn_at", function()
  local h = harness { max_steps = 5, warn_at = 0.6 }
  local r = h:run { prompt = "go", turns = turns(10, { "a" }), tools = counting_tools({}, { "a" }) }
  t.eq(r.termination, "stopped:budget_steps")
  t.eq(#warnings(r.requests[3]), 0)
  -- step 3 of 5 reaches 0.6: the warning is in step 4's request, only there
  t.eq(warnings(r.requests[4]), { "Budget: step 3 of 5 done. The run stops after step 5; finish the task by then." })
  t.eq(#warnings(r.requests[5]), 0)
  t.eq(r.state["budget.warned"], { "steps" })
end)

t.test("max_tool_calls: the call past the limit is not run and the run stops", function()
  local ran = {}
  local h = harness { max_tool_calls = 2 }
  -- three calls in one step: the first two run, the third is answered
  local r = h:run { prompt = "go", turns = turns(1, { "a", "a", "a" }), tools = counting_tools(ran, { "a" }) }
  t.eq(r.termination, "stopped:budget_tool_calls")
  t.eq(ran.a, 2)
  local msgs = tool_messages(r)
  t.eq(#msgs, 3)
  t.match(msgs[3], "^error: budget exceeded: max_tool_calls is 2; the call was not run")
  t.eq(r.state["budget.tool_calls"], 2)
end)

t.test("max_tool_calls counts across steps", function()
  local ran = {}
  local h = harness { max_tool_calls = 3 }
  local r = h:run { prompt = "go", turns = turns(5, { "a", "b" }), tools = counting_tools(ran, { "a", "b" }) }
  t.eq(r.termination, "stopped:budget_tool_calls")
  t.eq(ran, { a = 2, b = 1 })
  t.eq(r.steps, 2)
  -- 3 of 3 reaches 0.8 after step 1's two calls? 2/3 < 0.8: no warning before step 2
  t.eq(#warnings(r.requests[2]), 0)
end)

t.test("max_tool_calls warns at warn_at", function()
  local h = harness { max_tool_calls = 4, warn_at = 0.5 }
  local r = h:run { prompt = "go", turns = turns(3, { "a" }), tools = counting_tools({}, { "a" }) }
  t.eq(r.termination, "natural")
  t.eq(#warnings(r.requests[2]), 0)
  t.eq(warnings(r.requests[3]), { "Budget: 2 of 4 tool calls used. A call past the limit stops the run; finish with the calls left." })
  t.eq(#warnings(r.requests[4]), 0)
end)

t.test("max_calls_per_tool limits one tool only", function()
  local ran = {}
  local h = harness { max_calls_per_tool = { b = 1 } }
  local r = h:run { prompt = "go", turns = turns(3, { "a", "b" }), tools = counting_tools(ran, { "a", "b" }) }
  t.eq(r.termination, "stopped:budget_calls_b")
  t.eq(ran, { a = 2, b = 1 })
  t.eq(r.state["budget.calls_per_tool"], { a = 2, b = 1 })
  -- 1 of 1 is past warn_at: step 2 carries the warning
  t.eq(warnings(r.requests[2]), { "Budget: 1 of 1 calls to b used. A call past the limit stops the run." })
end)

t.test("the refused call stops the run; the step's other calls are interrupted", function()
  local ran = {}
  local h = harness { max_calls_per_tool = { b = 1 } }
  local r = h:run { prompt = "go", turns = {
    { tool_calls = { { name = "a" }, { name = "b" }, { name = "b" }, { name = "a" } } }, { text = "never" } },
    tools = counting_tools(ran, { "a", "b" }) }
  t.eq(r.termination, "stopped:budget_calls_b")
  t.eq(r.steps, 1)
  -- nothing runs past the limit
  t.eq(ran, { a = 1, b = 1 })
  local msgs = tool_messages(r)
  t.eq(#msgs, 4, "every call has a result")
  t.eq(msgs[1], "ok")
  t.eq(msgs[2], "ok")
  t.match(msgs[3], "^error: budget exceeded: max_calls_per_tool%.b is 1; the call was not run")
  t.eq(msgs[4], "error: [tool execution was interrupted]")
  -- the step's calls that ran are counted
  t.eq(r.state["budget.calls_per_tool"], { a = 1, b = 1 })
  t.eq(r.state["budget.tool_calls"], 2)
end)

t.test("a tool whose result looks like a refusal does not stop the run", function()
  local h = harness { max_tool_calls = 10 }
  local r = h:run { prompt = "go", turns = { { tool_calls = { { name = "a" } } }, { text = "done" } },
    tools = { a = function() return awaken.error("no") end } }
  t.eq(r.termination, "natural")
  r = h:run { prompt = "go", turns = { { tool_calls = { { name = "a" } } }, { text = "done" } },
    tools = { a = function() return { status = "error", message = "x", data = { budget_exceeded = "tool_calls" } } end } }
  t.eq(r.termination, "natural")
end)

t.test("the gate counts the calls already allowed in the step", function()
  local h = harness { max_tool_calls = 3 }
  local calls = {
    call_1_1 = { id = "call_1_1", name = "a", args = {}, status = "running", decision = "allow", step = 1 },
    call_1_2 = { id = "call_1_2", name = "a", args = {}, status = "succeeded", decision = "allow", step = 1 },
    call_1_3 = { id = "call_1_3", name = "a", args = {}, status = "new", step = 1 },
    call_1_4 = { id = "call_1_4", name = "a", args = {}, status = "failed", decision = "block", step = 1 },
  }
  -- earlier steps 0 + allowed in this step 2 + this call = 3: allowed
  local d = h:gate({ id = "call_1_3", name = "a" }, { state = { ["__runtime.tool_calls"] = calls } })
  t.eq(d.decision, "allow")
  d = h:gate({ id = "call_1_3", name = "a" }, { state = { ["budget.tool_calls"] = 1, ["__runtime.tool_calls"] = calls } })
  t.eq(d.decision, "set_result")
  t.eq(d.result.status, "error")
  t.eq(d.result.data, { budget_exceeded = "tool_calls" })
  t.eq(h:gate({ id = "x", name = "a" }, { state = { ["budget.tool_calls"] = 3 } }).decision, "set_result")
  t.eq(harness({}):gate({ id = "x", name = "a" }, { state = { ["budget.tool_calls"] = 99 } }).decision, "allow")
end)

t.test("the gate reads the step's calls only when a limit is near", function()
  local h = harness { max_tool_calls = 3, max_calls_per_tool = { b = 2 } }
  -- three allowed calls recorded: the exact count refuses a fourth
  local calls = {}
  for i = 1, 3 do
    calls["c" .. i] = { id = "c" .. i, name = "a", args = {}, status = "running", decision = "allow", step = 1 }
  end
  local state = { ["__runtime.tool_calls"] = calls }
  t.eq(h:gate({ id = "c4", name = "a" }, { state = state }).decision, "set_result")
  -- budget.step (recorded at after_inference) says the step has 2 calls in
  -- all, c4 one of them: 0 + 2 <= 3, so the gate allows without counting
  state["budget.step"] = { step = 1, calls = 2, by_tool = {}, ids = { c3 = true, c4 = true } }
  t.eq(h:gate({ id = "c4", name = "a" }, { state = state }).decision, "allow")
  -- a call the answer did not have (a host announced it later) is not in
  -- that count: it is counted exactly
  state["budget.step"] = { step = 1, calls = 2, by_tool = {}, ids = { c1 = true, c2 = true } }
  t.eq(h:gate({ id = "c4", name = "a" }, { state = state }).decision, "set_result")
  -- a step that could pass the limit is counted exactly
  state["budget.step"] = { step = 1, calls = 4, by_tool = {}, ids = { c4 = true } }
  t.eq(h:gate({ id = "c4", name = "a" }, { state = state }).decision, "set_result")
  -- the record of another step does not count
  state["budget.step"] = { step = 7, calls = 1, by_tool = {}, ids = { c4 = true } }
  t.eq(h:gate({ id = "c4", name = "a" }, { state = state }).decision, "set_result")
  -- per tool: 1 earlier + 2 in the step > 2
  state = { ["budget.calls_per_tool"] = { b = 1 }, ["budget.step"] = { step = 1, calls = 2, by_tool = { b = 2 }, ids = { c1 = true, c2 = true } },
    ["__runtime.tool_calls"] = { c1 = { id = "c1", name = "b", args = {}, status = "running", decision = "allow", step = 1 } } }
  t.eq(h:gate({ id = "c2", name = "b" }, { state = state }).decision, "set_result")
end)

t.test("only this plugin's refusal stops the run: the gate's decision comes with the call", function()
  local h = harness { max_tool_calls = 2 }
  local calls = {
    c1 = { id = "c1", name = "a", args = {}, status = "succeeded", decision = "allow", step = 1 },
    c2 = { id = "c2", name = "a", args = {}, status = "running", decision = "set_result", plugin = "budget", step = 1 },
  }
  local refusal = { status = "error", message = "budget exceeded: max_tool_calls is 2; the call was not run",
    data = { budget_exceeded = "tool_calls" } }
  local function after(tool)
    return h:phase("after_tool_execute", { tool = tool }, { state = { ["__runtime.tool_calls"] = calls } })
  end
  -- this plugin's set_result: the step's calls are counted, and the run stops
  local r = after { id = "c2", name = "a", decision = "set_result", decided_by = "budget", result = refusal }
  t.eq(r.state["budget.tool_calls"], 1)
  t.eq(r.state["budget.calls_per_tool"], { a = 1 })
  -- another plugin's answer, a call the gate allowed, a block: no stop, nothing counted
  for _, tool in ipairs {
    { id = "c2", name = "a", decision = "set_result", decided_by = "cache", result = refusal },
    { id = "c2", name = "a", decision = "allow", result = refusal },
    { id = "c2", name = "a", decision = "block", decided_by = "budget", result = refusal },
  } do
    t.eq(after(tool).state["budget.tool_calls"], nil, tool.decision)
  end
  -- without a decision on the call, the runtime's record says whose answer it was
  r = after { id = "c2", name = "a", result = refusal }
  t.eq(r.state["budget.tool_calls"], 1)
  r = h:phase("after_tool_execute", { tool = { id = "c2", name = "a", result = refusal } })
  t.eq(r.state["budget.tool_calls"], nil)
end)

t.test("after_inference records the step's calls", function()
  local h = harness { max_calls_per_tool = { b = 5 } }
  local r = h:phase("after_inference", { response = { text = "", tool_calls = {
    { id = "1", name = "a", args = {} }, { id = "2", name = "b", args = {} }, { id = "3", name = "b", args = {} } } } }, { step = 4 })
  t.eq(r.state["budget.step"], { step = 4, calls = 3, by_tool = { b = 2 }, ids = { ["1"] = true, ["2"] = true, ["3"] = true } })
  -- without a tool-call limit nothing is recorded
  r = harness { max_steps = 3 }:phase("after_inference", { response = { text = "", tool_calls = {} } })
  t.eq(r.state["budget.step"], nil)
end)

t.test("step_end counts the calls that ran", function()
  local h = harness { max_tool_calls = 10, max_calls_per_tool = { b = 5 } }
  local calls = {
    c1 = { id = "c1", name = "a", args = {}, status = "succeeded", decision = "allow", step = 1 },
    c2 = { id = "c2", name = "b", args = {}, status = "failed", decision = "allow", step = 1 },
    c3 = { id = "c3", name = "b", args = {}, status = "failed", decision = "block", step = 1 },
    c4 = { id = "c4", name = "a", args = {}, status = "succeeded", decision = "set_result", step = 1 },
  }
  local r = h:phase("step_end", {}, { state = { ["__runtime.tool_calls"] = calls,
    ["budget.tool_calls"] = 4, ["budget.calls_per_tool"] = { a = 3, b = 1 } } })
  t.eq(r.state["budget.tool_calls"], 6)
  t.eq(r.state["budget.calls_per_tool"], { a = 4, b = 2 })
end)

t.test("max_tokens stops the run once the total passes it", function()
  local h = harness { max_tokens = 250 }
  local tt = turns(5, { "a" })
  for i = 1, 5 do tt[i].usage = { prompt_tokens = 80, completion_tokens = 20 } end
  local r = h:run { prompt = "go", turns = tt, tools = counting_tools({}, { "a" }) }
  t.eq(r.termination, "stopped:budget_tokens")
  t.eq(r.steps, 3)
  t.eq(r.state["budget.tokens"], 300)
  -- 200 of 250 reaches 0.8 after step 2
  t.eq(warnings(r.requests[3]), { "Budget: 200 of 250 tokens used. Be brief and finish soon." })
end)

t.test("no limits: nothing stops the run", function()
  local h = harness {}
  local tt = turns(3, { "a" })
  for i = 1, 4 do tt[i].usage = { prompt_tokens = 80, completion_tokens = 20 } end
  local r = h:run { prompt = "go", turns = tt, tools = counting_tools({}, { "a" }) }
  t.eq(r.termination, "natural")
  -- tool calls and tokens are counted only against a limit on them
  t.eq(r.state["budget.tool_calls"], nil)
  t.eq(r.state["budget.tokens"], nil)
end)

t.test("config errors", function()
  t.raises(function() harness { max_steps = 0 } end, "^config_invalid: budget%.max_steps")
  t.raises(function() harness { max_tool_calls = -1 } end, "max_tool_calls")
  t.raises(function() harness { max_tokens = "many" } end, "max_tokens")
  t.raises(function() harness { max_calls_per_tool = { a = 1.5 } } end, "max_calls_per_tool%.a")
  t.raises(function() harness { max_calls_per_tool = { ["mcp__*"] = 1 } } end, "max_calls_per_tool%.mcp__%*: not a tool name")
  t.raises(function() harness { warn_at = 1.5 } end, "warn_at")
  t.raises(function() harness { warn_at = 0 } end, "warn_at: must be above 0")
  t.raises(function() harness { max_step = 3 } end, "max_step")
end)
