-- audit: one runtime.audit record (a JSON line in the audit sink) for every
-- gate decision, every tool call and the end of the run.
--
-- Records: "tool_call" for every call that finished (with the gate's
-- decision, allow included), "gate_decision" for every decision other than
-- allow (block, set_result, suspend, and rewrite; like the runtime's own
-- gate_decision events), "run_end" once. Each names the plugin that decided
-- (or stopped the run) and the reason.
--
-- Gates are read-only and cannot emit effects, so decisions are audited
-- once their outcome is visible: in after_tool_execute (which runs for
-- calls that ran, were blocked or were answered by a gate), from the gate's
-- decision that comes with the call (ctx.tool.decision, decided_by, reason,
-- rewritten_by). A suspension is audited when the call is resumed (in
-- after_tool_execute, with ctx.tool.resume) or cancelled. Calls that never
-- reach after_tool_execute (cancelled after a suspension or with the run,
-- interrupted after a block or a stop) are swept up at step_end and
-- run_end from the runtime's own record of the step's calls in
-- __runtime.tool_calls (decision, plugin, reason, rewritten_by, status,
-- ticket). That record is read there only: it holds every call's arguments
-- and result, so reading it costs more than anything else here. run_end
-- reads how the run ended from ctx.run.termination.
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
  -- the mask compiled once per config: ctx.prepared.mask
  prepare = function(config)
    return { mask = mask.compile(config.mask) }
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
-- The result text the runtime gives a call interrupted after a block or a
-- stop.
local INTERRUPTED = "[tool execution was interrupted]"

local function emit(ctx, event, fields)
  local run = ctx.run
  fields.event = event
  fields.run_id, fields.thread_id, fields.agent_id, fields.step = run.id, run.thread_id, run.agent_id, run.step
  fields.cwd = run.cwd
  ctx:emit("runtime.audit", fields)
end

local function calls_of(ctx)
  local calls = ctx:get(CALLS)
  if type(calls) ~= "table" then return {} end
  return calls
end

-- Why a gate decided as it did: the runtime's record of the decision (a
-- block's reason, a suspension's message), else where the outcome says: a
-- block's reason is its result's message, as is an error answered by
-- set_result.
local function reason_of(decision, reason, status, message)
  if reason ~= nil and reason ~= "" then return reason end
  if decision == "block" or (decision == "set_result" and status == "error") then
    return message
  end
end

local EMPTY = {} -- a missing record or result (never written)

-- Emits the records of one finished call: the decisions that were not a
-- plain allow (a suspension that was resumed, a rewrite, a block,
-- set_result or suspend), then the call. plugin, reason and ticket are the
-- gate's (read only for a decision other than allow), rewritten_by the
-- plugin whose rewrite gave the arguments; status is the call's, rstatus
-- and message its result's; args are masked. Each record is built in one
-- table constructor, run fields included: the records are most of what
-- this plugin costs.
local function audit_call(ctx, name, id, decision, plugin, reason, ticket, rewritten_by, status, rstatus, message, args,
                          resume)
  local run = ctx.run
  local run_id, thread_id, agent_id, step, cwd = run.id, run.thread_id, run.agent_id, run.step, run.cwd
  if resume then
    -- the call was suspended for a decision, and is now resumed
    ctx:emit("runtime.audit", {
      event = "gate_decision", run_id = run_id, thread_id = thread_id, agent_id = agent_id, step = step, cwd = cwd,
      tool = name, call_id = id, decision = "suspend", args = args,
      resume = { action = resume.action, reason = resume.reason },
    })
  end
  if rewritten_by then
    ctx:emit("runtime.audit", {
      event = "gate_decision", run_id = run_id, thread_id = thread_id, agent_id = agent_id, step = step, cwd = cwd,
      tool = name, call_id = id, decision = "rewrite", plugin = rewritten_by, args = args,
    })
  end
  if decision ~= nil and decision ~= "allow" then
    ctx:emit("runtime.audit", {
      event = "gate_decision", run_id = run_id, thread_id = thread_id, agent_id = agent_id, step = step, cwd = cwd,
      tool = name, call_id = id, decision = decision, plugin = plugin,
      reason = reason_of(decision, reason, rstatus, message), ticket = ticket, args = args,
    })
  else
    plugin = nil
  end
  ctx:emit("runtime.audit", {
    event = "tool_call", run_id = run_id, thread_id = thread_id, agent_id = agent_id, step = step, cwd = cwd,
    tool = name, call_id = id, decision = decision, plugin = plugin, status = status,
    reason = rstatus == "error" and message or nil, rewritten_by = rewritten_by, args = args,
  })
