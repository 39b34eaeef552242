package run_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// BenchmarkStep measures one whole step through the Session API: step_start,
// before_inference, the model (two tool calls), the gate, before and after
// tool execution and the tools for both calls, step_end; with eight Go hooks.
func BenchmarkStep(b *testing.B) {
	var plugins []plugin.Plugin
	plugins = append(plugins, keys("k",
		state.Spec{Name: "b.steps", Reducer: "add", Merge: state.Commutative},
		state.Spec{Name: "b.calls", Reducer: "add", Merge: state.Commutative},
		state.Spec{Name: "b.last", Merge: state.Exclusive}))
	counter := func(key string) plugin.HookFunc {
		return func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Update(key, 1)
			return nil
		}
	}
	for i, p := range []phase.Phase{phase.StepStart, phase.StepStart, phase.BeforeInference, phase.AfterInference,
		phase.AfterToolExecute, phase.AfterToolExecute, phase.StepEnd} {
		key := "b.steps"
		if p == phase.AfterToolExecute {
			key = "b.calls"
		}
		plugins = append(plugins, hook(fmt.Sprintf("h%d", i), p, counter(key)))
	}
	plugins = append(plugins, gateFn("g", func(in *plugin.Input) gate.Decision {
		if in.Tool.Call.Name == "rm" {
			return gate.Decision{Kind: gate.Block, Reason: "no"}
		}
		return gate.Decision{}
	}))
	rt := newRuntime(b, []run.Option{run.WithAgents(run.Agent{ID: "default", MaxSteps: 1 << 30})}, plugins...)
	ctx := context.Background()
	s, _, err := rt.Start(ctx, run.StartOptions{})
	if err != nil {
		b.Fatal(err)
	}
	ls, cat := newTool("ls", nil), newTool("cat", nil)
	convo := []model.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "look around"}}
	specs := []model.ToolSpec{ls.Spec(), cat.Spec()}
	m := model.ModelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		return model.Response{ToolCalls: []model.ToolCall{
			{Name: "ls", Args: map[string]any{"path": "."}},
			{Name: "cat", Args: map[string]any{"path": "README.md"}},
		}}, nil
	})
	tools := map[string]*tool{"ls": ls, "cat": cat}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.StepStart(ctx); err != nil {
			b.Fatal(err)
		}
		req, _, err := s.BeforeInference(ctx, model.Request{Messages: convo, Tools: specs})
		if err != nil {
			b.Fatal(err)
		}
		resp, _ := m.Infer(ctx, req)
		if _, err := s.AfterInference(ctx, resp); err != nil {
			b.Fatal(err)
		}
		for _, c := range s.Calls() {
			d, _, err := s.ToolGate(ctx, c.Call)
			if err != nil || d.Decision != gate.Allow {
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
		if _, err := s.StepEnd(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStepCalls measures one step in which the model makes n tool
// calls, driven through the Session API (as the sidecar drives it) and by
// the autonomous loop: the cost per call (ns/call) must stay flat as n
// grows, a step costing O(n log n) in all.
func BenchmarkStepCalls(b *testing.B) {
	for _, driver := range []string{"session", "loop"} {
		for _, n := range []int{100, 1000, 10000} {
			b.Run(fmt.Sprintf("%s/calls=%d", driver, n), func(b *testing.B) {
				benchStepCalls(b, driver, n)
			})
		}
	}
}

func benchStepCalls(b *testing.B, driver string, n int) {
	ls := newTool("ls", nil)
	plugins := []plugin.Plugin{
		keys("k", state.Spec{Name: "b.calls", Reducer: "add", Merge: state.Commutative}),
		hook("count", phase.AfterToolExecute, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Update("b.calls", 1)
			return nil
		}),
		gateFn("g", func(in *plugin.Input) gate.Decision {
			if in.Tool.Call.Name == "rm" {
				return gate.Decision{Kind: gate.Block, Reason: "no"}
			}
			return gate.Decision{}
		}),
	}
	rt := newRuntime(b, []run.Option{run.WithAgents(run.Agent{ID: "default", MaxSteps: 1 << 30})}, plugins...)
	ctx := context.Background()
	resp := model.Response{ToolCalls: make([]model.ToolCall, n)}
	for i := range resp.ToolCalls {
		resp.ToolCalls[i] = model.ToolCall{ID: fmt.Sprintf("c%d", i), Name: "ls", Args: map[string]any{"path": strconv.Itoa(i)}}
	}
	specs := []model.ToolSpec{ls.Spec()}
	// Each step sends the conversation, as a host that keeps it does, so
	// the session's history does not grow from one iteration to the next.
	convo := []model.Message{{Role: "user", Content: "list them all"}}
	b.ReportAllocs()
	start := time.Now()
	switch driver {
	case "session":
		s, _, err := rt.Start(ctx, run.StartOptions{})
		if err != nil {
			b.Fatal(err)
		}
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
			for _, c := range resp.ToolCalls {
				d, _, err := s.ToolGate(ctx, c)
				if err != nil || d.Decision != gate.Allow {
					b.Fatal(d, err)
				}
				if _, err := s.BeforeToolExecute(ctx, c); err != nil {
					b.Fatal(err)
				}
				res := s.ExecuteTool(ctx, ls, c)
				if _, _, err := s.AfterToolExecute(ctx, c, res); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := s.StepEnd(ctx); err != nil {
				b.Fatal(err)
			}
		}
	case "loop":
		for b.Loop() {
			m := model.ModelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
				if len(req.Messages) > 1 {
					return model.Response{Text: "done"}, nil
				}
				return resp, nil
			})
			res, err := rt.Run(ctx, run.Request{Prompt: "go", Model: m, Tools: []plugin.Tool{ls}})
			if err != nil || res.Err != nil || res.Termination != "natural" {
				b.Fatal(err, res.Err, res.Termination)
			}
		}
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/float64(b.N*n), "ns/call")
}

// BenchmarkLargeValueFeed runs an agent whose hook appends 100 KB to one key
// at every step, for up to 200 steps: the run fails with state_too_large
// once the key passes max_value_size (1 MiB), at step 11, and each commit
// measures only the item it appends.
func BenchmarkLargeValueFeed(b *testing.B) {
	item := strings.Repeat("x", 100_000)
	rt := newRuntime(b, []run.Option{run.WithAgents(run.Agent{ID: "default", MaxSteps: 200})},
		keys("big", state.Spec{Name: "big.log", Reducer: "append"}),
		hook("feeder", phase.StepStart, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Update("big.log", item)
			return nil
		}))
	m := model.ModelFunc(func(ctx context.Context, req model.Request) (model.Response, error) {
		return calls(call("ls", nil)), nil
	})
	ls := newTool("ls", nil)
	b.ReportAllocs()
	for b.Loop() {
		res, err := rt.Run(context.Background(), run.Request{Prompt: "go", Model: m, Tools: []plugin.Tool{ls}})
		if err != nil || res.Termination != "error:state_too_large" || res.Steps != 11 {
			b.Fatal(err, res.Termination, res.Steps)
		}
	}
}
