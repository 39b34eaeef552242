package replay_test

import (
	"context"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/replay"
	"github.com/awaken-lua/awaken-lua/run"
)

// counterRuntime: a Go plugin that counts steps in a run key.
func counterRuntime(t *testing.T, j run.Recorder) *run.Runtime {
	t.Helper()
	p := plugin.New("counter", func(r *plugin.Registrar) error {
		if _, err := r.Key(state.Spec{Name: "counter.steps", Default: 0.0, Reducer: "add"}, errs.Pos{}); err != nil {
			return err
		}
		return r.On(phase.StepStart, plugin.HookFunc(func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Update("counter.steps", 1.0)
			return nil
		}), errs.Pos{})
	})
	return runtimeOf(t, p, run.NewMemoryStore(), j)
}

// runtimeOf is a runtime of plugin p on st, recording to j when it is set.
func runtimeOf(t *testing.T, p plugin.Plugin, st run.Store, j run.Recorder) *run.Runtime {
	t.Helper()
	set, err := run.NewSet(p)
	if err != nil {
		t.Fatal(err)
	}
	opts := []run.Option{run.WithStore(st)}
	if j != nil {
		opts = append(opts, run.WithJournal(j, "h"))
	}
	rt, err := run.New(engine.New(set), opts...)
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// The engine turns a panic in a plugin's own code (hooks, gates,
// reducers, tools, transforms, the values they hand over) into that
// call's error, so a panic that reaches the shadow is a bug of the
// candidate's machinery, here in getting the candidate at all. The shadow
// counts it as an error and does not follow the run: its later records
// are not driven into a copy of the run in no known state, where they
// would count as disagreements the candidate's plugins never made.
func TestShadowStopsFollowingARunAfterAPanic(t *testing.T) {
	ctx := context.Background()
	sh := replay.NewShadow(func() (*run.Runtime, string, func()) { panic("candidate: a bug") }, nil, nil)
	defer sh.Close()
	rt := counterRuntime(t, sh)

	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	tools := []model.ToolSpec{{Name: "ls"}}
	s, _, err := rt.Start(ctx, run.StartOptions{ThreadID: "T", Tools: tools, Messages: []model.Message{{Role: model.RoleUser, Content: "go"}}})
	must(err)
	for step := 0; step < 2; step++ {
		_, err = s.StepStart(ctx)
		must(err)
		_, _, err = s.BeforeInference(ctx, model.Request{Tools: tools})
		must(err)
		call := model.ToolCall{ID: "c" + string(rune('1'+step)), Name: "ls", Args: map[string]any{}}
		_, err = s.AfterInference(ctx, model.Response{ToolCalls: []model.ToolCall{call}})
		must(err)
		_, _, err = s.ToolGate(ctx, call)
		must(err)
		_, err = s.BeforeToolExecute(ctx, call)
		must(err)
		_, _, err = s.AfterToolExecute(ctx, call, model.ToolResult{Status: "success"})
		must(err)
		_, err = s.StepEnd(ctx)
		must(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !sh.Idle() || sh.Summary().Errors == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the shadow never caught up")
		}
		time.Sleep(time.Millisecond)
	}
	sum := sh.Summary()
	if sum.Disagreements != 0 || sum.Errors != 1 || sum.Following != 0 {
		t.Fatalf("after the candidate panicked: %d disagreements %+v, %d errors, following %d; want none, 1 and 0",
			sum.Disagreements, sum.Recent, sum.Errors, sum.Following)
	}
}
