package luabridge_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/luabridge"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

const head = "local awaken = require(\"awaken\")\nlocal p = awaken.plugin {}\n"

// Misuse of the API fails at load time with file:line and a code.
func TestMisuseFailsAtLoad(t *testing.T) {
	tests := []struct {
		name, src string
		code      errs.Code
		pos       string
		want      string
	}{
		{"unknown phase", head + `p:on("tool_gat", function() end)` + "\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", `unknown phase "tool_gat"`},
		{"gate with on", head + `p:on("tool_gate", function() end)` + "\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", "p:tool_gate"},
		{"hook not a function", head + `p:on("step_start", 42)` + "\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", "must be a function"},
		{"bad scope", head + `p:key("x.n", { scope = "global" })` + "\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", `scope "global"`},
		{"bad reducer", head + `p:key("x.n", { reducer = "sum" })` + "\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", `reducer "sum"`},
		{"unknown key field", head + `p:key("x.n", { defualt = 1 })` + "\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", `did you mean "default"`},
		{"bad key name", head + `p:key("Bad Name", {})` + "\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", "not valid"},
		{"bad schema", head + `p:key("x.n", { schema = { type = "strng" } })` + "\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", `"strng"`},
		{"default misfit", head + `p:key("x.n", { schema = { type = "integer" }, default = "a" })` + "\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", "default"},
		{"duplicate key", head + "p:key(\"x.n\", {})\np:key(\"x.n\", {})\nreturn p", errs.KeyAlreadyRegistered, "scripts/x.lua:4", "scripts/x.lua:3"},
		{"action on gate", head + `p:action("x.a", { phase = "tool_gate" }, function() end)` + "\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", "cannot run actions"},
		{"reserved prefix", head + `p:action("runtime.mine", { phase = "step_end" }, function() end)` + "\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", "reserved prefix"},
		{"dot instead of colon", head + `p.on("step_start", function() end)` + "\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", "colon"},
		{"no return", head, errs.PluginLoadFailed, "scripts/x.lua", "must return its plugin"},
		{"syntax error", head + "p:on(\"step_start\", function( end)\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", "syntax error"},
		{"runtime error at load", head + "local x = nil\nx.y = 1\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:4", "attempt to index"},
		{"unknown plugin field", `local awaken = require("awaken")` + "\nlocal p = awaken.plugin { descripton = 'x' }\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:2", `did you mean "description"`},
		{"two plugins", head + "awaken.plugin {}\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", "twice"},
		{"tool without id", head + "p:tool { execute = function() end }\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", "id is required"},
		{"bad config schema", `local awaken = require("awaken")` + "\nlocal p = awaken.plugin { config = { n = { type = 1 } } }\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:2", "config schema"},
		{"bad hook_timeout", `local awaken = require("awaken")` + "\nlocal p = awaken.plugin { hook_timeout = 'soon' }\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:2", "hook_timeout"},
		{"hook_timeout NaN", `local awaken = require("awaken")` + "\nlocal p = awaken.plugin { hook_timeout = 0/0 }\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:2", "hook_timeout"},
		{"hook_timeout infinite", `local awaken = require("awaken")` + "\nlocal p = awaken.plugin { hook_timeout = 1/0 }\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:2", "hook_timeout"},
		{"hook_timeout negative", `local awaken = require("awaken")` + "\nlocal p = awaken.plugin { hook_timeout = -5 }\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:2", "hook_timeout"},
		{"priority too high", `local awaken = require("awaken")` + "\nlocal p = awaken.plugin { priority = 1001 }\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:2", "priority"},
		{"priority negative", `local awaken = require("awaken")` + "\nlocal p = awaken.plugin { priority = -1 }\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:2", "priority"},
		{"priority fractional", `local awaken = require("awaken")` + "\nlocal p = awaken.plugin { priority = 2.5 }\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:2", "priority"},
		{"priority NaN", `local awaken = require("awaken")` + "\nlocal p = awaken.plugin { priority = 0/0 }\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:2", "priority"},
		{"priority infinite", `local awaken = require("awaken")` + "\nlocal p = awaken.plugin { priority = 1/0 }\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:2", "priority"},
		{"priority a string", `local awaken = require("awaken")` + "\nlocal p = awaken.plugin { priority = 'high' }\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:2", "priority"},
		{"hook_timeout zero", `local awaken = require("awaken")` + "\nlocal p = awaken.plugin { hook_timeout = 0 }\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:2", "hook_timeout"},
		{"hook_timeout absurd", `local awaken = require("awaken")` + "\nlocal p = awaken.plugin { hook_timeout = 1e300 }\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:2", "hook_timeout"},
		{"hook_timeout absurd string", `local awaken = require("awaken")` + "\nlocal p = awaken.plugin { hook_timeout = '100h' }\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:2", "hook_timeout"},
		{"hook_timeout negative string", `local awaken = require("awaken")` + "\nlocal p = awaken.plugin { hook_timeout = '-1s' }\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:2", "hook_timeout"},
		{"bad argument type", head + "p:key({})\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", "string expected, got table"},
		{"unfinished at the end of the file", head + "local x = \n\n", errs.PluginLoadFailed, "scripts/x.lua:3", "syntax error near '=' at the end of the file"},
		{"plugin id a number", `local awaken = require("awaken")` + "\nlocal p = awaken.plugin { id = 5 }\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:2", "id must be a string, got a number"},
		{"plugin description a number", `local awaken = require("awaken")` + "\nlocal p = awaken.plugin { description = 5 }\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:2", "description must be a string"},
		{"key scope a number", head + `p:key("x.n", { scope = 1 })` + "\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", "scope must be a string, got a number"},
		{"key merge a boolean", head + `p:key("x.n", { merge = true })` + "\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", "merge must be a string"},
		{"key persist a string", head + `p:key("x.n", { persist = "no" })` + "\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", "persist must be a boolean, got a string"},
		{"tool id a number", head + "p:tool { id = 5, execute = function() end }\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", "id must be a string"},
		{"tool description a number", head + "p:tool { id = 'x', description = 5, execute = function() end }\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", "description must be a string"},
		{"tool with a misspelt execute", head + "p:tool { id = 'x', excute = function() end }\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", `unknown field "excute" (did you mean "execute"?)`},
		{"action without a phase", head + `p:action("x.a", {}, function() end)` + "\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", "needs the phase"},
		{"action with a bad phase", head + `p:action("x.a", { phase = "runstart" }, function() end)` + "\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", "phases: run_start,"},
		{"action with a misspelt field", head + `p:action("x.a", { phase = "run_end", shema = {} }, function() end)` + "\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", `did you mean "schema"`},
		{"unknown plugin method", head + "p:tools { id = 'x', execute = function() end }\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", `no field "tools" (did you mean "tool"?)`},
		{"syntax error mid-file", head + "local = 1\nreturn p", errs.PluginLoadFailed, "scripts/x.lua:3", "syntax error near '='"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := load(t, map[string]string{"x.lua": tc.src})
			var e *errs.Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T)", err, err)
			}
			if e.Code != tc.code || !strings.HasPrefix(e.Pos.String(), tc.pos) || !strings.Contains(err.Error(), tc.want) ||
				strings.Contains(err.Error(), "syntax error: syntax error") {
				t.Fatalf("err = %q (code %s, pos %s); want code %s at %s containing %q", err, e.Code, e.Pos, tc.code, tc.pos, tc.want)
			}
		})
	}
}

