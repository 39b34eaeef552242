package run_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

func newRuntime(t testing.TB, opts []run.Option, plugins ...plugin.Plugin) *run.Runtime {
	t.Helper()
	set, err := run.NewSet(plugins...)
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	opts = append([]run.Option{run.WithIDs(func(p string) string { return fmt.Sprintf("%s%d", p, n.Add(1)) })}, opts...)
	rt, err := run.New(engine.New(set), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// script answers with the given responses in order.
type script struct {
	mu    sync.Mutex
	turns []model.Response
	reqs  []model.Request
}

func turns(rs ...model.Response) *script { return &script{turns: rs} }

func (s *script) Infer(ctx context.Context, req model.Request) (model.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reqs = append(s.reqs, req)
	if len(s.turns) == 0 {
		return model.Response{}, errs.New(errs.ModelFailed, "script exhausted")
	}
	r := s.turns[0]
	s.turns = s.turns[1:]
	return r, nil
}

func calls(cs ...model.ToolCall) model.Response { return model.Response{ToolCalls: cs} }
func text(s string) model.Response              { return model.Response{Text: s} }
func call(name string, args map[string]any) model.ToolCall {
	if args == nil {
		args = map[string]any{}
	}
	return model.ToolCall{Name: name, Args: args}
}

// tool is a Go tool that counts its runs.
type tool struct {
	name string
	runs atomic.Int32
	fn   func(args map[string]any) (model.ToolResult, error)
}

func newTool(name string, fn func(args map[string]any) (model.ToolResult, error)) *tool {
	if fn == nil {
		fn = func(args map[string]any) (model.ToolResult, error) { return model.Success(name + " ok"), nil }
	}
	return &tool{name: name, fn: fn}
}

func (t *tool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: t.name, Description: "test tool " + t.name}
}
func (t *tool) Execute(ctx context.Context, in *plugin.Input, args map[string]any, out *command.Command) (model.ToolResult, error) {
	t.runs.Add(1)
	return t.fn(args)
}

func hook(id string, p phase.Phase, f plugin.HookFunc) plugin.Plugin {
	return plugin.New(id, func(r *plugin.Registrar) error { return r.On(p, f, errs.Pos{}) })
}

func gateFn(id string, f func(in *plugin.Input) gate.Decision) plugin.Plugin {
	return plugin.New(id, func(r *plugin.Registrar) error {
		return r.Gate(plugin.GateFunc(func(ctx context.Context, in *plugin.Input) (gate.Decision, error) {
			return f(in), nil
		}), errs.Pos{})
	})
}

func keys(id string, specs ...state.Spec) plugin.Plugin {
	return plugin.New(id, func(r *plugin.Registrar) error {
		for _, s := range specs {
			if _, err := r.Key(s, errs.Pos{}); err != nil {
				return err
			}
		}
		return nil
	})
}

func names(rec *event.Recorder) []string { return rec.Names() }
