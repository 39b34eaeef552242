local awaken = require("awaken")
local t = require("awaken.testing")
local match = require("reminder.match")

local function harness(rules)
  return t.harness { plugins = { "reminder" }, config = { reminder = { rules = rules } } }
end

-- Runs after_tool_execute for one call and returns the scheduled actions.
local function after(h, name, result, args, opts)
  local r = h:phase("after_tool_execute", { tool = { name = name, args = args or {}, result = result } }, opts)
  return r.pending_actions
end

t.test("a matching call schedules an ephemeral message for the next step", function()
  local h = harness { { tool = "fs_read", message = { content = "Check the file for TODOs." } } }
  local pending = after(h, "fs_read", awaken.success("text"))
  t.eq(#pending, 1)
  t.eq(pending[1].key, "runtime.add_context_message")
  t.eq(pending[1].phase, "before_inference")
  t.eq(pending[1].payload, {
    key = "reminder.rule_000", content = "Check the file for TODOs.", target = "system",
    priority = 0, kind = "ephemeral",
  })
  t.eq(#after(h, "fs_write", awaken.success("text")), 0)
end)

t.test("a cooldown makes the message throttled", function()
  local h = harness {
    { tool = "shell", message = { content = "a" } },
    { tool = "shell", message = { content = "b", target = "suffix_system", cooldown = 3 } },
  }
  local pending = after(h, "shell", awaken.success("ok"))
  t.eq(#pending, 2)
  t.eq(pending[2].payload.key, "reminder.rule_001")
  t.eq(pending[2].payload.kind, "throttled")
  t.eq(pending[2].payload.cooldown, 3)
  t.eq(pending[2].payload.target, "suffix_system")
end)

t.test("tool globs", function()
  local h = harness { { tool = "mcp__github__*", message = { content = "gh" } } }
  t.eq(#after(h, "mcp__github__issues", awaken.success("x")), 1)
  t.eq(#after(h, "mcp__gitlab__issues", awaken.success("x")), 0)
end)

t.test("exact names, with other patterns or alone; each config its own rules", function()
  local exact = harness {
    { tool = "fs_read", message = { content = "read" } },
    { tool = "fs_write", message = { content = "write", cooldown = 2 } },
  }
  local mixed = harness {
    { tool = "fs_read", message = { content = "read" } },
    { tool = "mcp__*", message = { content = "mcp" } },
    { tool = "Bash(npm *)", message = { content = "npm" } },
  }
  local function contents(h, name, args)
    local out = {}
    for _, a in ipairs(after(h, name, awaken.success("ok"), args)) do out[#out + 1] = a.payload.content end
    return out
  end
  for _ = 1, 2 do
    t.eq(contents(exact, "fs_read"), { "read" })
    t.eq(contents(exact, "fs_write"), { "write" })
    t.eq(contents(exact, "mcp__x"), {})
    t.eq(contents(mixed, "fs_read"), { "read" })
    t.eq(contents(mixed, "fs_write"), {})
    t.eq(contents(mixed, "mcp__x"), { "mcp" })
    t.eq(contents(mixed, "Bash", { command = "npm ci" }), { "npm" })
  end
  -- the payload is the rule's, every time
  local pending = after(exact, "fs_write", awaken.success("ok"))
  t.eq(pending[1].payload, { key = "reminder.rule_001", content = "write", target = "system", priority = 0,
    kind = "throttled", cooldown = 2 })
  t.eq(after(exact, "fs_write", awaken.success("ok"))[1].payload, pending[1].payload)
end)

t.test("mcp__server names every tool of that MCP server, as in permission", function()
  for _, rules in ipairs {
    { { tool = "mcp__gh", message = { content = "gh" } } },
    { { tool = "mcp__gh", message = { content = "gh" } }, { tool = "shell", message = { content = "sh" } } },
    { { tool = "mcp__gh", message = { content = "gh" } }, { tool = "x*", message = { content = "x" } } },
  } do
    local h = t.harness { plugins = { "reminder" }, config = { reminder = { rules = rules } } }
    local function count(name)
      local r = h:phase("after_tool_execute", { tool = { id = "c1", name = name, args = {}, result = awaken.success("ok") } })
      return #r.pending_actions
    end
    t.eq(count("mcp__gh__create_issue"), 1, "rules: " .. #rules)
    t.eq(count("mcp__gh"), 1)
    t.eq(count("mcp__ghx__a"), 0)
    t.eq(count("mcp__gl__a"), 0)
  end
end)

t.test("tool patterns: regexes and argument conditions (permission's rule syntax)", function()
  local h = harness {
    { tool = "/mcp__(gh|gl)__.*/", message = { content = "forge" } },
    { tool = "Bash(npm *)", message = { content = "npm" } },
    { tool = 'Edit(file_path ~ "src/**", mode = w)', message = { content = "src edit" } },
    { tool = "http(headers.accept !~ \"*json*\")", message = { content = "not json" } },
  }
  local function contents(name, args)
    local out = {}
    for _, a in ipairs(after(h, name, awaken.success("ok"), args)) do out[#out + 1] = a.payload.content end
    return out
  end
  t.eq(contents("mcp__gh__issues"), { "forge" })
  t.eq(contents("mcp__gl__merge"), { "forge" })
  t.eq(contents("mcp__bb__issues"), {})
  -- a glob on the only argument
  t.eq(contents("Bash", { command = "npm test" }), { "npm" })
  t.eq(contents("Bash", { command = "make test" }), {})
  -- conditions: all must hold; nested paths
  t.eq(contents("Edit", { file_path = "src/a/b.go", mode = "w" }), { "src edit" })
  t.eq(contents("Edit", { file_path = "src/a/b.go", mode = "r" }), {})
  t.eq(contents("Edit", { file_path = "docs/a.md", mode = "w" }), {})
  t.eq(contents("http", { headers = { accept = "text/html" } }), { "not json" })
  t.eq(contents("http", { headers = { accept = "application/json" } }), {})
  -- a missing field satisfies the negated operators
  t.eq(contents("http", {}), { "not json" })
end)

t.test("a whole run: an argument condition picks the call", function()
  local h = harness { { tool = 'fs_read(path ~ "*.env")', message = { content = "That file holds settings: do not echo it." } } }
  local r = h:run { prompt = "read", turns = {
    { tool_calls = { { name = "fs_read", args = { path = "main.go" } } } },
    { tool_calls = { { name = "fs_read", args = { path = "prod.env" } } } },
    { text = "done" },
  }, tools = { fs_read = function() return awaken.success("x") end } }
  local function has(req)
    for _, m in ipairs(req.messages) do
      if m.content == "That file holds settings: do not echo it." then return true end
    end
    return false
  end
  t.eq(has(r.requests[2]), false)
  t.eq(has(r.requests[3]), true)
end)

t.test("output status", function()
  local h = harness { { tool = "*", output = { status = "error" }, message = { content = "It failed; try another way." } } }
  t.eq(#after(h, "shell", awaken.success("x")), 0)
  t.eq(#after(h, "shell", awaken.error("boom")), 1)
end)

t.test("output content is a glob on the result text", function()
  local h = harness { { tool = "shell", output = { content = "*permission denied*" }, message = { content = "Do not retry with sudo." } } }
  t.eq(#after(h, "shell", awaken.success("ls: permission denied: /root")), 1)
  t.eq(#after(h, "shell", awaken.success("a\nb permission denied\nc")), 1, "text spans lines")
  t.eq(#after(h, "shell", awaken.success("fine")), 0)
  -- an error's text is its message
  t.eq(#after(h, "shell", awaken.error("permission denied")), 1)
  -- table data is matched as JSON
  t.eq(#after(h, "shell", awaken.success({ out = "permission denied" })), 1)
end)

t.test("output fields: =, != and ~ on nested paths", function()
  local h = harness {
    { tool = "http", output = { fields = { { path = "response.status", op = "=", value = 429 } } }, message = { content = "rate limited" } },
    { tool = "http", output = { fields = { { path = "response.status", op = "!=", value = 200 } } }, message = { content = "not ok" } },
    { tool = "http", output = { fields = { { path = "items[1].name", op = "~", value = "*.lock" } } }, message = { content = "lock file" } },
    { tool = "http", output = { fields = { { path = "ok", value = true } } }, message = { content = "ok is true" } },
  }
  local function keys(pending)
    local out = {}
    for _, a in ipairs(pending) do out[#out + 1] = a.payload.content end
    return out
  end
  t.eq(keys(after(h, "http", awaken.success({ response = { status = 429 } }))), { "rate limited", "not ok" })
  t.eq(keys(after(h, "http", awaken.success({ response = { status = 200 }, ok = true }))), { "ok is true" })
  t.eq(keys(after(h, "http", awaken.success({ response = { status = 200 }, items = { { name = "a" }, { name = "go.lock" } } }))), { "lock file" })
  -- a missing field is "not equal"
  t.eq(keys(after(h, "http", awaken.success({}))), { "not ok" })
  -- string data holding JSON is decoded for field paths
  t.eq(keys(after(h, "http", awaken.success('{"response": {"status": "429"}}'))), { "rate limited", "not ok" })
end)

t.test("content and fields together must both hold", function()
  local h = harness { { tool = "t", output = { status = "success", content = "*warn*", fields = { { path = "code", value = 1 } } }, message = { content = "m" } } }
  t.eq(#after(h, "t", awaken.success({ code = 1, text = "warn" })), 1)
  t.eq(#after(h, "t", awaken.success({ code = 2, text = "warn" })), 0)
  t.eq(#after(h, "t", awaken.success({ code = 1, text = "fine" })), 0)
end)

t.test("a whole run: the message reaches the next request only", function()
  local h = harness { { tool = "fs_read", output = { content = "*TODO*" }, message = { content = "The file has TODOs: list them." } } }
  local r = h:run { prompt = "read it", turns = {
    { tool_calls = { { name = "fs_read", args = { path = "a.txt" } } } },
    { tool_calls = { { name = "fs_read", args = { path = "b.txt" } } } },
    { text = "done" },
  }, tools = {
    fs_read = function(args) return awaken.success(args.path == "a.txt" and "x TODO y" or "clean") end,
  } }
  t.eq(r.termination, "natural")
  local function has(req)
    for _, m in ipairs(req.messages) do
      if m.role == "system" and m.content == "The file has TODOs: list them." then return true end
    end
    return false
  end
  t.eq(has(r.requests[1]), false)
  t.eq(has(r.requests[2]), true)
  t.eq(has(r.requests[3]), false, "ephemeral: used once")
end)

t.test("a whole run: a throttled reminder waits for its cooldown", function()
  local h = harness { { tool = "shell", message = { content = "Mind the shell.", cooldown = 2 } } }
  local turns = {}
  for i = 1, 4 do turns[i] = { tool_calls = { { name = "shell", args = {} } } } end
  turns[5] = { text = "done" }
  local r = h:run { prompt = "go", turns = turns, tools = { shell = function() return awaken.success("ok") end } }
  local seen = {}
  for i, req in ipairs(r.requests) do
    for _, m in ipairs(req.messages) do
      if m.content == "Mind the shell." then seen[#seen + 1] = i end
    end
  end
  -- placed at step 2, then not again before two more steps have passed
  t.eq(seen, { 2, 4 })
end)

t.test("paths", function()
  t.eq(match.parse_path("a.b"), { "a", "b" })
  t.eq(match.parse_path("items[0].name"), { "items", 1, "name" })
  t.eq(match.parse_path("[2]"), { 3 })
  t.eq(select(2, match.parse_path("a..b")) ~= nil, true)
  t.eq(select(2, match.parse_path("a[x]")) ~= nil, true)
end)

t.test("config errors name the rule", function()
  t.raises(function() harness { { message = { content = "x" } } } end, "rules%[0%]: missing required property \"tool\"")
  t.raises(function() harness { { tool = "a", message = { content = "x", target = "nowhere" } } } end, "rules%[0%]%.message%.target")
  t.raises(function() harness { { tool = "a", message = { content = "x", cooldown = -1 } } } end, "cooldown")
  t.raises(function() harness { { tool = "a", output = { status = "pending" }, message = { content = "x" } } } end, "output%.status")
  t.raises(function() harness { { tool = "a", message = { content = "x" } }, { tool = "/mcp__(.*/", message = { content = "x" } } } end,
    "^config_invalid: reminder: rules%[1%]%.tool: invalid regex")
  t.raises(function() harness { { tool = "Bash(npm *", message = { content = "x" } } } end, "rules%[0%]%.tool: missing %)")
  t.raises(function() harness { { tool = "Edit(a =)", message = { content = "x" } } } end, "rules%[0%]%.tool: .*value")
  -- valid patterns of every kind load
  harness { { tool = "/mcp__.*/", message = { content = "x" } }, { tool = "Bash(npm *)", message = { content = "x" } } }
  t.raises(function() harness { { tool = "a", output = { fields = { { path = "a..b", value = 1 } } }, message = { content = "x" } } } end,
    "rules%[0%]%.output%.fields%[0%]%.path: empty segment")
  t.raises(function() harness { { tool = "a", output = { fields = { { path = "a", op = "~", value = 3 } } }, message = { content = "x" } } } end,
    "fields%[0%]%.value: the ~ operator takes a glob string")
  t.raises(function() harness { { tool = "a", output = { fields = { { path = "a", op = "<", value = 3 } } }, message = { content = "x" } } } end,
    "fields%[0%]%.op")
end)
