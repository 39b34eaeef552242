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
  t.eq(recs[1], { event = "tool_call", thread_id = "main", agent_id = "default", step = 2,
    tool = "shell", call_id = "c1", decision = "allow", status = "succeeded", args = { cmd = "ls", token = "***" } })
end)

t.test("a blocked call: its gate decision with the block's reason, then the call", function()
  local h = harness {}
  local calls = { c1 = call_record("c1", { status = "running", decision = "block", plugin = "guard", reason = "rm is not allowed" }) }
  local r = h:phase("after_tool_execute",
    { tool = { id = "c1", name = "shell", args = { cmd = "rm -rf /" },
      result = { status = "error", message = "rm is not allowed", data = { rejected = true } } } },
    { state = { ["__runtime.tool_calls"] = calls } })
  local recs = records(r)
  t.eq(#recs, 2)
  t.eq(recs[1].event, "gate_decision")
  t.eq(recs[1].decision, "block")
  t.eq(recs[1].plugin, "guard")
  t.eq(recs[1].reason, "rm is not allowed")
  t.eq(recs[1].args, { cmd = "rm -rf /" })
  t.eq(recs[2].event, "tool_call")
  t.eq(recs[2].decision, "block")
  t.eq(recs[2].plugin, "guard")
  t.eq(recs[2].status, "failed")
  t.eq(recs[2].reason, "rm is not allowed")
end)

t.test("a call with no decision named passed the gate allowed", function()
  local h = harness {}
  local r = h:phase("after_tool_execute", { tool = { id = "c9", name = "shell", result = awaken.error("exit 1") } })
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

t.test("the gate's decision comes with the call: the runtime's record is not needed", function()
  local h = harness {}
  -- a block, named by ctx.tool (decision, decided_by, reason)
  local r = h:phase("after_tool_execute",
    { tool = { id = "c1", name = "shell", args = { cmd = "rm -rf /", token = "t" }, decision = "block", decided_by = "guard",
      reason = "rm is not allowed", result = { status = "error", message = "rm is not allowed", data = { rejected = true } } } },
    { step = 3 })
  local recs = records(r)
  t.eq(#recs, 2)
  for _, rec in ipairs(recs) do
    t.match(rec.run_id, "^run_")
    rec.run_id = nil
  end
  t.eq(recs[1], { event = "gate_decision", thread_id = "main", agent_id = "default", step = 3, tool = "shell",
    call_id = "c1", decision = "block", plugin = "guard", reason = "rm is not allowed",
    args = { cmd = "rm -rf /", token = "***" } })
  t.eq(recs[2], { event = "tool_call", thread_id = "main", agent_id = "default", step = 3, tool = "shell",
    call_id = "c1", decision = "block", plugin = "guard", status = "failed", reason = "rm is not allowed",
    args = { cmd = "rm -rf /", token = "***" } })
  -- an allow after a rewrite; decided_by is not recorded for an allow
  recs = records(h:phase("after_tool_execute",
    { tool = { id = "c2", name = "fetch", args = { url = "x" }, decision = "allow", decided_by = "rewriter",
      rewritten_by = "rewriter", result = awaken.success("ok") } }))
  t.eq(#recs, 2)
  t.eq({ recs[1].event, recs[1].decision, recs[1].plugin }, { "gate_decision", "rewrite", "rewriter" })
  t.eq({ recs[2].event, recs[2].decision, recs[2].plugin, recs[2].rewritten_by, recs[2].status },
    { "tool_call", "allow", nil, "rewriter", "succeeded" })
  -- set_result: a success answer has no reason, an error answer its message
  recs = records(h:phase("after_tool_execute",
    { tool = { id = "c3", name = "cached", decision = "set_result", decided_by = "cache", result = awaken.success("hit") } }))
  t.eq({ recs[1].decision, recs[1].plugin, recs[1].reason }, { "set_result", "cache", nil })
  t.eq({ recs[2].status, recs[2].reason }, { "succeeded", nil })
  recs = records(h:phase("after_tool_execute",
    { tool = { id = "c4", name = "cached", decision = "set_result", decided_by = "cache", result = awaken.error("miss") } }))
  t.eq({ recs[1].reason, recs[2].status, recs[2].reason }, { "miss", "failed", "miss" })
  -- the decision on the call wins over a record that says otherwise
  local calls = { c5 = call_record("c5", { status = "running", decision = "block", plugin = "other" }) }
  recs = records(h:phase("after_tool_execute",
    { tool = { id = "c5", name = "shell", decision = "allow", result = awaken.success("") } },
    { state = { ["__runtime.tool_calls"] = calls } }))
  t.eq(#recs, 1)
  t.eq(recs[1].decision, "allow")
end)

t.test("step_end sweeps up calls cancelled after a suspension, once", function()
  local h = harness {}
  local calls = {
    c1 = call_record("c1", { status = "succeeded", decision = "allow" }),
    c2 = call_record("c2", { status = "cancelled", decision = "suspend", plugin = "guard", reason = "ok?", ticket = "ticket_c2",
      args = { password = "x" }, result = { status = "error", message = "the call was cancelled: no" } }),
  }
  local r = h:phase("step_end", {}, { state = { ["__runtime.tool_calls"] = calls } })
  local recs = records(r)
  t.eq(#recs, 2)
  t.eq(recs[1].event, "gate_decision")
  t.eq(recs[1].decision, "suspend")
  t.eq(recs[1].ticket, "ticket_c2")
  t.eq(recs[1].plugin, "guard")
  t.eq(recs[1].reason, "ok?")
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

t.test("run_end sweeps up the calls cancelled with the run", function()
  local h = harness {}
  local calls = {
    c1 = call_record("c1", { status = "cancelled", decision = "suspend", plugin = "guard", ticket = "ticket_c1",
      result = { status = "error", message = "the call was cancelled: run cancelled" } }),
  }
  local recs = records(h:phase("run_end", {}, { state = { ["__runtime.tool_calls"] = calls }, step = 3 }))
  t.eq(#recs, 3)
  t.eq(recs[1].event, "gate_decision")
  t.eq(recs[1].ticket, "ticket_c1")
  t.eq(recs[2].event, "tool_call")
  t.eq(recs[2].status, "cancelled")
  t.eq(recs[3].event, "run_end")
  t.eq(recs[3].steps, 3)
end)

t.test("every record names the run's working directory when it has one", function()
  local h = harness {}
  local calls = {
    c1 = call_record("c1", { status = "cancelled", decision = "suspend", plugin = "guard", ticket = "ticket_c1",
      result = { status = "error", message = "the call was cancelled: run cancelled" } }),
  }
  local recs = records(h:phase("run_end", {}, { state = { ["__runtime.tool_calls"] = calls }, cwd = "/home/dev/shop" }))
  t.eq(#recs, 3)
  for _, rec in ipairs(recs) do t.eq(rec.cwd, "/home/dev/shop", rec.event) end
  recs = records(h:phase("after_tool_execute",
    { tool = { id = "c2", name = "shell", args = { cmd = "rm -rf /" }, decision = "block", decided_by = "guard",
      reason = "no", result = { status = "error", message = "no", data = { rejected = true } } } },
    { cwd = "/home/dev/shop/api" }))
  t.eq(#recs, 2)
  for _, rec in ipairs(recs) do t.eq(rec.cwd, "/home/dev/shop/api", rec.event) end
  recs = records(h:phase("run_end", {}, {}))
  t.eq(recs[1].cwd, nil)
end)

-- Whole runs: the runtime.audit records of r.effects, with the ids checked
-- and left out; the other fields of interest as given.
local OK = function() return awaken.success("ok") end

local function audit_of(r)
  local out = {}
  local run_id
  for _, ev in ipairs(r.events) do
    t.ok(ev.event ~= "effect_failed", "no effect failed")
    if ev.event == "run_start" then run_id = ev.run_id end
  end
  for _, e in ipairs(r.effects) do
    if e.key == "runtime.audit" then
      local rec = e.payload
      run_id = run_id or rec.run_id -- a resumed run has no run_start
      t.match(rec.run_id, "^run_")
      t.eq(rec.run_id, run_id)
      t.eq(rec.agent_id, "default")
      t.ok(rec.thread_id ~= nil)
      rec.run_id, rec.agent_id, rec.thread_id = nil, nil, nil
      out[#out + 1] = rec
    end
  end
  return out
end

t.test("whole run: calls that ran, masked, then a natural end", function()
  local r = harness {}:run { prompt = "go", turns = {
    { tool_calls = { { name = "a", args = { token = "t", q = 1 } }, { name = "b" } } }, { text = "done" } },
    tools = { a = OK, b = OK } }
  t.eq(audit_of(r), {
    { event = "tool_call", step = 1, tool = "a", call_id = "call_1_1", decision = "allow", status = "succeeded",
      args = { token = "***", q = 1 } },
    { event = "tool_call", step = 1, tool = "b", call_id = "call_1_2", decision = "allow", status = "succeeded", args = {} },
    { event = "run_end", step = 2, termination = "natural", steps = 2 },
  })
end)

t.test("whole run: a block, the interrupted call, and the run end name the plugin", function()
  local h = t.harness { plugins = { "audit", "fixture_gate" },
    config = { fixture_gate = { decisions = { rm = { decision = "block", reason = "rm is not allowed" } } } } }
  local r = h:run { prompt = "go", turns = {
    { tool_calls = { { name = "ls" }, { name = "rm", args = { path = "/", password = "p" } }, { name = "ls" } } } },
    tools = { ls = OK, rm = OK } }
  t.eq(r.termination, "blocked:rm is not allowed")
  t.eq(audit_of(r), {
    { event = "tool_call", step = 1, tool = "ls", call_id = "call_1_1", decision = "allow", status = "succeeded", args = {} },
    { event = "gate_decision", step = 1, tool = "rm", call_id = "call_1_2", decision = "block", plugin = "fixture_gate",
      reason = "rm is not allowed", args = { path = "/", password = "***" } },
    { event = "tool_call", step = 1, tool = "rm", call_id = "call_1_2", decision = "block", plugin = "fixture_gate",
      status = "failed", reason = "rm is not allowed", args = { path = "/", password = "***" } },
    -- swept at run_end: it never ran
    { event = "tool_call", step = 1, tool = "ls", call_id = "call_1_3", status = "failed",
      reason = "[tool execution was interrupted]", args = {} },
    { event = "run_end", step = 1, termination = "blocked:rm is not allowed", plugin = "fixture_gate",
      reason = "rm is not allowed", steps = 1 },
  })
end)

t.test("whole run: a budget refusal stops the run; the stop's plugin and detail", function()
  local h = t.harness { plugins = { "audit", "budget" }, config = { budget = { max_tool_calls = 1 } } }
  local r = h:run { prompt = "go", turns = {
    { tool_calls = { { name = "a", args = { token = "t" } }, { name = "a" }, { name = "b" } } } },
    tools = { a = OK, b = OK } }
  t.eq(r.termination, "stopped:budget_tool_calls")
  local why = "budget exceeded: max_tool_calls is 1; the call was not run"
  t.eq(audit_of(r), {
    { event = "tool_call", step = 1, tool = "a", call_id = "call_1_1", decision = "allow", status = "succeeded",
      args = { token = "***" } },
    { event = "gate_decision", step = 1, tool = "a", call_id = "call_1_2", decision = "set_result", plugin = "budget",
      reason = why, args = {} },
    { event = "tool_call", step = 1, tool = "a", call_id = "call_1_2", decision = "set_result", plugin = "budget",
      status = "failed", reason = why, args = {} },
    { event = "tool_call", step = 1, tool = "b", call_id = "call_1_3", status = "failed",
      reason = "[tool execution was interrupted]", args = {} },
    { event = "run_end", step = 1, termination = "stopped:budget_tool_calls", plugin = "budget", reason = why, steps = 1 },
  })
end)

t.test("whole run: a suspension, resumed then cancelled", function()
  local h = t.harness { plugins = { "audit", "fixture_gate" },
    config = { fixture_gate = { decisions = { deploy = { decision = "suspend", reason = "needs approval" } } } } }
  local tools = { deploy = OK }
  local function suspended(thread)
    local r = h:run { prompt = "go", thread = thread, tools = tools, turns = {
      { tool_calls = { { name = "deploy", args = { env = "prod", token = "x" } } } } } }
    t.eq(r.termination, "suspended")
    t.eq(#audit_of(r), 0, "nothing is audited while the run waits")
  end
  suspended("t1")
  local r = h:resume { thread = "t1", tools = tools, turns = { { text = "done" } },
    decisions = { { target = "call_1_1", action = "resume", reason = "ok by alice" } } }
  t.eq(r.termination, "natural")
  t.eq(audit_of(r), {
    { event = "gate_decision", step = 1, tool = "deploy", call_id = "call_1_1", decision = "suspend",
      resume = { action = "resume", reason = "ok by alice" }, args = { env = "prod", token = "***" } },
    { event = "tool_call", step = 1, tool = "deploy", call_id = "call_1_1", decision = "allow", status = "succeeded",
      args = { env = "prod", token = "***" } },
    { event = "run_end", step = 2, termination = "natural", steps = 2 },
  })
  suspended("t2")
  r = h:resume { thread = "t2", tools = tools, turns = { { text = "done" } },
    decisions = { { target = "call_1_1", action = "cancel", reason = "not today" } } }
  t.eq(audit_of(r), {
    { event = "gate_decision", step = 1, tool = "deploy", call_id = "call_1_1", decision = "suspend",
      plugin = "fixture_gate", reason = "needs approval", ticket = "ticket_call_1_1", args = { env = "prod", token = "***" } },
    { event = "tool_call", step = 1, tool = "deploy", call_id = "call_1_1", decision = "suspend", plugin = "fixture_gate",
      status = "cancelled", reason = "the call was cancelled: not today", args = { env = "prod", token = "***" } },
    { event = "run_end", step = 2, termination = "natural", steps = 2 },
  })
end)

t.test("whole run: a reason that quotes masked arguments is masked too", function()
  -- permission's question quotes the call's arguments; cancelled, it is
  -- the suspension's recorded reason
  local h = t.harness { plugins = { "audit", "permission" } }
  local tools = { login = OK }
  local r = h:run { prompt = "go", thread = "t1", tools = tools, turns = {
    { tool_calls = { { name = "login", args = { user = "bob", password = "hunter2", token = "t" } } } } } }
  t.eq(r.termination, "suspended")
  r = h:resume { thread = "t1", tools = tools, turns = { { text = "done" } },
    decisions = { { target = "call_1_1", action = "cancel", reason = "no" } } }
  local recs = audit_of(r)
  t.eq(recs[1].event, "gate_decision")
  t.eq(recs[1].reason,
    'Allow login {"password":"***","token":"***","user":"bob"}? (asked by the permission default)')
  t.eq(recs[1].args, { user = "bob", password = "***", token = "***" })
  t.eq(mask.text("the password is hunter2, not hunter", { "hunter2" }), "the password is ***, not hunter")
  t.eq(mask.text('a "b" abc', { "b" }), 'a "***" abc', "a short value only as a JSON string")
  t.eq(mask.text('{"k":"a\\"b c"}', { 'a"b c' }), '{"k":"***"}')
end)

t.test("whole run: a reason cut short in a masked value shows none of it", function()
  -- permission's question shortens the arguments it quotes to 300 bytes:
  -- here inside the password, which must not show its first characters
  local h = t.harness { plugins = { "audit", "permission" } }
  local tools = { login = OK }
  local r = h:run { prompt = "go", thread = "t1", tools = tools, turns = {
    { tool_calls = { { name = "login", args = { a = string.rep("x", 270), password = "correct-horse-battery-staple" } } } } } }
  t.eq(r.termination, "suspended")
  r = h:resume { thread = "t1", tools = tools, turns = { { text = "done" } },
    decisions = { { target = "call_1_1", action = "cancel", reason = "no" } } }
  local reason = audit_of(r)[1].reason
  t.ok(not reason:find("correct", 1, true), reason)
  t.match(reason, '"password":"%*%*%*%.%.%.%? %(asked by')
  t.eq(mask.text('x {"k":"ab...', { "abc" }), 'x {"k":"***...')
  t.eq(mask.text('x {"k":"ab... (12 more bytes)', { "abc" }), 'x {"k":"***... (12 more bytes)')
  t.eq(mask.text('x {"k":"ab...', { "xyz" }), 'x {"k":"ab...', "not a masked value's start")
  t.eq(mask.text('x {"k":"..."}', { "xyz" }), 'x {"k":"..."}')
end)

t.test("whole run: rewrites, set_result answers, the runtime's refusals, the step limit", function()
  local h = t.harness { plugins = { "audit", "fixture_gate" }, agent = { max_steps = 1 },
    config = { fixture_gate = { decisions = {
      fetch = { decision = "rewrite" }, cached = { decision = "set_result", reason = "from cache" } } } } }
  local r = h:run { prompt = "go", turns = {
    { tool_calls = { { name = "fetch", args = { url = "x" } }, { name = "cached" }, { name = "nope" } } },
    { text = "never" } },
    tools = { fetch = OK, cached = OK } }
  t.eq(r.termination, "stopped:max_steps")
  local recs = audit_of(r)
  t.eq(recs[1], { event = "gate_decision", step = 1, tool = "fetch", call_id = "call_1_1", decision = "rewrite",
    plugin = "fixture_gate", args = { url = "x", rewritten = true } })
  t.eq(recs[2], { event = "tool_call", step = 1, tool = "fetch", call_id = "call_1_1", decision = "allow",
    status = "succeeded", rewritten_by = "fixture_gate", args = { url = "x", rewritten = true } })
  t.eq(recs[3], { event = "gate_decision", step = 1, tool = "cached", call_id = "call_1_2", decision = "set_result",
    plugin = "fixture_gate", reason = "from cache", args = {} })
  t.eq(recs[4].status, "failed")
  -- a tool that was not offered: the runtime answers it
  t.eq(recs[5].decision, "set_result")
  t.eq(recs[5].plugin, "runtime")
  t.match(recs[5].reason, "nope")
  t.eq(recs[6].event, "tool_call")
  t.eq(recs[7], { event = "run_end", step = 1, termination = "stopped:max_steps", plugin = "runtime", steps = 1 })
  t.eq(#recs, 7)
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

t.test("masking copies only what it changes", function()
  local c = mask.compile { "password", "a.b" }
  local args = { x = { y = { 1, 2 } }, list = { { q = 1 } }, a = { c = 1 } }
  t.ok(mask.apply(args, c) == args, "nothing to mask: the same table")
  local deep = { keep = { k = 1 }, a = { b = "s", c = { 1 } }, items = { { password = "p" }, { ok = 1 } } }
  local out = mask.apply(deep, c)
  t.eq(out, { keep = { k = 1 }, a = { b = "***", c = { 1 } }, items = { { password = "***" }, { ok = 1 } } })
  t.eq(deep.a.b, "s")
  t.eq(deep.items[1].password, "p")
  t.ok(out.keep == deep.keep, "untouched branches are shared")
  t.ok(out.items[2] == deep.items[2])
  -- compiled lists are plain data (the plugin's ctx.prepared)
  t.eq(mask.apply({ token = "t", pin = "1" }, mask.compile { "Token" }), { token = "***", pin = "1" })
  t.eq(mask.apply({ TOKEN = "t", pin = "1" }, mask.compile { "token" }), { TOKEN = "***", pin = "1" })
  t.eq(mask.apply({ token = "t", pin = "1" }, mask.compile(nil)), { token = "t", pin = "1" })
  t.eq(awaken.json.decode(awaken.json.encode(c)), c)
end)

t.test("config errors", function()
  t.raises(function() harness { mask = { "password", "headers..authorization" } } end,
    "^config_invalid: audit: mask%[1%]: empty segment")
  t.raises(function() harness { mask = { "" } } end, "mask%[0%]: empty field name")
  t.raises(function() harness { mask = "password" } end, "audit%.mask")
  t.raises(function() harness { masks = {} } end, "masks")
end)
