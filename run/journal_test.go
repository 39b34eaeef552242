package run_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// A run's end record is its last, whichever way the run ends: a reader
// that forgets a run at its end (replay) must not miss the record of the
// phase that ended it (run_end, cancel, a failed phase).
func TestJournalEndIsTheRunsLastRecord(t *testing.T) {
	ctx := context.Background()
	broken := func(id string, p phase.Phase) plugin.Plugin {
		return hook(id, p, func(context.Context, *plugin.Input, *command.Command) error { return errors.New("broken") })
	}
	// A suspend the runtime cannot take fails the run (a gate's own error
	// is a block).
	failingGate := gateFn("gate", func(*plugin.Input) gate.Decision {
		return gate.Decision{Kind: gate.Suspend, Ticket: &gate.Ticket{ResumeMode: "sideways"}}
	})
	sh := model.ToolCall{ID: "c1", Name: "sh", Args: map[string]any{}}
	for _, tc := range []struct {
		name    string
		plugins []plugin.Plugin
		drive   func(t *testing.T, rt *run.Runtime)
		before  string // the phase recorded just before the end; "": any
		term    string
	}{
		{"natural", nil, nil, journal.RunEnd, "natural"},
		{"run_end fails", []plugin.Plugin{broken("b", phase.RunEnd)}, nil, journal.RunEnd, "error:hook_failed"},
		{"step_start fails", []plugin.Plugin{broken("b", phase.StepStart)}, nil, journal.StepStart, "error:hook_failed"},
		{"run_start fails", []plugin.Plugin{broken("b", phase.RunStart)}, nil, journal.RunStart, "error:hook_failed"},
		{"the loop's gate fails", []plugin.Plugin{failingGate}, func(t *testing.T, rt *run.Runtime) {
			rt.Run(ctx, run.Request{Model: turns(calls(call("sh", nil))), Tools: []plugin.Tool{newTool("sh", nil)}})
		}, "", "error:hook_failed"},
		{"a host's gate fails", []plugin.Plugin{failingGate}, func(t *testing.T, rt *run.Runtime) {
			s, _, err := rt.Start(ctx, run.StartOptions{Tools: []model.ToolSpec{{Name: "sh"}}})
			if err != nil {
				t.Fatal(err)
			}
			s.StepStart(ctx)
			s.BeforeInference(ctx, model.Request{Tools: s.HostTools()})
			s.AfterInference(ctx, model.Response{ToolCalls: []model.ToolCall{sh}})
			if _, _, err := s.ToolGate(ctx, sh); err == nil {
				t.Fatal("the gate did not fail")
			}
		}, "", "error:hook_failed"},
		{"cancel", []plugin.Plugin{approver("ask")}, func(t *testing.T, rt *run.Runtime) {
			res, _ := rt.Run(ctx, run.Request{Model: turns(calls(call("deploy", nil))), Tools: []plugin.Tool{newTool("deploy", nil)}})
			if _, err := res.Session.Cancel(ctx, "not today"); err != nil {
				t.Fatal(err)
			}
		}, journal.Cancel, "cancelled"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &records{}
			rt := newRuntime(t, []run.Option{run.WithJournal(j, "h")}, tc.plugins...)
			if tc.drive == nil {
				rt.Run(ctx, run.Request{Model: turns(text("done"))})
			} else {
				tc.drive(t, rt)
			}
			recs := j.recs
			if len(recs) < 3 || recs[0].Rec != journal.KindRun {
				t.Fatalf("records: %+v", recs)
			}
			for i, r := range recs {
				if r.RunID != recs[0].RunID {
					t.Fatalf("record %d of another run: %+v", i, r)
				}
				if r.Rec == journal.KindEnd && i != len(recs)-1 {
					t.Fatalf("the end is record %d of %d; after it: %+v", i+1, len(recs), recs[i+1])
				}
			}
			end, before := recs[len(recs)-1], recs[len(recs)-2]
			if end.Rec != journal.KindEnd || end.Termination != tc.term {
				t.Fatalf("the last record: %+v", end)
			}
			if tc.before != "" && (before.Rec != journal.KindPhase || before.Phase != tc.before) {
				t.Fatalf("the record before the end: %+v", before)
			}
		})
	}
}

// threadsDown is a store whose threads cannot be saved while down is set.
type threadsDown struct {
	run.Store
	down atomic.Bool
}

func (b *threadsDown) PutThread(ctx context.Context, t run.Thread) (uint64, error) {
	if b.down.Load() {
		return 0, errors.New("disk full")
	}
	return b.Store.PutThread(ctx, t)
}

// A run that fails while its thread cannot be saved is done all the same
// (nothing retries it), so its end record is written.
func TestJournalEndOfAFailedRunWhoseSaveFailed(t *testing.T) {
	ctx := context.Background()
	st := &threadsDown{Store: run.NewMemoryStore()}
	j := &records{}
	broken := hook("b", phase.StepStart, func(context.Context, *plugin.Input, *command.Command) error { return errors.New("broken") })
	rt := newRuntime(t, []run.Option{run.WithJournal(j, "h"), run.WithStore(st)}, broken)
	st.down.Store(true)
	res, _ := rt.Run(ctx, run.Request{Model: turns(text("done"))})
	if res.Status != run.Done {
		t.Fatalf("status %s, want done", res.Status)
	}
	if n := countEnds(j); n != 1 {
		t.Fatalf("%d end records, want 1: %+v", n, j.recs)
	}
}

// panicOnFinish is an event sink that panics when the run finishes.
type panicOnFinish struct{}

func (panicOnFinish) Emit(ev event.Event) {
	if _, ok := ev.(event.RunFinish); ok {
		panic("the sink broke")
	}
}

// A panic after the run was saved done (an event sink's, which a host
// recovers as the sidecar does) does not lose its end record.
func TestJournalEndSurvivesAPanickingSink(t *testing.T) {
	ctx := context.Background()
	j := &records{}
	rt := newRuntime(t, []run.Option{run.WithJournal(j, "h")})
	s, _, err := rt.Start(ctx, run.StartOptions{Events: panicOnFinish{}})
	if err != nil {
		t.Fatal(err)
	}
	s.StepStart(ctx)
	s.BeforeInference(ctx, model.Request{})
	s.AfterInference(ctx, model.Response{Text: "done"})
	s.StepEnd(ctx)
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the sink did not panic")
			}
		}()
		s.RunEnd(ctx)
	}()
	if s.Status() != run.Done {
		t.Fatalf("status %s, want done", s.Status())
	}
	if n := countEnds(j); n != 1 {
		t.Fatalf("%d end records, want 1: %+v", n, j.recs)
	}
}

func countEnds(j *records) int {
	n := 0
	for _, r := range j.recs {
		if r.Rec == journal.KindEnd {
			n++
		}
	}
	return n
}
