package luabridge_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/luabridge"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// lateBy is how far past its budget a stopped call may end. A budget
// enforced ten times late (1s for 100ms) is well past it; a loaded 2-core
// machine under -race is well within it.
const lateBy = 400 * time.Millisecond

// stopwatch measures a call's wall time and the process's CPU time.
type stopwatch struct {
	wall time.Time
	cpu  time.Duration
}

func startWatch() stopwatch { return stopwatch{time.Now(), cpuTime()} }

// late reports how long the call took and whether it ran more than lateBy
// past budget. A budget enforced late spins on a core, so it shows in the
// wall time and in the CPU time; on a machine busy with other processes
// the call waits for a core and only its wall time grows.
func (w stopwatch) late(budget time.Duration) (time.Duration, bool) {
	wall := time.Since(w.wall)
	limit := budget + lateBy
	return wall, wall > limit && cpuTime()-w.cpu > limit
}

// within runs f and fails the test if it has not returned after d: a
// regression must fail fast, not hang the test binary until its timeout.
func within[T any](t testing.TB, d time.Duration, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(d):
		t.Fatalf("still running after %s", d)
		panic("unreachable")
	}
}

// allocated is the bytes allocated by the process so far.
func allocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}

// captureLog keeps the length of the longest message logged.
type captureLog struct {
	mu      sync.Mutex
	longest int
	records int
}

func (c *captureLog) Enabled(context.Context, slog.Level) bool { return true }
func (c *captureLog) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records++
	n := len(r.Message)
	r.Attrs(func(a slog.Attr) bool { n += len(a.Key) + len(a.Value.String()); return true })
	c.longest = max(c.longest, n)
	return nil
}
func (c *captureLog) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *captureLog) WithGroup(string) slog.Handler      { return c }

