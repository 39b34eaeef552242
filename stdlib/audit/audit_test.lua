local awaken = require("awaken")
local t = require("awaken.testing")
local mask = require("audit.mask")

local function harness(config)
  return t.harness { plugins = { "audit" }, config = { audit = config } }
end

-- The payloads of the runtime.audit effects of a phase.
local function records(r)
  local out = {}
  for _, e in ipairs(r.effects) do
    t.eq(e.key, "runtime.audit")
    out[#out + 1] = e.payload
  end
  return out
end

local function call_record(id, fields)
  local rec = { id = id, name = "shell", args = {}, step = 1 }
  for k, v in pairs(fields) do rec[k] = v end
  return rec
end

t.test("a call that ran: one tool_call record, with masked args", function()
  local h = harness {}
  local calls = { c1 = call_record("c1", { status = "running", decision = "allow", args = { cmd = "ls", token = "abc" } }) }
  local r = h:phase("after_tool_execute",
    { tool = { id = "c1", name = "shell", args = { cmd = "ls", token = "abc" }, result = awaken.success("a b") } },
    { state = { ["__runtime.tool_calls"] = calls }, step = 2 })
  local recs = records(r)
  t.eq(#recs, 1)
  t.match(recs[1].run_id, "^run_")
  recs[1].run_id = nil
  t.eq(recs[1], { event = "tool_call", plugin = "audit", thread_id = "main", agent_id = "default", step = 2,
    tool = "shell", call_id = "c1", decision = "allow", status = "succeeded", args = { cmd = "ls", token = "***" } })
end)

t.test("a blocked call: its gate decision with the block's reason, then the call", function()
  local h = harness {}
  local calls = { c1 = call_record("c1", { status = "running", decision = "block" }) }
  local r = h:phase("after_tool_execute",
    { tool = { id = "c1", name = "shell", args = { cmd = "rm -rf /" },
      result = { status = "error", message = "rm is not allowed", data = { rejected = true } } } },
    { state = { ["__runtime.tool_calls"] = calls } })
  local recs = records(r)
  t.eq(#recs, 2)
  t.eq(recs[1].event, "gate_decision")
  t.eq(recs[1].decision, "block")
  t.eq(recs[1].reason, "rm is not allowed")
  t.eq(recs[1].args, { cmd = "rm -rf /" })
  t.eq(recs[2].event, "tool_call")
  t.eq(recs[2].decision, "block")
  t.eq(recs[2].status, "failed")
  t.eq(recs[2].reason, "rm is not allowed")
end)

t.test("without a runtime record the decision comes from the result", function()
  local h = harness {}
  local r = h:phase("after_tool_execute",
    { tool = { id = "c9", name = "shell", result = { status = "error", message = "no", data = { rejected = true } } } })
  t.eq(records(r)[1].decision, "block")
  r = h:phase("after_tool_execute", { tool = { id = "c9", name = "shell", result = awaken.error("exit 1") } })
  local recs = records(r)
  t.eq(#recs, 1)
  t.eq(recs[1].decision, "allow")
  t.eq(recs[1].status, "failed")
  t.eq(recs[1].reason, "exit 1")
end)

t.test("a resumed call records its suspension; a set_result answer its reason", function()
  local h = harness {}
  local calls = { c1 = call_record("c1", { status = "running", decision = "set_result" }) }
  local r = h:phase("after_tool_execute",
    { tool = { id = "c1", name = "deploy", resume = { action = "resume", reason = "ok by alice" },
      result = awaken.error("budget exceeded") } },
    { state = { ["__runtime.tool_calls"] = calls } })
  local recs = records(r)
  t.eq(#recs, 3)
  t.eq(recs[1].decision, "suspend")
  t.eq(recs[1].resume, { action = "resume", reason = "ok by alice" })
  t.eq(recs[2].decision, "set_result")
  t.eq(recs[2].reason, "budget exceeded")
  t.eq(recs[3].event, "tool_call")
end)

t.test("step_end sweeps up calls cancelled after a suspension, once", function()
  local h = harness {}
  local calls = {
    c1 = call_record("c1", { status = "succeeded", decision = "allow" }),
    c2 = call_record("c2", { status = "cancelled", decision = "suspend", ticket = "ticket_c2",
      args = { password = "x" }, result = { status = "error", message = "the call was cancelled: no" } }),
    c3 = call_record("c3", { status = "suspended", decision = "suspend", ticket = "ticket_c3" }),
  }
  calls.c3 = nil -- (a step never ends with a suspended call: the run waits instead)
  local r = h:phase("step_end", {}, { state = { ["__runtime.tool_calls"] = calls } })
  local recs = records(r)
  t.eq(#recs, 2)
  t.eq(recs[1].event, "gate_decision")
  t.eq(recs[1].decision, "suspend")
  t.eq(recs[1].ticket, "ticket_c2")
  t.eq(recs[1].args, { password = "***" })
  t.eq(recs[2].event, "tool_call")
  t.eq(recs[2].status, "cancelled")
  t.eq(recs[2].reason, "the call was cancelled: no")
  t.eq(r.state["audit.swept"], { step = 1, ids = { c2 = true } })
  r = h:phase("step_end", {}, { state = { ["__runtime.tool_calls"] = calls, ["audit.swept"] = r.state["audit.swept"] } })
  t.eq(#r.effects, 0)
  -- what was swept in an earlier step does not count
  r = h:phase("step_end", {}, { step = 2, state = { ["__runtime.tool_calls"] = calls, ["audit.swept"] = { step = 1, ids = { c2 = true } } } })
  t.eq(#r.effects, 2)
end)

t.test("run_end: how the run ended, where the state says", function()
  local h = harness {}
  local function run_end(state)
    local recs = records(h:phase("run_end", {}, { state = state, step = 3 }))
    local last = recs[#recs]
    t.eq(last.event, "run_end")
    t.eq(last.steps, 3)
    return last, recs
  end
  local rec = run_end { ["__runtime.stop"] = { code = "budget_steps", detail = "3 steps", plugin = "budget" } }
  t.eq(rec.termination, "stopped:budget_steps")
  t.eq(rec.reason, "3 steps")
  local recs
  rec, recs = run_end { ["__runtime.tool_calls"] = {
    c1 = call_record("c1", { status = "failed", decision = "block", result = { status = "error", message = "nope" } }),
    c2 = call_record("c2", { status = "failed", result = { status = "error", message = "[tool execution was interrupted]" } }),
  } }
  t.eq(rec.termination, "blocked:nope")
  -- the interrupted call is swept up first
  t.eq(#recs, 2)
  t.eq(recs[1].call_id, "c2")
  t.eq(recs[1].event, "tool_call")
  t.eq(recs[1].reason, "[tool execution was interrupted]")
  -- a run cancelled while waiting: its call is still recorded as suspended
  rec, recs = run_end { ["__runtime.tool_calls"] = {
    c1 = call_record("c1", { status = "suspended", decision = "suspend", ticket = "ticket_c1" }) } }
  t.eq(#recs, 3)
  t.eq(recs[1].decision, "suspend")
  t.eq(recs[1].ticket, "ticket_c1")
  t.eq(recs[2].status, "suspended")
  rec = run_end { ["__runtime.tool_calls"] = {} }
  t.eq(rec.termination, "natural")
  rec = run_end {}
  t.eq(rec.termination, nil)
end)

t.test("whole runs with audit active", function()
  -- budget answers the second call and stops the run
  local h = t.harness { plugins = { "audit", "budget" }, config = { budget = { max_tool_calls = 1 } } }
  local r = h:run { prompt = "go", turns = {
    { tool_calls = { { name = "a", args = { token = "t" } }, { name = "a" } } },
  }, tools = { a = function() return awaken.success("ok") end } }
  t.eq(r.termination, "stopped:budget_tool_calls")
  local h2 = harness {}
  local r2 = h2:run { prompt = "go", turns = { { tool_calls = { { name = "a" } } }, { text = "done" } },
    tools = { a = function() return awaken.success("ok") end } }
  t.eq(r2.termination, "natural")
  for _, run in ipairs({ r, r2 }) do
    for _, ev in ipairs(run.events) do
      t.ok(ev.event ~= "effect_failed", "no effect failed")
    end
  end
end)

t.test("masking: names anywhere, paths from the top, lists, case", function()
  local c = mask.compile { "password", "headers.authorization", "items.*.secret_value" }
  local args = {
    user = "bob", Password = "p1",
    nested = { password = "p2", keep = 1 },
    headers = { Authorization = "Bearer x", accept = "json" },
    other = { authorization = "stays" },
    items = { { a = { secret_value = "s1", b = 2 } }, { a = { secret_value = "s2" } } },
  }
  t.eq(mask.apply(args, c), {
    user = "bob", Password = "***",
    nested = { password = "***", keep = 1 },
    headers = { Authorization = "***", accept = "json" },
    other = { authorization = "stays" },
    items = { { a = { secret_value = "***", b = 2 } }, { a = { secret_value = "***" } } },
  })
  t.eq(args.Password, "p1", "the arguments are not changed")
  local h = harness { mask = { "headers.authorization" } }
  local r = h:phase("after_tool_execute",
    { tool = { id = "c1", name = "http", args = { token = "kept", headers = { authorization = "x" } }, result = awaken.success("") } })
  t.eq(records(r)[1].args, { token = "kept", headers = { authorization = "***" } })
end)

t.test("config errors", function()
  t.raises(function() harness { mask = { "password", "headers..authorization" } } end,
    "^config_invalid: audit: mask%[1%]: empty segment")
  t.raises(function() harness { mask = { "" } } end, "mask%[0%]: empty field name")
  t.raises(function() harness { mask = "password" } end, "audit%.mask")
  t.raises(function() harness { masks = {} } end, "masks")
end)