// Problems in several plugins are all reported, sorted by position.
func TestAllProblemsReported(t *testing.T) {
	_, err := load(t, map[string]string{
		"a.lua": head + `p:on("nope", function() end)` + "\nreturn p",
		"b.lua": "this is not lua",
		"c.lua": head + "p:key(\"shared.k\", {})\nreturn p",
		"d.lua": head + "p:key(\"shared.k\", {})\nreturn p",
	})
	var list errs.List
	if !errors.As(err, &list) || len(list) != 3 {
		t.Fatalf("err = %v", err)
	}
	got := err.Error()
	for _, w := range []string{"scripts/a.lua:3", "scripts/b.lua:1", "key_already_registered", "scripts/c.lua:3", "scripts/d.lua:3"} {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, got)
		}
	}
}

// Writes in read-only places and unknown names fail at call time with the
// line of the call.
func TestCallTimeMisuse(t *testing.T) {
	tests := []struct {
		name, src string
		code      errs.Code
		want      string
	}{
		{"unknown key", head + "p:on(\"step_start\", function(ctx)\n ctx:update(\"x.nope\", 1)\nend)\nreturn p", errs.UnknownKey, "scripts/x.lua:4"},
		{"unknown action", head + "p:on(\"step_start\", function(ctx)\n ctx:schedule(\"runtime.add_contxt_message\", {})\nend)\nreturn p", errs.UnknownActionHandler, `did you mean "runtime.add_context_message"`},
		{"unknown effect", head + "p:on(\"step_start\", function(ctx)\n ctx:emit(\"nobody\", {})\nend)\nreturn p", errs.UnknownEffectHandler, "scripts/x.lua:4"},
		{"function value", head + "local k = p:key(\"x.k\", {})\np:on(\"step_start\", function(ctx)\n ctx:update(k, function() end)\nend)\nreturn p", errs.SchemaViolation, "cannot be stored"},
		{"cyclic table", head + "local k = p:key(\"x.k\", {})\np:on(\"step_start\", function(ctx)\n local t = {} t.self = t\n ctx:update(k, t)\nend)\nreturn p", errs.SchemaViolation, "contains itself"},
		{"mixed table", head + "local k = p:key(\"x.k\", {})\np:on(\"step_start\", function(ctx)\n ctx:update(k, {1, 2, x = 3})\nend)\nreturn p", errs.SchemaViolation, "mixes list items"},
		{"ctx write", head + "p:on(\"step_start\", function(ctx)\n ctx.phase = 'x'\nend)\nreturn p", errs.HookFailed, "ctx is read-only"},
		{"library write", head + "p:on(\"step_start\", function(ctx)\n string.upper = nil\nend)\nreturn p", errs.HookFailed, "string is read-only"},
		{"rawset on globals", head + "p:on(\"step_start\", function(ctx)\n rawset(_G, 'x', 1)\nend)\nreturn p", errs.HookFailed, "read-only"},
		{"rawset of a NaN key", head + "p:on(\"step_start\", function(ctx)\n rawset({}, 0/0, 1)\nend)\nreturn p", errs.HookFailed, "table index is NaN"},
		{"rawset of a nil key", head + "p:on(\"step_start\", function(ctx)\n rawset({}, nil, 1)\nend)\nreturn p", errs.HookFailed, "table index is nil"},
		{"register from a hook", head + "p:on(\"step_start\", function(ctx)\n p:on(\"step_end\", function() end)\nend)\nreturn p", errs.PluginLoadFailed, "after the plugin has loaded"},
		{"stale ctx", head + "local saved\np:on(\"run_start\", function(ctx) saved = ctx end)\np:on(\"step_start\", function(ctx)\n saved:get('x')\nend)\nreturn p", errs.HookFailed, "call that has ended"},
		{"math.random", head + "p:on(\"step_start\", function(ctx)\n math.random()\nend)\nreturn p", errs.HookFailed, "scripts/x.lua:4"},
		{"huge rep", head + "p:on(\"step_start\", function(ctx)\n ('x'):rep(1e9)\nend)\nreturn p", errs.HookFailed, "over the limit"},
		{"huge format", head + "p:on(\"step_start\", function(ctx)\n string.format('%999999999d', 1)\nend)\nreturn p", errs.HookFailed, "width"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := mustLoad(t, map[string]string{"x.lua": tc.src})
			rt := runtimeFor(t, g)
			s, _, err := rt.Start(context.Background(), run.StartOptions{})
			if err == nil {
				_, err = s.StepStart(context.Background())
			}
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v; want %s containing %q", err, tc.code, tc.want)
			}
			if !strings.HasPrefix(e.Pos.String(), "scripts/x.lua:") {
				t.Errorf("no line in %v", err)
			}
		})
	}
}

