local t = require("awaken.testing")

t.test("ctx.run.cwd anchors ./x", function()
  local h = t.harness { plugins = { "cwdguard" } }
  t.eq(h:gate({ name = "Read", args = { file_path = "/w/.env" } }, { cwd = "/w" }).decision, "block")
  t.eq(h:gate({ name = "Read", args = { file_path = "/w/src/a.go" } }, { cwd = "/w" }).decision, "allow")
  t.eq(h:gate({ name = "Read", args = { file_path = "/v/.env" } }, { cwd = "/w" }).decision, "allow")
  -- without one the rule cannot be judged, and denies
  t.eq(h:gate({ name = "Read", args = { file_path = "/w/src/a.go" } }).decision, "block")
end)

t.test("ctx as the directories: its run's cwd", function()
  local h = t.harness { plugins = { "cwdguard" } }
  t.eq(h:gate({ name = "Edit", args = { file_path = "/w/.env" } }, { cwd = "/w" }).decision, "block")
  t.eq(h:gate({ name = "Edit", args = { file_path = "/w/src/a.go" } }, { cwd = "/w" }).decision, "allow")
  t.eq(h:gate({ name = "Edit", args = { file_path = "/v/.env" } }, { cwd = "/w" }).decision, "allow")
  t.eq(h:gate({ name = "Edit", args = { file_path = "/w/src/a.go" } }).decision, "block")
  -- a cwd that is not an absolute path anchors nothing
  t.eq(h:gate({ name = "Edit", args = { file_path = "/w/src/a.go" } }, { cwd = "w" }).decision, "block")
  -- a ctx kept past its call is refused
  t.eq(h:gate({ name = "Stale", args = {} }, { cwd = "/w" }).decision, "allow")
  local d = h:gate({ name = "Stale", args = {} }, { cwd = "/w" })
  t.eq(d.decision, "block")
  t.match(d.reason, "this ctx belongs to a call that has ended")
end)

t.test("every phase reads it", function()
  local h = t.harness { plugins = { "cwdguard" } }
  t.eq(h:phase("step_start", {}, { cwd = "/w" }).state["cwdguard.seen"], "/w")
  t.eq(h:phase("step_start", {}).state["cwdguard.seen"], "none")
  t.eq(h:phase("run_start", {}, { cwd = "/r" }).state["cwdguard.seen"], "/r")
end)

t.test("a run without a hook event has none", function()
  local h = t.harness { plugins = { "cwdguard" } }
  local r = h:run { prompt = "hi", turns = { { text = "done" } } }
  t.eq(r.state["cwdguard.seen"], "none")
end)