// Every Lua-reachable function that builds a value checks its size first,
// and long work stops at the budget: none of these hooks, each of which
// took seconds and gigabytes (or killed the process) before, allocates more
// than its bound or writes more than 64 KiB to the log, and those stopped
// by the deadline end within lateBy of their 100ms budget. The cases that
// show a size check get a budget far above what they take (copying 16 MiB
// under the race detector on a busy machine can take 100ms), so the test
// shows which mechanism stopped them.
func TestBuildersAreBounded(t *testing.T) {
	const budget = 100 * time.Millisecond
	const wide = 5 * time.Second
	big := `local s = string.rep("x", 8388608); local t = {}; for i = 1, 1000 do t[i] = s end
`
	tests := []struct {
		name  string
		load  string // at the top of the file
		hook  string
		codes []errs.Code // nil: the hook succeeds
		want  string      // in the message
		alloc uint64      // bytes at most; 0: 256 MiB
		wide  bool        // a size check stops it, not the deadline
	}{
		{"json.encode of shared large strings", "", big + `local r, err = awaken.json.encode(t); error(err)`,
			[]errs.Code{errs.HookFailed}, "more than 67108864 bytes of strings", 0, true},
		{"json.encode whose escapes pass 16 MiB", "", `local r, err = awaken.json.encode(string.rep("<", 3145728)); error(err)`,
			[]errs.Code{errs.HookFailed}, "over the limit of 16777216 bytes", 64 << 20, true},
		{"string.format of large arguments", "", big + `string.format(string.rep("%s", 200), unpack(t, 1, 200))`,
			[]errs.Code{errs.HookFailed}, "string.format: the result would be over the limit", 0, true},
		{"glob with many wildcards", "", `awaken.glob(string.rep("*a", 2000) .. "b", string.rep("a", 1048576))`,
			[]errs.Code{errs.HookTimeout}, "budget", 0, false},
		{"unpack of a large range", "", `local n = select("#", unpack({}, 1, 250000))`,
			[]errs.Code{errs.HookFailed}, "too many results", 16 << 20, false},
		{"string.byte of a large range", "", `local n = select("#", string.byte(string.rep("x", 250000), 1, -1))`,
			[]errs.Code{errs.HookFailed}, "too many results", 16 << 20, false},
		{"json.decode of a large document", "", `local v, err = awaken.json.decode("[" .. string.rep("1,", 4194304) .. "1]"); error(err)`,
			[]errs.Code{errs.HookFailed, errs.HookTimeout}, "", 0, false},
		{"print of many large values", "", big + `print(unpack(t, 1, 100))`, nil, "", 0, true},
		{"awaken.log of large fields", "", big + `awaken.log.info(s, {a = t, b = s})`, nil, "", 0, true},
		{"error with a huge message", "", `error(string.rep("x", 16777000))`, []errs.Code{errs.HookFailed}, "more bytes", 0, true},
		{"table.concat of many numbers", "", `local t = {}; for i = 1, 100000 do t[i] = 1e15 + i end; for i = 1, 1000 do table.concat(t, ",") end`,
			[]errs.Code{errs.HookTimeout}, "budget", 0, false},
		{"concatenation through __concat", "", `local s = string.rep("x", 16777000); local o = setmetatable({}, {__concat = function() return "y" end}); local u = s .. s .. o`,
			[]errs.Code{errs.HookFailed}, "over the limit", 40 << 20, true},
		{"table.sort of a large list", `local big = require("shuffled")(500000)`,
			`for i = 1, 100 do table.sort(big); table.sort(big, function(a, b) return a > b end) end`, []errs.Code{errs.HookTimeout}, "budget", 0, false},
		{"table.insert far past the end", "", `table.insert({}, 67108863, true)`, []errs.Code{errs.HookFailed}, "out of bounds", 16 << 20, false},
		{"a write far past the end of a list", "", `local t = {}; t[67108863] = true`, []errs.Code{errs.HookFailed}, "past the end of the list", 16 << 20, false},
		{"a constructor with a key far past the end", "", `local k = 67108863; local t = {1, 2, [k] = true}`, []errs.Code{errs.HookFailed}, "past the end of the list", 16 << 20, false},
		{"lists grown by t[#t + 1] and small gaps", "", `local t = {}; for i = 1, 70000 do t[#t + 1] = i end; local u = {[60000] = 1}; u[65000] = 1; t[#t + 2] = 1; print(#t, u[65000])`, nil, "", 0, true},
		{"upper, lower and reverse of 16 MiB", "", `local s = string.rep("x", 16777000); for i = 1, 100 do s = s:upper():lower():reverse() end`,
			[]errs.Code{errs.HookTimeout}, "budget", 0, false},
		{"unpack feeding string.char", "", `string.char(unpack({}, 1, 100000))`, []errs.Code{errs.HookFailed}, "too many results", 16 << 20, false},
		{"unpack of a range wider than an integer", "", `local n = select("#", unpack({}, -2^62, 2^62))`,
			[]errs.Code{errs.HookFailed}, "too many results", 16 << 20, false},
		{"rawset far past the end of a list", "", `rawset({}, 67108863, true)`, []errs.Code{errs.HookFailed}, "past the end of the list", 16 << 20, false},
		{"rawset far past the end from __newindex", "", `local t = setmetatable({}, {__newindex = function(t, k, v) rawset(t, k, v) end}); t[67108863] = true`,
			[]errs.Code{errs.HookFailed}, "past the end of the list", 16 << 20, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			logs := &captureLog{}
			src := head + tc.load + "\np:on(\"step_start\", function(ctx)\n" + tc.hook + "\nend)\nreturn p"
			b := budget
			if tc.wide {
				b = wide
			}
			g := mustLoad(t, map[string]string{"x.lua": src}, withTimeout(b), func(l *luabridge.Loader) {
				l.Log = slog.New(logs)
				luabridge.Preload(l, "shuffled", shuffled)
			})
			rt := runtimeFor(t, g)
			ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
			defer cancel()
			s, _, err := rt.Start(ctx, run.StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			runtime.GC()
			before := allocated()
			watch := startWatch()
			err = within(t, 10*time.Second, func() error { _, err := s.StepStart(ctx); return err })
			elapsed, late := watch.late(budget)
			used := allocated() - before
			msg := fmt.Sprint(err)
			t.Logf("%s after %s, %d MiB allocated", msg[:min(len(msg), 300)], elapsed, used>>20)
			if !tc.wide && late {
				t.Errorf("took %s, budget %s", elapsed, budget)
			}
			limit := tc.alloc
			if limit == 0 {
				limit = 256 << 20
			}
			if used > limit {
				t.Errorf("allocated %d MiB, at most %d MiB expected", used>>20, limit>>20)
			}
			if logs.longest > 70<<10 {
				t.Errorf("a log record of %d bytes", logs.longest)
			}
			if tc.codes == nil {
				if err != nil {
					t.Fatalf("err = %v", err)
				}
				if logs.records == 0 {
					t.Fatal("nothing was logged")
				}
				return
			}
			var e *errs.Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v, want one of %v", err, tc.codes)
			}
			if !containsCode(tc.codes, e.Code) || !strings.Contains(e.Msg, tc.want) {
				t.Fatalf("err = %v, want one of %v with %q", err, tc.codes, tc.want)
			}
			if len(e.Msg) > 9<<10 {
				t.Errorf("a message of %d bytes", len(e.Msg))
			}
			if e.Pos.File != "scripts/x.lua" || e.Pos.Line == 0 {
				t.Errorf("no file:line: %#v", e.Pos)
			}
		})
	}
}

