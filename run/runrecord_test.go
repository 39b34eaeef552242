package run_test

import (
	"context"
	"reflect"
	"testing"

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