end

-- A finished call, with the gate's decision that comes with it
-- (ctx.tool.decision, decided_by, reason, rewritten_by; in
-- after_tool_execute it is never a suspension, so there is no ticket).
p:on("after_tool_execute", function(ctx)
  local tool = ctx.tool
  local id = tool.id
  local result = tool.result or EMPTY
  local rstatus = result.status
  local decision, rewritten_by = tool.decision, tool.rewritten_by
  local plugin, reason
  if decision ~= "allow" then plugin, reason = tool.decided_by, tool.reason end
  -- the message is recorded for an error, or as the reason of a block or
  -- set_result
  local message = nil
  if rstatus ~= "success" or decision == "block" or decision == "set_result" then message = result.message end
  local args = tool.args
  local masked = mask.apply(args, ctx.prepared.mask)
  if masked ~= args then
    -- a reason may quote the arguments (a permission question does)
    local values = mask.hidden(args, masked)
    reason, message = mask.text(reason, values), mask.text(message, values)
  end
  audit_call(ctx, tool.name, id, decision, plugin, reason, nil, rewritten_by,
    rstatus == "success" and "succeeded" or "failed", rstatus, message, masked, tool.resume)
end)

-- Whether after_tool_execute never saw a call that is done: cancelled
-- (after a suspension, or with the run) or interrupted (after a block or a
-- stop).
local function unseen(rec)
  return rec.status == "cancelled" or
    (rec.status == "failed" and type(rec.result) == "table" and rec.result.message == INTERRUPTED)
end

-- Audits the step's finished calls that after_tool_execute did not see.
local function sweep(ctx, calls)
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
  local m = ctx.prepared.mask
  for _, id in ipairs(ids) do
    local rec = calls[id]
    local result = rec.result or EMPTY
    local args = rec.args or {}
    local masked = mask.apply(args, m)
    local reason, message = rec.reason, result.message
    if masked ~= args then
      -- a reason may quote the arguments (a permission question does)
      local values = mask.hidden(args, masked)
      reason, message = mask.text(reason, values), mask.text(message, values)
    end
    audit_call(ctx, rec.name, id, rec.decision, rec.plugin, reason, rec.ticket, rec.rewritten_by, rec.status,
      result.status, message, masked)
    done[id] = true
  end
  ctx:update(swept, { step = ctx.run.step, ids = done })
end

p:on("step_end", function(ctx) sweep(ctx, calls_of(ctx)) end)

p:on("run_end", function(ctx)
  local calls = calls_of(ctx)
  sweep(ctx, calls)
  local run = ctx.run
  local term = run.termination
  local rec = { termination = term, steps = run.step }
  if term ~= nil and term:sub(1, 8) == "stopped:" then
    -- a plugin's stop (its code, detail and id), or the runtime's own
    -- (stopped:max_steps)
    local stop = ctx:get("__runtime.stop")
    if type(stop) == "table" and "stopped:" .. tostring(stop.code) == term then
      rec.plugin = stop.plugin
      if stop.detail ~= "" then rec.reason = stop.detail end
    else
      rec.plugin = "runtime"
    end
  elseif term ~= nil and term:sub(1, 8) == "blocked:" then
    rec.reason = term:sub(9)
    for _, c in pairs(calls) do
      if c.decision == "block" then
        rec.plugin = c.plugin
        break
      end
    end
  end
  emit(ctx, "run_end", rec)
end)

return p
