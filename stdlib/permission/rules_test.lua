-- Unit tests of the rule parser, the matcher and the regexes.
local t = require("awaken.testing")
local awaken = require("awaken")
local rules = require("permission.rules")

local function parse(s)
  local r, err = rules.parse(s)
  if not r then t.fail("parse " .. s .. ": " .. tostring(err)) end
  return r
end

local function m(s, name, args)
  return rules.matches(parse(s), name, args or {})
end

-- re matches a regex against a whole value, as a rule's regex does.
local function re(src, s)
  return m("T(v =~ \"" .. src:gsub("[\\\"]", "\\%0") .. "\")", "T", { v = s })
end

t.test("tool names: exact, glob and regex", function()
  t.eq(parse("Bash").kind, "exact")
  t.eq(parse("mcp__github__*").kind, "glob")
  t.eq(parse("/mcp__(gh|gl)__.*/").kind, "regex")
  t.eq(m("Bash", "Bash"), true)
  t.eq(m("Bash", "BashX"), false)
  t.eq(m("mcp__github__*", "mcp__github__issues"), true)
  t.eq(m("mcp__github__*", "mcp__gitlab__issues"), false)
  t.eq(m("/mcp__(gh|gl)__.*/", "mcp__gh__list"), true)
  t.eq(m("/mcp__(gh|gl)__.*/", "mcp__gl__x"), true)
  t.eq(m("/mcp__(gh|gl)__.*/", "mcp__bb__x"), false)
  -- the regex matches the whole name
  t.eq(m("/gh/", "mcp__gh__x"), false)
  t.eq(m("/.*gh.*/", "mcp__gh__x"), true)
  -- surrounding and inner spaces
  t.eq(m("  Bash  ", "Bash"), true)
  t.eq(m("Bash (npm *)", "Bash", { command = "npm i" }), true)
end)

t.test("a single glob matches the only argument, or all of them as JSON", function()
  -- (a tool without a primary argument: see the next test for the others)
  t.eq(m("Run(npm *)", "Run", { command = "npm test" }), true)
  t.eq(m("Run(npm *)", "Run", { command = "rm -rf /" }), false)
  t.eq(m("Run(npm *)", "Run", { command = "npm test", cwd = "/x" }), false)
  t.eq(m('Run(*"command":"npm *)', "Run", { command = "npm test", cwd = "/x" }), true)
  t.eq(m('Run({"a":1,"b":2})', "Run", { b = 2, a = 1 }), true)
  t.eq(m("Count(4?)", "Count", { n = 42 }), true)
  t.eq(m("Run(*)", "Run", {}), true)
  t.eq(m("Bash(*)", "Bash", {}), true)
  -- a quoted glob, for patterns that look like conditions
  t.eq(m('Bash("a = b")', "Bash", { command = "a = b" }), true)
  t.eq(m('Run("a = b")', "Run", { command = "a = b" }), true)
  -- an operator after a space must be followed by one: these are globs
  t.eq(parse("Bash(cd ~/src)").mode, "glob")
  t.eq(m("Bash(cd ~/src)", "Bash", { command = "cd ~/src" }), true)
  t.eq(parse("Bash(ls ~)").mode, "glob")
  t.eq(m("Run(echo (hi))", "Run", { command = "echo (hi)" }), true)
end)

-- mb matches a rule as a rule of behavior b.
local function mb(s, b, name, args)
  return rules.matches(parse(s), name, args or {}, nil, nil, b)
end

