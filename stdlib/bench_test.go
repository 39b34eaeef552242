package stdlib_test

import (
	"context"
	"io/fs"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/luabridge"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
	"github.com/awaken-lua/awaken-lua/stdlib"
)

type benchTool struct{ name string }

func (t benchTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: t.name, Description: "reads " + t.name}
}
func (t benchTool) Execute(ctx context.Context, in *plugin.Input, args map[string]any, out *command.Command) (model.ToolResult, error) {
	return model.Success("package main // TODO: nothing secret here, token=abc"), nil
}

// allSix are the six standard plugins with configs like the README's.
var allSix = map[string]any{
	"permission": map[string]any{"default": "ask", "rules": []any{
		map[string]any{"tool": "fs_read", "behavior": "allow"},
		map[string]any{"tool": "fs_list", "behavior": "allow"},
		map[string]any{"tool": "Bash(npm *)", "behavior": "allow"},
		map[string]any{"tool": "Bash(rm *)", "behavior": "deny"},
		map[string]any{"tool": `Edit(file_path ~ "src/**")`, "behavior": "allow"},
		map[string]any{"tool": "mcp__github__*", "behavior": "ask"},
		map[string]any{"tool": "/mcp__(gh|gl)__.*/", "behavior": "deny"},
	}},
	"reminder": map[string]any{"rules": []any{
		map[string]any{"tool": "fs_read", "output": map[string]any{"content": "*TODO*"},
			"message": map[string]any{"content": "This file has TODOs.", "cooldown": 3}},
	}},
	"deferred_tools": map[string]any{"default": "eager", "rules": []any{map[string]any{"tool": "mcp__*", "mode": "deferred"}}},
	"budget":         map[string]any{"max_tool_calls": 1e9, "max_calls_per_tool": map[string]any{"fs_read": 1e9}, "max_tokens": 1e12},
	"audit":          map[string]any{},
	"redact":         map[string]any{},
}

// BenchmarkStep is one whole step (scripted answer with 2 tool calls) with
// the six standard plugins active (target <= 300 us/op; the README Speed table).
func BenchmarkStep(b *testing.B) {
	benchSession(b, []string{"permission", "reminder", "deferred_tools", "budget", "audit", "redact"})
}

// BenchmarkStepEach is the same step with one standard plugin at a time,
// to see what each costs.
func BenchmarkStepEach(b *testing.B) {
	b.Run("none", func(b *testing.B) { benchSession(b, nil) })
	for _, id := range []string{"permission", "reminder", "deferred_tools", "budget", "audit", "redact"} {
		b.Run(id, func(b *testing.B) { benchSession(b, []string{id}) })
	}
}

// BenchmarkStepFloor is the step with one trivial plugin instead of the
// standard ones: what the Go bridge costs for a hook that does (almost)
// nothing, per kind of hook. Subtract BenchmarkStepEach/none.
func BenchmarkStepFloor(b *testing.B) {
	for _, c := range []struct{ name, src string }{
		{"after_tool_execute", `p:on("after_tool_execute", function(ctx) end)`},
		{"after_tool_execute_reads", `p:on("after_tool_execute", function(ctx) local t = ctx.tool; local _ = t.name, t.id, t.decision, ctx.config, ctx.run.step end)`},
		{"step_end", `p:on("step_end", function(ctx) end)`},
		{"tool_gate", `p:tool_gate(function(ctx, call) end)`},
		{"tool_gate_args", `p:tool_gate(function(ctx, call) local _ = call.args end)`},
		{"transform_nil", `p:transform(function(req, ctx) end)`},
		{"transform_return", `p:transform(function(req, ctx) return req end)`},
		{"result_transform_nil", `p:result_transform(function(call, res, ctx) end)`},
		{"get_tool_calls_after_tool_execute", `p:on("after_tool_execute", function(ctx) local _ = ctx:get("__runtime.tool_calls") end)`},
		{"get_tool_calls_step_end", `p:on("step_end", function(ctx) local _ = ctx:get("__runtime.tool_calls") end)`},
		{"response_after_inference", `p:on("after_inference", function(ctx) local _ = ctx.response.tool_calls end)`},
		{"schedule_after_tool_execute", `p:on("after_tool_execute", function(ctx) ctx:schedule("runtime.add_context_message", {key = "k", content = "c"}) end)`},
		// ten of one operation in step_end: (this - step_end) / 10 is one
		{"x10_get_small", `local k = p:key("floor.k", {default = {step = 0, calls = 0, by_tool = {}}})
p:on("step_end", function(ctx) for i = 1, 10 do local _ = ctx:get(k) end end)`},
		{"x10_get_number", `local k = p:key("floor.n", {default = 0})
p:on("step_end", function(ctx) for i = 1, 10 do local _ = ctx:get(k) end end)`},
		{"x10_update_small", `local k = p:key("floor.k", {default = {step = 0, calls = 0, by_tool = {}}, schema = {type = "object", properties = {step = {type = "integer"}, calls = {type = "integer"}, by_tool = {type = "object", additionalProperties = {type = "integer"}}}}})
p:on("step_end", function(ctx) for i = 1, 10 do ctx:update(k, {step = i, calls = 2, by_tool = {}}) end end)`},
		{"x10_update_add", `local k = p:key("floor.n", {default = 0, reducer = "add", schema = {type = "integer"}})
p:on("step_end", function(ctx) for i = 1, 10 do ctx:update(k, 1) end end)`},
		{"x10_ctx_run_step", `p:on("step_end", function(ctx) for i = 1, 10 do local _ = ctx.run.step end end)`},
		{"x10_ctx_config", `p:on("step_end", function(ctx) for i = 1, 10 do local _ = ctx.config end end)`},
		{"x10_find_plain", `p:on("step_end", function(ctx) local s = "package main // TODO: nothing secret here, token=abc" for i = 1, 10 do local _ = s:find("sk-", 1, true) end end)`},
		{"x10_table3", `p:on("step_end", function(ctx) for i = 1, 10 do local _ = {a = 1, b = 2, c = 3} end end)`},
		{"x1000_loop", `p:on("step_end", function(ctx) local n = 0 for i = 1, 1000 do n = n + i end end)`},
		{"emit_after_tool_execute", `p:on("after_tool_execute", function(ctx) ctx:emit("runtime.audit", {event = "x", tool = "t", call_id = "c", status = "succeeded", args = {path = "."}}) end)`},
	} {
		src := "local awaken = require(\"awaken\")\nlocal p = awaken.plugin { id = \"floor\" }\n" + c.src + "\nreturn p\n"
		b.Run(c.name, func(b *testing.B) {
			benchSessionFS(b, fstest.MapFS{"floor.lua": {Data: []byte(src)}}, nil)
		})
	}
}

