local awaken = require("awaken")
local t = require("awaken.testing")
local scrub = require("redact.scrub")

local R = "[REDACTED]"
local DEFAULTS = scrub.compile({ patterns = {}, replacement = R })

local function redact(s) return (scrub.text(s, DEFAULTS)) end

local function rep(s, n) return s:rep(n) end

t.test("default patterns: each format is masked", function()
  local cases = {
    { "key sk-ant-api03-" .. rep("A1_b", 10) .. " end", "key " .. R .. " end" },
    { "OPENAI_API_KEY=sk-" .. rep("x9Y", 16), "OPENAI_API_KEY=" .. R },
    { "sk-proj-" .. rep("Ab3-", 12), R },
    { "token ghp_" .. rep("a1B2", 9), "token " .. R },
    { "gho_" .. rep("Z", 36) .. ", ghs_" .. rep("9", 36), R .. ", " .. R },
    { "github_pat_11ABCDEFG0" .. rep("x_y", 20), R },
    { "aws_access_key_id = AKIAIOSFODNN7EXAMPLE", "aws_access_key_id = " .. R },
    { "ASIAABCDEFGHIJKLMNOP.", R .. "." },
    { "slack xoxb-1234567890-abcdefghij", "slack " .. R },
    { "key=AIza" .. rep("Sy9_-", 7), "key=" .. R },
    { "jwt: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U", "jwt: " .. R },
    { "Authorization: Bearer abcdefghijklmnop0123.xyz", "Authorization: Bearer " .. R },
    { "curl -H 'authorization: bearer " .. rep("tok", 8) .. "=='", "curl -H 'authorization: bearer " .. R .. "'" },
    { "db password=hunter2&user=bob", "db password=" .. R .. "&user=bob" },
    { "PASSWORD: s3cret!", "PASSWORD: " .. R },
    { '{"user":"bob","password":"hunter2"}', '{"user":"bob","password":"' .. R .. '"}' },
    -- a quoted value is masked up to its closing quote, spaces included
    { '"{\\"db_password\\":\\"x y\\"}"', '"{\\"db_password\\":\\"' .. R .. '\\"}"' },
    { '{"password": "correct horse battery", "user": "bob"}', '{"password": "' .. R .. '", "user": "bob"}' },
    { "password='correct horse' user=bob", "password='" .. R .. "' user=bob" },
    { 'DB_PASSWORD="two words"\nHOME=/root', 'DB_PASSWORD="' .. R .. '"\nHOME=/root' },
    -- ... or up to the end of the text (a cut-off output)
    { '{"password": "two words', '{"password": "' .. R },
    { "password='two words", "password='" .. R },
    -- ... or, one word, up to the end of its line (grep -o cuts the quote off)
    { '.env:PASSWORD="s3cret\n.env.prod:PASSWORD="pr0d', '.env:PASSWORD="' .. R .. '\n.env.prod:PASSWORD="' .. R },
    { "password='s3cret\r\nnext", "password='" .. R .. "\r\nnext" },
    { "passwd=abc", "passwd=" .. R },
    { "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAbc+/=\n-----END RSA PRIVATE KEY-----\nrest",
      R .. "\nrest" },
    { "x -----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\nAAAA", "x " .. R },
  }
  for _, c in ipairs(cases) do
    t.eq(redact(c[1]), c[2], c[1])
  end
end)

t.test("default patterns: look-alikes stay", function()
  local same = {
    "task-list sk-short",
    "the risk-" .. rep("a", 30),            -- sk- inside a word
    "ghp_short",
    "AKIAIOSFODNN7EXAMPLEX",                -- 17 characters after AKIA
    "use a Bearer token here",
    "password_hash=abc",
    "passwords are secret",
    "eyJhbGciOiJIUzI1NiJ9 alone",
    "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
    "",
  }
  for _, s in ipairs(same) do
    local out, changed = scrub.text(s, DEFAULTS)
    t.eq(out, s)
    t.eq(changed, false, s)
  end
end)

t.test("default patterns: a quote the line does not close is no password value", function()
  -- the quote after "password:" closes a string of the code: what follows
  -- up to the next quote, lines later, is code, not a password
  local same = {
    'log.info("password: " + user.name);\nif (ok) {\n  return "done";\n}',
    'print("password:", pw)\nprint("user:", u)',
    "print('password:', pw)\r\nprint('user:', u)",
    'fmt.Println("password: "+pw)\nreturn',
    'log("password:"+user.name)\nreturn',
    'ask("password: ")\nreturn',
  }
  for _, s in ipairs(same) do
    t.eq(redact(s), s, s)
  end
end)

t.test("tables are scrubbed at any depth; keys and other values stay", function()
  local result = { status = "success", data = {
    env = { OPENAI_API_KEY = "sk-" .. rep("a", 30), HOME = "/home/bob" },
    list = { "ok", "Bearer " .. rep("b", 20), 3, true },
  } }
  t.eq(scrub.result(result, DEFAULTS), true)
  t.eq(result.data, { env = { OPENAI_API_KEY = R, HOME = "/home/bob" }, list = { "ok", "Bearer " .. R, 3, true } })
  local err = { status = "error", message = "login failed for password=hunter2" }
  t.eq(scrub.result(err, DEFAULTS), true)
  t.eq(err.message, "login failed for password=" .. R)
  t.eq(scrub.result({ status = "success", data = "nothing" }, DEFAULTS), false)
end)

