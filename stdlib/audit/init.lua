-- audit: one runtime.audit record (a JSON line in the audit sink) for every
-- gate decision, every tool call and the end of the run.
--
-- Records: "tool_call" for every call that finished (with the gate's
-- decision, allow included), "gate_decision" for every decision other than
-- allow (block, set_result, suspend; like the runtime's own gate_decision
-- events), "run_end" once.
--
-- Gates are read-only and cannot emit effects, so decisions are audited
-- once their outcome is visible: in after_tool_execute (which runs for
-- calls that ran, were blocked or were answered by a gate), from the
-- runtime's own record of each call in __runtime.tool_calls (decision,
-- status, ticket). A suspension is audited when the call is resumed (in
-- after_tool_execute, with ctx.tool.resume) or cancelled. Calls that never
-- reach after_tool_execute (cancelled after a suspension, interrupted after
-- a block) are swept up at step_end and run_end.
local awaken = require("awaken")
local mask = require("audit.mask")

local p = awaken.plugin {
  id = "audit",
  description = "Writes every gate decision, tool call and run end to the audit log",
  config = {
    -- argument fields replaced by "***": a name masks it at any depth, a
    -- dotted path from the top ("headers.authorization"); "*" matches any field
    mask = {
      type = "array",
      items = { type = "string" },
      default = { "password", "token", "secret", "api_key", "authorization" },
    },
  },
  validate = function(config)
    local problems = {}
    for i, entry in ipairs(config.mask or {}) do
      local err = mask.check(entry)
      if err then problems[#problems + 1] = "mask[" .. (i - 1) .. "]: " .. err end
    end
    if #problems > 0 then return problems end
  end,
}

-- The calls of the current step that the sweep (below) already audited:
-- {step, ids = {id = true}}. Only the current step's calls are kept
-- (__runtime.tool_calls holds no others), so the value stays small.
local swept = p:key("audit.swept", {
  scope = "run", default = { step = 0, ids = {} },
  schema = {
    type = "object",
    properties = { step = { type = "integer" }, ids = { type = "object", additionalProperties = { type = "boolean" } } },
  },
})

-- The ids swept in this step.
local function swept_ids(ctx)
  local cur = ctx:get(swept)
  if cur.step == ctx.run.step and type(cur.ids) == "table" then return cur.ids end
  return {}
end

local CALLS = "__runtime.tool_calls"
-- The result text of a call interrupted after a block (SPEC §5).
local INTERRUPTED = "[tool execution was interrupted]"

local function emit(ctx, event, fields)
  local run = ctx.run
  local rec = {
    event = event, plugin = "audit",
    run_id = run.id, thread_id = run.thread_id, agent_id = run.agent_id, step = run.step,
  }
  for k, v in pairs(fields) do rec[k] = v end
  ctx:emit("runtime.audit", rec)
end

local function calls_of(ctx)
  local calls = ctx:get(CALLS)
  if type(calls) ~= "table" then return {} end
  return calls
end

-- The call status for a result.
local function status_of(result)
  if result.status == "success" then return "succeeded" end
  return "failed"
end

-- Why a gate decided as it did, where the outcome says: a block's reason is
-- its result's message, as is an error answered by set_result.
local function reason_of(decision, result)
  if decision == "block" or (decision == "set_result" and result.status == "error") then
    return result.message
  end
end

p:on("after_tool_execute", function(ctx)
  local tool = ctx.tool
  local result = tool.result or {}
  local rec = calls_of(ctx)[tool.id]
  local decision = rec and rec.decision
  if decision == nil then
    -- no runtime record (a host that skipped the gate): judge by the result
    local data = type(result.data) == "table" and result.data or {}
    decision = data.rejected and "block" or "allow"
  end
  local args = mask.apply(tool.args, mask.compile(ctx.config.mask))
  local resume = tool.resume
  if resume then
    -- the call was suspended for a decision, and is now resumed
    emit(ctx, "gate_decision", {
      tool = tool.name, call_id = tool.id, decision = "suspend", args = args,
      resume = { action = resume.action, reason = resume.reason },
    })
  end
  if decision ~= "allow" then
    emit(ctx, "gate_decision", {
      tool = tool.name, call_id = tool.id, decision = decision, reason = reason_of(decision, result), args = args,
    })
  end
  emit(ctx, "tool_call", {
    tool = tool.name, call_id = tool.id, decision = decision, status = status_of(result),
    reason = result.status == "error" and result.message or nil, args = args,
  })
end)

-- Whether after_tool_execute never saw a call that is done: cancelled
-- (after a suspension), interrupted (after a block), or still suspended
-- (only at run_end: a run cancelled while waiting leaves its calls so).
local function unseen(rec)
  return rec.status == "cancelled" or rec.status == "suspended" or
    (rec.status == "failed" and type(rec.result) == "table" and rec.result.message == INTERRUPTED)
end

-- Audits the step's finished calls that after_tool_execute did not see.
local function sweep(ctx)
  local calls = calls_of(ctx)
  local ids = {}
  local done
  for id, rec in pairs(calls) do
    if unseen(rec) then
      done = done or swept_ids(ctx)
      if not done[id] then ids[#ids + 1] = id end
    end
  end
  if #ids == 0 then return end
  table.sort(ids)
  local m = mask.compile(ctx.config.mask)
  for _, id in ipairs(ids) do
    local rec = calls[id]
    local args = mask.apply(rec.args or {}, m)
    local result = rec.result or {}
    if rec.decision and rec.decision ~= "allow" then
      emit(ctx, "gate_decision", { tool = rec.name, call_id = id, decision = rec.decision, ticket = rec.ticket, args = args })
    end
    emit(ctx, "tool_call", {
      tool = rec.name, call_id = id, decision = rec.decision, status = rec.status,
      reason = result.message, args = args,
    })
    done[id] = true
  end
  ctx:update(swept, { step = ctx.run.step, ids = done })
end

p:on("step_end", sweep)

-- How the run ended, where the state says so: a plugin's stop, a blocked
-- call, or an answer without tool calls. Otherwise nil (see README).
local function termination(ctx, calls)
  local stop = ctx:get("__runtime.stop")
  if type(stop) == "table" and stop.code then
    return "stopped:" .. stop.code, stop.detail ~= "" and stop.detail or nil
  end
  local empty = true
  for _, rec in pairs(calls) do
    empty = false
    if rec.decision == "block" then
      local msg = rec.result and rec.result.message or ""
      return "blocked:" .. msg, msg
    end
  end
  if empty and ctx:get(CALLS) ~= nil then return "natural" end
end

p:on("run_end", function(ctx)
  sweep(ctx)
  local term, reason = termination(ctx, calls_of(ctx))
  emit(ctx, "run_end", { termination = term, reason = reason, steps = ctx.run.step })
end)

return p