func benchSession(b *testing.B, ids []string, opts ...run.Option) {
	benchSessionFS(b, nil, ids, opts...)
}

// BenchmarkStepJournal is BenchmarkStep with the decision journal off and
// on (target: on costs at most 10% more).
func BenchmarkStepJournal(b *testing.B) {
	six := []string{"permission", "reminder", "deferred_tools", "budget", "audit", "redact"}
	b.Run("off", func(b *testing.B) { benchSession(b, six) })
	b.Run("on", func(b *testing.B) {
		w, err := journal.Open(journal.Options{Dir: b.TempDir()})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Close()
		benchSession(b, six, run.WithJournal(w, "bench"))
	})
}

// benchSessionFS runs the step with the stdlib plugins ids and, when
// plugins is not nil, every plugin in it (with an empty config).
func benchSessionFS(b *testing.B, plugins fs.FS, ids []string, runOpts ...run.Option) {
	l := &luabridge.Loader{Stdlib: luabridge.Source{FS: stdlib.FS, Name: "stdlib"}, Enable: ids}
	// A benchmark measures speed, not the budget: on a busy machine a hook
	// can wait past 100ms for a core, which would end the run.
	l.Limits.HookTimeout = 10 * time.Second
	if plugins != nil {
		l.Plugins = luabridge.Source{FS: plugins, Name: "bench"}
	}
	g, err := l.Load(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	only := map[string]any{}
	for _, id := range ids {
		only[id] = allSix[id]
	}
	configs, err := g.Set.Configure(only)
	if err != nil {
		b.Fatal(err)
	}
	var opts []engine.Option
	var prof *hookProfile
	if os.Getenv("AWAKEN_HOOK_PROFILE") != "" {
		prof = &hookProfile{times: map[string]time.Duration{}}
		opts = append(opts, engine.WithHookObserver(prof.observe))
		defer func() { prof.print(b) }()
	}
	rt, err := run.New(engine.New(g.Set, opts...), append([]run.Option{run.WithAgents(run.Agent{ID: "default", MaxSteps: 1 << 30, Configs: configs})}, runOpts...)...)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	s, _, err := rt.Start(ctx, run.StartOptions{})
	if err != nil {
		b.Fatal(err)
	}
	tools := []plugin.Tool{benchTool{"fs_read"}, benchTool{"fs_list"}, benchTool{"mcp__jira__search"}}
	var specs []model.ToolSpec
	for _, t := range tools {
		specs = append(specs, t.Spec())
	}
	convo := []model.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "look around"}}
	resp := model.Response{Usage: &model.Usage{TotalTokens: 100}, ToolCalls: []model.ToolCall{
		{Name: "fs_list", Args: map[string]any{"path": "."}},
		{Name: "fs_read", Args: map[string]any{"path": "src/main.go"}},
	}}
	step := func() {
		if _, err := s.StepStart(ctx); err != nil {
			b.Fatal(err)
		}
		if _, _, err := s.BeforeInference(ctx, model.Request{Messages: convo, Tools: specs}); err != nil {
			b.Fatal(err)
		}
		if _, err := s.AfterInference(ctx, resp); err != nil {
			b.Fatal(err)
		}
		for _, c := range s.Calls() {
			d, _, err := s.ToolGate(ctx, c.Call)
			if err != nil || (d.Decision != gate.Allow && len(ids) > 0) {
				b.Fatal(d, err)
			}
			if _, err := s.BeforeToolExecute(ctx, c.Call); err != nil {
				b.Fatal(err)
			}
			res := s.ExecuteTool(ctx, tools[0], c.Call)
			if _, _, err := s.AfterToolExecute(ctx, c.Call, res); err != nil {
				b.Fatal(err)
			}
		}
		out, err := s.StepEnd(ctx)
		if err != nil || out.Termination != "" {
			b.Fatal(out, err)
		}
	}
	step() // warm the states
	if prof != nil {
		prof.reset()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		step()
		if prof != nil {
			prof.steps++
		}
	}
}

