local awaken = require("awaken")
local t = require("awaken.testing")

local MESSAGE = "Run the tests."

local function harness(config)
  config = config or {}
  config.message = config.message or MESSAGE
  return t.harness { plugins = { "verify" }, config = { verify = config } }
end

local ok = function() return awaken.success("ok") end
local tools = { Write = ok, Edit = ok, Read = ok, Bash = ok, fs_write = function() return awaken.error("disk full") end }

local function call(name, args) return { tool_calls = { { name = name, args = args or {} } } } end

-- The events of a run named run_continued and continue_limit, counted.
local function continues(r)
  local n, limit = 0, 0
  for _, ev in ipairs(r.events) do
    if ev.event == "run_continued" then
      n = n + 1
      t.eq(ev.plugin, "verify")
      t.eq(ev.content, MESSAGE)
    elseif ev.event == "continue_limit" then
      limit = limit + 1
    end
  end
  return n, limit
end

t.test("an edit without a test run continues the run once", function()
  local r = harness():run { prompt = "fix it", turns = {
    call("Write", { file_path = "a.go", content = "x" }), { text = "done" }, { text = "still done" } }, tools = tools }
  t.eq(r.termination, "natural")
  t.eq(r.steps, 3)
  t.eq(continues(r), 1)
  -- the model's third request ends with the plugin's message
  local msgs = r.requests[3].messages
  t.eq(msgs[#msgs], { role = "user", content = MESSAGE })
end)

t.test("an edit then the tests: no continue", function()
  local r = harness():run { prompt = "fix it", turns = {
    call("Edit", { file_path = "a.go", old_string = "a", new_string = "b" }),
    call("Bash", { command = "cd src && go test ./...", description = "tests" }),
    { text = "done" } }, tools = tools }
  t.eq(r.termination, "natural")
  t.eq(r.steps, 3)
  t.eq(continues(r), 0)
end)

t.test("the tests after the continue end the run", function()
  local r = harness():run { prompt = "fix it", turns = {
    call("Write", { file_path = "a.go", content = "x" }), { text = "done" },
    call("Bash", { command = "make test" }), { text = "tests pass" } }, tools = tools }
  t.eq(r.termination, "natural")
  t.eq(r.steps, 4)
  t.eq(continues(r), 1)
end)

t.test("no edit, or only a failed one: no continue", function()
  local r = harness():run { prompt = "look", turns = { call("Read", { file_path = "a.go" }), { text = "done" } }, tools = tools }
  t.eq(r.steps, 2)
  t.eq(continues(r), 0)
  r = harness():run { prompt = "write", turns = { call("fs_write", { path = "a" }), { text = "done" } }, tools = tools }
  t.eq(r.steps, 2)
  t.eq(continues(r), 0)
end)

t.test("configured patterns replace the defaults", function()
  local h = harness { edits = { "fs_*" }, tests = { "Bash(just check*)" } }
  local r = h:run { prompt = "x", turns = { call("Write", { file_path = "a" }), { text = "done" } }, tools = tools }
  t.eq(continues(r), 0) -- Write is no edit here
  local w = { fs_put = ok, Bash = ok }
  r = h:run { prompt = "x", turns = { call("fs_put", {}), call("Bash", { command = "go test ./..." }), { text = "done" }, { text = "ok" } }, tools = w }
  t.eq(continues(r), 1) -- go test is not the configured test command
end)

t.test("bad patterns fail at load", function()
  local ok_, err = pcall(harness, { tests = { "Bash(" } })
  t.eq(ok_, false)
  t.eq(tostring(err):find("tests[0]", 1, true) ~= nil, true)
end)