t.test("Tool(x) on a tool's primary argument, Claude Code's way", function()
  local function bash(cmd) return { command = cmd, description = "what it does" } end
  -- Claude Code sends Bash as {command, description}: the rule still sees
  -- the command (it matched the JSON of both, and denied nothing, before)
  t.eq(mb("Bash(rm *)", "deny", "Bash", { command = "rm -rf /", description = "clean" }), true)
  -- deny and ask: any simple command
  for _, cmd in ipairs({
    "echo ok && rm -rf /", "$(rm -rf /)", "echo `rm -rf /`", "(cd /tmp; rm -rf x)", "bash -c 'rm -rf /'",
    "sh -c \"ls; rm x\"", "sudo rm -rf /", "FOO=1 rm -rf /", "ls > out.txt; rm x", "ls | rm x", "ls; rm x",
    "false || rm x", "rm", "timeout 5 rm x", "env A=1 rm x", "xargs rm < list", "$CMD -rf /",
  }) do
    t.eq(mb("Bash(rm *)", "deny", "Bash", bash(cmd)), true, cmd)
    t.eq(mb("Bash(rm *)", "ask", "Bash", bash(cmd)), true, cmd)
  end
  t.eq(mb("Bash(rm *)", "deny", "Bash", bash("echo rm -rf /")), false)
  t.eq(mb("Bash(rm *)", "deny", "Bash", bash("rmdir x")), false)
  -- allow: every simple command
  t.eq(mb("Bash(npm *)", "allow", "Bash", bash("npm test")), true)
  t.eq(mb("Bash(npm *)", "allow", "Bash", bash("npm")), true)
  t.eq(mb("Bash(npm *)", "allow", "Bash", bash("npm test && npm run lint")), true)
  for _, cmd in ipairs({
    "npm test && rm -rf /", "npm test; rm x", "npm test | sh", "npm test || rm x", "npm $(rm x)",
    "npm test `rm x`", "(npm test; rm x)", "npm test > out.txt", "sudo npm test", "npmx",
  }) do
    t.eq(mb("Bash(npm *)", "allow", "Bash", bash(cmd)), false, cmd)
  end
  -- a command that does not parse: deny and ask match, allow does not
  t.eq(mb("Bash(rm *)", "deny", "Bash", bash("echo 'unclosed")), true)
  t.eq(mb("Bash(git push *)", "ask", "Bash", bash("ls $(")), true)
  t.eq(mb("Bash(echo *)", "allow", "Bash", bash("echo 'unclosed")), false)
  -- Claude Code's forms
  t.eq(mb("Bash(npm run test:*)", "allow", "Bash", bash("npm run test -- --watch")), true)
  t.eq(mb("Bash(npm run test:*)", "allow", "Bash", bash("npm run build")), false)
  t.eq(mb("Bash(git diff *)", "allow", "Bash", bash("git diff HEAD~1")), true)
  t.eq(mb("Bash(git diff *)", "allow", "Bash", bash("git diff-tree x")), false)
  t.eq(mb("WebFetch(domain:example.com)", "allow", "WebFetch", { url = "https://example.com/a", prompt = "p" }), true)
  t.eq(mb("WebFetch(domain:example.com)", "allow", "WebFetch", { url = "https://example.com.evil.io/", prompt = "p" }), false)
  t.eq(mb("WebSearch(weather *)", "allow", "WebSearch", { query = "weather in Paris" }), true)
  t.eq(mb("Task(*deploy*)", "deny", "Task", { prompt = "deploy to prod", description = "d" }), true)
  t.eq(mb("Glob(**/*.key)", "deny", "Glob", { pattern = "**/*.key", path = "/p" }), true)
  t.eq(mb("Grep(password*)", "deny", "Grep", { pattern = "password=", path = "/p" }), true)
  -- file tools: absolute paths match absolute patterns without a project
  t.eq(mb("Read(//etc/**)", "deny", "Read", { file_path = "/etc/passwd" }), true)
  t.eq(mb("Edit(//etc/**)", "deny", "Edit", { file_path = "/etc/hosts", old_string = "a", new_string = "b" }), true)
  t.eq(mb("MultiEdit(//etc/**)", "deny", "MultiEdit", { file_path = "/etc/hosts", edits = {} }), true)
  t.eq(mb("Write(//tmp/**)", "allow", "Write", { file_path = "/tmp/x", content = "y" }), true)
  -- a project path without a project: deny matches (fail closed), allow not
  t.eq(mb("Read(./.env)", "deny", "Read", { file_path = "/home/me/shop/README.md" }), true)
  t.eq(mb("Edit(src/**)", "allow", "Edit", { file_path = "/home/me/shop/src/a.go" }), false)
  -- a missing or non-string argument: the same
  t.eq(mb("Bash(rm *)", "deny", "Bash", { description = "no command" }), true)
  t.eq(mb("Bash(ls)", "allow", "Bash", { command = 42 }), false)
  -- the other agents' shell tools are Bash-like
  t.eq(mb("run_shell_command(rm *)", "deny", "run_shell_command", { command = "ls && rm x" }), true)
end)