// A table a hook receives is built for that call: mutating it changes
// nothing the next call sees. (ctx.config is the exception: it is kept per
// state and documented as read-only, see configTable.)
func TestTablesAreFreshPerCall(t *testing.T) {
	g := mustLoad(t, map[string]string{"x.lua": head + `
local k = p:key("x.list", { default = { "a" } })
local seen = p:key("x.seen", { reducer = "append", default = {} })
p:tool_gate(function(ctx, call)
  local before = #call.args.items .. ":" .. #ctx:get(k)
  table.insert(call.args.items, "mutated")
  table.insert(ctx:get(k), "mutated")
  return awaken.block(before)
end)
return p`})
	_ = g
	in, _ := g.Set.Plugin("x")
	_ = in
	rt := runtimeFor(t, g, run.WithAgents(run.Agent{ID: "default", Configs: map[string]any{"x": map[string]any{"deny": []any{"rm"}}}}))
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		s, _, _ := rt.Start(ctx, run.StartOptions{})
		s.StepStart(ctx)
		s.BeforeInference(ctx, model.Request{Tools: []model.ToolSpec{{Name: "t"}}})
		s.AfterInference(ctx, model.Response{ToolCalls: []model.ToolCall{{Name: "t", Args: map[string]any{"items": []any{"one"}}}}})
		d, _, err := s.ToolGate(ctx, model.ToolCall{ID: "call_1_1"})
		if err != nil || d.Reason != "1:1" {
			t.Fatalf("call %d saw %q (%v): a table leaked from an earlier call", i, d.Reason, err)
		}
	}
}

