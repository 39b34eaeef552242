local t = require("awaken.testing")

t.test("this one fails", function()
  local h = t.harness { plugins = { "guard" } }
  local d = h:gate { name = "shell", args = { cmd = "ls" } }
  t.eq(d.decision, "block")
end)
