package run_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/value"
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

// A done run's state, compacted to its pointer-free form, reads back as it
// read before: every kind of call record its last step can hold (blocked
// with a reason, rewritten, suspended then cancelled with a ticket, run
// with a result holding data and a message, no args), the run record, the
// revision; a snapshot and a checkpoint read the same values; and every
// phase is refused without a panic.
func TestCompactFreezesTheStateOfADoneRun(t *testing.T) {
	g := gateFn("g", func(in *plugin.Input) gate.Decision {
		switch in.Tool.Call.Name {
		case "rm":
			return gate.Decision{Kind: gate.Block, Reason: "rm is not allowed"}
		case "edit":
			return gate.Decision{Kind: gate.Rewrite, Args: map[string]any{"path": "safe.txt", "n": 2.5}}
		case "deploy":
			return gate.Decision{Kind: gate.Suspend, Ticket: &gate.Ticket{ID: "t-1", Message: "deploy?", Options: []string{"yes", "no"}}}
		}
		return gate.Decision{}
	})
	rt := newRuntime(t, nil, g)
	ctx := context.Background()
	s, _, err := rt.Start(ctx, run.StartOptions{ThreadID: "th", Messages: []model.Message{{Role: model.RoleUser, Content: "go"}}})
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
	_, _, err = s.BeforeInference(ctx, model.Request{Tools: []model.ToolSpec{{Name: "rm"}, {Name: "edit"}, {Name: "deploy"}, {Name: "ls"}, {Name: "pwd"}}})
	must(nil, err)
	cs := []model.ToolCall{
		{ID: "c2", Name: "edit", Args: map[string]any{"path": "x"}},
		{ID: "c3", Name: "deploy", Args: map[string]any{"env": "prod"}},
		{ID: "c4", Name: "ls", Args: map[string]any{"dir": ".", "all": true, "depth": []any{1.0, value.Null{}}}},
		{ID: "c5", Name: "pwd"},
		{ID: "c1", Name: "rm", Args: map[string]any{"path": "/"}}, // its block ends the run
	}
	must(s.AfterInference(ctx, model.Response{ToolCalls: cs}))
	for _, c := range cs[:4] {
		_, _, err := s.ToolGate(ctx, c)
		must(nil, err)
	}
	for _, id := range []string{"c2", "c4", "c5"} {
		must(s.BeforeToolExecute(ctx, model.ToolCall{ID: id}))
	}
	_, _, err = s.AfterToolExecute(ctx, model.ToolCall{ID: "c2"}, model.Error("no such file"))
	must(nil, err)
	_, _, err = s.AfterToolExecute(ctx, model.ToolCall{ID: "c4"}, model.ToolResult{Status: model.StatusSuccess,
		Data: map[string]any{"files": []any{"a", "b"}, "n": 2.0, "ok": false}, Message: "2 files"})
	must(nil, err)
	_, _, err = s.AfterToolExecute(ctx, model.ToolCall{ID: "c5"}, model.Success("/home"))
	must(nil, err)
	d, _, err := s.ToolGate(ctx, cs[4])
	must(nil, err)
	_, _, err = s.AfterToolExecute(ctx, cs[4], *d.Result)
	must(nil, err)
	must(s.RunEnd(ctx))
	if s.Status() != run.Done {
		t.Fatalf("status %s after run_end", s.Status())
	}

	asJSON := func(v any) string {
		t.Helper()
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	state, rev := asJSON(s.State()), s.Revision()
	cp := s.Checkpoint()
	cpValues := asJSON([]any{cp.Values, cp.ThreadValues, cp.Revision})
	call, err := s.Snapshot().Lookup("__runtime.tool_calls")
	must(nil, err)
	calls := asJSON(call)
	if !strings.Contains(calls, `"ticket":"t-1"`) || !strings.Contains(calls, `"rewritten_by":"g"`) ||
		!strings.Contains(calls, `"message":"2 files"`) || !strings.Contains(calls, `"reason":"rm is not allowed"`) {
		t.Fatalf("the test's last step lacks a kind of record: %s", calls)
	}

	s.Compact()
	if got := asJSON(s.State()); got != state {
		t.Fatalf("state after compacting:\n%s\nwant\n%s", got, state)
	}
	if s.Revision() != rev {
		t.Fatalf("revision %d after compacting, want %d", s.Revision(), rev)
	}
	if got, err := s.Snapshot().Lookup("__runtime.tool_calls"); err != nil || asJSON(got) != calls {
		t.Fatalf("snapshot after compacting: %v %s\nwant %s", err, asJSON(got), calls)
	}
	cp = s.Checkpoint()
	if got := asJSON([]any{cp.Values, cp.ThreadValues, cp.Revision}); got != cpValues {
		t.Fatalf("checkpoint after compacting:\n%s\nwant\n%s", got, cpValues)
	}
	if s.PendingActions() != nil || s.FailedActions() != nil {
		t.Fatal("a compacted run has no actions")
	}
	refused := func(name string, err error) {
		t.Helper()
		if !errors.Is(err, errs.InvalidTransition) {
			t.Fatalf("%s on a compacted done run: %v, want invalid_transition", name, err)
		}
	}
	_, err = s.StepStart(ctx)
	refused("step_start", err)
	_, _, err = s.BeforeInference(ctx, model.Request{})
	refused("before_inference", err)
	_, err = s.AfterInference(ctx, text("x"))
	refused("after_inference", err)
	_, _, err = s.ToolGate(ctx, cs[3])
	refused("tool_gate", err)
	_, err = s.AnnounceCall(ctx, cs[3])
	refused("announce", err)
	_, err = s.BeforeToolExecute(ctx, cs[3])
	refused("before_tool_execute", err)
	_, _, err = s.AfterToolExecute(ctx, cs[3], model.Success("x"))
	refused("after_tool_execute", err)
	_, err = s.StepEnd(ctx)
	refused("step_end", err)
	_, err = s.RunEnd(ctx)
	refused("run_end", err)
	_, err = s.Cancel(ctx, "again")
	refused("cancel", err)
	_, _, err = s.Resume(ctx, []run.ResumeDecision{{Target: "c3", Action: "resume"}})
	refused("resume", err)
	_, err = s.EndUninferred(ctx)
	refused("end_uninferred", err)
	if _, err := s.Probe(ctx, cs[3]); err == nil {
		t.Fatal("probe of a call on a compacted done run answered")
	}
	if err := s.RunCalls(ctx, func(context.Context, model.ToolCall) model.ToolResult { return model.Success("") }); err != nil {
		t.Fatal(err)
	}
	if res := s.ExecuteTool(ctx, newTool("ls", nil), cs[3]); res.Status != model.StatusError {
		t.Fatalf("a tool ran for a compacted done run: %+v", res)
	}
	if _, _, err := s.Expire(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.SaveThread(ctx); err != nil {
		t.Fatal(err)
	}
	s.JournalAbandon()
	if got := asJSON(s.State()); got != state {
		t.Fatalf("state after the refused calls:\n%s\nwant\n%s", got, state)
	}
}
