-- permission: allow, ask or deny each tool call by rules.
--
--   [plugins.permission]
--   default = "ask"            # when no rule matches: allow | ask | deny
--   deny_mode = "block"        # block: the run ends blocked:<reason>
--                              # reject: the call gets an error result and the model carries on
--   rules = [
--     { tool = "Read", behavior = "allow" },
--     { tool = "Bash(npm *)", behavior = "allow" },
--     { tool = "Bash(rm *)", behavior = "deny" },
--     { tool = 'Edit(file_path ~ "src/**")', behavior = "allow" },
--     { tool = "mcp__github__*", behavior = "ask" },
--     { tool = "/mcp__(gh|gl)__.*/", behavior = "deny" },
--   ]
--   # Claude Code's permissions block, pasted as it is (awaken.rules)
--   claude_code = { allow = ["Bash(npm run test:*)"], ask = ["Bash(git push *)"], deny = ["Read(./.env)"] }
--   project_dir = "/home/me/shop"   # anchors /x path rules (and ./x and bare ones
--                                   # when the agent reports no working directory)
--   home_dir = "/home/me"           # anchors ~/x
--
-- Path rules are anchored as Claude Code anchors them: ./x and bare names
-- at the working directory the agent reported on the call's event
-- (ctx.run.cwd), else at project_dir; /x at project_dir, else at the
-- working directory (deny and ask rules at each directory above it too);
-- ~/x at home_dir. Without either, such rules cannot be
-- judged: deny and ask rules match every call of their tools, allow rules
-- none.
--
-- The rule syntax is described in rules.lua. Deny beats allow beats ask;
-- among the rules of the winning behaviour the most specific one names the
-- decision. The claude_code block decides as Claude Code does (deny, then
-- ask, then allow); with both, the stricter decision wins (deny over ask
-- over allow), and the default applies when neither decides. "ask" suspends the call with the options allow_once,
-- allow_always, reject_once and reject_always; the *_always answers are
-- remembered for the thread (same tool, same arguments) and never override
-- a configured deny. Tools denied outright (an exact or glob rule without
-- argument conditions) are not offered to the model at all.

local awaken = require("awaken")
local rules = require("permission.rules")

local OPTIONS = { "allow_once", "allow_always", "reject_once", "reject_always" }
local REJECTED = "rejected by the user"

-- claudeCode is what awaken.rules.compile reads of the config.
local function claudeCode(config)
  local cc = config.claude_code
  return { allow = cc.allow, ask = cc.ask, deny = cc.deny, project_dir = config.project_dir, home_dir = config.home_dir }
end

-- ccIndex maps each rule of the block to its list and first index, for
-- messages: {deny = {["Bash(rm *)"] = 0}, ...}.
local function ccIndex(cc)
  local index = {}
  for _, list in ipairs({ "allow", "ask", "deny" }) do
    local at = {}
    for i, r in ipairs(cc[list] or {}) do
      if at[r] == nil then at[r] = i - 1 end
    end
    index[list] = at
  end
  return index
end