// shuffled is a module whose function builds a list of n pseudo-random
// integers. The list is built in Go: built in Lua at load time, half a
// million entries took over 20s under the race detector on a busy machine,
// and the test is about the sort, not the load.
func shuffled(L *lua.LState) lua.LValue {
	return L.NewFunction(func(L *lua.LState) int {
		n := L.CheckInt(1)
		big := L.CreateTable(n, 0)
		x := 1
		for i := 1; i <= n; i++ {
			x = (x*1103515245 + 12345) % 2147483648
			big.RawSetInt(i, lua.LNumber(x))
		}
		L.Push(big)
		return 1
	})
}

func containsCode(codes []errs.Code, c errs.Code) bool {
	for _, x := range codes {
		if x == c {
			return true
		}
	}
	return false
}

// Loading a plugin is bounded in time: glob at load time stops at the load
// budget, and a Go function that never returns cannot hold the load (nor
// check, the watcher or a reload, which all load).
func TestLoadIsBounded(t *testing.T) {
	const budget = 200 * time.Millisecond
	t.Run("glob", func(t *testing.T) {
		watch := startWatch()
		err := within(t, 10*time.Second, func() error {
			_, err := load(t, map[string]string{"x.lua": head + `awaken.glob(string.rep("*a", 2000) .. "b", string.rep("a", 1048576))
return p`}, func(l *luabridge.Loader) { l.Limits.LoadTimeout = budget })
			return err
		})
		elapsed, late := watch.late(budget)
		if !errors.Is(err, errs.PluginLoadFailed) || !strings.Contains(err.Error(), "scripts/x.lua") || !strings.Contains(err.Error(), "longer than 200ms") {
			t.Fatalf("err = %v", err)
		}
		if late {
			t.Fatalf("the load took %s, budget %s", elapsed, budget)
		}
	})
	t.Run("a Go function that hangs", func(t *testing.T) {
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		hang := func(L *lua.LState) lua.LValue {
			m := L.NewTable()
			m.RawSetString("wait", L.NewFunction(func(L *lua.LState) int { <-release; return 0 }))
			return m
		}
		start := time.Now()
		err := within(t, 10*time.Second, func() error {
			_, err := load(t, map[string]string{"x.lua": head + `require("hang").wait()
return p`}, func(l *luabridge.Loader) {
				l.Limits.LoadTimeout = budget
				luabridge.Preload(l, "hang", hang)
			})
			return err
		})
		elapsed := time.Since(start)
		if !errors.Is(err, errs.PluginLoadFailed) || !strings.Contains(err.Error(), "scripts/x.lua") || !strings.Contains(err.Error(), "has not returned") {
			t.Fatalf("err = %v", err)
		}
		// The budget, the grace a load gets to come back, and the margin.
		if elapsed > budget+250*time.Millisecond+lateBy {
			t.Fatalf("the load took %s, budget %s", elapsed, budget)
		}
	})
}

