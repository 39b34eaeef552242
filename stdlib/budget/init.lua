-- budget: limits on steps, tool calls (in total and per tool) and tokens.
--
-- Counts are run-scoped. A count that reaches warn_at of its limit schedules
-- one warning context message for the next step (once per limit). Passing a
-- limit stops the run with stopped:budget_<limit>:
--   steps       at step_end, once the step count reaches max_steps (unless
--               the step's answer had no tool calls: the run ends naturally;
--               a step past it, which runtime.continue asked for, stops at
--               step_start);
--   tokens      at after_inference, once the total passes max_tokens;
--   tool calls  a call that would pass max_tool_calls, or its tool's entry in
--               max_calls_per_tool, is not run: the gate answers it with an
--               error result (set_result; gates cannot stop a run), and
--               after_tool_execute of that call stops the run with
--               budget_tool_calls or budget_calls_<tool>. The runtime then
--               interrupts the step's calls that have not run, as after a
--               block, so no call runs past the limit and every call the
--               model made gets a result.
--
-- Tool calls are counted from the runtime's record of the step's calls
-- (__runtime.tool_calls): the calls the gate allowed. budget.tool_calls and
-- budget.calls_per_tool hold the counts of the steps before the current one;
-- the gate adds the current step's allowed calls, so it is exact however a
-- host interleaves gating and running. step_end (or the stop) adds the
-- step's calls to the counts.
--
-- Reading __runtime.tool_calls converts every call of the step, so the gate
-- avoids it while no limit is near: after_inference records how many calls
-- the model made in the step (budget.step), and a call is allowed at once
-- when the step could not pass a limit even if all of them ran.
local awaken = require("awaken")

