package run_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// A finished run's session, compacted, answers every read a done run
// answers as before (status, stage, step, revision, state, termination,
// saves, tickets, phases refused) and holds no conversation or calls; the
// thread in the store keeps its conversation. A run not done is left as
// it is.
func TestCompactKeepsWhatADoneRunAnswers(t *testing.T) {
	rt := newRuntime(t, nil)
	ctx := context.Background()
	s, _, err := rt.Start(ctx, run.StartOptions{ThreadID: "th", Messages: []model.Message{{Role: model.RoleUser, Content: "list the files"}}})
	if err != nil {
		t.Fatal(err)
	}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(s.StepStart(ctx))
	_, _, err = s.BeforeInference(ctx, model.Request{Tools: []model.ToolSpec{{Name: "ls"}}})
	must(nil, err)
	must(s.AfterInference(ctx, calls(call("ls", map[string]any{"dir": "."}))))
	s.Compact() // not done: nothing goes
	if len(s.Calls()) != 1 || len(s.Messages()) == 0 {
		t.Fatalf("a run in progress lost its calls or conversation: %d calls, %d messages", len(s.Calls()), len(s.Messages()))
	}
	_, _, err = s.ToolGate(ctx, model.ToolCall{ID: "call_1_1", Name: "ls"})
	must(nil, err)
	must(s.BeforeToolExecute(ctx, model.ToolCall{ID: "call_1_1"}))
	_, _, err = s.AfterToolExecute(ctx, model.ToolCall{ID: "call_1_1"}, model.Success("a.txt"))
	must(nil, err)
	must(s.StepEnd(ctx))
	must(s.StepStart(ctx))
	_, _, err = s.BeforeInference(ctx, model.Request{})
	must(nil, err)
	must(s.AfterInference(ctx, text("one file")))
	must(s.StepEnd(ctx))
	must(s.RunEnd(ctx))

	type reads struct {
		Status      run.Status
		Stage       run.Stage
		Step        int
		Revision    uint64
		Saves       uint64
		Termination string
		Ended       run.Termination
		State       map[string]any
		Suspended   int
		Run, Thread string
	}
	read := func() reads {
		return reads{s.Status(), s.Stage(), s.Step(), s.Revision(), s.Saves(), s.Termination(), s.Ended(), s.State(),
			len(s.Suspended()), s.RunID(), s.ThreadID()}
	}
	before := read()
	s.Compact()
	if after := read(); !reflect.DeepEqual(after, before) {
		t.Fatalf("compacting changed what the run answers:\nbefore %+v\nafter  %+v", before, after)
	}
	if n, m := len(s.Calls()), len(s.Messages()); n != 0 || m != 0 {
		t.Fatalf("a compacted run still holds %d calls and %d messages", n, m)
	}
	if _, err := s.StepStart(ctx); !errors.Is(err, errs.InvalidTransition) {
		t.Fatalf("step_start on a done run: %v, want invalid_transition", err)
	}
	if err := s.Release(ctx); err != nil {
		t.Fatal(err)
	}
	th, ok, err := rt.Store().Thread(ctx, "th")
	if err != nil || !ok || len(th.Messages) < 4 {
		t.Fatalf("the thread's conversation must stay in the store: ok %v, %d messages, %v", ok, len(th.Messages), err)
	}
}
