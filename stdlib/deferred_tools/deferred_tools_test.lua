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
  t.eq(r.requests[2].tools, { "ToolSearch", "beta" })
  local l2 = listing(r.requests[2])
  t.eq(l2:find("- beta:", 1, true), nil, "beta left the listing")
  t.match(l2, "\nLoaded by earlier searches: beta%.$")
  -- the call to beta ran
  t.eq(r.messages[5].role, "tool")
  t.eq(r.messages[5].content, "ok")
  t.eq(r.state["deferred_tools.searches"], { "beta" })
end)

t.test("searches are thread-scoped", function()
  local h = harness {}
  h:run { prompt = "go", thread = "t1", tools = TOOLS, turns = {
    { tool_calls = { { name = "ToolSearch", args = { query = "select:gamma" } } } }, { text = "done" } } }
  local again = h:run { prompt = "more", thread = "t1", tools = TOOLS, turns = { { text = "done" } } }
  t.eq(again.requests[1].tools, { "ToolSearch", "gamma" })
  local other = h:run { prompt = "new", thread = "t2", tools = TOOLS, turns = { { text = "done" } } }
  t.eq(other.requests[1].tools, { "ToolSearch" })
end)

t.test("a deferred tool that was not loaded cannot be called", function()
  local h = harness {}
  local r = h:run { prompt = "go", tools = TOOLS, turns = {
    { tool_calls = { { name = "alpha", args = {} } } }, { text = "done" } } }
  t.match(r.messages[3].content, "^error: tool \"alpha\" is not available in this step")
end)

t.test("eager rules, globs, and ToolSearch leaving once nothing is deferred", function()
  local h = harness { default = "eager", rules = { { tool = "mcp__*", mode = "deferred" } } }
  local r = h:run { prompt = "go", tools = TOOLS, turns = {
    { tool_calls = { { name = "ToolSearch", args = { query = "github issues" } } } }, { text = "done" } } }
  t.eq(r.requests[1].tools, { "ToolSearch", "alpha", "beta", "gamma" })
  t.eq(listing(r.requests[1]), "Deferred tools: these tools exist but are not loaded. To use one, call ToolSearch " ..
    "with keywords from its name or description, or with \"select:<name>,<name>\"; the tools it finds are offered " ..
    "from your next step.\n- mcp__github__issues: test tool mcp__github__issues")
  -- all found: no listing, no ToolSearch
  t.eq(r.requests[2].tools, { "alpha", "beta", "gamma", "mcp__github__issues" })
  t.eq(listing(r.requests[2]), nil)
  for _, m in ipairs(r.requests[2].messages) do
    t.eq(m.content:find(catalog.MARKER, 1, true), nil, "no marker reaches the model")
  end
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
    { tool_calls = { { name = "ToolSearch", args = { query = "   " } } } }, { text = "done" } } }
  t.match(r.messages[3].content, "^error: the query is empty")
  t.eq(r.state["deferred_tools.searches"], nil)
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
