-- verify: when a run edited files but never ran the tests, keep it going
-- once (runtime.continue) with a message that asks the model to run them.
local awaken = require("awaken")
local match = require("reminder.match")

local DEFAULT_MESSAGE = "You changed files but did not run the tests. Run them now, fix what fails, then finish."

local prepare -- below: the parsed patterns of a config, as ctx.prepared

local function patterns(description, default)
  return { type = "array", default = default, description = description,
    items = { type = "string", minLength = 1 } }
end

local p = awaken.plugin {
  id = "verify",
  description = "Continues a run once when it edited files but never ran the test command",
  config = {
    edits = patterns("tool patterns of calls that edit files",
      { "Write", "Edit", "MultiEdit", "NotebookEdit", "fs_write" }),
    tests = patterns("tool patterns of calls that run the tests",
      { "Bash(go test*)", "Bash(make test*)", "Bash(npm test*)", "Bash(npm run test*)", "Bash(pytest*)",
        "Bash(cargo test*)", "shell(cmd ~ \"go test*\")", "shell(cmd ~ \"make test*\")" }),
    message = { type = "string", minLength = 1, default = DEFAULT_MESSAGE },
  },
  validate = function(config)
    local problems = {}
    for _, field in ipairs { "edits", "tests" } do
      for i, pattern in ipairs(config[field] or {}) do
        local _, err = match.tool_rule(pattern)
        if err then problems[#problems + 1] = field .. "[" .. (i - 1) .. "]: " .. err end
      end
    end
    if #problems > 0 then return problems end
  end,
  prepare = function(config) return prepare(config) end,
}

-- What the run did: edited (a successful edit), tested (the test command
-- ran, whatever its outcome), asked (the plugin continued the run).
local seen = p:key("verify.run", {
  scope = "run",
  merge = "exclusive",
  default = { edited = false, tested = false, asked = false },
  schema = {
    type = "object",
    properties = { edited = { type = "boolean" }, tested = { type = "boolean" }, asked = { type = "boolean" } },
  },
})

function prepare(config)
  local function parse(list)
    local out = {}
    for i = 1, #list do out[i] = match.tool_rule(list[i]) end
    return out
  end
  return { edits = parse(config.edits), tests = parse(config.tests), message = config.message }
end

local function matches(list, tool)
  local st
  for i = 1, #list do
    local rule = list[i]
    local hit = match.simple(rule, tool.name)
    if hit == nil then
      st = st or { budget = { left = match.DECISION_BUDGET }, cache = {} }
      hit = match.tool(rule, tool.name, tool, st)
    end
    if hit then return true end
  end
  return false
end

p:on("after_tool_execute", function(ctx)
  local cur = ctx:get(seen)
  local tool = ctx.tool
  local prep = ctx.prepared
  local edited = cur.edited or (tool.result.status == "success" and matches(prep.edits, tool))
  local tested = cur.tested or matches(prep.tests, tool)
  if edited ~= cur.edited or tested ~= cur.tested then
    ctx:update(seen, { edited = edited, tested = tested, asked = cur.asked })
  end
end)

p:on("after_inference", function(ctx)
  if #ctx.response.tool_calls > 0 then return end
  local cur = ctx:get(seen)
  if cur.edited and not cur.tested and not cur.asked then
    ctx:update(seen, { edited = true, tested = false, asked = true })
    ctx:schedule("runtime.continue", { content = ctx.prepared.message })
  end
end)

return p
