package stdlib_test

// THROWAWAY: measures one step (2 tool calls) with the stdlib plugins.

import (
	"context"
	"fmt"
	"testing"
	"testing/fstest"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/model"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/run"
	"github.com/awaken-lua/awaken-lua/luabridge"
	"github.com/awaken-lua/awaken-lua/stdlib"
)

type btool struct{ name, desc string }

func (t *btool) Spec() model.ToolSpec { return model.ToolSpec{Name: t.name, Description: t.desc} }
func (t *btool) Execute(ctx context.Context, in *plugin.Input, args map[string]any, out *command.Command) (model.ToolResult, error) {
	return model.Success("README.md main.go go.mod\nsome text without secrets " + t.name), nil
}

var benchConfigs = map[string]any{
	"reminder": map[string]any{"rules": []any{
		map[string]any{"tool": "ls", "output": map[string]any{"status": "error"}, "message": map[string]any{"content": "ls failed"}},
		map[string]any{"tool": "cat", "output": map[string]any{"content": "*TODO*"}, "message": map[string]any{"content": "todos", "cooldown": float64(3)}},
		map[string]any{"tool": "mcp__*", "message": map[string]any{"content": "mcp"}},
	}},
	"deferred_tools": map[string]any{"default": "deferred", "rules": []any{
		map[string]any{"tool": "ls", "mode": "eager"},
		map[string]any{"tool": "cat", "mode": "eager"},
	}},
	"budget": map[string]any{"max_steps": float64(1 << 30), "max_tool_calls": float64(1 << 30),
		"max_calls_per_tool": map[string]any{"ls": float64(1 << 30)}, "max_tokens": float64(1 << 40)},
	"audit":  map[string]any{},
	"redact": map[string]any{},
	"permission": map[string]any{"default": "ask", "rules": []any{
		map[string]any{"tool": "ls", "behavior": "allow"},
		map[string]any{"tool": "cat(path ~ \"*.md\")", "behavior": "allow"},
		map[string]any{"tool": "mcp__*", "behavior": "deny"},
		map[string]any{"tool": "/rm|shred/", "behavior": "deny"},
	}},
}

func benchStep(b *testing.B, enable []string) {
	ctx := context.Background()
	l := &luabridge.Loader{Plugins: luabridge.Source{FS: fstest.MapFS{}, Name: "plugins"},
		Stdlib: luabridge.Source{FS: stdlib.FS, Name: "stdlib"}, Enable: enable}
	gen, err := l.Load(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer gen.Close()
	cfg := map[string]any{}
	for _, id := range enable {
		cfg[id] = benchConfigs[id]
	}
	agent := run.Agent{ID: "default", MaxSteps: 1 << 30}
	if agent.Configs, err = gen.Set.Configure(cfg); err != nil {
		b.Fatal(err)
	}
	rt, err := run.New(engine.New(gen.Set), run.WithAgents(agent))
	if err != nil {
		b.Fatal(err)
	}
	s, _, err := rt.Start(ctx, run.StartOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ls, cat := &btool{"ls", "Lists files"}, &btool{"cat", "Prints a file"}
	specs := []model.ToolSpec{ls.Spec(), cat.Spec()}
	for i := 0; i < 6; i++ {
		specs = append(specs, model.ToolSpec{Name: fmt.Sprintf("mcp__srv__tool%d", i), Description: fmt.Sprintf("Does thing %d with the server", i)})
	}
	convo := []model.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "look around"}}
	tools := map[string]*btool{"ls": ls, "cat": cat}
	resp := model.Response{ToolCalls: []model.ToolCall{
		{Name: "ls", Args: map[string]any{"path": "."}},
		{Name: "cat", Args: map[string]any{"path": "README.md", "token": "abc"}},
	}, Usage: &model.Usage{PromptTokens: 100, CompletionTokens: 20, TotalTokens: 120}}
	b.ReportAllocs()
	for b.Loop() {
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
			if err != nil || d.Decision != "allow" {
				b.Fatal(d, err)
			}
			if _, err := s.BeforeToolExecute(ctx, c.Call); err != nil {
				b.Fatal(err)
			}
			res := s.ExecuteTool(ctx, tools[c.Call.Name], c.Call)
			if _, _, err := s.AfterToolExecute(ctx, c.Call, res); err != nil {
				b.Fatal(err)
			}
		}
		if o, err := s.StepEnd(ctx); err != nil || o.Termination != "" {
			b.Fatal(o, err)
		}
	}
}

func BenchmarkZZStep(b *testing.B) {
	five := []string{"reminder", "deferred_tools", "budget", "audit", "redact"}
	b.Run("none", func(b *testing.B) { benchStep(b, nil) })
	for _, id := range append(five, "permission") {
		b.Run(id, func(b *testing.B) { benchStep(b, []string{id}) })
	}
	b.Run("five", func(b *testing.B) { benchStep(b, five) })
	b.Run("six", func(b *testing.B) { benchStep(b, append(five, "permission")) })
}
