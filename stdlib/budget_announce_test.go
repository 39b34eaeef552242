package stdlib_test

import (
	"context"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/luabridge"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
	"github.com/awaken-lua/awaken-lua/stdlib"
)

// A host that learns of a step's calls one at a time (a coding agent's
// hook per parallel call) announces the calls after the first one
// (Session.AnnounceCall): after_inference never saw them. budget's gate
// must still count them, so a limit is not passed within the step.
func TestBudgetCountsAnnouncedCalls(t *testing.T) {
	for _, c := range []struct {
		name   string
		config map[string]any
	}{
		{"max_tool_calls", map[string]any{"max_tool_calls": 1}},
		{"max_calls_per_tool", map[string]any{"max_calls_per_tool": map[string]any{"Bash": 1}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			l := &luabridge.Loader{Stdlib: luabridge.Source{FS: stdlib.FS, Name: "stdlib"}, Enable: []string{"budget"}}
			l.Limits.HookTimeout = 10 * time.Second
			g, err := l.Load(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			configs, err := g.Set.Configure(map[string]any{"budget": c.config})
			if err != nil {
				t.Fatal(err)
			}
			rt, err := run.New(engine.New(g.Set), run.WithAgents(run.Agent{ID: "default", MaxSteps: 10, Configs: configs}))
			if err != nil {
				t.Fatal(err)
			}
			s, _, err := rt.Start(ctx, run.StartOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.StepStart(ctx); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.BeforeInference(ctx, model.Request{Tools: []model.ToolSpec{{Name: "Bash"}}}); err != nil {
				t.Fatal(err)
			}
			first := model.ToolCall{ID: "c1", Name: "Bash", Args: map[string]any{"command": "ls"}}
			if _, err := s.AfterInference(ctx, model.Response{ToolCalls: []model.ToolCall{first}}); err != nil {
				t.Fatal(err)
			}
			second := model.ToolCall{ID: "c2", Name: "Bash", Args: map[string]any{"command": "pwd"}}
			if _, err := s.AnnounceCall(ctx, second); err != nil {
				t.Fatal(err)
			}
			d, _, err := s.ToolGate(ctx, first)
			if err != nil || d.Decision != gate.Allow {
				t.Fatalf("first call: %+v, %v", d, err)
			}
			d, _, err = s.ToolGate(ctx, second)
			if err != nil {
				t.Fatal(err)
			}
			if d.Decision != gate.SetResult {
				t.Fatalf("the announced call past the limit: decision %v, want set_result (refused)", d.Decision)
			}
		})
	}
}