local p = awaken.plugin {
  id = "permission",
  description = "Allows, asks for or denies tool calls by rules on tool names and arguments",
  config = {
    default = { type = "string", enum = { "allow", "ask", "deny" }, default = "ask" },
    deny_mode = { type = "string", enum = { "block", "reject" }, default = "block" },
    rules = {
      type = "array",
      default = {},
      items = {
        type = "object",
        required = { "tool", "behavior" },
        additionalProperties = false,
        properties = {
          tool = { type = "string", minLength = 1 },
          behavior = { type = "string", enum = { "allow", "ask", "deny" } },
        },
      },
    },
    -- Claude Code's permissions block as its settings.json has it. Its
    -- other fields are accepted and ignored: Claude Code's own mode and
    -- directories still apply to what this plugin allows.
    claude_code = {
      type = "object",
      additionalProperties = false,
      properties = {
        allow = { type = "array", items = { type = "string" } },
        ask = { type = "array", items = { type = "string" } },
        deny = { type = "array", items = { type = "string" } },
        defaultMode = { type = "string" },
        additionalDirectories = { type = "array", items = { type = "string" } },
        disableBypassPermissionsMode = { type = "string" },
      },
    },
    project_dir = { type = "string", minLength = 1 },
    home_dir = { type = "string", minLength = 1 },
  },
  -- The schema checks shapes; this parses every rule so a bad one fails
  -- loading with its position ("rules[2].tool: unterminated quote in ...",
  -- "claude_code.deny[0]: permission rule ...").
  validate = function(config)
    local problems = {}
    for _, dir in ipairs({ "project_dir", "home_dir" }) do
      local v = config[dir]
      if v ~= nil and v:sub(1, 1) ~= "/" then
        problems[#problems + 1] = string.format("%s: %s is not an absolute path", dir, rules.quote(v))
      end
    end
    for _, m in ipairs(rules.validate(config.rules) or {}) do problems[#problems + 1] = m end
    if #problems == 0 and config.claude_code then
      local _, _, list = awaken.rules.compile(claudeCode(config))
      for _, m in ipairs(list or {}) do problems[#problems + 1] = "claude_code." .. m end
    end
    if #problems > 0 then return problems end
  end,
  -- Once per config (ctx.prepared): the rules parsed and indexed, their
  -- argument patterns compiled, and the claude_code block compiled.
  prepare = function(config)
    local cfg = rules.compile(config.rules)
    local dirs = { project_dir = config.project_dir, home_dir = config.home_dir }
    cfg.specs = rules.specifiers(cfg, dirs)
    if config.claude_code then
      cfg.cc = assert(awaken.rules.compile(claudeCode(config)))
      cfg.cc_index = ccIndex(config.claude_code)
      cfg.cc_hiding = #(config.claude_code.deny or {}) > 0
    end
    return cfg
  end,
}

-- Answers given with allow_always / reject_always, per thread: signature
-- (tool name + canonical JSON of the arguments, see rules.signature) ->
-- "allow" | "deny". Gates cannot write state, so after_tool_execute records
-- them once the resumed call has gone through.
local remembered = p:key("permission.thread_rules", {
  scope = "thread",
  reducer = "merge",
  default = {},
  schema = { type = "object", additionalProperties = { type = "string", enum = { "allow", "deny" } } },
})

-- describe names the winning rule (or the default) for messages: an entry
-- of rules, or a table {cc = list, rule, reason} for the claude_code block.
local function describe(winner, cfg)
  if not winner then return "the permission default" end
  if winner.cc then
    local at = cfg.cc_index[winner.cc][winner.rule] or 0
    local s = string.format("the permission rule %s (claude_code.%s[%d])", rules.quote(winner.rule), winner.cc, at)
    local target = winner.reason:match(": it writes to (.*), which the permission rule")
    if target then s = s .. " (it writes to " .. rules.truncate(target, 200) .. ")" end
    return s
  end
  return string.format("the permission rule %s (rules[%d])", rules.quote(winner.rule.source), winner.index)
end

local STRICTNESS = { deny = 3, ask = 2, allow = 1 }

-- decide combines the rules and the claude_code block: each decides on its
-- own (rules: deny over allow over ask; the block: deny over ask over
-- allow, as Claude Code), the stricter decision wins, and the default
-- applies when neither decides. call is the gate's call or ctx.tool; args
-- its arguments when Lua has them (or NO_ARGS when no rule reads them).
-- Path rules are anchored at the working directory of ctx's run: given
-- ctx as its directories, awaken.rules reads ctx.run.cwd in Go (when it is
-- an absolute path, not a Windows one) without building the ctx.run table
-- on every call.
local function decide(ctx, cfg, default, name, args, call, candidates)
  local behavior, winner = rules.decide(cfg, name, args, nil, candidates, call, cfg.specs, ctx)
  if cfg.cc then
    local b, rule, reason = cfg.cc:decide(call, ctx)
    if b and (not behavior or STRICTNESS[b] > STRICTNESS[behavior]) then
      behavior, winner = b, { cc = b, rule = rule, reason = reason }
    end
  end
  if not behavior then return default, nil end
  return behavior, winner
end

-- optionOf reads the chosen option from a resume decision's result:
-- {option = "..."} (or the bare string); no result means allow_once.
local function optionOf(result)
  if result == nil then return "allow_once" end
  if type(result) == "table" and type(result.option) == "string" then return result.option end
  if type(result) == "string" then return result end
  return nil
end

-- The configured decision for ctx.tool (thread answers not included).
local function configured(ctx, tool)
  return (decide(ctx, ctx.prepared, ctx.config.default or "ask", tool.name, tool.args, tool))
end

local NO_ARGS = {} -- what decide gets when no rule reads the arguments (never written)

p:tool_gate(function(ctx, call)
  local config = ctx.config
  local cfg = ctx.prepared
  local name = call.name
  -- the arguments cross into Lua only when a rule for the tool reads them,
  -- or a thread answer or a question names them (below)
  local args = nil
  local candidates = rules.candidates(cfg, name)
  if candidates.args == "lua" then args = call.args end
  local behavior, winner = decide(ctx, cfg, config.default or "ask", name, args or NO_ARGS, call, candidates)

  if behavior == "deny" then
    local reason = name .. " is denied by " .. describe(winner, cfg)
    if config.deny_mode == "reject" then
      return awaken.set_result(awaken.error(reason))
    end
    return awaken.block(reason)
  end

  -- The thread's own answers come before the configured allow and ask, but
  -- after the configured deny: "deny over allow" holds for them too (a deny
  -- added to the config later still applies).
  local answers = ctx:get(remembered)
  if type(answers) == "table" and next(answers) ~= nil then
    args = args or call.args
    local answer = answers[rules.signature(name, args)]
    if answer == "allow" then return nil end
    if answer == "deny" then return awaken.set_result(awaken.error(REJECTED)) end
  end

  if behavior == "allow" then return nil end

  -- ask. A resumed call comes back here with the human's answer; a cancel
  -- never does (the runtime cancels the call).
  local resume = call.resume
  if resume and resume.action == "resume" then
    local option = optionOf(resume.result)
    if option == "allow_once" or option == "allow_always" then return nil end
    if option == "reject_once" or option == "reject_always" then
      return awaken.set_result(awaken.error(REJECTED))
    end
    -- An answer that is none of the options is a rejection (fail closed)
    -- rather than a new question, so a confused host cannot loop.
    return awaken.set_result(awaken.error(string.format(
      "rejected: %s is not an option (options: %s)", rules.quote(tostring(option or awaken.json.encode(resume.result))),
      table.concat(OPTIONS, ", "))))
  end

  args = args or call.args
  local shown = rules.truncate(awaken.json.encode(args) or "{}", 300)
  return awaken.suspend {
    action = "permission",
    message = string.format("Allow %s %s? (asked by %s)", name, shown, describe(winner, cfg)),
    options = OPTIONS,
    parameters = { tool = name, args = args },
  }
end)

-- Records allow_always / reject_always for the thread. It runs for the
-- resumed call whether the gate let it run or answered it with the
-- rejection, and only when the configuration still asks for this call (so
-- an answer meant for another plugin's ticket is not taken as ours).
p:on("after_tool_execute", function(ctx)
  local tool = ctx.tool
  local resume = tool and tool.resume
  if not resume or resume.action ~= "resume" then return end
  local option = optionOf(resume.result)
  if option ~= "allow_always" and option ~= "reject_always" then return end
  if configured(ctx, tool) ~= "ask" then return end
  local verdict = option == "allow_always" and "allow" or "deny"
  ctx:update(remembered, { [rules.signature(tool.name, tool.args)] = verdict })
end)

-- Hides the tools denied outright from the model. The runtime then also
-- refuses calls to them (a tool that was not offered cannot be called), and
-- the gate would deny them anyway.
p:transform(function(request, ctx)
  local cfg = ctx.prepared
  -- most configs deny no tool outright: nothing to look at
  local cc = cfg.cc_hiding and cfg.cc
  if not rules.can_hide(cfg) and not cc then return nil end
  local kept, removed = {}, false
  for _, t in ipairs(request.tools or {}) do
    if rules.hides(cfg, t.name) or (cc and cc:denies_tool(t.name)) then
      removed = true
    else
      kept[#kept + 1] = t
    end
  end
  if not removed then return nil end
  request.tools = kept
  return request
end)

return p
