-- deferred_tools: hides deferred tools from the model, lists them (name and
-- description) in one context message, and offers a ToolSearch tool that
-- loads the ones matching its query from the next step on.
--
-- How the parts meet: only the request transform sees the tool list (names
-- and descriptions), and transforms cannot read config or state. So the
-- before_inference hook schedules the listing's context message
-- ("deferred_tools.listing") holding the settings and the searches made so
-- far; the transform reads them from it, removes the deferred tools from
-- request.tools and replaces the message's content with the listing. The
-- plan is recomputed every step, so the listing never goes stale.
local awaken = require("awaken")
local catalog = require("deferred_tools.catalog")

local p = awaken.plugin {
  id = "deferred_tools",
  description = "Hides deferred tools until the model finds them with ToolSearch",
  config = {
    default = { type = "string", enum = { "deferred", "eager" }, default = "deferred" },
    rules = {
      type = "array",
      default = {},
      items = {
        type = "object",
        required = { "tool", "mode" },
        additionalProperties = false,
        properties = {
          -- an exact tool name or a glob (awaken.glob)
          tool = { type = "string", minLength = 1 },
          mode = { type = "string", enum = { "eager", "deferred" } },
        },
      },
    },
    -- tools one keyword search loads at most
    max_results = { type = "integer", minimum = 1, default = 5 },
  },
  validate = function(config)
    local problems = {}
    for i, rule in ipairs(config.rules or {}) do
      local at = "rules[" .. (i - 1) .. "].tool: "
      local err = catalog.check_tool(rule.tool)
      if err then problems[#problems + 1] = at .. err end
      if rule.tool == catalog.SEARCH_TOOL and rule.mode == "deferred" then
        problems[#problems + 1] = at .. catalog.SEARCH_TOOL .. " cannot be deferred: it is how deferred tools are found"
      end
    end
    if #problems > 0 then return problems end
  end,
}

-- The ToolSearch queries made on this thread. Thread-scoped: a tool the
-- model has found stays loaded for the rest of the conversation, in later
-- runs too. Queries (not tool names) are kept because only the transform
-- sees the tools; it resolves them every step.
local searches = p:key("deferred_tools.searches", {
  scope = "thread", merge = "commutative", reducer = "union", default = {},
  schema = { type = "array", items = { type = "string" } },
})

-- Whether the config can defer any tool at all.
local function defers(cfg)
  if cfg.default == "deferred" then return true end
  for _, rule in ipairs(cfg.rules) do
    if rule.mode == "deferred" then return true end
  end
  return false
end

p:on("before_inference", function(ctx)
  local cfg = ctx.config
  if not defers(cfg) then return end
  ctx:schedule("runtime.add_context_message", {
    key = "deferred_tools.listing",
    kind = "persistent",
    target = "system",
    content = catalog.encode({
      default = cfg.default, rules = cfg.rules, max_results = cfg.max_results, searches = ctx:get(searches),
    }),
  })
end)

p:transform(function(request)
  local i, settings = catalog.find(request.messages)
  if i == nil or type(settings) ~= "table" then
    -- nothing can be deferred (see defers): ToolSearch has nothing to find
    for j, t in ipairs(request.tools) do
      if t.name == catalog.SEARCH_TOOL then
        table.remove(request.tools, j)
        return request
      end
    end
    return nil
  end
  local plan = catalog.plan(request.tools, settings)
  request.tools = plan.offered
  local listing = catalog.listing(plan)
  if listing then
    request.messages[i].content = listing
  else
    table.remove(request.messages, i)
  end
  return request
end)

p:tool {
  id = catalog.SEARCH_TOOL,
  description = "Loads deferred tools (see the \"Deferred tools\" list) by keywords from their names and descriptions, " ..
    "or by exact names with \"select:name1,name2\". The tools found are offered from the next step.",
  parameters = {
    type = "object",
    required = { "query" },
    properties = {
      query = { type = "string", minLength = 1, description = "keywords, or select:<name>,<name>" },
    },
  },
  execute = function(ctx, args)
    local query = args.query:match("^%s*(.-)%s*$")
    if query == "" then
      return awaken.error("the query is empty: give keywords from a tool's name or description, or select:<name>")
    end
    ctx:update(searches, query)
    local what = query:find("^select:") and "the tools named in it"
      or ("up to " .. ctx.config.max_results .. " deferred tools matching it")
    return awaken.success("Search \"" .. query .. "\" recorded: " .. what ..
      " are offered from your next step. The deferred tools list then shows which were loaded.")
  end,
}

return p
