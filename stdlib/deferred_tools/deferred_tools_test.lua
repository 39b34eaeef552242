local awaken = require("awaken")
local t = require("awaken.testing")
local catalog = require("deferred_tools.catalog")

local function harness(config)
  return t.harness { plugins = { "deferred_tools" }, config = { deferred_tools = config } }
end

local function ok() return awaken.success("ok") end

-- Test tools are described as "test tool <name>".
local TOOLS = { alpha = ok, beta = ok, gamma = ok, mcp__github__issues = ok }

local function listing(req)
  for _, m in ipairs(req.messages) do
    if m.content:find("^Deferred tools:") then return m.content end
  end
end

-- The tool messages of a run, in order.
local function tool_messages(r)
  local out = {}
  for _, m in ipairs(r.messages) do
    if m.role == "tool" then out[#out + 1] = m.content end
  end
  return out
end

t.test("deferred tools are hidden and listed; ToolSearch loads them from the next step", function()
  local h = harness {}
  local r = h:run { prompt = "go", thread = "t1", tools = TOOLS, turns = {
    { tool_calls = { { name = "ToolSearch", args = { query = "beta" } } } },
    { tool_calls = { { name = "beta", args = {} } } },
    { text = "done" },
  } }
  t.eq(r.termination, "natural")
  t.eq(r.requests[1].tools, { "ToolSearch" })
  local l1 = listing(r.requests[1])
  t.match(l1, "\n%- alpha: test tool alpha\n")
  t.match(l1, "\n%- beta: test tool beta\n")
  t.match(l1, "\n%- mcp__github__issues: test tool mcp__github__issues")
  -- the listing follows the system prompt's place: first here (no prompt)
  t.eq(r.requests[1].messages[1].content, l1)
  -- ToolSearch names what it loaded
  t.eq(tool_messages(r)[1], "Loaded (offered from your next step):\n- beta: test tool beta")
  t.eq(r.requests[2].tools, { "ToolSearch", "beta" })
  local l2 = listing(r.requests[2])
  t.eq(l2:find("- beta:", 1, true), nil, "beta left the listing")
  t.match(l2, "\nLoaded by earlier searches: beta%.$")
  -- the call to beta ran
  t.eq(tool_messages(r)[2], "ok")
  t.eq(r.state["deferred_tools.loaded"], { "beta" })
  -- one listing message per request, never a stale copy
  for _, req in ipairs(r.requests) do
    local n = 0
    for _, m in ipairs(req.messages) do
      if m.content:find("^Deferred tools:") then n = n + 1 end
    end
    t.eq(n, 1)
  end
  t.eq(listing(r.requests[3]), l2, "an unchanged step keeps the listing")
end)

t.test("searches are thread-scoped", function()
  local h = harness {}
  local first = h:run { prompt = "go", thread = "t1", tools = TOOLS, turns = {
    { tool_calls = { { name = "ToolSearch", args = { query = "select:gamma" } } } }, { text = "done" } } }
  t.eq(tool_messages(first)[1], "Loaded (offered from your next step):\n- gamma: test tool gamma")
  local again = h:run { prompt = "more", thread = "t1", tools = TOOLS, turns = { { text = "done" } } }
  t.eq(again.requests[1].tools, { "ToolSearch", "gamma" })
  -- a new run lists again, from its first request
  t.match(listing(again.requests[1]), "\nLoaded by earlier searches: gamma%.$")
  local other = h:run { prompt = "new", thread = "t2", tools = TOOLS, turns = { { text = "done" } } }
  t.eq(other.requests[1].tools, { "ToolSearch" })
  t.eq(listing(other.requests[1]):find("Loaded by", 1, true), nil)
end)

t.test("ToolSearch names its matches: loaded, already available, unknown, none", function()
  local h = harness { rules = { { tool = "alpha", mode = "eager" } } }
  local r = h:run { prompt = "go", tools = TOOLS, turns = {
    { tool_calls = { { name = "ToolSearch", args = { query = "github issues" } } } },
    { tool_calls = { { name = "ToolSearch", args = { query = "select:alpha, mcp__github__issues,Beta, nope" } } } },
    { tool_calls = { { name = "ToolSearch", args = { query = "issues" } } } },
    { tool_calls = { { name = "ToolSearch", args = { query = "zebra" } } } },
    { text = "done" },
  } }
  local msgs = tool_messages(r)
  t.eq(msgs[1], "Loaded (offered from your next step):\n- mcp__github__issues: test tool mcp__github__issues")
  -- select: alpha is eager, the github tool was loaded, beta (any case) is hidden
  t.eq(msgs[2], "Loaded (offered from your next step):\n- beta: test tool beta\n" ..
    "Already available: alpha and mcp__github__issues.\nNo deferred tool is named nope.")
  -- keywords that match only offered tools
  t.eq(msgs[3], "Already available: mcp__github__issues.")
  t.match(msgs[4], "^No deferred tool matches \"zebra\"%. Try other keywords")
  t.eq(r.state["deferred_tools.loaded"], { "mcp__github__issues", "beta" })
  t.eq(r.requests[3].tools, { "ToolSearch", "alpha", "beta", "mcp__github__issues" })
end)

t.test("a deferred tool that was not loaded cannot be called", function()
  local h = harness {}
  local r = h:run { prompt = "go", tools = TOOLS, turns = {
    { tool_calls = { { name = "alpha", args = {} } } }, { text = "done" } } }
  t.match(r.messages[3].content, "^error: tool \"alpha\" is not available in this step")
end)

t.test("eager rules, globs, and the listing and ToolSearch leaving once nothing is deferred", function()
  local h = harness { default = "eager", rules = { { tool = "mcp__*", mode = "deferred" } } }
  local r = h:run { prompt = "go", tools = TOOLS, turns = {
    { tool_calls = { { name = "ToolSearch", args = { query = "github issues" } } } },
    { tool_calls = { { name = "mcp__github__issues", args = {} } } },
    { text = "done" } } }
  t.eq(r.requests[1].tools, { "ToolSearch", "alpha", "beta", "gamma" })
  t.eq(listing(r.requests[1]), "Deferred tools: these tools exist but are not loaded. To use one, call ToolSearch " ..
    "with keywords from its name or description, or with \"select:<name>,<name>\"; the tools it finds are offered " ..
    "from your next step.\n- mcp__github__issues: test tool mcp__github__issues")
  -- all found: no listing, no ToolSearch, in every later request
  for i = 2, 3 do
    t.eq(r.requests[i].tools, { "alpha", "beta", "gamma", "mcp__github__issues" })
    t.eq(listing(r.requests[i]), nil)
    t.eq(#r.requests[i].messages, #r.messages - (i == 2 and 3 or 1), "only the conversation")
  end
  t.eq(tool_messages(r)[2], "ok")
end)

t.test("an exact rule wins over a glob rule", function()
  local settings = { default = "deferred", rules = {
    { tool = "mcp__*", mode = "deferred" }, { tool = "mcp__github__issues", mode = "eager" } } }
  t.eq(catalog.mode_of("mcp__github__issues", settings), "eager")
  t.eq(catalog.mode_of("mcp__github__pulls", settings), "deferred")
  t.eq(catalog.mode_of("shell", { default = "eager", rules = {} }), "eager")
  local h = harness { rules = { { tool = "alpha", mode = "eager" } } }
  local r = h:run { prompt = "go", tools = TOOLS, turns = { { text = "done" } } }
  t.eq(r.requests[1].tools, { "ToolSearch", "alpha" })
end)

t.test("keyword search: all keywords first, names over descriptions, max_results", function()
  local tools = {
    { name = "fs_read", description = "Reads a file from the workspace" },
    { name = "fs_write", description = "Writes a file" },
    { name = "mcp__github__list_issues", description = "Lists issues of a repository" },
    { name = "mcp__github__create_issue", description = "Opens an issue" },
    { name = "notes", description = "Keeps notes about github issues" },
  }
  local function names(list)
    local out = {}
    for i, x in ipairs(list) do out[i] = x.name end
    return out
  end
  t.eq(names(catalog.search(tools, "read files", 5)), { "fs_read" })
  t.eq(names(catalog.search(tools, "file", 5)), { "fs_read", "fs_write" })
  t.eq(names(catalog.search(tools, "github issue", 5)), { "mcp__github__list_issues", "mcp__github__create_issue", "notes" })
  t.eq(names(catalog.search(tools, "github issue", 2)), { "mcp__github__list_issues", "mcp__github__create_issue" })
  t.eq(names(catalog.search(tools, "select:notes, fs_write", 5)), { "fs_write", "notes" })
  t.eq(names(catalog.search(tools, "nothing here", 5)), {})
  t.eq(names(catalog.search(tools, "  NOTES ", 5)), { "notes" })
end)

t.test("a config that defers nothing leaves the request alone", function()
  local h = harness { default = "eager" }
  local r = h:run { prompt = "go", tools = TOOLS, turns = { { text = "done" } } }
  t.eq(r.requests[1].tools, { "alpha", "beta", "gamma", "mcp__github__issues" })
  t.eq(#r.requests[1].messages, 1)
end)

t.test("ToolSearch refuses an empty query", function()
  local h = harness {}
  local r = h:run { prompt = "go", tools = TOOLS, turns = {
    { tool_calls = { { name = "ToolSearch", args = { query = "   " } }, { name = "ToolSearch", args = { query = "select: ," } } } },
    { text = "done" } } }
  t.match(r.messages[3].content, "^error: the query is empty")
  t.match(r.messages[4].content, "^error: the query is empty")
  t.eq(r.state["deferred_tools.loaded"], nil)
end)

t.test("the catalog holds the deferred-mode tools with their descriptions", function()
  local h = harness { rules = { { tool = "alpha", mode = "eager" } } }
  local r = h:run { prompt = "go", tools = TOOLS, turns = { { text = "done" } } }
  t.eq(r.state["deferred_tools.catalog"], {
    { name = "beta", description = "test tool beta" },
    { name = "gamma", description = "test tool gamma" },
    { name = "mcp__github__issues", description = "test tool mcp__github__issues" },
  })
end)

t.test("plan, offered and resolve (module level)", function()
  local tools = {
    { name = "ToolSearch", description = "s" }, { name = "a", description = "first" },
    { name = "b", description = "second" }, { name = "c", description = "third" },
  }
  local raw = { default = "deferred", rules = { { tool = "a", mode = "eager" } } }
  local cfg = catalog.prepare(raw)
  local plan = catalog.plan(tools, cfg, { c = true })
  t.eq(plan.candidates, { { name = "b", description = "second" }, { name = "c", description = "third" } })
  t.eq(plan.deferred, { { name = "b", description = "second" } })
  t.eq(plan.loaded, { "c" })
  local function names(list)
    local out = {}
    for i, x in ipairs(list) do out[i] = x.name end
    return out
  end
  t.eq(names(catalog.offered(tools, cfg, { c = true })), { "ToolSearch", "a", "c" })
  t.eq(names(catalog.offered(tools, cfg, { b = true, c = true })), { "a", "b", "c" })
  t.eq(catalog.offered({ { name = "a" } }, cfg, {}), nil, "unchanged")
  -- the signature changes with the tools, their descriptions, the loaded
  -- tools and the config, and only with them
  local sig = catalog.signature(tools, { "c" }, cfg)
  t.eq(catalog.signature(tools, { "c" }, catalog.prepare({ default = "deferred", rules = { { tool = "a", mode = "eager" } }, max_results = 9 })), sig)
  t.neq(catalog.signature(tools, {}, cfg), sig)
  t.neq(catalog.signature({ tools[1], tools[2] }, { "c" }, cfg), sig)
  t.neq(catalog.signature(tools, { "c" }, catalog.prepare({ default = "eager", rules = raw.rules })), sig)
  local changed = { tools[1], tools[2], tools[3], { name = "c", description = "3rd" } }
  t.neq(catalog.signature(changed, { "c" }, cfg), sig)
  -- exact patterns match only their own name; globs through awaken.glob
  t.eq(catalog.mode_of("a", { default = "deferred", rules = { { tool = "a", mode = "eager" } } }), "eager")
  t.eq(catalog.mode_of("ab", { default = "deferred", rules = { { tool = "a", mode = "eager" } } }), "deferred")
  t.eq(catalog.mode_of("ab", { default = "deferred", rules = { { tool = "a?", mode = "eager" } } }), "eager")
  t.eq(catalog.mode_of("a[", { default = "deferred", rules = { { tool = "a[[]", mode = "eager" } } }), "eager")
  t.eq(catalog.mode_of("ab", { default = "deferred", rules = { { tool = "a\\b", mode = "eager" } } }), "eager")
  local found = catalog.resolve(plan.candidates, { a = true, c = true, ToolSearch = true }, "select:A,b,c,zz", 5)
  t.eq(names(found.load), { "b" })
  t.eq(found.available, { "a", "c" })
  t.eq(found.unknown, { "zz" })
end)

t.test("prepared settings decide modes", function()
  local cfg = catalog.prepare({ default = "deferred", rules = {
    { tool = "a?", mode = "eager" }, { tool = "a*", mode = "deferred" }, { tool = "ab", mode = "deferred" }, { tool = "a?", mode = "deferred" } } })
  t.eq(cfg.exact, { ["a?"] = "eager", ["a*"] = "deferred", ab = "deferred" })
  t.eq(#cfg.globs, 3)
  t.eq(cfg.defers, true)
  t.eq(catalog.mode(cfg, "ab"), "deferred") -- the rule that names it, over an earlier glob
  t.eq(catalog.mode(cfg, "ac"), "eager") -- the first glob
  t.eq(catalog.mode(cfg, "a?"), "eager")
  t.eq(catalog.mode(cfg, "zz"), "deferred")
  t.eq(catalog.prepare({ default = "eager", rules = { { tool = "x", mode = "eager" } } }).defers, false)
  -- plain data: what prepare returns crosses into Go and back unchanged
  t.eq(awaken.json.decode(awaken.json.encode(cfg)), cfg)
  local function names(list)
    local out = {}
    for i, x in ipairs(list or {}) do out[i] = x.name end
    return out
  end
  local all = { { name = "ToolSearch" }, { name = "a" }, { name = "b" } }
  local eager_a = catalog.prepare({ default = "deferred", rules = { { tool = "a", mode = "eager" } } })
  t.eq(names(catalog.offered(all, eager_a, {})), { "ToolSearch", "a" })
  t.eq(names(catalog.offered(all, catalog.prepare({ default = "eager", rules = { { tool = "a", mode = "deferred" } } }), {})),
    { "ToolSearch", "b" })
  t.eq(names(catalog.offered(all, eager_a, { b = true })), { "a", "b" })
  t.eq(names(catalog.plan(all, catalog.prepare({ default = "eager", rules = {} }), {}).candidates), {})
  t.eq(names(catalog.plan(all, eager_a, {}).candidates), { "b" })
end)

t.test("a whole run: one listing while the tools stay the same, a new one when they change", function()
  local h = harness { default = "eager", rules = { { tool = "mcp__*", mode = "deferred" } } }
  local r = h:run { prompt = "go", tools = TOOLS, turns = {
    { tool_calls = { { name = "alpha", args = {} } } },
    { tool_calls = { { name = "beta", args = {} } } },
    { text = "done" } } }
  t.eq(r.termination, "natural")
  for i = 1, 3 do
    t.eq(r.requests[i].tools, { "ToolSearch", "alpha", "beta", "gamma" })
    t.match(listing(r.requests[i]), "\n%- mcp__github__issues: test tool mcp__github__issues$")
  end
  local other = { alpha = ok, mcp__github__issues = ok, mcp__jira__search = ok }
  r = h:run { prompt = "go", tools = other, turns = { { text = "done" } } }
  t.eq(r.requests[1].tools, { "ToolSearch", "alpha" })
  t.match(listing(r.requests[1]), "\n%- mcp__jira__search: test tool mcp__jira__search$")
end)

t.test("config errors", function()
  t.raises(function() harness { default = "lazy" } end, "^config_invalid: deferred_tools%.default")
  t.raises(function() harness { rules = { { tool = "a" } } } end, "rules%[0%]: missing required property \"mode\"")
  t.raises(function() harness { rules = { { tool = "a", mode = "later" } } } end, "rules%[0%]%.mode")
  t.raises(function() harness { rules = { { tool = "a", mode = "eager" }, { tool = "/x.*/", mode = "eager" } } } end,
    "rules%[1%]%.tool: regex tool patterns are not supported")
  t.raises(function() harness { rules = { { tool = "ToolSearch", mode = "deferred" } } } end,
    "rules%[0%]%.tool: ToolSearch cannot be deferred")
  t.raises(function() harness { max_results = 0 } end, "max_results")
end)
