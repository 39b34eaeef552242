package run_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// __runtime.run names the run as plugins read it, as of the last phase
// that recorded it.
func TestRunRecord(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t, []run.Option{run.WithGeneration("g7")})
	s, _, err := rt.Start(ctx, run.StartOptions{ThreadID: "th", RunID: "r1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.StepStart(ctx); err != nil {
		t.Fatal(err)
	}
	v, _ := s.Snapshot().Lookup(run.KeyRun)
	want := map[string]any{"id": "r1", "thread_id": "th", "agent_id": "default", "status": "running",
		"step": float64(1), "termination": "", "generation": "g7"}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("__runtime.run = %#v, want %#v", v, want)
	}
}

// refuses is a sink that takes every event but one type.
type refuses struct {
	event.Recorder
	typ string
}

func (r *refuses) Wants(typ string) bool { return typ != r.typ }

// A sink that does not want an event does not get it (nor is it built).
func TestSelectiveSink(t *testing.T) {
	sink := &refuses{typ: event.InferenceComplete{}.Type()}
	rt := newRuntime(t, nil)
	if _, err := rt.Run(context.Background(), run.Request{Model: turns(text("hi")), Events: sink}); err != nil {
		t.Fatal(err)
	}
	var steps int
	for _, ev := range sink.Events() {
		switch ev.(type) {
		case event.InferenceComplete:
			t.Fatal("the sink got an event it does not want")
		case event.StepStart:
			steps++
		}
	}
	if steps != 1 {
		t.Fatalf("the other events: %d step starts, want 1", steps)
	}
}

// The tool events, which copy a call's data, are not built for a sink that
// does not want them, and reach one that does.
func TestSelectiveSinkToolEvents(t *testing.T) {
	types := []string{event.GateDecision{}.Type(), event.ToolCallStart{}.Type(), event.ToolCallDone{}.Type()}
	for _, refused := range append([]string{""}, types...) {
		sink := &refuses{typ: refused}
		rt := newRuntime(t, nil, gateFn("guard", func(in *plugin.Input) gate.Decision {
			if in.Tool.Call.Name == "rm" {
				return gate.Decision{Kind: gate.Block, Reason: "no rm"}
			}
			return gate.Decision{}
		}))
		// ls runs, rm is blocked and ends the run, cat after it is
		// interrupted: every way a call is done.
		m := turns(calls(call("ls", nil), call("rm", nil), call("cat", nil)))
		tools := []plugin.Tool{newTool("ls", nil), newTool("rm", nil), newTool("cat", nil)}
		if _, err := rt.Run(context.Background(), run.Request{Prompt: "go", Model: m, Tools: tools, Events: sink}); err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, ev := range sink.Events() {
			got[ev.Type()] = true
		}
		for _, typ := range types {
			if got[typ] == (typ == refused) {
				t.Errorf("refusing %q: got %s events = %v", refused, typ, got[typ])
			}
		}
	}
}

// EachCall and NumCalls see the step's calls as Calls does.
func TestEachCall(t *testing.T) {
	ctx := context.Background()
	rt := newRuntime(t, nil)
	s, _, err := rt.Start(ctx, run.StartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.StepStart(ctx)
	s.BeforeInference(ctx, model.Request{Tools: []model.ToolSpec{{Name: "a"}, {Name: "b"}}})
	if _, err := s.AfterInference(ctx, calls(call("a", nil), call("b", nil), call("a", map[string]any{"x": 1.0}))); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ToolGate(ctx, s.Calls()[1].Call); err != nil {
		t.Fatal(err)
	}
	var got []run.CallRecord
	for c := range s.EachCall() {
		got = append(got, c)
	}
	if want := s.Calls(); !reflect.DeepEqual(got, want) || s.NumCalls() != len(want) {
		t.Fatalf("EachCall = %+v, NumCalls = %d; Calls = %+v", got, s.NumCalls(), want)
	}
	n := 0
	for range s.EachCall() {
		n++
		break
	}
	if n != 1 {
		t.Fatalf("a loop that breaks went on: %d calls", n)
	}
}

// A session copies the responses and calls a host passes, unless the host
// hands them off (SetHandOff), when it keeps them as they are.
func TestHandOff(t *testing.T) {
	ctx := context.Background()
	for _, handOff := range []bool{false, true} {
		rt := newRuntime(t, nil)
		s, _, err := rt.Start(ctx, run.StartOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.SetHandOff(handOff)
		s.StepStart(ctx)
		s.BeforeInference(ctx, model.Request{Tools: []model.ToolSpec{{Name: "a"}}})
		inferred := map[string]any{"x": "as sent"}
		announced := map[string]any{"x": "as sent"}
		resp := calls(model.ToolCall{ID: "c1", Name: "a", Args: inferred}, model.ToolCall{Name: "a"})
		if _, err := s.AfterInference(ctx, resp); err != nil {
			t.Fatal(err)
		}
		if resp.ToolCalls[1].ID != "" {
			t.Errorf("HandOff %v: the session wrote the id it gave into the host's list: %q", handOff, resp.ToolCalls[1].ID)
		}
		if _, err := s.AnnounceCall(ctx, model.ToolCall{ID: "c2", Name: "a", Args: announced}); err != nil {
			t.Fatal(err)
		}
		if handOff {
			// A restored session hands off when told to (SetHandOff).
			r, err := rt.RestoreCheckpoint(ctx, s.Checkpoint(), nil)
			if err != nil {
				t.Fatal(err)
			}
			r.SetHandOff(true)
			restored := map[string]any{"x": "as sent"}
			if _, err := r.AnnounceCall(ctx, model.ToolCall{ID: "c3", Name: "a", Args: restored}); err != nil {
				t.Fatal(err)
			}
			restored["x"] = "changed"
			if c, _ := r.Call("c3"); c.Call.Args["x"] != "changed" {
				t.Errorf("a restored session set to hand off copied the call's args")
			}
		}
		inferred["x"], announced["x"] = "changed", "changed"
		for _, c := range s.Calls() {
			if c.Call.Args["x"] == nil {
				continue // the call without arguments
			}
			if shared := c.Call.Args["x"] == "changed"; shared != handOff {
				t.Errorf("HandOff %v: call %s args %v: shared with the host = %v", handOff, c.Call.ID, c.Call.Args, shared)
			}
		}
	}
}
