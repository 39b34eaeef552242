package run

import (
	"context"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/model"
)

// A compacted done run keeps its state as bytes the collector does not
// trace, and neither its engine nor its state store (each a graph of
// objects it would trace on every cycle, for as long as the host keeps
// the run readable). (Every value reaches the state canonical, so the
// body form takes them all; Compact keeps the store of a state it could
// not, as the memory store keeps a copy of such a thread.)
func TestCompactDropsTheStoreOfADoneRun(t *testing.T) {
	for _, tc := range []struct {
		name   string
		data   any
		frozen bool
	}{
		{"a result with data", map[string]any{"n": 2.0, "l": []any{"a", true, nil}}, true},
		{"a Go int in a result, normalized", 5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, err := NewSet()
			if err != nil {
				t.Fatal(err)
			}
			rt, err := New(engine.New(set))
			if err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			s, _, err := rt.Start(ctx, StartOptions{Messages: []model.Message{{Role: model.RoleUser, Content: "go"}}})
			if err != nil {
				t.Fatal(err)
			}
			steps := []func() error{
				func() error { _, err := s.StepStart(ctx); return err },
				func() error {
					_, _, err := s.BeforeInference(ctx, model.Request{Tools: []model.ToolSpec{{Name: "ls"}}})
					return err
				},
				func() error {
					_, err := s.AfterInference(ctx, model.Response{ToolCalls: []model.ToolCall{{ID: "c1", Name: "ls", Args: map[string]any{}}}})
					return err
				},
				func() error { _, _, err := s.ToolGate(ctx, model.ToolCall{ID: "c1", Name: "ls"}); return err },
				func() error { _, err := s.BeforeToolExecute(ctx, model.ToolCall{ID: "c1"}); return err },
				func() error {
					_, _, err := s.AfterToolExecute(ctx, model.ToolCall{ID: "c1"}, model.ToolResult{Status: model.StatusSuccess, Data: tc.data})
					return err
				},
				func() error {
					s.Terminate(Termination{Kind: Stopped, Detail: "test"})
					_, err := s.RunEnd(ctx)
					return err
				},
			}
			for i, step := range steps {
				if err := step(); err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
			}
			if s.Status() != Done {
				t.Fatalf("status %s", s.Status())
			}
			before, rev := s.State(), s.Revision()
			if _, ok := before["__runtime.tool_calls"]; !ok {
				t.Fatalf("the done run's state lacks its last step's calls: %v", before)
			}
			s.Compact()
			if frozen := s.store == nil && s.x == nil && len(s.frozen) > 0; frozen != tc.frozen {
				t.Fatalf("frozen %v, want %v (store %v, engine %v, %d bytes)", frozen, tc.frozen, s.store != nil, s.x != nil, len(s.frozen))
			}
			if s.Revision() != rev || len(s.State()) != len(before) {
				t.Fatalf("after compacting: revision %d (want %d), state %v (want %v)", s.Revision(), rev, s.State(), before)
			}
		})
	}
}