// hookProfile adds up the time of each plugin call per step, when
// AWAKEN_HOOK_PROFILE is set: which hook of which plugin costs what.
type hookProfile struct {
	mu    sync.Mutex
	times map[string]time.Duration
	steps int
}

func (h *hookProfile) observe(plugin string, p phase.Phase, kind string, d time.Duration, err error) {
	h.mu.Lock()
	h.times[plugin+" "+kind+" "+p.String()] += d
	h.mu.Unlock()
}

func (h *hookProfile) reset() {
	h.mu.Lock()
	h.times = map[string]time.Duration{}
	h.steps = 0
	h.mu.Unlock()
}

func (h *hookProfile) print(b *testing.B) {
	if h.steps == 0 {
		return
	}
	keys := make([]string, 0, len(h.times))
	for k := range h.times {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return h.times[keys[i]] > h.times[keys[j]] })
	for _, k := range keys {
		b.Logf("%-50s %8.1f us/step", k, float64(h.times[k].Microseconds())/float64(h.steps))
	}
}

// BenchmarkPermissionGate is one gate decision of the permission plugin on
// a Bash call as Claude Code sends it ({command, description}): with the
// README's rules, and with a pasted Claude Code permissions block (the
// command split once, in Go, and the call's arguments never converted to
// Lua).
func BenchmarkPermissionGate(b *testing.B) {
	pasted := map[string]any{
		"allow": []any{"Bash(npm run test:*)", "Bash(npm run lint)", "Bash(git diff *)", "Bash(git status)", "Read", "Edit(src/**)", "WebFetch(domain:docs.example.com)"},
		"ask":   []any{"Bash(git push *)", "Bash(npm publish *)"},
		"deny":  []any{"Bash(rm *)", "Bash(curl *)", "Read(./.env)", "Read(./secrets/**)", "mcp__prod"},
	}
	for _, c := range []struct {
		name   string
		config map[string]any
		cwd    string // the working directory the call's event reported
	}{
		{"rules", allSix["permission"].(map[string]any), ""},
		{"claude_code", map[string]any{"default": "ask", "claude_code": pasted, "project_dir": "/home/dev/shop"}, ""},
		{"claude_code_cwd", map[string]any{"default": "ask", "claude_code": pasted}, "/home/dev/shop"},
	} {
		for _, cmd := range []string{"npm run test -- --watch=false", "npm run build && rm -rf dist"} {
			b.Run(c.name+"/"+strings.Fields(cmd)[2], func(b *testing.B) {
				l := &luabridge.Loader{Stdlib: luabridge.Source{FS: stdlib.FS, Name: "stdlib"}, Enable: []string{"permission"}}
				l.Limits.HookTimeout = 10 * time.Second
				g, err := l.Load(context.Background())
				if err != nil {
					b.Fatal(err)
				}
				defer g.Close()
				configs, err := g.Set.Configure(map[string]any{"permission": c.config})
				if err != nil {
					b.Fatal(err)
				}
				st, _ := state.NewStore(g.Set.Registry(), nil)
				x, err := engine.New(g.Set).Exec(engine.ExecConfig{Store: st, Configs: configs})
				if err != nil {
					b.Fatal(err)
				}
				in := plugin.Input{Configs: configs, Run: plugin.RunInfo{Cwd: c.cwd}, Tool: &plugin.ToolInfo{Call: model.ToolCall{ID: "c1", Name: "Bash",
					Args: map[string]any{"command": cmd, "description": "runs it"}}}}
				ctx := context.Background()
				if _, err := x.Gate(ctx, in); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if _, err := x.Gate(ctx, in); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
