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

t.test("a secret in any directory", function()
  local h = t.harness { plugins = { "guard" } }
  t.eq(h:gate { name = "fs_read", args = { path = "config/.env" } }.decision, "set_result")
  t.eq(h:gate { name = "fs_write", args = { path = "certs/server.pem" } }.decision, "set_result")
  t.eq(h:gate { name = "fs_read", args = { path = "home/.ssh/id_rsa" } }.decision, "set_result")
  t.eq(h:gate { name = "fs_read", args = { path = "docs/env.md" } }.decision, "allow")
end)

t.test("Claude Code's file tools, with absolute paths", function()
  local h = t.harness { plugins = { "guard" } }
  for _, c in ipairs {
    { name = "Read", args = { file_path = "/home/alice/project/.env" } },
    { name = "Write", args = { file_path = "/home/alice/project/key.pem", content = "x" } },
    { name = "Edit", args = { file_path = "/home/alice/.ssh/id_rsa", old_string = "a", new_string = "b" } },
    { name = "MultiEdit", args = { file_path = "/srv/.env", edits = {} } },
    { name = "NotebookEdit", args = { notebook_path = "/srv/x.pem" } },
  } do
    local d = h:gate(c)
    t.eq(d.decision, "set_result", c.name)
    t.match(d.result.message, "off limits")
  end
  t.eq(h:gate { name = "Read", args = { file_path = "/home/alice/project/main.go" } }.decision, "allow")
  t.eq(h:gate { name = "Grep", args = { pattern = ".", path = "/srv/app/.env", output_mode = "content" } }.decision, "set_result")
  t.eq(h:gate { name = "Grep", args = { pattern = "TODO", path = "/srv/app" } }.decision, "allow")
  t.eq(h:gate { name = "Bash", args = { command = "cat .env" } }.decision, "allow") -- a shell policy's job
end)

t.test("Windows paths", function()
  local h = t.harness { plugins = { "guard" } }
  t.eq(h:gate { name = "Read", args = { file_path = "C:\\Users\\alice\\project\\.env" } }.decision, "set_result")
  t.eq(h:gate { name = "Read", args = { file_path = "C:\\Users\\alice\\.ssh\\id_rsa" } }.decision, "set_result")
  t.eq(h:gate { name = "Read", args = { file_path = "C:\\Users\\alice\\project\\main.go" } }.decision, "allow")
  for _, p in ipairs {
    "C:\\Users\\alice\\project\\.ENV", "C:\\Users\\alice\\project\\.env.", "C:\\Users\\alice\\project\\.env ",
    "C:\\Users\\alice\\project\\.env::$DATA", "C:.env", "D:\\certs\\Server.PEM",
  } do
    t.eq(h:gate { name = "Read", args = { file_path = p } }.decision, "set_result", p)
  end
end)

t.test("a relative path glob matches an absolute path at any depth", function()
  local h = t.harness { plugins = { "guard" }, config = { guard = { secrets = { "secrets/**" } } } }
  t.eq(h:gate { name = "Read", args = { file_path = "/home/alice/project/secrets/a/b.txt" } }.decision, "set_result")
  t.eq(h:gate { name = "Read", args = { file_path = "/home/alice/project/src/secrets.go" } }.decision, "allow")
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
