package luabridge_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/luabridge"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// BenchmarkGateHookLua is one gate decision by one Lua gate hook for a call
// with 5 argument fields (target <= 3us/op, <= 40 allocs/op; the README Speed table).
func BenchmarkGateHookLua(b *testing.B) {
	g := mustLoad(b, map[string]string{"guard.lua": `
local awaken = require("awaken")
local p = awaken.plugin { config = { deny = { type = "array", items = { type = "string" }, default = { "rm", "mkfs" } } } }
p:tool_gate(function(ctx, call)
  if call.name == "shell" and call.args.cmd == "rm -rf /" then
    return awaken.block("no")
  end
end)
return p`})
	eng := engine.New(g.Set)
	st, _ := state.NewStore(g.Set.Registry(), nil)
	x, err := eng.Exec(engine.ExecConfig{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	in := plugin.Input{Tool: &plugin.ToolInfo{Call: model.ToolCall{ID: "c1", Name: "shell",
		Args: map[string]any{"cmd": "ls -la", "cwd": "/tmp", "timeout": 30.0, "env": "prod", "shell": "bash"}}}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := x.Gate(ctx, in)
		if err != nil || res.Decision.Plugin != "" {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkGateHookLuaConfig is BenchmarkGateHookLua with a hook that reads
// its config as the README's example does (a list walked with ipairs): the
// config is handed out behind read-only views.
func BenchmarkGateHookLuaConfig(b *testing.B) {
	g := mustLoad(b, map[string]string{"guard.lua": `
local awaken = require("awaken")
local p = awaken.plugin { config = { deny = { type = "array", items = { type = "string" }, default = { "rm", "mkfs" } } } }
p:tool_gate(function(ctx, call)
  for _, word in ipairs(ctx.config.deny) do
    if call.name == "shell" and call.args.cmd == word then
      return awaken.block("no")
    end
  end
end)
return p`})
	eng := engine.New(g.Set)
	st, _ := state.NewStore(g.Set.Registry(), nil)
	x, err := eng.Exec(engine.ExecConfig{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	in := plugin.Input{Tool: &plugin.ToolInfo{Call: model.ToolCall{ID: "c1", Name: "shell",
		Args: map[string]any{"cmd": "ls -la", "cwd": "/tmp", "timeout": 30.0, "env": "prod", "shell": "bash"}}}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := x.Gate(ctx, in)
		if err != nil || res.Decision.Plugin != "" {
			b.Fatal(res, err)
		}
	}
}

// BenchmarkPhaseLua8 is one phase with 8 Lua hooks, each reading 2 keys and
// writing 1 (target <= 30us/op and <= 5x BenchmarkPhaseGo8; the README Speed table).
func BenchmarkPhaseLua8(b *testing.B) {
	files := map[string]string{}
	for i := 0; i < 8; i++ {
		files[fmt.Sprintf("p%d.lua", i)] = fmt.Sprintf(`
local awaken = require("awaken")
local p = awaken.plugin {}
local mine = p:key("p%d.n", { reducer = "add", default = 0 })
p:on("step_end", function(ctx)
  local a = ctx:get(mine)
  local b = ctx:get("p%d.n")
  ctx:update(mine, 1 + b - b + a - a)
end)
return p`, i, (i+1)%8)
	}
	g := mustLoad(b, files)
	eng := engine.New(g.Set)
	st, _ := state.NewStore(g.Set.Registry(), nil)
	x, err := eng.Exec(engine.ExecConfig{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if err := x.Phase(ctx, phase.StepEnd, plugin.Input{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkWarmState makes warm states (one plugin loaded) and keeps them:
// ns/op is the cost of a new state, retained-bytes/state the heap each keeps
// (target <= 64 KiB; the README Speed table).
func BenchmarkWarmState(b *testing.B) {
	src := map[string]string{"guard.lua": `
local awaken = require("awaken")
local p = awaken.plugin { config = { deny = { type = "array", items = { type = "string" }, default = { "rm" } } } }
local calls = p:key("guard.calls", { scope = "run", merge = "commutative", schema = { type = "integer" }, default = 0, reducer = "add" })
p:tool_gate(function(ctx, call)
  for _, word in ipairs(ctx.config.deny) do
    if call.name == "shell" and tostring(call.args.cmd):find(word, 1, true) then
      return awaken.block("'" .. word .. "' is not allowed")
    end
  end
end)
p:on("after_tool_execute", function(ctx) ctx:update(calls, 1) end)
return p`}
	g := mustLoad(b, src, func(l *luabridge.Loader) { l.PoolSize = 1 << 20 })
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	b.ResetTimer()
	if err := g.Warm(b.N); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	runtime.GC()
	runtime.ReadMemStats(&after)
	b.ReportMetric(float64(int64(after.HeapAlloc)-int64(before.HeapAlloc))/float64(b.N), "retained-bytes/state")
	runtime.KeepAlive(g)
}

// benchTableWrites runs a hook whose body writes to tables: computed keys
// go through the sparse-key check, named fields do not.
func benchTableWrites(b *testing.B, body string) {
	g := mustLoad(b, map[string]string{"x.lua": head + `p:on("step_start", function(ctx)
` + body + `
end)
return p`}, func(l *luabridge.Loader) { l.Limits.HookTimeout = time.Minute })
	rt := runtimeFor(b, g)
	for b.Loop() {
		s, _, _ := rt.Start(context.Background(), run.StartOptions{})
		if _, err := s.StepStart(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkTableWriteAppend(b *testing.B) {
	benchTableWrites(b, `local t = {} for i = 1, 1000 do t[#t + 1] = i end`)
}
func BenchmarkTableWriteIndex(b *testing.B) {
	benchTableWrites(b, `local t = {} for i = 1, 1000 do t[i] = i end`)
}
func BenchmarkTableWriteField(b *testing.B) {
	benchTableWrites(b, `local t = {} for i = 1, 1000 do t.x = i end`)
}