// gopher-lua folds constants in a way that walks the whole arithmetic
// expression below every operator it compiles: a chain of n operators costs
// n*n/2 steps, and y + y + ... with 300,000 terms (600 KB) compiled for
// half an hour. A file whose expressions would take that long is refused
// at the line of the longest; long expressions of constants, which fold in
// one walk, and sound arithmetic still load.
func TestLongArithmeticIsRefused(t *testing.T) {
	const n = 300000
	tests := []struct {
		name, src string
		want      string // "" loads
	}{
		{"left chain", "local y = 1\nlocal x = y" + strings.Repeat(" + y", n), "scripts/x.lua:4"},
		{"right chain", "local y = 1\nlocal x = y" + strings.Repeat(" ^ y", n), "scripts/x.lua:4"},
		{"negations", "local y = 1\nlocal x = y" + strings.Repeat(" - -y", n), "scripts/x.lua:4"},
		{"nested", "local y = 1\nlocal x = " + strings.Repeat("-(y * ", n/2) + "y" + strings.Repeat(")", n/2), "scripts/x.lua:4"},
		{"inside a call", "local y = 1\nlocal x = tostring(1 - y" + strings.Repeat(" % y", n) + ")", "scripts/x.lua:4"},
		{"constants", "local x = 1" + strings.Repeat(" + 1", n), ""},
		{"sound arithmetic", strings.Repeat("do local y = 2; local x = y"+strings.Repeat(" * y + 1", 20)+" end\n", 2000), ""},
		{"a long expression", "local y = 1\nlocal x = y" + strings.Repeat(" + y", 1000), ""},
		{"many long expressions", strings.Repeat("do local y = 2; local x = y"+strings.Repeat(" * y + 1", 200)+" end\n", 200), ""},
		{"a large file of ordinary arithmetic", strings.Repeat("do local y = 2; local x = y"+strings.Repeat(" * y + 1", 20)+" end\n", 10000), ""},
		{"too many long expressions", strings.Repeat("do local y = 2; local x = y"+strings.Repeat(" * y + 1", 700)+" end\n", 300), "scripts/x.lua:3"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := within(t, 20*time.Second, func() error {
				_, err := load(t, map[string]string{"x.lua": head + tc.src + "\nreturn p"})
				return err
			})
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, errs.PluginLoadFailed) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "arithmetic") {
				t.Fatalf("err = %.300v", err)
			}
		})
	}
}

// gopher-lua compiles a nested expression by recursion, a Go frame or more
// a level, so a file of a million nested tables or calls overflowed the
// goroutine's stack: a fatal error that no recover stops, killing the
// process that loaded it. Its scopes cost the compiler time that grows
// with their depth: each block it leaves and each name it resolves walks
// every enclosing one. Such a file is refused before it is compiled, with
// the line of the nesting; ordinary nesting loads.
func TestDeepNestingIsRefused(t *testing.T) {
	const n = 1000000
	tests := []struct {
		name, src string
		want      string // "" loads
	}{
		{"nested tables", "local x = " + strings.Repeat("{", n) + strings.Repeat("}", n), "scripts/x.lua:3"},
		{"chained calls", "local f\nlocal x = f" + strings.Repeat("()", n), "scripts/x.lua:4"},
		{"nested length", "local x = " + strings.Repeat("#", 2*n) + "{}", "scripts/x.lua:3"},
		{"nested blocks", strings.Repeat("do ", 250000) + strings.Repeat("end ", 250000), "scripts/x.lua:3"},
		{"names deep in functions", strings.Repeat("local function f()\n", 1000) + strings.Repeat("g()\n", 300000) + strings.Repeat("end\n", 1000), "scripts/x.lua:"},
		{"a long chain", "local a\nlocal x = a" + strings.Repeat(" and a", 5000), ""},
		{"ordinary nesting", strings.Repeat("if p then local a = 1\n", 100) + strings.Repeat("a = a + 1\n", 20000) + strings.Repeat("end\n", 100), ""},
		{"a large file of functions", strings.Repeat("do local function f(a, b) if a then for i = 1, 2 do b = {a, {b, {i}}} end end return f(b, a) end end\n", 20000), ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := within(t, 20*time.Second, func() error {
				_, err := load(t, map[string]string{"x.lua": head + tc.src + "\nreturn p"})
				return err
			})
			if tc.want == "" {
				if err != nil {
					t.Fatalf("%.300v", err)
				}
				return
			}
			if !errors.Is(err, errs.PluginLoadFailed) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "nest") {
				t.Fatalf("err = %.300v", err)
			}
		})
	}
}

