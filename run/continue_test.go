package run_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// reviewer asks to continue in phase p whenever the model answered
// without tool calls (in after_inference it sees the response; in
// step_end it reads the last message).
func reviewer(p phase.Phase, payload map[string]any) plugin.Plugin {
	return hook("reviewer", p, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
		if p == phase.AfterInference && len(in.Response.ToolCalls) > 0 {
			return nil
		}
		if p == phase.StepEnd && len(in.Messages[len(in.Messages)-1].ToolCalls) > 0 {
			return nil
		}
		out.Schedule(run.ActionContinue, payload)
		return nil
	})
}

func TestContinue(t *testing.T) {
	review := map[string]any{"content": "review your answer"}
	tests := []struct {
		name     string
		max      int
		at       phase.Phase
		payload  map[string]any
		turns    []model.Response
		steps    int
		cont     int // run_continued events
		limit    bool
		role     string
		stop     bool
		wantTerm string
	}{
		{"default bound of 3", 0, phase.AfterInference, review,
			[]model.Response{text("a"), text("b"), text("c"), text("d"), text("e")}, 4, 3, true, model.RoleUser, false, "natural"},
		{"asked in step_end", 0, phase.StepEnd, map[string]any{"content": "check", "role": "system"},
			[]model.Response{text("a"), text("b"), text("c"), text("d")}, 4, 3, true, model.RoleSystem, false, "natural"},
		{"one allowed", 1, phase.AfterInference, review,
			[]model.Response{text("a"), text("b")}, 2, 1, true, model.RoleUser, false, "natural"},
		{"none allowed", -1, phase.AfterInference, review,
			[]model.Response{text("a")}, 1, 0, true, "", false, "natural"},
		{"a step with tool calls drops it", 1, phase.AfterInference, review,
			[]model.Response{calls(call("echo", nil)), text("a"), text("b")}, 3, 1, true, model.RoleUser, false, "natural"},
		{"a stop wins", 0, phase.AfterInference, review,
			[]model.Response{text("a")}, 1, 0, false, "", true, "stopped:done"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ps := []plugin.Plugin{reviewer(tc.at, tc.payload)}
			if tc.stop {
				ps = append(ps, hook("stopper", phase.StepEnd, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
					out.StopRun("done", "")
					return nil
				}))
			}
			rt := newRuntime(t, []run.Option{run.WithAgents(run.Agent{ID: "a", MaxContinues: tc.max})}, ps...)
			rec := &event.Recorder{}
			m := turns(tc.turns...)
			res, err := rt.Run(context.Background(), run.Request{Agent: "a", Model: m, Events: rec, Tools: []plugin.Tool{newTool("echo", nil)}})
			if err != nil {
				t.Fatal(err)
			}
			if res.Termination != tc.wantTerm || res.Steps != tc.steps {
				t.Fatalf("termination %q after %d steps, want %q after %d", res.Termination, res.Steps, tc.wantTerm, tc.steps)
			}
			var cont, limit int
			for _, ev := range rec.Events() {
				switch e := ev.(type) {
				case event.RunContinued:
					cont++
					if e.Plugin != "reviewer" || e.Content != tc.payload["content"] || e.Role != tc.role {
						t.Errorf("run_continued %+v", e)
					}
				case event.ContinueLimit:
					limit++
					if e.Plugin != "reviewer" {
						t.Errorf("continue_limit %+v", e)
					}
				}
			}
			if cont != tc.cont || (limit == 1) != tc.limit || limit > 1 {
				t.Fatalf("%d run_continued, %d continue_limit; events %v", cont, limit, names(rec))
			}
			// Each continued step's request ends with the content.
			for i, req := range m.reqs[1:] {
				last := req.Messages[len(req.Messages)-1]
				if tc.turns[i].ToolCalls != nil {
					continue
				}
				if last.Content != tc.payload["content"] || last.Role != tc.role {
					t.Fatalf("request %d ends with %+v", i+2, last)
				}
			}
		})
	}
}

