package luabridge_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/luabridge"
	"github.com/awaken-lua/awaken-lua/model"
)

// counter is a Go module whose bump() counts calls across every state.
func counter(n *atomic.Int64) func(*luabridge.Loader) {
	return func(l *luabridge.Loader) {
		luabridge.Preload(l, "counter", func(L *lua.LState) lua.LValue {
			m := L.NewTable()
			m.RawSetString("bump", L.NewFunction(func(L *lua.LState) int {
				L.Push(lua.LNumber(n.Add(1)))
				return 1
			}))
			return m
		})
	}
}

// gateOnce runs the generation's gates once for a call to name.
func gateOnce(t *testing.T, g *luabridge.Generation, configs map[string]any, name string) (string, error) {
	t.Helper()
	st, _ := state.NewStore(g.Set.Registry(), nil)
	x, err := engine.New(g.Set).Exec(engine.ExecConfig{Store: st, Configs: configs})
	if err != nil {
		t.Fatal(err)
	}
	res, err := x.Gate(context.Background(), plugin.Input{Configs: configs,
		Tool: &plugin.ToolInfo{Call: model.ToolCall{ID: "c1", Name: name, Args: map[string]any{}}}})
	return res.Decision.Reason, err
}

const preparedGuard = `
local awaken = require("awaken")
local counter = require("counter")
local p = awaken.plugin {
  config = { deny = { type = "array", items = { type = "string" }, default = { "rm" } } },
  prepare = function(config)
    counter.bump()
    local set = {}
    for _, w in ipairs(config.deny) do set[w] = true end
    return { set = set, n = #config.deny }
  end,
}
p:tool_gate(function(ctx, call)
  local prep = ctx.prepared
  if prep.set[call.name] then
    return awaken.block(call.name .. " is one of " .. prep.n)
  end
end)
return p`

func TestPrepareRunsOncePerConfig(t *testing.T) {
	var n atomic.Int64
	g := mustLoad(t, map[string]string{"guard.lua": preparedGuard}, counter(&n), func(l *luabridge.Loader) { l.PoolSize = 4 })
	if n.Load() != 0 {
		t.Fatalf("prepare ran %d times at load; a plugin with a config schema is prepared when configured", n.Load())
	}
	a, err := g.Set.Configure(map[string]any{"guard": map[string]any{"deny": []any{"rm", "dd"}}})
	if err != nil {
		t.Fatal(err)
	}
	// The same contents again (another agent, another awaken.toml load).
	b, err := g.Set.Configure(map[string]any{"guard": map[string]any{"deny": []any{"rm", "dd"}}})
	if err != nil {
		t.Fatal(err)
	}
	if n.Load() != 1 {
		t.Fatalf("prepare ran %d times for one config, want 1", n.Load())
	}
	// Many calls, from several goroutines (so several states): no more runs.
	done := make(chan error, 8)
	for i := 0; i < 8; i++ {
		go func() {
			var err error
			for j := 0; j < 20 && err == nil; j++ {
				cfg := a
				if j%2 == 1 {
					cfg = b
				}
				var reason string
				reason, err = gateOnce(t, g, cfg, "dd")
				if err == nil && reason != "dd is one of 2" {
					err = errors.New("reason " + reason)
				}
			}
			done <- err
		}()
	}
	for i := 0; i < 8; i++ {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if n.Load() != 1 {
		t.Fatalf("prepare ran %d times, want 1", n.Load())
	}
	// Another config is prepared once more; the default (no Configure)
	// on first use.
	if _, err := g.Set.Configure(map[string]any{"guard": map[string]any{"deny": []any{"mkfs"}}}); err != nil {
		t.Fatal(err)
	}
	if reason, err := gateOnce(t, g, nil, "rm"); err != nil || reason != "rm is one of 1" {
		t.Fatalf("default config: %q, %v", reason, err)
	}
	if n.Load() != 3 {
		t.Fatalf("prepare ran %d times for three configs, want 3", n.Load())
	}
	// A new generation prepares anew.
	g2 := mustLoad(t, map[string]string{"guard.lua": preparedGuard}, counter(&n))
	if _, err := g2.Set.Configure(map[string]any{"guard": map[string]any{"deny": []any{"rm", "dd"}}}); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 4 {
		t.Fatalf("prepare ran %d times after a new generation, want 4", n.Load())
	}
}

func TestPrepareFailures(t *testing.T) {
	var n atomic.Int64
	t.Run("a failing prepare fails the configuration with its line", func(t *testing.T) {
		g := mustLoad(t, map[string]string{"x.lua": head[:len(head)-3] + `{ config = { x = { type = "integer", default = 1 } },
  prepare = function(config)
    if config.x > 1 then error("x is too big") end
    return config.x
  end }
return p`}, counter(&n))
		if _, err := g.Set.Configure(map[string]any{"x": map[string]any{"x": 1}}); err != nil {
			t.Fatal(err)
		}
		_, err := g.Set.Configure(map[string]any{"x": map[string]any{"x": 2}})
		if err == nil || !strings.Contains(err.Error(), "scripts/x.lua:4") || !strings.Contains(err.Error(), "x is too big") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a plugin without config is prepared at load", func(t *testing.T) {
		_, err := load(t, map[string]string{"x.lua": head[:len(head)-3] + `{ prepare = function(config)
  error("no")
end }
return p`})
		if !errors.Is(err, errs.HookFailed) || !strings.Contains(err.Error(), "scripts/x.lua:3") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("prepare returns a plain value", func(t *testing.T) {
		_, err := load(t, map[string]string{"x.lua": head[:len(head)-3] + `{ prepare = function(config)
  return { f = function() end }
end }
return p`})
		if err == nil || !strings.Contains(err.Error(), "cannot be shared") || !strings.Contains(err.Error(), "scripts/x.lua") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("prepare is a function", func(t *testing.T) {
		_, err := load(t, map[string]string{"x.lua": head[:len(head)-3] + `{ prepare = 1 }
return p`})
		if !errors.Is(err, errs.PluginLoadFailed) || !strings.Contains(err.Error(), "scripts/x.lua:2") {
			t.Fatalf("err = %v", err)
		}
	})
}

// ctx.prepared is read-only, and a hook's attempt to change it does not
// reach the next call on the same state.
func TestPreparedIsReadOnly(t *testing.T) {
	g := mustLoad(t, map[string]string{"x.lua": head[:len(head)-3] + `{ prepare = function(config) return { list = { "a" } } end }
p:tool_gate(function(ctx, call)
  local ok, err = pcall(function() ctx.prepared.list[2] = "b" end)
  local ok2 = pcall(table.insert, ctx.prepared.list, "c")
  if ok or ok2 or #ctx.prepared.list ~= 1 then return awaken.block("changed") end
  return awaken.block(tostring(err))
end)
return p`}, func(l *luabridge.Loader) { l.PoolSize = 1 })
	for i := 0; i < 2; i++ {
		reason, err := gateOnce(t, g, nil, "x")
		if err != nil || !strings.Contains(reason, "ctx.prepared.list is read-only") {
			t.Fatalf("call %d: %q, %v", i, reason, err)
		}
	}
}