local p = awaken.plugin {
  id = "budget",
  description = "Limits steps, tool calls and tokens per run",
  config = {
    max_steps = { type = "integer", minimum = 1 },
    max_tool_calls = { type = "integer", minimum = 0 },
    max_calls_per_tool = { type = "object", default = {}, additionalProperties = { type = "integer", minimum = 0 } },
    max_tokens = { type = "integer", minimum = 1 },
    warn_at = { type = "number", minimum = 0, maximum = 1, default = 0.8 },
  },
  validate = function(config)
    local problems = {}
    if config.warn_at <= 0 then
      problems[#problems + 1] = "warn_at: must be above 0 (a fraction of each limit, such as 0.8; 1 warns only at the limit)"
    end
    for name in pairs(config.max_calls_per_tool or {}) do
      if not name:find("^[%w_%.%-]+$") then
        problems[#problems + 1] = "max_calls_per_tool." .. name .. ": not a tool name (letters, digits, '_', '.', '-'); globs are not supported"
      end
    end
    if #problems > 0 then return problems end
  end,
}

-- Tool calls that ran in earlier steps, in total and per tool.
local tool_calls = p:key("budget.tool_calls", {
  scope = "run", merge = "commutative", reducer = "add", default = 0, schema = { type = "integer" },
})
local per_tool = p:key("budget.calls_per_tool", {
  scope = "run", reducer = "merge", default = {},
  schema = { type = "object", additionalProperties = { type = "integer" } },
})
-- Tokens used, from the model's usage.
local tokens = p:key("budget.tokens", {
  scope = "run", merge = "commutative", reducer = "add", default = 0, schema = { type = "integer" },
})
-- The calls the model made in the current step: {step, calls, by_tool, ids}
-- (by_tool only for tools with a limit of their own; ids, the calls' ids:
-- a call the host announced later, such as a coding agent's parallel call,
-- is not among them and not in the count).
local step_key = p:key("budget.step", {
  scope = "run", default = { step = 0, calls = 0, by_tool = {}, ids = {} },
  schema = {
    type = "object",
    properties = {
      step = { type = "integer" }, calls = { type = "integer" },
      by_tool = { type = "object", additionalProperties = { type = "integer" } },
      ids = { type = "object", additionalProperties = { type = "boolean" } },
    },
  },
})
-- Limits already warned about ("steps", "tool_calls", "calls_<tool>", "tokens").
local warned = p:key("budget.warned", {
  scope = "run", merge = "commutative", reducer = "union", default = {},
  schema = { type = "array", items = { type = "string" } },
})

local CALLS = "__runtime.tool_calls"

-- The runtime's records of this step's calls.
local function step_calls(ctx)
  local calls = ctx:get(CALLS)
  if type(calls) ~= "table" then return {} end
  return calls
end

-- Schedules the warning for a limit once its count reaches warn_at of it;
-- the text is string.format(fmt, ...), built only then.
local function maybe_warn(ctx, limit, count, max, fmt, ...)
  if count < ctx.config.warn_at * max then return end
  for _, done in ipairs(ctx:get(warned)) do
    if done == limit then return end
  end
  ctx:update(warned, limit)
  ctx:schedule("runtime.add_context_message", {
    key = "budget.warn." .. limit,
    content = string.format(fmt, ...),
    target = "suffix_system",
    kind = "ephemeral",
  })
end

-- The answer for a call that would pass a limit; data.budget_exceeded names
-- the limit, so after_tool_execute of the call stops the run with its code.
local function exceeded(limit, text)
  return awaken.set_result({
    status = "error",
    message = "budget exceeded: " .. text .. "; the call was not run",
    data = { budget_exceeded = limit },
  })
end

-- Each hook reads the config (a table kept per Lua state), the call's
-- fields and each key once: every read from ctx crosses into Go.
p:tool_gate(function(ctx, call)
  local cfg = ctx.config
  local max_total = cfg.max_tool_calls
  local name = call.name
  local max_tool = cfg.max_calls_per_tool[name]
  if max_total == nil and max_tool == nil then return end
  -- fast path: even if every call of the step ran, no limit would be passed
  -- (only for a call the count holds: a call announced after the answer is
  -- counted from the runtime's record below)
  local st = ctx:get(step_key)
  local step = ctx.run.step
  local id = call.id
  local earlier, earlier_tool
  if st.step == step and type(st.ids) == "table" and st.ids[id] then
    if max_total ~= nil then earlier = ctx:get(tool_calls) end
    if max_tool ~= nil then earlier_tool = ctx:get(per_tool)[name] or 0 end
    if (max_total == nil or earlier + st.calls <= max_total) and
        (max_tool == nil or earlier_tool + (st.by_tool[name] or 0) <= max_tool) then
      return
    end
  end
  -- the step's other calls the gate allowed (run, running or about to run)
  local total, same = 0, 0
  for cid, rec in pairs(step_calls(ctx)) do
    if cid ~= id and rec.decision == "allow" and (rec.step == nil or rec.step == step) then
      total = total + 1
      if rec.name == name then same = same + 1 end
    end
  end
  if max_total and (earlier or ctx:get(tool_calls)) + total + 1 > max_total then
    return exceeded("tool_calls", string.format("max_tool_calls is %d", max_total))
  end
  if max_tool and (earlier_tool or ctx:get(per_tool)[name] or 0) + same + 1 > max_tool then
    return exceeded("calls_" .. name, string.format("max_calls_per_tool.%s is %d", name, max_tool))
  end
end)

p:on("after_inference", function(ctx)
  local cfg = ctx.config
  local limits = cfg.max_calls_per_tool
  local response
  if cfg.max_tool_calls ~= nil or next(limits) ~= nil then
    -- the step's calls, for the gate's fast path
    response = ctx.response
    local calls = response.tool_calls
    local by_tool, ids = {}, {}
    for i = 1, #calls do
      local c = calls[i]
      local name = c.name
      ids[c.id] = true
      if limits[name] then by_tool[name] = (by_tool[name] or 0) + 1 end
    end
    ctx:update(step_key, { step = ctx.run.step, calls = #calls, by_tool = by_tool, ids = ids })
  end
  -- tokens are counted only against a token limit
  local max = cfg.max_tokens
  if max == nil then return end
  local usage = (response or ctx.response).usage
  local used = usage and usage.total_tokens
  if used == nil or used <= 0 then return end
  ctx:update(tokens, used)
  local total = ctx:get(tokens) + used
  if total > max then
    ctx:stop("budget_tokens", string.format("%d tokens used, the limit is %d", total, max))
  elseif total >= cfg.warn_at * max then
    maybe_warn(ctx, "tokens", total, max, "Budget: %d of %d tokens used. Be brief and finish soon.", total, max)
  end
end)

-- Adds the step's calls that ran (the gate allowed them) to the counts, and
-- warns.
local function count_calls(ctx, calls)
  local cfg = ctx.config
  local step = ctx.run.step
  local ran, by_tool = 0, {}
  for _, rec in pairs(calls) do
    if rec.decision == "allow" and (rec.step == nil or rec.step == step) then
      ran = ran + 1
      by_tool[rec.name] = (by_tool[rec.name] or 0) + 1
    end
  end
  if ran == 0 then return end
  local total = ctx:get(tool_calls) + ran
  ctx:update(tool_calls, ran)
  -- by_tool becomes the update: each tool's new count
  local before = ctx:get(per_tool)
  for name, n in pairs(by_tool) do by_tool[name] = (before[name] or 0) + n end
  ctx:update(per_tool, by_tool)
  local warn_at = cfg.warn_at
  local max = cfg.max_tool_calls
  if max and total >= warn_at * max then
    maybe_warn(ctx, "tool_calls", total, max,
      "Budget: %d of %d tool calls used. A call past the limit stops the run; finish with the calls left.",
      total, max)
  end
  local limits = cfg.max_calls_per_tool
  local names
  for name, n in pairs(by_tool) do
    local m = limits[name]
    if m and n >= warn_at * m then
      names = names or {}
      names[#names + 1] = name
    end
  end
  if names == nil then return end
  table.sort(names)
  for _, name in ipairs(names) do
    local m = limits[name]
    maybe_warn(ctx, "calls_" .. name, by_tool[name], m,
      "Budget: %d of %d calls to %s used. A call past the limit stops the run.", by_tool[name], m, name)
  end
end

-- The call the gate refused (its result names the limit) stops the run; the
-- runtime interrupts the calls that have not run. step_end does not run
-- after a stop, so the step's calls are counted here. The gate's decision
-- comes with the call (ctx.tool.decision and decided_by): only a refusal
-- by this plugin's gate has its result read; a host that gives no decision
-- has it checked against the runtime's record of the call.
p:on("after_tool_execute", function(ctx)
  local tool = ctx.tool
  local decision = tool.decision
  if decision ~= nil and (decision ~= "set_result" or tool.decided_by ~= ctx.plugin) then return end
  local result = tool.result
  local data = result and result.data
  local limit = type(data) == "table" and data.budget_exceeded
  if type(limit) ~= "string" then return end
  -- answered by this plugin's gate, not a tool whose data looks alike
  local calls = step_calls(ctx)
  if decision == nil then
    local rec = calls[tool.id]
    if rec == nil or rec.decision ~= "set_result" or rec.plugin ~= ctx.plugin then return end
  end
  count_calls(ctx, calls)
  ctx:stop("budget_" .. limit, result.message)
end)

-- A step past max_steps is one another plugin asked for (runtime.continue
-- after an answer without tool calls at the last allowed step, which
-- step_end let end naturally): it stops before the model is asked again.
p:on("step_start", function(ctx)
  local max = ctx.config.max_steps
  if max == nil then return end
  local step = ctx.run.step
  if step > max then
    ctx:stop("budget_steps", string.format("%d steps used, the limit is %d", step - 1, max))
  end
end)

p:on("step_end", function(ctx)
  local cfg = ctx.config
  local calls
  if cfg.max_tool_calls ~= nil or next(cfg.max_calls_per_tool) ~= nil then
    calls = step_calls(ctx)
    count_calls(ctx, calls)
  end
  local max = cfg.max_steps
  if max == nil then return end
  local step = ctx.run.step
  if step >= max then
    -- an answer without tool calls ends the run naturally at this step
    if next(calls or step_calls(ctx)) ~= nil then
      ctx:stop("budget_steps", string.format("%d steps used, the limit is %d", step, max))
    end
  elseif step >= cfg.warn_at * max then
    maybe_warn(ctx, "steps", step, max,
      "Budget: step %d of %d done. The run stops after step %d; finish the task by then.", step, max, max)
  end
end)

return p