// The conflict fallback with Lua hooks: three read-modify-write hooks on one
// exclusive key give the serial result in registration order.
func TestConflictFallbackWithLuaHooks(t *testing.T) {
	files := map[string]string{"a_keys.lua": head + `p:key("shared.log", { default = "" })` + "\nreturn p"}
	for _, name := range []string{"b1", "b2", "b3"} {
		files[name+".lua"] = head + `p:on("before_inference", function(ctx)
  ctx:update("shared.log", ctx:get("shared.log") .. "` + name + `;")
end)
return p`
	}
	g := mustLoad(t, files)
	st, _ := state.NewStore(g.Set.Registry(), nil)
	x, err := engine.New(g.Set).Exec(engine.ExecConfig{Store: st})
	if err != nil {
		t.Fatal(err)
	}
	if err := x.Phase(context.Background(), phase.BeforeInference, plugin.Input{}); err != nil {
		t.Fatal(err)
	}
	v, _ := st.Snapshot().Lookup("shared.log")
	if v != "b1;b2;b3;" {
		t.Fatalf("log = %q", v)
	}
}

// Many runs in parallel share the pools without races.
func TestParallelRunsShareStates(t *testing.T) {
	g := mustLoad(t, map[string]string{"x.lua": head + `
local n = p:key("x.n", { reducer = "add", default = 0 })
p:on("step_start", function(ctx) ctx:update(n, 1) end)
p:tool_gate(function(ctx, call) if call.args.bad then return awaken.block("bad") end end)
return p`}, func(l *luabridge.Loader) { l.PoolSize = 3 })
	rt := runtimeFor(t, g)
	var wg sync.WaitGroup
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := rt.Run(context.Background(), run.Request{Model: scripted(model.Response{ToolCalls: []model.ToolCall{{Name: "t", Args: map[string]any{"bad": i%2 == 0}}}}),
				Tools: []plugin.Tool{goTool{"t", func(map[string]any) model.ToolResult { return model.Success("ok") }}}})
			if err != nil || res.Err != nil {
				t.Error(err, res.Err)
				return
			}
			want := "natural"
			if i%2 == 0 {
				want = "blocked:bad"
			}
			if res.Termination != want {
				t.Errorf("run %d: %s", i, res.Termination)
			}
		}()
	}
	wg.Wait()
	if st := g.Stats()["x"]; st[0] > 3 {
		t.Fatalf("pool grew past its bound: %v", st)
	}
}

// gopher-lua compiles a, b = b, a wrongly for locals; the loader rewrites
// multiple assignments through temporaries.
func TestMultipleAssignmentSwaps(t *testing.T) {
	g := mustLoad(t, map[string]string{"x.lua": head + `
local out = p:key("x.out", {})
p:on("step_start", function(ctx)
  local r = {}
  for i = 1, 2 do
    local a, b = 1, 2
    a, b = b, a
    r[#r + 1] = a .. "," .. b
  end
  local c, d, e = 1, 2, 3
  c, d, e = e, c, d
  r[#r + 1] = c .. d .. e
  local f, g = (function() return 7, 8 end)()
  f, g = g, f
  r[#r + 1] = f .. g
  local t = { 1, 2 }
  t[1], t[2] = t[2], t[1]
  r[#r + 1] = t[1] .. t[2]
  ctx:update(out, table.concat(r, " "))
end)
return p`})
	rt := runtimeFor(t, g)
	s, _, err := rt.Start(context.Background(), run.StartOptions{})
	if err == nil {
		_, err = s.StepStart(context.Background())
	}
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Snapshot().Values(nil)["x.out"]; got != "2,1 2,1 312 87 21" {
		t.Fatalf("swaps gave %q", got)
	}
}