// TestContinueThroughTheSession is what a host driving phases sees: the
// step_end outcome carries the message and no termination, and the count
// survives a checkpoint and restore.
func TestContinueThroughTheSession(t *testing.T) {
	store := run.NewMemoryStore()
	rt := newRuntime(t, []run.Option{run.WithStore(store), run.WithAgents(run.Agent{ID: "a", MaxContinues: 1})},
		reviewer(phase.AfterInference, map[string]any{"content": "run the tests"}))
	ctx := context.Background()
	s, _, err := rt.Start(ctx, run.StartOptions{Agent: "a"})
	if err != nil {
		t.Fatal(err)
	}
	step := func(s *run.Session) run.Outcome {
		t.Helper()
		if _, err := s.StepStart(ctx); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.BeforeInference(ctx, model.Request{}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.AfterInference(ctx, text("done")); err != nil {
			t.Fatal(err)
		}
		o, err := s.StepEnd(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	o := step(s)
	want := []model.Message{{Role: model.RoleUser, Content: "run the tests"}}
	if o.Termination != "" || !slices.EqualFunc(o.Continued, want, func(a, b model.Message) bool { return a.Role == b.Role && a.Content == b.Content }) {
		t.Fatalf("outcome %+v", o)
	}
	if err := s.SaveRun(ctx); err != nil {
		t.Fatal(err)
	}
	s2, err := rt.Restore(ctx, s.RunID(), event.Discard{})
	if err != nil {
		t.Fatal(err)
	}
	if o := step(s2); o.Termination != "natural" || o.Continued != nil {
		t.Fatalf("after a restore, the bound of 1 must hold: %+v", o)
	}
}

// TestThreadKeepsRecentHistory: a thread keeps its last messages only
// (WithMaxHistory), never opening with a tool result whose call it lost.
func TestThreadKeepsRecentHistory(t *testing.T) {
	rt := newRuntime(t, []run.Option{run.WithMaxHistory(4)})
	ctx := context.Background()
	var rs []model.Response
	for range 5 {
		rs = append(rs, calls(call("echo", nil)))
	}
	rs = append(rs, text("done"))
	if _, err := rt.Run(ctx, run.Request{ThreadID: "th", Prompt: "go", Model: turns(rs...), Tools: []plugin.Tool{newTool("echo", nil)}}); err != nil {
		t.Fatal(err)
	}
	msgs, err := rt.ThreadMessages(ctx, "th")
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) == 0 || len(msgs) > 4 || msgs[0].Role == model.RoleTool || msgs[len(msgs)-1].Content != "done" {
		t.Fatalf("thread messages %+v", msgs)
	}
}

// TestThreadKeepsHistoryBytes: a thread keeps the last messages that fit
// in WithMaxHistorySize bytes, the last one whatever its size, and never
// opens with a tool result whose call it lost.
func TestThreadKeepsHistoryBytes(t *testing.T) {
	ctx := context.Background()
	big := strings.Repeat("x", 3000)
	for _, tc := range []struct {
		name     string
		size     int
		min, max int // messages kept
	}{
		{"room for two answers", 7000, 2, 3},
		{"room for less than one", 100, 1, 1},
		{"no bound", 0, 12, 12},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []run.Option{}
			if tc.size > 0 {
				opts = append(opts, run.WithMaxHistorySize(tc.size))
			}
			rt := newRuntime(t, opts)
			var rs []model.Response
			for range 5 {
				rs = append(rs, calls(call("echo", map[string]any{"text": big})))
			}
			rs = append(rs, text(big))
			if _, err := rt.Run(ctx, run.Request{ThreadID: "th", Prompt: "go", Model: turns(rs...), Tools: []plugin.Tool{newTool("echo", nil)}}); err != nil {
				t.Fatal(err)
			}
			msgs, err := rt.ThreadMessages(ctx, "th")
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) < tc.min || len(msgs) > tc.max || msgs[0].Role == model.RoleTool || msgs[len(msgs)-1].Content != big {
				roles := []string{}
				for _, m := range msgs {
					roles = append(roles, m.Role)
				}
				t.Fatalf("kept %d messages %v, want %d to %d ending with the answer", len(msgs), roles, tc.min, tc.max)
			}
		})
	}
}

// TestThreadKeepsLastResultWithItsCall: a run that ends on a tool result
// (max_steps after a step of calls) keeps that result and the message of
// its call however few bytes WithMaxHistorySize or messages WithMaxHistory
// allow, rather than cutting at the result and dropping it for opening
// the conversation.
func TestThreadKeepsLastResultWithItsCall(t *testing.T) {
	for _, bound := range []run.Option{run.WithMaxHistorySize(1000), run.WithMaxHistory(1)} {
		threadKeepsLastResultWithItsCall(t, bound)
	}
}

func threadKeepsLastResultWithItsCall(t *testing.T, bound run.Option) {
	t.Helper()
	ctx := context.Background()
	big := strings.Repeat("x", 3000)
	rt := newRuntime(t, []run.Option{run.WithAgents(run.Agent{ID: "default", MaxSteps: 1}), bound})
	res, err := rt.Run(ctx, run.Request{ThreadID: "th", Prompt: "go", Model: turns(calls(call("echo", map[string]any{"text": big}))),
		Tools: []plugin.Tool{newTool("echo", nil)}})
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := rt.ThreadMessages(ctx, "th")
	if err != nil {
		t.Fatal(err)
	}
	roles := []string{}
	for _, m := range msgs {
		roles = append(roles, m.Role)
	}
	if !slices.Equal(roles, []string{model.RoleAssistant, model.RoleTool}) {
		t.Fatalf("run ended %s; thread kept %v, want the call and its result", res.Termination, roles)
	}
}
