local awaken = require("awaken")
local t = require("awaken.testing")

t.test("secrets are refused with an error the model reads", function()
  local h = t.harness { plugins = { "guard" } }
  local d = h:gate { name = "fs_read", args = { path = ".env" } }
  t.eq(d.decision, "set_result")
  t.eq(d.result.status, "error")
  t.match(d.result.message, "off limits")
end)

t.test("other files pass", function()
  local h = t.harness { plugins = { "guard" } }
  t.eq(h:gate { name = "fs_read", args = { path = "src/main.go" } }.decision, "allow")
  t.eq(h:gate { name = "fs_list", args = { path = "." } }.decision, "allow")
end)

t.test("configured globs", function()
  local h = t.harness { plugins = { "guard" }, config = { guard = { secrets = { "secrets/**" } } } }
  t.eq(h:gate { name = "fs_read", args = { path = "secrets/a/b.txt" } }.decision, "set_result")
  t.eq(h:gate { name = "fs_read", args = { path = ".env" } }.decision, "allow")
end)

t.test("refusals are counted per thread", function()
  local h = t.harness { plugins = { "guard" } }
  local r = h:run { turns = {
    { tool_calls = { { name = "fs_read", args = { path = ".env" } } } },
    { text = "ok" } },
    tools = { fs_read = function(args) return awaken.success("content") end } }
  t.eq(r.termination, "natural")
  t.eq(r.state["guard.refusals"], 1)
  local again = h:run { turns = { { tool_calls = { { name = "fs_read", args = { path = "x.pem" } } } }, { text = "ok" } },
    tools = { fs_read = function(args) return awaken.success("content") end } }
  t.eq(again.state["guard.refusals"], 2)
end)
