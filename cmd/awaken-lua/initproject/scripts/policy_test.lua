local awaken = require("awaken")
local t = require("awaken.testing")

t.test("writes under docs/ pass", function()
  local h = t.harness { plugins = { "policy" } }
  t.eq(h:gate { name = "fs_write", args = { path = "docs/notes.md", content = "x" } }.decision, "allow")
  t.eq(h:gate { name = "fs_read", args = { path = "notes/todo.md" } }.decision, "allow")
end)

t.test("other writes are blocked, with the reason", function()
  local h = t.harness { plugins = { "policy" } }
  local d = h:gate { name = "fs_write", args = { path = "notes/todo.md", content = "x" } }
  t.eq(d.decision, "block")
  t.match(d.reason, "not writable")
end)

t.test("the config decides what is writable", function()
  local h = t.harness { plugins = { "policy" }, config = { policy = { writable = { "notes/**" } } } }
  t.eq(h:gate { name = "fs_write", args = { path = "notes/todo.md" } }.decision, "allow")
end)

t.test("a whole run ends at the blocked write", function()
  local h = t.harness { plugins = { "policy" } }
  local r = h:run { prompt = "tidy up", turns = {
    { tool_calls = { { name = "fs_write", args = { path = "src/x.go", content = "" } } } } },
    tools = { fs_write = function(args) return awaken.success("written") end } }
  t.eq(r.termination, "blocked:src/x.go is not writable; write under docs/**")
end)
