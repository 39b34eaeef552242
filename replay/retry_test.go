package replay_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

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

// recording is a runtime over a store whose saves can be made to fail,
// journaling into a directory of its own.
func recording(t *testing.T, clocked bool) (string, *journal.Writer, *flakyStore, *run.Runtime) {
	t.Helper()
	dir := t.TempDir()
	w, err := journal.Open(journal.Options{Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	st := &flakyStore{MemoryStore: run.NewMemoryStore()}
	return dir, w, st, clockRuntime(t, st, w, clocked)
}

// A sidecar whose checkpoint fails after a phase drops the run and, on the
// client's retry, restores it from the store and runs the phase again
// (server.settle): the journal holds that phase twice. Replaying it
// against the same plugins reports no flip.
func TestReplayAfterFailedCheckpoint(t *testing.T) {
	ctx := context.Background()
	dir, w, st, rt := recording(t, false)
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

	rep, err := replay.Run(ctx, clockRuntime(t, run.NewMemoryStore(), nil, false), []string{dir}, replay.Options{})
	must(err)
	if len(rep.Flips) != 0 {
		t.Fatalf("replaying against the same plugins flips: %+v", rep.Flips)
	}
}
