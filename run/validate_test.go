package run_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// snapshotOf renders everything a session holds, to see that a refused call
// changed nothing.
func snapshotOf(t *testing.T, s *run.Session) string {
	t.Helper()
	b, err := json.Marshal(s.Checkpoint())
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + s.Termination()
}

func wantField(t *testing.T, err error, code errs.Code, path string) {
	t.Helper()
	var e *errs.Error
	if !errors.As(err, &e) || e.Code != code || e.Path != path || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v, want %s naming %s", err, code, path)
	}
}

// TestSessionValidatesItsInput sends each Session method a value it must
// refuse: the answer is bad_request naming the field's path, and the run is
// exactly as before.
func TestSessionValidatesItsInput(t *testing.T) {
	ctx := context.Background()
	// inferred opens a step whose model answered with calls c1 (ls) and c2
	// (deploy); the gate suspends deploy.
	inferred := func(t *testing.T) *run.Session {
		rt := newRuntime(t, nil, approver("ask"))
		s, _, err := rt.Start(ctx, run.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.StepStart(ctx); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.BeforeInference(ctx, model.Request{Tools: []model.ToolSpec{{Name: "ls"}, {Name: "deploy"}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AfterInference(ctx, calls(model.ToolCall{ID: "c1", Name: "ls"}, model.ToolCall{ID: "c2", Name: "deploy"})); err != nil {
			t.Fatal(err)
		}
		return s
	}
	ready := func(t *testing.T) *run.Session {
		rt := newRuntime(t, nil)
		s, _, err := rt.Start(ctx, run.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.StepStart(ctx); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.BeforeInference(ctx, model.Request{}); err != nil {
			t.Fatal(err)
		}
		return s
	}
	started := func(t *testing.T) *run.Session {
		rt := newRuntime(t, nil)
		s, _, err := rt.Start(ctx, run.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.StepStart(ctx); err != nil {
			t.Fatal(err)
		}
		return s
	}
	gated := func(t *testing.T) *run.Session {
		s := inferred(t)
		if _, _, err := s.ToolGate(ctx, model.ToolCall{ID: "c1"}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.BeforeToolExecute(ctx, model.ToolCall{ID: "c1"}); err != nil {
			t.Fatal(err)
		}
		return s
	}
	waiting := func(t *testing.T) *run.Session {
		s := gated(t)
		if _, _, err := s.AfterToolExecute(ctx, model.ToolCall{ID: "c1"}, model.Success("ok")); err != nil {
			t.Fatal(err)
		}
		if d, _, err := s.ToolGate(ctx, model.ToolCall{ID: "c2"}); err != nil || d.Decision != gate.Suspend {
			t.Fatal(d, err)
		}
		if _, err := s.StepEnd(ctx); err != nil || s.Status() != run.Waiting {
			t.Fatal(s.Status(), err)
		}
		return s
	}
	notAValue := make(chan int)
	tests := []struct {
		name  string
		setup func(*testing.T) *run.Session
		do    func(*run.Session) error
		code  errs.Code
		path  string
	}{
		{"a call without a name", ready, func(s *run.Session) error {
			_, err := s.AfterInference(ctx, calls(model.ToolCall{ID: "a", Name: "ls"}, model.ToolCall{ID: "b"}))
			return err
		}, errs.BadRequest, "$.response.tool_calls[1].name"},
		{"two calls with one id", ready, func(s *run.Session) error {
			_, err := s.AfterInference(ctx, calls(model.ToolCall{ID: "a", Name: "ls"}, model.ToolCall{ID: "a", Name: "cat"}))
			return err
		}, errs.BadRequest, "$.response.tool_calls[1].id"},
		{"arguments that are not a value", ready, func(s *run.Session) error {
			_, err := s.AfterInference(ctx, calls(model.ToolCall{ID: "a", Name: "ls", Args: map[string]any{"x": notAValue}}))
			return err
		}, errs.BadRequest, "$.response.tool_calls[0].args"},
		{"a negative max_tokens", started, func(s *run.Session) error {
			_, _, err := s.BeforeInference(ctx, model.Request{Params: model.Params{MaxTokens: ptr(-1)}})
			return err
		}, errs.BadRequest, "$.request.params.max_tokens"},
		{"a NaN temperature", started, func(s *run.Session) error {
			_, _, err := s.BeforeInference(ctx, model.Request{Params: model.Params{Temperature: ptr(math.NaN())}})
			return err
		}, errs.BadRequest, "$.request.params.temperature"},
		{"a top_p above 1", started, func(s *run.Session) error {
			_, _, err := s.BeforeInference(ctx, model.Request{Params: model.Params{TopP: ptr(1.5)}})
			return err
		}, errs.BadRequest, "$.request.params.top_p"},
		{"a tool without a name", started, func(s *run.Session) error {
			_, _, err := s.BeforeInference(ctx, model.Request{Tools: []model.ToolSpec{{Name: "ls"}, {}}})
			return err
		}, errs.BadRequest, "$.request.tools[1].name"},
		{"a gate for a call the model never made", inferred, func(s *run.Session) error {
			_, _, err := s.ToolGate(ctx, model.ToolCall{ID: "c9", Name: "ls"})
			return err
		}, errs.BadRequest, "$.call.id"},
		{"a gate without a call id", inferred, func(s *run.Session) error {
			_, _, err := s.ToolGate(ctx, model.ToolCall{Name: "ls"})
			return err
		}, errs.BadRequest, "$.call.id"},
		{"a gate naming another tool", inferred, func(s *run.Session) error {
			_, _, err := s.ToolGate(ctx, model.ToolCall{ID: "c1", Name: "rm"})
			return err
		}, errs.BadRequest, "$.call.name"},
		{"before_tool_execute for a call the model never made", gated, func(s *run.Session) error {
			_, err := s.BeforeToolExecute(ctx, model.ToolCall{ID: "c9"})
			return err
		}, errs.BadRequest, "$.call.id"},
		{"a result without a status", gated, func(s *run.Session) error {
			_, _, err := s.AfterToolExecute(ctx, model.ToolCall{ID: "c1"}, model.ToolResult{Data: "x"})
			return err
		}, errs.BadRequest, "$.result.status"},
		{"a result with an unknown status", gated, func(s *run.Session) error {
			_, _, err := s.AfterToolExecute(ctx, model.ToolCall{ID: "c1"}, model.ToolResult{Status: "ok"})
			return err
		}, errs.BadRequest, "$.result.status"},
		{"an announced call without a name", inferred, func(s *run.Session) error {
			_, err := s.AnnounceCall(ctx, model.ToolCall{ID: "c3"})
			return err
		}, errs.BadRequest, "$.call.name"},
		{"an announced call with a taken id", inferred, func(s *run.Session) error {
			_, err := s.AnnounceCall(ctx, model.ToolCall{ID: "c2", Name: "ls"})
			return err
		}, errs.BadRequest, "$.call.id"},
		{"a resume result that is not a value", waiting, func(s *run.Session) error {
			_, _, err := s.Resume(ctx, []run.ResumeDecision{{Target: "c2", Action: "resume", Result: notAValue}})
			return err
		}, errs.BadRequest, "$.decisions[0].result"},
		{"a bad resume after a good one", waiting, func(s *run.Session) error {
			_, _, err := s.Resume(ctx, []run.ResumeDecision{{Target: "c2", Action: "resume"}, {Target: "c2", Action: "maybe"}})
			return err
		}, errs.BadRequest, "$.decisions[1].action"},
		{"two decisions for one call", waiting, func(s *run.Session) error {
			_, _, err := s.Resume(ctx, []run.ResumeDecision{{Target: "c2", Action: "resume"}, {Target: "t-c2", Action: "cancel"}})
			return err
		}, errs.BadRequest, "$.decisions[1].target"},
		{"a decision without a target", waiting, func(s *run.Session) error {
			_, _, err := s.Resume(ctx, []run.ResumeDecision{{Action: "resume"}})
			return err
		}, errs.BadRequest, "$.decisions[0].target"},
		{"an unknown target", waiting, func(s *run.Session) error {
			_, _, err := s.Resume(ctx, []run.ResumeDecision{{Target: "c1", Action: "resume"}})
			return err
		}, errs.UnknownResumeTarget, "$.decisions[0].target"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.setup(t)
			before := snapshotOf(t, s)
			var err error
			func() {
				defer func() {
					if v := recover(); v != nil {
						t.Fatalf("panicked: %v", v)
					}
				}()
				err = tc.do(s)
			}()
			wantField(t, err, tc.code, tc.path)
			if after := snapshotOf(t, s); after != before {
				t.Fatalf("a refused call changed the run:\n%s\n%s", before, after)
			}
		})
	}
}

// TestParallelCallsAreAnnounced drives a host that learns of the model's
// calls one at a time (as Claude Code's hooks do): each call is announced,
// then gated, run and given its result.
func TestParallelCallsAreAnnounced(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t, nil, approver("ask"))
	s, _, err := rt.Start(ctx, run.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.StepStart(ctx)
	s.BeforeInference(ctx, model.Request{Tools: []model.ToolSpec{{Name: "ls"}, {Name: "deploy"}}})
	if _, err := s.AfterInference(ctx, calls(model.ToolCall{ID: "a", Name: "ls"})); err != nil {
		t.Fatal(err)
	}
	for _, c := range []model.ToolCall{{ID: "b", Name: "ls", Args: map[string]any{"n": 1}}, {ID: "c", Name: "deploy"}} {
		if _, _, err := s.ToolGate(ctx, c); errs.CodeOf(err) != errs.BadRequest {
			t.Fatalf("gating %s before it is announced: %v", c.ID, err)
		}
		if _, err := s.AnnounceCall(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"a", "b"} {
		if d, _, err := s.ToolGate(ctx, model.ToolCall{ID: id}); err != nil || d.Decision != gate.Allow {
			t.Fatal(id, d, err)
		}
		s.BeforeToolExecute(ctx, model.ToolCall{ID: id})
		if _, _, err := s.AfterToolExecute(ctx, model.ToolCall{ID: id}, model.Success(id)); err != nil {
			t.Fatal(err)
		}
	}
	if d, _, err := s.ToolGate(ctx, model.ToolCall{ID: "c", Name: "deploy"}); err != nil || d.Decision != gate.Suspend {
		t.Fatal(d, err)
	}
	calls, _ := s.State()[run.KeyToolCalls].(map[string]any)
	if len(calls) != 3 || calls["b"].(map[string]any)["status"] != "succeeded" || calls["c"].(map[string]any)["status"] != "suspended" {
		t.Fatalf("tool_calls = %v", calls)
	}
	if c, ok := s.Call("b"); !ok || c.Call.Args["n"] != 1.0 {
		t.Fatalf("call b = %+v", c)
	}
	if _, err := s.StepEnd(ctx); err != nil || s.Status() != run.Waiting || s.SuspendedCount() != 1 {
		t.Fatal(s.Status(), err)
	}
}

// TestTheLoopEndsOnARefusedModelAnswer: a model that answers with a call
// without a name fails the run (model_failed) and run_end still runs.
func TestTheLoopEndsOnARefusedModelAnswer(t *testing.T) {
	rt := newRuntime(t, nil)
	res, err := rt.Run(context.Background(), run.Request{Model: turns(calls(model.ToolCall{ID: "x"})), Tools: []plugin.Tool{newTool("ls", nil)}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Termination != "error:model_failed" || res.Status != run.Done || errs.PathOf(res.Err) != "$.response.tool_calls[0].name" {
		t.Fatalf("termination %q status %s err %v", res.Termination, res.Status, res.Err)
	}
}