t.test("operators", function()
  local args = { file_path = "src/a/b.go", mode = "w", n = 3, ok = true }
  t.eq(m('Edit(file_path ~ "src/**")', "Edit", args), true)
  t.eq(m('Edit(file_path ~ "lib/**")', "Edit", args), false)
  t.eq(m("Edit(file_path !~ lib/**)", "Edit", args), true)
  t.eq(m("Edit(file_path !~ src/**)", "Edit", args), false)
  t.eq(m("Edit(mode = w)", "Edit", args), true)
  t.eq(m("Edit(mode=w)", "Edit", args), true)
  t.eq(m("Edit(mode = r)", "Edit", args), false)
  t.eq(m("Edit(mode != r)", "Edit", args), true)
  t.eq(m("Edit(mode != w)", "Edit", args), false)
  t.eq(m('Edit(file_path =~ "src/.*\\.go")', "Edit", args), true)
  t.eq(m('Edit(file_path =~ "src/.*\\.rs")', "Edit", args), false)
  t.eq(m("Edit(file_path =~ /src\\/[a-z]\\/.*/)", "Edit", args), true)
  t.eq(m('Edit(file_path !=~ ".*\\.rs")', "Edit", args), true)
  t.eq(m('Edit(file_path !=~ ".*\\.go")', "Edit", args), false)
  -- non-strings compare as JSON
  t.eq(m("Edit(n = 3)", "Edit", args), true)
  t.eq(m("Edit(ok = true)", "Edit", args), true)
  t.eq(m('Edit(ok = "true")', "Edit", args), true)
  -- a missing field: positive operators fail, negated ones hold
  t.eq(m("Edit(missing = x)", "Edit", args), false)
  t.eq(m("Edit(missing ~ *)", "Edit", args), false)
  t.eq(m("Edit(missing != x)", "Edit", args), true)
  t.eq(m("Edit(missing !~ x)", "Edit", args), true)
  t.eq(m("Edit(missing !=~ x)", "Edit", args), true)
end)