// A transform that only edits the tools leaves the conversation as it was
// (it is never converted), and one that reads it sees it whole.
func TestLazyRequestInTransforms(t *testing.T) {
	g := mustLoad(t, map[string]string{
		"a.lua": head + `p:transform(function(req)
  local kept = {}
  for _, tool in ipairs(req.tools) do if tool.name ~= "drop" then kept[#kept + 1] = tool end end
  req.tools = kept
  req.params.temperature = 0.5
  return req
end)
return p`,
		"b.lua": head + `p:transform(function(req)
  req.messages[#req.messages + 1] = { role = "system", content = "seen " .. #req.messages }
  return req
end)
return p`,
	})
	rt := runtimeFor(t, g)
	ctx := context.Background()
	s, _, err := rt.Start(ctx, run.StartOptions{Messages: []model.Message{{Role: "user", Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	s.StepStart(ctx)
	req, _, err := s.BeforeInference(ctx, model.Request{Tools: []model.ToolSpec{{Name: "keep"}, {Name: "drop"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(req.Tools) != 1 || req.Tools[0].Name != "keep" || *req.Params.Temperature != 0.5 {
		t.Fatalf("tools %v params %+v", req.Tools, req.Params)
	}
	if len(req.Messages) != 2 || req.Messages[0].Content != "hi" || req.Messages[1].Content != "seen 1" {
		t.Fatalf("messages %+v", req.Messages)
	}
}

// TestUnknownEnabledPluginNamesWhereItLooked: a plugin the configuration
// names but nobody has says where it was looked for, also without a
// plugin directory.
func TestUnknownEnabledPluginNamesWhereItLooked(t *testing.T) {
	stdlibFS := fstest.MapFS{"budget/init.lua": &fstest.MapFile{Data: []byte("local awaken = require('awaken')\nreturn awaken.plugin {}\n")}}
	for _, tc := range []struct {
		dir, want string
	}{
		{"scripts", `plugin "budgt" is neither in scripts nor in stdlib (did you mean "budget"?)`},
		{"", `plugin "budgt" is not in stdlib (and no plugin directory is configured) (did you mean "budget"?)`},
	} {
		_, err := load(t, map[string]string{}, func(l *luabridge.Loader) {
			l.Plugins.Name = tc.dir
			l.Stdlib = luabridge.Source{FS: stdlibFS, Name: "stdlib"}
			l.Enable = []string{"budgt"}
		})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("plugin dir %q: err = %v", tc.dir, err)
		}
	}
	// A typo of the plugin directory's own plugin is suggested too.
	_, err := load(t, map[string]string{"policy.lua": "local awaken = require('awaken')\nreturn awaken.plugin {}\n"}, func(l *luabridge.Loader) {
		l.Plugins.Name = "scripts"
		l.Stdlib = luabridge.Source{FS: stdlibFS, Name: "stdlib"}
		l.Enable = []string{"polcy"}
	})
	if want := `plugin "polcy" is neither in scripts nor in stdlib (did you mean "policy"?)`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a typo of the directory's plugin: err = %v", err)
	}
}

// ctx.response's tool calls read like the gate's call (id, name, args,
// converted on first read) and are as read-only.
func TestResponseToolCalls(t *testing.T) {
	for _, tc := range []struct {
		name, body, want string
		code             errs.Code
	}{
		{"read", `local c = ctx.response.tool_calls[2]
  ctx:update(k, #ctx.response.tool_calls .. ":" .. c.id .. ":" .. c.name .. ":" .. c.args.cmd .. ":" .. tostring(c.decision))`, "2:c2:shell:ls:nil", ""},
		{"write", `ctx.response.tool_calls[1].name = "other"`, "", errs.HookFailed},
		{"args are the plugin's own", `local a = ctx.response.tool_calls[1].args
  a.cmd = "changed"
  ctx:update(k, a.cmd .. ":" .. ctx.response.tool_calls[1].args.cmd)`, "changed:changed", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := mustLoad(t, map[string]string{"x.lua": head + `local k = p:key("x.k", { schema = { type = "string" }, default = "" })
p:on("after_inference", function(ctx)
  ` + tc.body + `
end)
return p`})
			rt := runtimeFor(t, g)
			ctx := context.Background()
			s, _, err := rt.Start(ctx, run.StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			s.StepStart(ctx)
			s.BeforeInference(ctx, model.Request{Tools: []model.ToolSpec{{Name: "shell"}}})
			_, err = s.AfterInference(ctx, model.Response{ToolCalls: []model.ToolCall{
				{ID: "c1", Name: "shell", Args: map[string]any{"cmd": "rm"}}, {ID: "c2", Name: "shell", Args: map[string]any{"cmd": "ls"}}}})
			if tc.code != "" {
				if errs.CodeOf(err) != tc.code || !strings.Contains(err.Error(), "the tool call is read-only") || !strings.Contains(err.Error(), "scripts/x.lua:") {
					t.Fatalf("err = %v; want %s saying the call is read-only, with the line", err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := s.State()["x.k"]; got != tc.want {
				t.Errorf("x.k = %v, want %q", got, tc.want)
			}
		})
	}
}

// An error object that is not a string has no stable text of its own
// (tostring of a table is its address, different in every run, and its
// __tostring may raise or loop): the error names its type, at the line of
// the error call, at load time and at call time alike.
func TestNonStringErrorObjects(t *testing.T) {
	tests := []struct {
		name, raise, want string
	}{
		{"table", `error({code = "x"})`, "(error object is a table value)"},
		{"__tostring that raises", `error(setmetatable({}, {__tostring = function() error("inner") end}))`, "(error object is a table value)"},
		{"__tostring that loops", `error(setmetatable({}, {__tostring = function() while true do end end}))`, "(error object is a table value)"},
		{"function", `error(print)`, "(error object is a function value)"},
		{"ctx", `error(ctx)`, "(error object is a userdata value)"},
		{"number", `error(42)`, "42"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, where := range []string{"call", "load"} {
				src := head + "p:on(\"step_start\", function(ctx)\n " + tc.raise + "\nend)\nreturn p"
				code := errs.HookFailed
				if where == "load" {
					src = head + "local ctx = awaken.null\n" + tc.raise + "\nreturn p" // a userdata too
					code = errs.PluginLoadFailed
				}
				var msgs []string
				for range 2 {
					err := within(t, 10*time.Second, func() error {
						g, err := load(t, map[string]string{"x.lua": src})
						if err != nil {
							return err
						}
						s, _, err := runtimeFor(t, g).Start(context.Background(), run.StartOptions{})
						if err == nil {
							_, err = s.StepStart(context.Background())
						}
						return err
					})
					var e *errs.Error
					if !errors.As(err, &e) || e.Code != code || e.Msg != tc.want || e.Pos.String() != "scripts/x.lua:4" {
						t.Fatalf("%s: err = %v (%#v); want %s at scripts/x.lua:4 with %q", where, err, e, code, tc.want)
					}
					msgs = append(msgs, err.Error())
				}
				if msgs[0] != msgs[1] {
					t.Fatalf("%s: the error changed between runs: %q, %q", where, msgs[0], msgs[1])
				}
			}
		})
	}
}

// awaken.json.decode's errors quote what they refuse.
func TestJSONDecodeErrors(t *testing.T) {
	tests := []struct{ doc, want string }{
		{`1e400`, "json: the number 1e400 does not fit a float64 (at byte 0)"},
		{`[1, -2e999]`, "json: the number -2e999 does not fit a float64 (at byte 4)"},
	}
	for _, tc := range tests {
		t.Run(tc.doc, func(t *testing.T) {
			g := mustLoad(t, map[string]string{"x.lua": head + "p:on(\"step_start\", function(ctx)\n local v, err = awaken.json.decode(" +
				strconv.Quote(tc.doc) + ")\n error(err, 0)\nend)\nreturn p"})
			s, _, err := runtimeFor(t, g).Start(context.Background(), run.StartOptions{})
			if err == nil {
				_, err = s.StepStart(context.Background())
			}
			var e *errs.Error
			if !errors.As(err, &e) || e.Msg != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}
