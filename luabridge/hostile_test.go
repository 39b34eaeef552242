package luabridge_test

import (
	"cmp"
	"context"
	"errors"
	"os"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/luabridge"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// Each hostile plugin must end with its code, within its budget plus
// lateBy, and leave the process, other runs and committed state unharmed.
func TestHostilePlugins(t *testing.T) {
	const budget = 100 * time.Millisecond
	// Pattern and concatenation limits must trip before the deadline; their
	// cases get a budget far above what they may take, so the test shows
	// which mechanism stopped them.
	const wide = 5 * time.Second
	tests := []struct {
		file   string
		code   errs.Code
		want   string // in the message
		gate   bool
		budget time.Duration
	}{
		{"loop.lua", errs.HookTimeout, "longer than its 100ms budget", false, 0},
		{"recursion.lua", errs.HookFailed, "stack overflow", false, 0},
		{"pattern.lua", errs.HookFailed, "pattern step limit exceeded", false, wide},
		{"bigstring.lua", errs.HookFailed, "over the limit", false, wide},
		{"bigtable.lua", errs.HookTimeout, "budget", false, 0},
		{"raise.lua", errs.HookFailed, "something broke", false, 0},
		{"wrongtype.lua", errs.SchemaViolation, "wrongtype.n", false, 0},
		{"osio.lua", errs.HookFailed, "no os", false, 0},
		{"iofile.lua", errs.HookFailed, "no io", false, 0},
		{"globalwrite.lua", errs.HookFailed, "globals are read-only", false, 0},
		{"gatewrite.lua", errs.HookFailed, "read-only", true, 0},
		{"escape.lua", errs.HookFailed, "module names are dotted names", false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			src, err := os.ReadFile("testdata/hostile/" + tc.file)
			if err != nil {
				t.Fatal(err)
			}
			g := mustLoad(t, map[string]string{
				tc.file: string(src),
				"witness.lua": `local awaken = require("awaken")
local p = awaken.plugin{}
local k = p:key("witness.n", {reducer = "add"})
p:on("run_start", function(ctx) ctx:update(k, 1) end)
return p`,
			}, withTimeout(cmp.Or(tc.budget, budget)))
			rt := runtimeFor(t, g)
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
			defer cancel()
			s, _, err := rt.Start(ctx, run.StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			committed := pluginState(s)
			watch := startWatch()
			if tc.gate {
				_, _ = s.StepStart(ctx)
				_, _, _ = s.BeforeInference(ctx, model.Request{Tools: []model.ToolSpec{{Name: "x"}}})
				_, _ = s.AfterInference(ctx, model.Response{ToolCalls: []model.ToolCall{{Name: "x"}}})
				d, _, gerr := s.ToolGate(ctx, model.ToolCall{ID: "call_1_1", Name: "x"})
				if gerr != nil || d.Decision != gate.Block || !strings.Contains(d.Reason, tc.want) {
					t.Fatalf("a failing gate must block the call: %+v %v", d, gerr)
				}
				if s.Snapshot().Values(nil)["gatewrite.n"] != nil {
					t.Fatal("a gate's write was committed")
				}
				return
			}
			err = within(t, 10*time.Second, func() error { _, err := s.StepStart(ctx); return err })
			elapsed, late := watch.late(budget)
			var e *errs.Error
			if !errors.As(err, &e) || e.Code != tc.code || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %s containing %q", err, tc.code, tc.want)
			}
			if e.Plugin == "" || e.Phase != "step_start" {
				t.Errorf("error does not name plugin and phase: %#v", e)
			}
			if !strings.HasPrefix(e.Pos.File, "scripts/") {
				t.Errorf("no file:line in %v", err)
			}
			t.Logf("%s after %s", err, elapsed)
			// Stopped by the deadline or, for the wide cases, by a limit of
			// their own long before it.
			if late {
				t.Errorf("took %s, budget %s", elapsed, cmp.Or(tc.budget, budget))
			}
			// Committed state is intact and nothing of the failed phase landed.
			if after := pluginState(s); !reflect.DeepEqual(after, committed) || after["witness.n"] != 1.0 {
				t.Fatalf("plugin state changed: %v -> %v", committed, after)
			}
			// Other runs on the same generation still work.
			other, _, err := rt.Start(ctx, run.StartOptions{})
			if err != nil || other.Snapshot().Values(nil)["witness.n"] != 1.0 {
				t.Fatalf("another run failed after the hostile one: %v", err)
			}
		})
	}
}

// A plugin that loops on some threads is stopped there while the runs of
// the other threads, in parallel on the same states, go on unharmed. The
// budget is wall-clock time and the looping hooks spin on the cores the
// others need: with 50ms, a sound hook next to them waited past it under
// -race on a busy machine, so the budget is one no sound hook nears.
func TestHostileDoesNotStallOthers(t *testing.T) {
	g := mustLoad(t, map[string]string{
		"loop.lua": `local awaken = require("awaken")
local p = awaken.plugin{}
p:on("step_start", function(ctx) if ctx.run.thread_id:sub(1, 3) == "bad" then while true do end end end)
return p`,
	}, withTimeout(time.Second))
	rt := runtimeFor(t, g)
	type outcome struct {
		bad bool
		err error
	}
	out := make(chan outcome, 20)
	for i := 0; i < 20; i++ {
		go func() {
			th := "good"
			if i%5 == 0 {
				th = "bad"
			}
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
			defer cancel()
			res, err := rt.Run(ctx, run.Request{ThreadID: th + string(rune('a'+i)), Model: scripted()})
			if err == nil {
				err = res.Err
			}
			out <- outcome{th == "bad", err}
		}()
	}
	for range 20 {
		o := within(t, 10*time.Second, func() outcome { return <-out })
		switch {
		case o.bad && !errors.Is(o.err, errs.HookTimeout):
			t.Errorf("a looping run ended with %v", o.err)
		case !o.bad && o.err != nil:
			t.Errorf("a run next to the looping ones failed: %v", o.err)
		}
	}
	runtime.GC()
}

func TestLoadTimeLoop(t *testing.T) {
	watch := startWatch()
	err := within(t, 10*time.Second, func() error {
		_, err := load(t, map[string]string{"spin.lua": "local n = 0\nwhile true do n = n + 1 end"}, func(l *luabridge.Loader) { l.Limits.LoadTimeout = 100 * time.Millisecond })
		return err
	})
	// The message names the line of the loop, as a hook's timeout does.
	if !errors.Is(err, errs.PluginLoadFailed) || !strings.Contains(err.Error(), "scripts/spin.lua:2:") || !strings.Contains(err.Error(), "longer than 100ms") {
		t.Fatalf("err = %v", err)
	}
	if elapsed, late := watch.late(100 * time.Millisecond); late {
		t.Fatalf("the load was stopped after %s, its budget is 100ms", elapsed)
	}
}

// pluginState is every plugin-declared key with a value (the runtime's own
// bookkeeping keys left out).
func pluginState(s *run.Session) map[string]any {
	out := map[string]any{}
	for k, v := range s.Snapshot().Values(nil) {
		if !strings.HasPrefix(k, "__runtime.") {
			out[k] = v
		}
	}
	return out
}