// The default hook budget is 100ms: a plugin that sets none is stopped
// after 100ms, not before and not much later.
func TestDefaultHookBudget(t *testing.T) {
	g := mustLoad(t, map[string]string{"x.lua": head + `p:on("step_start", function() while true do end end)
return p`}, withTimeout(0))
	rt := runtimeFor(t, g)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	s, _, err := rt.Start(ctx, run.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	watch := startWatch()
	err = within(t, 10*time.Second, func() error { _, err := s.StepStart(ctx); return err })
	elapsed, late := watch.late(100 * time.Millisecond)
	if !errors.Is(err, errs.HookTimeout) || !strings.Contains(err.Error(), "longer than its 100ms budget") {
		t.Fatalf("err = %v", err)
	}
	if elapsed < 100*time.Millisecond || late {
		t.Fatalf("stopped after %s, the default budget is 100ms", elapsed)
	}
}

// Nothing a hook touches outlives its call: on a pooled state (one state,
// so every call reuses it), a gate hook on thread a tries every way to
// change the string metatable, the libraries, the awaken module and
// ctx.config; each raises with file:line, and thread b's hook finds
// everything as it was (its decision is the policy's).
func TestNothingOutlivesACall(t *testing.T) {
	attempts := []string{
		`("").__index.upper = evil`,
		`string.__index.upper = evil`,
		`getmetatable("").__index.upper = evil`,
		`string.upper = evil`,
		`string.evil = evil`,
		`rawset(string, "upper", evil)`,
		`setmetatable(string, {})`,
		`table.insert(string, evil)`,
		`table.insert = evil`,
		`math.floor = evil`,
		`awaken.block = evil`,
		`awaken.json.encode = evil`,
		`awaken.log.info = evil`,
		`awaken.evil = evil`,
		`string = {}`,
		`ctx.config.deny[1] = "x"`,
		`ctx.config.deny[2] = "x"`,
		`ctx.config.evil = 1`,
		`table.insert(ctx.config.deny, "x")`,
		`table.remove(ctx.config.deny)`,
		`table.sort(ctx.config.deny, function(a, b) return a > b end)`,
		`rawset(ctx.config, "deny", {})`,
		`rawset(ctx.config.deny, 1, "x")`,
		`setmetatable(ctx.config, nil)`,
		`local d = ctx.config.deny; while #d > 0 do table.remove(d) end`,
	}
	var b strings.Builder
	b.WriteString(head[:len(head)-3] + `{ config = { deny = { type = "array", items = { type = "string" } } } }
local function evil() return "evil" end
local attempts = {
`)
	for _, a := range attempts {
		b.WriteString("  function(ctx) " + a + " end,\n")
	}
	b.WriteString(`}
p:tool_gate(function(ctx, call)
  if ctx.run.thread_id == "a" then
    local out = {}
    for i, f in ipairs(attempts) do
      local ok, err = pcall(f, ctx)
      out[#out + 1] = ok and ("attempt " .. i .. " succeeded") or tostring(err)
    end
    return awaken.block(table.concat(out, "\n"))
  end
  -- Reading through the views works as on plain tables.
  local d = ctx.config.deny
  local n = 0
  for _ in pairs(ctx.config) do n = n + 1 end
  local items = {}
  for i, w in ipairs(d) do items[i] = w end
  local checks = {
    ("x"):upper() == "X", string.upper("y") == "Y", string.evil == nil, awaken.evil == nil,
    type(string) == "table", type(ctx.config) == "table", #d == 1, d[1] == "rm", n == 1,
    next(ctx.config) == "deny", rawget(ctx.config, "deny") == d, unpack(d) == "rm", table.concat(d, ",") == "rm",
    #items == 1, awaken.json.encode(ctx.config) == '{"deny":["rm"]}', table.getn(d) == 1, table.maxn(d) == 1,
  }
  for i = 1, 17 do
    if not checks[i] then return awaken.block("check " .. i .. " failed") end
  end
  for _, w in ipairs(d) do
    if tostring(call.args.cmd):find(w, 1, true) then return awaken.block("no " .. w) end
  end
end)
return p`)
	g := mustLoad(t, map[string]string{"x.lua": b.String()}, func(l *luabridge.Loader) { l.PoolSize = 1 })
	rt := runtimeFor(t, g, run.WithAgents(run.Agent{ID: "default", Configs: map[string]any{"x": map[string]any{"deny": []any{"rm"}}}}))
	ctx := context.Background()
	gateCall := func(thread string) run.Decision {
		t.Helper()
		s, _, err := rt.Start(ctx, run.StartOptions{ThreadID: thread})
		if err != nil {
			t.Fatal(err)
		}
		call := model.ToolCall{ID: "call_1_1", Name: "shell", Args: map[string]any{"cmd": "rm -rf /"}}
		_, _ = s.StepStart(ctx)
		_, _, _ = s.BeforeInference(ctx, model.Request{Tools: []model.ToolSpec{{Name: "shell"}}})
		_, _ = s.AfterInference(ctx, model.Response{ToolCalls: []model.ToolCall{call}})
		d, _, err := s.ToolGate(ctx, call)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := gateCall("a")
	lines := strings.Split(d.Reason, "\n")
	if len(lines) != len(attempts) {
		t.Fatalf("reason: %s", d.Reason)
	}
	for i, line := range lines {
		if !strings.HasPrefix(line, "scripts/x.lua:") || strings.Contains(line, "succeeded") {
			t.Errorf("%s: %s", attempts[i], line)
		}
	}
	for _, th := range []string{"b", "c"} {
		if d := gateCall(th); d.Decision != gate.Block || d.Reason != "no rm" {
			t.Fatalf("thread %s after thread a: %s %q", th, d.Decision, d.Reason)
		}
	}
	if st := g.Stats()["x"]; st[0] != 1 {
		t.Fatalf("%d states: the test needs every call on one state", st[0])
	}
}

// t.eq on tables with heavy sharing (2^60 paths) and on cycles finishes,
// within the test budget.
func TestLuaTestEqOnSharedTables(t *testing.T) {
	src := `local t = require("awaken.testing")
local function dag(leaf)
  local x = {leaf = leaf}
  for i = 1, 60 do x = {x, x} end
  return x
end
local function ring(v)
  local a, b = {v = v}, {}
  a.next, b.next = b, a
  return a
end
t.test("equal DAGs", function() t.eq(dag("x"), dag("x")) end)
t.test("different DAGs", function() t.neq(dag("x"), dag("y")) end)
t.test("rings", function() t.eq(ring(1), ring(1)); t.neq(ring(1), ring(2)) end)
`
	sum := within(t, 10*time.Second, func() luabridge.TestSummary {
		files, err := luabridge.FindTests(luabridge.Source{FS: mapFS(map[string]string{"eq_test.lua": src}), Name: "scripts"})
		if err != nil {
			t.Error(err)
		}
		var out strings.Builder
		sum := luabridge.RunTests(context.Background(), luabridge.TestOptions{Files: files, Out: &out, Timeout: time.Second})
		if sum.Passed != 3 {
			t.Error(out.String())
		}
		return sum
	})
	if sum.Passed != 3 || sum.Failed != 0 {
		t.Fatalf("passed %d, failed %d", sum.Passed, sum.Failed)
	}
}

// A Lua test that loops fails at the test budget.
func TestLuaTestBudgetHolds(t *testing.T) {
	src := `local t = require("awaken.testing")
t.test("spins", function() while true do end end)
t.test("passes", function() t.eq(1, 1) end)
`
	watch := startWatch()
	sum := within(t, 10*time.Second, func() luabridge.TestSummary {
		files, _ := luabridge.FindTests(luabridge.Source{FS: mapFS(map[string]string{"spin_test.lua": src}), Name: "scripts"})
		return luabridge.RunTests(context.Background(), luabridge.TestOptions{Files: files, Timeout: 200 * time.Millisecond})
	})
	if sum.Failed != 1 || sum.Passed != 1 || !strings.Contains(sum.Results[0].Message, "ran longer than 200ms") {
		t.Fatalf("%+v", sum.Results)
	}
	// Both tests ran: the budget of the first is what the whole may exceed.
	if d, late := watch.late(200 * time.Millisecond); late {
		t.Fatalf("the test was stopped after %s", d)
	}
}

func mapFS(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, src := range files {
		fsys[name] = &fstest.MapFile{Data: []byte(src)}
	}
	return fsys
}

// A call on a generation that was closed fails at once: it must not wait
// for a Lua state that will never come back (run_end runs without the
// caller's cancellation, so such a wait would never end).
func TestCallOnAClosedGenerationFails(t *testing.T) {
	g := mustLoad(t, map[string]string{"x.lua": head + `p:on("step_start", function(ctx) end)
return p`})
	rt := runtimeFor(t, g)
	s, _, err := rt.Start(context.Background(), run.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	err = within(t, 10*time.Second, func() error { _, err := s.StepStart(context.Background()); return err })
	if err == nil || !strings.Contains(err.Error(), "closed") {
		t.Fatalf("err = %v, want the generation-closed error", err)
	}
}
