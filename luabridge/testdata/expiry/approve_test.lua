local awaken = require("awaken")
local t = require("awaken.testing")

local ok = function() return awaken.success("done") end
local tools = { deploy = ok, migrate = ok }

local function suspended(h, name)
  local r = h:run { prompt = "go", turns = { { tool_calls = { { name = name } } } }, tools = tools }
  t.eq(r.termination, "suspended")
  t.eq(r.suspended[1].on_timeout, name == "migrate" and "resume" or "cancel")
  t.ok(r.suspended[1].expires_at, "the ticket says when it expires")
  return r
end

t.test("a decision in time is the human's", function()
  local h = t.harness { plugins = { "approve" } }
  suspended(h, "deploy")
  local r = h:resume { after = "59m", decisions = { { target = "call_1_1", action = "resume" } },
    turns = { { text = "deployed" } }, tools = tools }
  t.eq(r.termination, "natural")
  t.eq(r.expired, {})
end)

t.test("past the timeout the runtime cancels, and a late answer is dropped", function()
  local h = t.harness { plugins = { "approve" } }
  suspended(h, "deploy")
  local r = h:resume { after = "2h", decisions = { { target = "call_1_1", action = "resume" } },
    turns = { { text = "not deployed" } }, tools = tools }
  t.eq(r.expired, { "call_1_1" })
  local kinds = {}
  for _, ev in ipairs(r.events) do kinds[#kinds + 1] = ev.event end
  t.eq(kinds[1], "ticket_expired")
  t.eq(r.events[1].on_timeout, "cancel")
end)

t.test("on_timeout resume passes the gate again, which sees the reason", function()
  local h = t.harness { plugins = { "approve" } }
  suspended(h, "migrate")
  local r = h:resume { after = "10m", turns = { { text = "migrated" } }, tools = tools }
  t.eq(r.expired, { "call_1_1" })
  t.eq(r.termination, "natural")
  local statuses = {}
  for _, ev in ipairs(r.events) do
    if ev.event == "tool_call_done" then statuses[#statuses + 1] = ev.status end
  end
  t.eq(statuses, { "succeeded" })
end)

t.test("bad timeouts fail the hook with file:line", function()
  t.raises(function() awaken.suspend { timeout = "soon" } end, "ticket timeout")
  t.raises(function() awaken.suspend { timeout = "1000h" } end, "more than")
  t.raises(function() awaken.suspend { on_timeout = "approve" } end, "on_timeout")
end)

t.test("a tool's own pending answer keeps its timeout", function()
  local h = t.harness { plugins = {} }
  local wait = function() return awaken.pending { message = "sign off?", timeout = "30m", on_timeout = "resume" } end
  local r = h:run { prompt = "go", turns = { { tool_calls = { { name = "sign" } } } }, tools = { sign = wait } }
  t.eq(r.termination, "suspended")
  t.eq({ r.suspended[1].message, r.suspended[1].on_timeout }, { "sign off?", "resume" })
  t.ok(r.suspended[1].expires_at, "the tool's ticket expires")
end)
