package replay_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/replay"
	"github.com/awaken-lua/awaken-lua/run"
)

// flakyStore fails the next PutRun when armed, as a disk or a database
// that is briefly unavailable does.
type flakyStore struct {
	*run.MemoryStore
	fail atomic.Bool
}

func (f *flakyStore) PutRun(ctx context.Context, cp run.Checkpoint) error {
	if f.fail.Swap(false) {
		return errors.New("store unavailable")
	}
	return f.MemoryStore.PutRun(ctx, cp)
}

func gateRuntime(t *testing.T, st run.Store, j run.Recorder) *run.Runtime {
	t.Helper()
	g := plugin.New("g", func(r *plugin.Registrar) error {
		return r.Gate(plugin.GateFunc(func(ctx context.Context, in *plugin.Input) (gate.Decision, error) {
			return gate.Decision{}, nil
		}), errs.Pos{})
	})
	set, err := run.NewSet(g)
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

// A sidecar whose checkpoint fails after a phase drops the run and, on the
// client's retry, restores it from the store and runs the phase again
// (server.settle): the journal holds that phase twice. Replaying it
// against the same plugins reports no flip.
func TestReplayAfterFailedCheckpoint(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	w, err := journal.Open(journal.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	st := &flakyStore{MemoryStore: run.NewMemoryStore()}
	rt := gateRuntime(t, st, w)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	s, _, err := rt.Start(ctx, run.StartOptions{ThreadID: "T", Messages: []model.Message{{Role: model.RoleUser, Content: "go"}}})
	must(err)
	must(s.SaveRun(ctx))
	_, err = s.StepStart(ctx)
	must(err)
	must(s.SaveRun(ctx))
	_, _, err = s.BeforeInference(ctx, model.Request{})
	must(err)
	must(s.SaveRun(ctx))
	resp := model.Response{Text: "done"}
	_, err = s.AfterInference(ctx, resp)
	must(err)
	st.fail.Store(true)
	if err := s.SaveRun(ctx); err == nil {
		t.Fatal("the save did not fail")
	}
	// The sidecar drops the run; the client's retry restores it as saved
	// and runs after_inference again.
	s, err = rt.Restore(ctx, s.RunID(), nil)
	must(err)
	_, err = s.AfterInference(ctx, resp)
	must(err)
	must(s.SaveRun(ctx))
	o, err := s.StepEnd(ctx)
	must(err)
	if o.Termination != "natural" {
		t.Fatalf("termination %q", o.Termination)
	}
	_, err = s.RunEnd(ctx)
	must(err)
	must(w.Close())

	rep, err := replay.Run(ctx, gateRuntime(t, run.NewMemoryStore(), nil), []string{dir}, replay.Options{})
	must(err)
	if len(rep.Flips) != 0 {
		t.Fatalf("replaying against the same plugins flips: %+v", rep.Flips)
	}
}
