package stdlib_test

import (
	"context"
	"os"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/model"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/run"
	"github.com/awaken-lua/awaken-lua/luabridge"
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
// the six standard plugins active (SPEC §14: <= 300 us/op).
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

func benchSession(b *testing.B, ids []string) {
	l := &luabridge.Loader{Stdlib: luabridge.Source{FS: stdlib.FS, Name: "stdlib"}, Enable: ids}
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
	rt, err := run.New(engine.New(g.Set, opts...), run.WithAgents(run.Agent{ID: "default", MaxSteps: 1 << 30, Configs: configs}))
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
			if err != nil || (d.Decision != "allow" && len(ids) > 0) {
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
