-- deferred_tools: hides deferred tools from the model, lists them (name and
-- description) in one context message, and offers a ToolSearch tool that
-- loads the ones matching its query from the next step on.
--
-- How the parts meet:
--   before_inference  sees the step's candidate tools (ctx.tools); works out
--                     which are deferred (config rules, minus the tools
--                     loaded by earlier searches), records the catalog of
--                     deferred-mode tools (name and description) for
--                     ToolSearch, and schedules the listing message
--                     (persistent), or its removal once nothing is
--                     deferred. Only a change is recorded or scheduled.
--   transform         removes the deferred tools (and ToolSearch when
--                     nothing is deferred) from request.tools, from
--                     ctx.config and the loaded tools (ctx:get).
--   ToolSearch        resolves its query against the catalog and the tools
--                     offered in this step (ctx.tools), records the tools it
--                     loads, and names them in its result.
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
  -- the rules sorted into exact names and globs, once per config
  prepare = function(config)
    return catalog.prepare(config)
  end,
}

-- The tools ToolSearch loaded on this thread. Thread-scoped: a tool the
-- model has found stays loaded for the rest of the conversation, in later
-- runs too.
local loaded = p:key("deferred_tools.loaded", {
  scope = "thread", merge = "commutative", reducer = "union", default = {},
  schema = { type = "array", items = { type = "string" } },
})

-- The step's tools in deferred mode, loaded or not ({name, description}, in
-- tool order): what ToolSearch searches.
local catalog_key = p:key("deferred_tools.catalog", {
  scope = "run", default = {},
  schema = {
    type = "array",
    items = {
      type = "object",
      required = { "name" },
      properties = { name = { type = "string" }, description = { type = "string" } },
    },
  },
})

-- The signature (catalog.signature) of what the catalog and the listing
-- were last worked out from: a step whose tools, loaded tools and config
-- did not change works out and records nothing.
local recorded = p:key("deferred_tools.recorded", {
  scope = "run", default = "", schema = { type = "string" },
})

-- What a config that defers nothing offers: everything but ToolSearch.
local EAGER, NONE_LOADED = catalog.prepare({ default = "eager", rules = {} }), {}

p:on("before_inference", function(ctx)
  local prep = ctx.prepared
  if not prep.defers then return end
  local tools, names = ctx.tools, ctx:get(loaded)
  local sig = catalog.signature(tools, names, prep)
  if sig == ctx:get(recorded) then return end
  local plan = catalog.plan(tools, prep, catalog.set(names))
  local listing = catalog.listing(plan)
  ctx:update(recorded, sig)
  ctx:update(catalog_key, plan.candidates)
  if listing then
    ctx:schedule("runtime.add_context_message", {
      key = catalog.LISTING_KEY, kind = "persistent", target = "system", content = listing,
    })
  else
    ctx:schedule("runtime.remove_context_message", { key = catalog.LISTING_KEY })
  end
end)

p:transform(function(request, ctx)
  local prep = ctx.prepared
  local tools
  if prep.defers then
    tools = catalog.offered(request.tools, prep, catalog.set(ctx:get(loaded)))
  else
    -- nothing can be deferred: ToolSearch has nothing to find
    tools = catalog.offered(request.tools, EAGER, NONE_LOADED)
  end
  if tools == nil then return nil end
  request.tools = tools
  return request
end)

-- "a, b and c"
local function names(list)
  if #list == 1 then return list[1] end
  return table.concat(list, ", ", 1, #list - 1) .. " and " .. list[#list]
end

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
    if query == "" or query:match("^select:[%s,]*$") then
      return awaken.error("the query is empty: give keywords from a tool's name or description, or select:<name>")
    end
    local offered = {}
    for _, t in ipairs(ctx.tools) do offered[t.name] = true end
    local found = catalog.resolve(ctx:get(catalog_key), offered, query, ctx.config.max_results)
    local lines = {}
    if #found.load > 0 then
      local new = {}
      lines[1] = "Loaded (offered from your next step):"
      for i, t in ipairs(found.load) do
        new[i] = t.name
        local d = catalog.short(t.description)
        lines[#lines + 1] = "- " .. t.name .. (d ~= "" and (": " .. d) or "")
      end
      ctx:update(loaded, new)
    end
    if #found.available > 0 then
      lines[#lines + 1] = "Already available: " .. names(found.available) .. "."
    end
    if #found.unknown > 0 then
      lines[#lines + 1] = "No deferred tool is named " .. names(found.unknown) .. "."
    end
    if #lines == 0 then
      lines[1] = "No deferred tool matches \"" .. query .. "\". Try other keywords, or select:<name> with a name " ..
        "from the \"Deferred tools\" list."
    end
    return awaken.success(table.concat(lines, "\n"))
  end,
}

return p