t.test("configured patterns and replacement (module level)", function()
  local c = scrub.compile({ patterns = { "corp%-%x%x%x%x+", "(id=)%d+" }, replacement = "***" })
  t.eq((scrub.text("a corp-dead beef; id=42 sk-" .. rep("z", 24), c)), "a *** beef; *** ***")
  local only = scrub.compile({ defaults = false, patterns = { "corp%-%x+" }, replacement = "100% #" })
  t.eq((scrub.text("corp-ab sk-" .. rep("z", 24), only)), "100% # sk-" .. rep("z", 24))
  -- the default bearer rule keeps its prefix with any replacement
  t.eq((scrub.text("Bearer " .. rep("q", 20), scrub.compile({ replacement = "%1" }))), "Bearer %1")
end)

t.test("a pattern that runs out of steps fails closed", function()
  local c = scrub.compile({ defaults = false, patterns = { ".-.-.-b" } })
  local out, changed = scrub.text(rep("a", 400), c)
  t.eq(out, scrub.UNSCANNABLE)
  t.eq(changed, true)
end)

t.test("pattern checks", function()
  t.eq(scrub.check("sk%-%w+"), nil)
  t.eq(scrub.check("[%]]x"), nil)
  t.eq(scrub.check("%f[%w]ab"), nil)
  t.match(scrub.check("abc%"), "ends with %%")
  t.match(scrub.check("[abc"), "missing %]")
  t.match(scrub.check("(abc"), "unfinished capture")
  t.match(scrub.check("abc)"), "without its %(")
  t.match(scrub.check("%bx"), "%%b needs two characters")
  t.match(scrub.check("a*"), "match empty text")
  t.match(scrub.check("%f[%w]"), "match empty text")
end)

