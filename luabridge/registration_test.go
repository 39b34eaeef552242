package luabridge_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/luabridge"
	"github.com/awaken-lua/awaken-lua/run"
)

// Every Lua state runs the plugin file; a file that registers differently
// on another run (here: a count kept outside the state) fails loading,
// naming the line.
func TestRegistrationsMustNotChangeBetweenRuns(t *testing.T) {
	tests := []struct {
		name, body, want string
		line             string
	}{
		{"one run registers more", `if counter.bump() == 1 then p:on("step_start", function() end) end`,
			`did not register p:on("step_start")`, "scripts/x.lua:4"},
		{"another key", `p:key("x.k" .. counter.bump(), {})`,
			`registered p:key("x.k2"`, "scripts/x.lua:4"},
		{"another order", `if counter.bump() == 1 then p:on("step_start", function() end) p:on("step_end", function() end) else p:on("step_end", function() end) p:on("step_start", function() end) end`,
			`registered p:on("step_end") here, where its first run registered p:on("step_start")`, "scripts/x.lua:4"},
		{"another id", `local q = awaken.plugin { id = "x" .. counter.bump() } return q`,
			`awaken.plugin{id = "x2"`, "scripts/x.lua:4"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int64
			src := "local awaken = require(\"awaken\")\nlocal counter = require(\"counter\")\n"
			if strings.Contains(tc.body, "awaken.plugin") {
				src += "\n" + tc.body + "\n"
			} else {
				src += "local p = awaken.plugin {}\n" + tc.body + "\nreturn p\n"
			}
			_, err := load(t, map[string]string{"x.lua": src}, counter(&n))
			if !errors.Is(err, errs.PluginLoadFailed) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.line) {
				t.Fatalf("err = %v", err)
			}
		})
	}
	// The same file without the count loads, and its states (more than
	// one) agree.
	var n atomic.Int64
	g := mustLoad(t, map[string]string{"x.lua": "local awaken = require(\"awaken\")\nlocal counter = require(\"counter\")\nlocal p = awaken.plugin {}\ncounter.bump()\nlocal k = p:key(\"x.k\", { default = 0, reducer = \"add\" })\np:on(\"step_start\", function(ctx) ctx:update(k, 1) end)\nreturn p\n"},
		counter(&n), func(l *luabridge.Loader) { l.PoolSize = 2 })
	if err := g.Warm(2); err != nil {
		t.Fatal(err)
	}
	if n.Load() != 3 {
		t.Fatalf("the file ran %d times, want 3 (load, its check, one more state)", n.Load())
	}
	rt := runtimeFor(t, g)
	s, _, err := rt.Start(context.Background(), run.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.StepStart(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// The runtime's own errors cross Lua as typed values: a hook that lets one
// through fails with its code and line, and Lua code that catches one sees
// the message it would print. A message that merely starts like a code is
// not read as one.
func TestRaisedErrorsKeepTheirCode(t *testing.T) {
	g := mustLoad(t, map[string]string{"x.lua": head + `p:on("run_start", function(ctx)
  local ok, err = pcall(function() return ctx:get("nope.key") end)
  assert(not ok and type(err) == "userdata")
  assert(tostring(err):find("^scripts/x%.lua:4: unknown_key: "), tostring(err))
  assert(("caught: " .. err):find("^caught: scripts/x%.lua:4: unknown_key"))
  error(err) -- rethrown as it is
end)
p:on("step_start", function(ctx)
  error("unknown_key: made up", 0)
end)
return p`})
	rt := runtimeFor(t, g)
	_, _, err := rt.Start(context.Background(), run.StartOptions{})
	var e *errs.Error
	if !errors.As(err, &e) || e.Code != errs.UnknownKey || e.Pos.String() != "scripts/x.lua:4" || e.Plugin != "x" {
		t.Fatalf("err = %v", err)
	}
	g2 := mustLoad(t, map[string]string{"x.lua": head + `p:on("step_start", function(ctx)
  error("unknown_key: made up", 0)
end)
return p`})
	s, _, err := runtimeFor(t, g2).Start(context.Background(), run.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.StepStart(context.Background())
	if !errors.As(err, &e) || e.Code != errs.HookFailed || !strings.Contains(e.Msg, "unknown_key: made up") {
		t.Fatalf("err = %v", err)
	}
}