t.test("several conditions must all hold", function()
  local args = { file_path = "src/a.go", mode = "w" }
  t.eq(m('Edit(file_path ~ "src/**", mode = w)', "Edit", args), true)
  t.eq(m('Edit(file_path ~ "src/**", mode = r)', "Edit", args), false)
  t.eq(m('Edit(file_path ~ "src/**",mode=w, mode != x)', "Edit", args), true)
  t.eq(#parse('Edit(a = 1, b = 2, c = 3)').conds, 3)
end)

t.test("quoted values and escapes", function()
  t.eq(m('Say(text = "a \\"quoted\\" word")', "Say", { text = 'a "quoted" word' }), true)
  t.eq(m('Say(text = "back\\\\slash")', "Say", { text = "back\\slash" }), true)
  t.eq(m('Say(text = "a, b)")', "Say", { text = "a, b)" }), true)
  t.eq(m('Say(text = "")', "Say", { text = "" }), true)
  -- other escapes are kept for the glob: \* is a literal star
  t.eq(m('Say(text ~ "a\\*")', "Say", { text = "a*" }), true)
  t.eq(m('Say(text ~ "a\\*")', "Say", { text = "ab" }), false)
end)

t.test("nested paths", function()
  local args = {
    a = { b = { { c = "x" }, { c = "y" } } },
    items = { "first", "second" },
    deep = { list = { { tags = { "p", "q" } } } },
  }
  t.eq(m("T(a.b[*].c = y)", "T", args), true)
  t.eq(m("T(a.b[*].c = z)", "T", args), false)
  t.eq(m("T(a.b[*].c != z)", "T", args), true)
  t.eq(m("T(a.b[*].c != y)", "T", args), false) -- some element is y
  t.eq(m("T(a.b[0].c = x)", "T", args), true)
  t.eq(m("T(a.b[1].c = x)", "T", args), false)
  t.eq(m("T(items[0] = first)", "T", args), true)
  t.eq(m("T(items[1] = second)", "T", args), true)
  t.eq(m("T(items[2] = second)", "T", args), false)
  t.eq(m("T(items[*] ~ sec*)", "T", args), true)
  t.eq(m("T(deep.list[*].tags[*] = q)", "T", args), true)
  t.eq(m("T(items.x = first)", "T", args), false)
  t.eq(m("T(a.b[*] ~ *y*)", "T", args), true) -- a table compares as JSON
end)

t.test("invalid rules say what and where", function()
  local cases = {
    { 'Edit(file_path ~ "src/**)', 'unterminated quote in "Edit%(file_path ~ \\"src/%*%*%)"' },
    { "", "empty rule" },
    { "(x = 1)", "empty tool name" },
    { "Bash(npm *", "missing %)" },
    { "Bash()", "empty argument pattern" },
    { "Bash x", "unexpected" },
    { "Edit(a = 1 b)", "expected , or %)" },
    { "Edit(a = 1,)", "expected a field name" },
    { "Edit(a == 1)", "== is not an operator" },
    { "Edit(a = 1) x", "unexpected text after %)" },
    { "Edit(a.b[x] = 1)", "expected %[N%] or %[%*%]" },
    { "Edit(a =)", "missing value" },
    { "/mcp__(gh/", "invalid regex" },
    { "/abc", "unterminated regex" },
    { "//", "empty regex" },
    { "Edit(a =~ \"(\")", "invalid regex" },
    { "Bash(\128)", "invalid UTF%-8" },
    { "B*\237\160\128", "invalid UTF%-8" },
    { "Edit(a ~ \"\226\130\")", "invalid UTF%-8" },
  }
  for _, c in ipairs(cases) do
    local r, err = rules.parse(c[1])
    t.eq(r, nil, c[1])
    t.match(err, c[2])
  end
  t.eq(select(2, rules.parse(42)), "a rule is a string, not a number")
  -- valid UTF-8 is fine in globs
  t.eq(m("Say(text ~ \"h\195\169*\")", "Say", { text = "h\195\169llo" }), true)
  t.eq(rules.validate({ { tool = "Bash", behavior = "allow" }, { tool = "A(", behavior = "deny" }, { tool = "B(x = \"", behavior = "deny" } }),
    { 'rules[1].tool: missing ) in "A("', 'rules[2].tool: unterminated quote in "B(x = \\""' })
  t.eq(rules.validate({ { tool = "Bash", behavior = "allow" } }), nil)
end)

t.test("regexes: RE2, matching the whole value", function()
  t.eq(re("abc", "abc"), true)
  t.eq(re("abc", "abcd"), false)
  t.eq(re("a.c", "a\nc"), true)
  t.eq(re("a|b|c", "b"), true)
  t.eq(re("(ab)+", "ababab"), true)
  t.eq(re("(ab)+", ""), false)
  t.eq(re("(?:ab)*c?", "abab"), true)
  t.eq(re("a?b", "b"), true)
  t.eq(re("[a-c]+x", "abcabx"), true)
  t.eq(re("[^a-c]+", "xyz"), true)
  t.eq(re("[^a-c]+", "xaz"), false)
  t.eq(re("[]a]+", "]a]"), true)
  t.eq(re("[a-]+", "a-a"), true)
  t.eq(re("\\d{3}-\\d{2,}", "123-4567"), true)
  t.eq(re("\\d{3}", "12"), false)
  t.eq(re("x{2,3}", "xxxx"), false)
  t.eq(re("x{2,3}", "xxx"), true)
  t.eq(re("a{,2}", "a{,2}"), true) -- not a count: literal
  t.eq(re("\\w+\\s\\S+", "ab_9 c.d"), true)
  t.eq(re("[\\d.]+", "1.2.3"), true)
  t.eq(re("\\.\\*\\/", ".*/"), true)
  t.eq(re("^ab$", "ab"), true)
  t.eq(re("a^b", "ab"), false)
  t.eq(re("(a|)b", "b"), true)
  t.eq(re("(a*)*b", "aaab"), true)
  t.eq(re(".*?x", "aax"), true)
  t.eq(re("a|ab", "ab"), true) -- the whole value, whatever the alternative order
  t.eq(re("(?i)bash", "BASH"), true)
  for _, bad in ipairs({ "(", ")", "[a", "a**", "*a", "\\", "(?=a)", "[z-a]", "a{1001}", "a)|(b" }) do
    local r, err = rules.parse("T(v =~ \"" .. bad:gsub("[\\\"]", "\\%0") .. "\")")
    t.eq(r, nil, bad)
    t.match(err, "invalid regex")
  end
end)

t.test("hostile regexes stay cheap", function()
  -- counted repetition is capped when compiled
  t.match(select(2, rules.parse("/((a{100}){100}){100}/")), "invalid regex")
  -- a classic backtracking bomb runs in linear time
  t.eq(re("(a*)*(a*)*(a*)*b", ("a"):rep(2000)), false)
  -- a long value against a large regex is decided
  local rule = parse("T(s =~ \"" .. ("(a|b|c|d)?"):rep(45) .. "x\")")
  t.eq(rules.matches(rule, "T", { s = ("a"):rep(100000) .. "x" }, { left = 20000 }), false)
  t.eq(rules.matches(rule, "T", { s = ("a"):rep(45) .. "x" }, { left = 20000 }), true)
  local big = parse('Write(content =~ ".*BEGIN RSA PRIVATE KEY.*")')
  t.eq(rules.matches(big, "Write", { content = ("x"):rep(200000) }), false)
  t.eq(rules.matches(big, "Write", { content = "a\n-----BEGIN RSA PRIVATE KEY-----\nb" }), true)
  -- the rule's regex cannot escape its anchors
  t.eq(rules.parse("/a)|(b/"), nil)
  t.eq(awaken.regex.find(parse("/a|b/").re, "xb"), nil)
end)

t.test("specificity and precedence", function()
  local function decide(list, name, args)
    local entries, problems = rules.compile(list)
    t.eq(problems, {})
    local b, w = rules.decide(entries, name, args or {}, "ask")
    return b, w and w.index
  end
  -- deny over allow over ask, whatever the specificity
  t.eq({ decide({ { tool = "B*", behavior = "deny" }, { tool = "Bash(ls)", behavior = "allow" } }, "Bash", { c = "ls" }) }, { "deny", 0 })
  t.eq({ decide({ { tool = "Bash", behavior = "ask" }, { tool = "/B.*/", behavior = "allow" } }, "Bash") }, { "allow", 1 })
  -- exact over glob over regex
  t.eq({ decide({ { tool = "/B.*/", behavior = "deny" }, { tool = "B*", behavior = "deny" }, { tool = "Bash", behavior = "deny" } }, "Bash") }, { "deny", 2 })
  t.eq({ decide({ { tool = "/B.*/", behavior = "deny" }, { tool = "B*", behavior = "deny" } }, "Bash") }, { "deny", 1 })
  -- with conditions over without; more conditions over fewer
  t.eq({ decide({ { tool = "Bash", behavior = "allow" }, { tool = "Bash(ls)", behavior = "allow" } }, "Bash", { command = "ls" }) }, { "allow", 1 })
  t.eq({ decide({ { tool = "E(a = 1, b = 2)", behavior = "allow" }, { tool = "E(a = 1)", behavior = "allow" } }, "E", { a = 1, b = 2 }) }, { "allow", 0 })
  -- exact beats glob even when the glob has conditions
  t.eq({ decide({ { tool = "E*(a = 1)", behavior = "allow" }, { tool = "E", behavior = "allow" } }, "E", { a = 1 }) }, { "allow", 1 })
  -- ties: the first rule
  t.eq({ decide({ { tool = "E", behavior = "ask" }, { tool = "E", behavior = "ask" } }, "E") }, { "ask", 0 })
  -- nothing matches: the default
  t.eq({ decide({ { tool = "X", behavior = "deny" } }, "E") }, { "ask", nil })
end)

t.test("messages are cut short without splitting characters", function()
  t.eq(rules.truncate("abcdef", 10), "abcdef")
  t.eq(rules.truncate("abcdefghijkl", 8), "abcde...")
  t.eq(rules.truncate("abcd\195\169fghijkl", 8), "abcd...")
  t.eq(rules.truncate("abc\195\169fghijkl", 8), "abc\195\169...")
  t.eq(#rules.quote(("x"):rep(500)), 162)
end)

t.test("hidden tools and signatures", function()
  local entries = rules.compile({
    { tool = "Bash", behavior = "deny" },
    { tool = "mcp__gh__*", behavior = "deny" },
    { tool = "Edit(a = 1)", behavior = "deny" },
    { tool = "/Web.*/", behavior = "deny" },
    { tool = "Read", behavior = "allow" },
  })
  t.eq(rules.hides(entries, "Bash"), true)
  t.eq(rules.hides(entries, "mcp__gh__issues"), true)
  t.eq(rules.hides(entries, "Edit"), false)
  t.eq(rules.hides(entries, "WebFetch"), false)
  t.eq(rules.hides(entries, "Read"), false)
  t.eq(rules.signature("Bash", { b = 2, a = 1 }), rules.signature("Bash", { a = 1, b = 2 }))
  t.neq(rules.signature("Bash", { a = 1 }), rules.signature("Bash", { a = 1, b = 2 }))
  t.neq(rules.signature("Bash", { a = 1 }), rules.signature("Sh", { a = 1 }))
end)

t.test("compiled configs: plain data; what a name needs", function()
  local list = {
    { tool = "Read", behavior = "allow" },
    { tool = "Bash(rm *)", behavior = "deny" },
    { tool = "/mcp__.*/", behavior = "deny" },
  }
  local cfg = rules.compile(list)
  -- what prepare returns crosses into Go and back unchanged
  t.eq(awaken.json.decode(awaken.json.encode(cfg)), cfg)
  t.eq(cfg.exact, { Read = { 1 }, Bash = { 2 } })
  t.eq(cfg.patterned, { 3 })
  -- no rule denies a tool outright (conditions, a regex): nothing is hidden
  t.eq(rules.can_hide(cfg), false)
  t.eq(rules.hides(cfg, "Bash"), false)
  local hiding = rules.compile({ { tool = "Bash", behavior = "deny" }, { tool = "mcp__*", behavior = "deny" } })
  t.eq(rules.can_hide(hiding), true)
  t.eq(rules.hides(hiding, "Bash"), true)
  t.eq(rules.hides(hiding, "mcp__x"), true)
  t.eq(rules.hides(hiding, "Read"), false)
  t.eq(rules.can_hide(rules.compile({ { tool = "Bash", behavior = "allow" } })), false)
  -- arguments matter only where a rule for the name has conditions
  t.eq(rules.needs_args(cfg, "Read"), false)
  t.eq(rules.needs_args(cfg, "Bash"), true)
  t.eq(rules.needs_args(cfg, "mcp__x"), false)
  t.eq(rules.needs_args(cfg, "Other"), false)
  t.eq(rules.needs_args(rules.compile({ { tool = "E*(a = 1)", behavior = "allow" } }), "Edit"), true)
end)

t.test("mcp__server names every tool of that server", function()
  t.eq(m("mcp__github", "mcp__github__create_issue"), true)
  t.eq(m("mcp__github", "mcp__github"), true) -- the name itself, as any exact name
  t.eq(m("mcp__github", "mcp__github2__x"), false)
  t.eq(m("mcp__github__create_issue", "mcp__github__create_issue"), true)
  t.eq(m("mcp__github__create_issue", "mcp__github__create_issues"), false)
  local cfg = rules.compile({ { tool = "mcp__github", behavior = "deny" }, { tool = "mcp__github__list", behavior = "allow" } })
  t.eq({ rules.decide(cfg, "mcp__github__delete", {}, "ask") }, { "deny", cfg.entries[1] })
  t.eq(rules.decide(cfg, "mcp__github__list", {}, "ask"), "deny") -- deny over allow
  t.eq(rules.decide(cfg, "mcp__gitlab__list", {}, "ask"), "ask")
  t.eq(rules.hides(cfg, "mcp__github__delete"), true)
  t.eq(rules.hides(cfg, "mcp__gitlab__delete"), false)
end)