t.test("a whole run: the model sees the result redacted", function()
  local h = t.harness { plugins = { "redact" } }
  local key = "sk-" .. rep("k", 40)
  local r = h:run { prompt = "show env", turns = {
    { tool_calls = { { name = "env", args = {} }, { name = "cfg", args = {} } } },
    { text = "done" },
  }, tools = {
    env = function() return awaken.success("OPENAI_API_KEY=" .. key .. "\nHOME=/root") end,
    cfg = function() return awaken.success({ db = { password = "x", url = "postgres://u:password=pw@h" } }) end,
  } }
  t.eq(r.termination, "natural")
  t.eq(r.messages[3].content, "OPENAI_API_KEY=[REDACTED]\nHOME=/root")
  t.eq(awaken.json.decode(r.messages[4].content), { db = { password = "x", url = "postgres://u:password=[REDACTED]" } })
  for _, m in ipairs(r.requests[2].messages) do
    t.eq(m.content:find(key, 1, true), nil, "the key never reaches the model")
  end
  local done = {}
  for _, ev in ipairs(r.events) do
    if ev.event == "tool_call_done" then done[#done + 1] = ev.result.data end
  end
  t.eq(done[1], "OPENAI_API_KEY=[REDACTED]\nHOME=/root")
end)

-- The tool messages of a run, in order.
local function tool_messages(r)
  local out = {}
  for _, m in ipairs(r.messages) do
    if m.role == "tool" then out[#out + 1] = m.content end
  end
  return out
end

-- A run where each tool returns the given result.
local function run_with(config, results)
  local h = t.harness { plugins = { "redact" }, config = { redact = config } }
  local calls, tools = {}, {}
  for i, res in ipairs(results) do
    local name = "tool" .. i
    calls[i] = { name = name, args = {} }
    tools[name] = function() return res end
  end
  return h:run { prompt = "go", turns = { { tool_calls = calls }, { text = "done" } }, tools = tools }
end

t.test("a whole run: configured patterns are masked with the defaults", function()
  local r = run_with({ patterns = { "corp%-%x%x%x%x+", "(session=)%w+" } }, {
    awaken.success("id corp-dead01 ok"),
    awaken.success("cookie session=abc123; path=/"),
    awaken.success("key sk-" .. rep("k", 30)),
    awaken.error("login as corp-beef failed"),
  })
  t.eq(r.termination, "natural")
  -- a configured pattern's whole match is replaced, captures included
  t.eq(tool_messages(r), {
    "id [REDACTED] ok",
    "cookie [REDACTED]; path=/",
    "key [REDACTED]",
    "error: login as [REDACTED] failed",
  })
end)

t.test("a whole run: the configured replacement", function()
  local r = run_with({ replacement = "***", patterns = { "internal%-%d+" } }, {
    awaken.success({ host = "internal-42", auth = "Bearer " .. rep("t", 24) }),
  })
  t.eq(awaken.json.decode(tool_messages(r)[1]), { host = "***", auth = "Bearer ***" })
end)

t.test("a whole run: defaults = false applies only the configured patterns", function()
  local key = "sk-" .. rep("k", 30)
  local r = run_with({ defaults = false, patterns = { "corp%-%x+" }, replacement = "<x>" }, {
    awaken.success("corp-abc and " .. key),
  })
  t.eq(tool_messages(r), { "<x> and " .. key })
  -- and with neither: results pass unchanged
  r = run_with({ defaults = false }, { awaken.success("password=hunter2") })
  t.eq(tool_messages(r), { "password=hunter2" })
end)

t.test("a whole run: two agents' configs do not mix", function()
  -- each config is prepared on its own
  local a = run_with({ patterns = { "alpha%d+" } }, { awaken.success("alpha1 beta2") })
  local b = run_with({ patterns = { "beta%d+" } }, { awaken.success("alpha1 beta2") })
  local c = run_with({ patterns = { "alpha%d+" }, replacement = "#" }, { awaken.success("alpha1 beta2") })
  t.eq(tool_messages(a), { "[REDACTED] beta2" })
  t.eq(tool_messages(b), { "alpha1 [REDACTED]" })
  t.eq(tool_messages(c), { "# beta2" })
end)

t.test("compiled configs are plain data that follow their config", function()
  t.eq(scrub.compile({ patterns = {}, replacement = "[REDACTED]", defaults = true }), DEFAULTS)
  local one = scrub.compile({ patterns = { "a+b" }, replacement = "x" })
  t.eq(awaken.json.decode(awaken.json.encode(one)), one)
  t.neq(scrub.compile({ patterns = { "a+b" }, replacement = "y" }), one)
  t.neq(scrub.compile({ patterns = { "a+b" }, replacement = "x", defaults = false }), one)
  local ab = scrub.compile({ defaults = false, patterns = { "a", "b" } })
  t.eq((scrub.text("a1:b", ab)), "[REDACTED]1:[REDACTED]")
end)

t.test("the prefilter: gates rule out the rules whose hints do not occur", function()
  -- fewer searches than hints: "sk-" stands for both OpenAI rules, "gh" for
  -- the GitHub ones, "IA" for AKIA and ASIA
  local hints = 0
  for _, rule in ipairs(DEFAULTS.rules) do hints = hints + #(rule.hints or {}) end
  t.ok(#DEFAULTS.gates < hints, #DEFAULTS.gates .. " gates for " .. hints .. " hints")
  t.eq(DEFAULTS.always, false)
  -- each hint alone reaches its rule through its gate
  for i, rule in ipairs(DEFAULTS.rules) do
    for _, hint in ipairs(rule.hints) do
      local found = false
      for _, gate in ipairs(DEFAULTS.gates) do
        if gate.nocase == (rule.nocase and true or false) and hint:find(gate.needle, 1, true) then
          for _, m in ipairs(gate.members) do
            if m.rule == i and (m.hint or gate.needle) == hint then found = true end
          end
        end
      end
      t.ok(found, rule.name .. " " .. hint)
    end
  end
  -- a gate that occurs, its hints that do not: nothing is tried
  for _, s in ipairs { "the sk- prefix", "through the night", "GAIA", "IAM", "xox", "Bearer", "passw" } do
    t.eq({ scrub.text(s, DEFAULTS) }, { s, false }, s)
  end
  -- a configured pattern has no hints: always tried
  local c = scrub.compile({ patterns = { "corp%-%x+" } })
  t.eq(c.always, true)
  t.eq((scrub.text("corp-ab", c)), R)
end)

t.test("after a replacement, the following rules look for their hints in the new text", function()
  -- the replacement holds an OpenAI-like key: the openai rule (after
  -- private_key) finds it although the original text held no "sk-"
  local c = scrub.compile({ replacement = "[gone] sk-" .. rep("r", 24) })
  local pem = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----"
  t.eq((scrub.text("x " .. pem, c)), "x [gone] [gone] sk-" .. rep("r", 24))
  -- and a rule that matched before a replacement still applies after it
  t.eq((scrub.text("password=a sk-" .. rep("k", 24), DEFAULTS)), "password=" .. R .. " " .. R)
end)

t.test("config errors", function()
  local function harness(config)
    return t.harness { plugins = { "redact" }, config = { redact = config } }
  end
  t.raises(function() harness { patterns = { "ok%d+", "bad[" } } end, "^config_invalid: redact: patterns%[1%]: missing %] in a set")
  t.raises(function() harness { patterns = { "x*" } } end, "patterns%[0%]: it can match empty text")
  t.raises(function() harness { patterns = { "" } } end, "patterns%[0%]")
  t.raises(function() harness { replacement = 3 } end, "redact%.replacement")
  t.raises(function() harness { defaults = "no" } end, "redact%.defaults")
  t.raises(function() harness { pattern = { "x" } } end, "pattern")
  -- every setting is usable
  harness { patterns = { "corp%-%x+" }, replacement = "***", defaults = false }
  harness { patterns = {}, replacement = "[REDACTED]", defaults = true }
end)
