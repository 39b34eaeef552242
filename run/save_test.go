package run_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
	"github.com/awaken-lua/awaken-lua/store/filestore"
)

func fileStore(t *testing.T, dir string) *filestore.Store {
	t.Helper()
	st, err := filestore.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// breakDir replaces a store directory with a file, so every write in it
// fails (for root too), and returns what puts it back.
func breakDir(t *testing.T, dir string) (fix func()) {
	t.Helper()
	if err := os.Rename(dir, dir+".away"); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return func() {
		t.Helper()
		if err := os.Remove(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(dir+".away", dir); err != nil {
			t.Fatal(err)
		}
	}
}

// counting declares a thread counter and a run counter and adds 1 to both
// in phase p.
func counting(p phase.Phase) []plugin.Plugin {
	add := func(name string, scope state.Scope) state.Spec {
		return state.Spec{Name: name, Scope: scope, Reducer: "add"}
	}
	return []plugin.Plugin{
		keys("k", add("c.thread", state.ScopeThread), add("c.run", state.ScopeRun)),
		hook("count", p, func(ctx context.Context, in *plugin.Input, out *command.Command) error {
			out.Update("c.thread", 1)
			out.Update("c.run", 1)
			return nil
		}),
	}
}

// toEnd drives a started run through one step that ends it naturally.
func toEnd(t *testing.T, s *run.Session) {
	t.Helper()
	ctx := context.Background()
	if s.Step() == 0 {
		if _, err := s.StepStart(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s.BeforeInference(ctx, model.Request{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AfterInference(ctx, model.Response{Text: "done"}); err != nil {
		t.Fatal(err)
	}
	if o, err := s.StepEnd(ctx); err != nil || o.Termination != "natural" {
		t.Fatalf("step_end: %+v %v", o, err)
	}
}

func threadValue(t *testing.T, st run.Store, id, key string) any {
	t.Helper()
	th, ok, err := st.Thread(context.Background(), id)
	if err != nil || !ok {
		t.Fatalf("thread %s: %v %v", id, ok, err)
	}
	return th.Values[key]
}

// A thread-scoped value written by a call that was checkpointed (and so
// acknowledged by a sidecar) is in the checkpoint: a run restored from it in
// another process has it, at the same revision, and its thread gets it.
func TestRestoredRunKeepsThreadValues(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := fileStore(t, dir)
	rt := newRuntime(t, []run.Option{run.WithStore(st)}, counting(phase.StepStart)...)
	s, _, err := rt.Start(ctx, run.StartOptions{ThreadID: "T"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.StepStart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.PutRun(ctx, s.Checkpoint()); err != nil {
		t.Fatal(err)
	}

	// Another process on the same directory.
	st2 := fileStore(t, dir)
	rt2 := newRuntime(t, []run.Option{run.WithStore(st2)}, counting(phase.StepStart)...)
	s2, err := rt2.Restore(ctx, s.RunID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := s2.State(); got["c.thread"] != 1.0 || got["c.run"] != 1.0 || s2.Revision() != s.Revision() {
		t.Fatalf("restored at revision %d (was %d): %v", s2.Revision(), s.Revision(), got)
	}
	toEnd(t, s2)
	if _, err := s2.RunEnd(ctx); err != nil {
		t.Fatal(err)
	}
	if v := threadValue(t, st2, "T", "c.thread"); v != 1.0 {
		t.Fatalf("the thread kept c.thread = %v, want 1", v)
	}
}

// run_end whose thread cannot be saved fails with a SaveError and changes
// nothing: the run is still ending, at the same revision and state, and
// run_end once the store writes again counts its hook once.
func TestRunEndSaveFailureChangesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := fileStore(t, dir)
	rt := newRuntime(t, []run.Option{run.WithStore(st)}, counting(phase.RunEnd)...)
	s, _, err := rt.Start(ctx, run.StartOptions{ThreadID: "T"})
	if err != nil {
		t.Fatal(err)
	}
	toEnd(t, s)
	rev, state := s.Revision(), s.State()

	fix := breakDir(t, filepath.Join(dir, "threads"))
	_, err = s.RunEnd(ctx)
	var se *run.SaveError
	if !errors.As(err, &se) {
		t.Fatalf("run_end with the thread unsaved: %v, want a SaveError", err)
	}
	if s.Status() != run.Running || s.Termination() != "natural" || s.Revision() != rev || !reflect.DeepEqual(s.State(), state) {
		t.Fatalf("a failed save changed the run: %s %q revision %d (was %d)\n%v\nwas\n%v",
			s.Status(), s.Termination(), s.Revision(), rev, s.State(), state)
	}
	fix()
	if _, err := s.RunEnd(ctx); err != nil || s.Status() != run.Done {
		t.Fatalf("run_end again: %v %s", err, s.Status())
	}
	if v := threadValue(t, st, "T", "c.thread"); v != 1.0 {
		t.Fatalf("c.thread = %v after one run_end that counts 1", v)
	}
}

// A finished run's thread is written before the run is forgotten: when
// forgetting fails (as when a crash stops run_end between the two writes),
// the thread already holds the run's values and does not wait, and the
// run's last checkpoint is still there, so run_end again (in this process,
// or after a restart from that checkpoint) ends it without counting twice.
func TestThreadIsSavedBeforeTheRunIsForgotten(t *testing.T) {
	for _, restart := range []bool{false, true} {
		name := "retry"
		if restart {
			name = "restart"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := t.TempDir()
			st := fileStore(t, dir)
			rt := newRuntime(t, []run.Option{run.WithStore(st)}, counting(phase.RunEnd)...)
			s, _, err := rt.Start(ctx, run.StartOptions{ThreadID: "T"})
			if err != nil {
				t.Fatal(err)
			}
			toEnd(t, s)
			if err := st.PutRun(ctx, s.Checkpoint()); err != nil { // a sidecar checkpoints every call
				t.Fatal(err)
			}
			runs := filepath.Join(dir, "runs")
			fix := breakDir(t, runs)
			_, err = s.RunEnd(ctx)
			var se *run.SaveError
			if !errors.As(err, &se) {
				t.Fatalf("run_end that cannot forget its run: %v, want a SaveError", err)
			}
			th, ok, err := st.Thread(ctx, "T")
			if err != nil || !ok || th.Values["c.thread"] != 1.0 || th.Waiting != "" || len(th.Messages) == 0 {
				t.Fatalf("the thread was not saved first: %+v %v %v", th, ok, err)
			}
			fix()
			if _, ok, err := st.Run(ctx, s.RunID()); err != nil || !ok {
				t.Fatalf("the run's checkpoint must stay until its thread is saved: %v %v", ok, err)
			}
			if restart {
				st = fileStore(t, dir)
				rt = newRuntime(t, []run.Option{run.WithStore(st)}, counting(phase.RunEnd)...)
				if s, err = rt.Restore(ctx, s.RunID(), nil); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := s.RunEnd(ctx); err != nil || s.Status() != run.Done {
				t.Fatalf("run_end again: %v %s", err, s.Status())
			}
			if v := threadValue(t, st, "T", "c.thread"); v != 1.0 {
				t.Fatalf("c.thread = %v after one run_end that counts 1", v)
			}
			if _, ok, err := st.Run(ctx, s.RunID()); err != nil || ok {
				t.Fatalf("the finished run is still saved: %v %v", ok, err)
			}
			if _, _, err := rt.Start(ctx, run.StartOptions{ThreadID: "T"}); err != nil {
				t.Fatalf("a new run on the thread: %v", err)
			}
		})
	}
}

// step_end that would make the run wait, with a thread that cannot be
// saved, changes nothing: the run is not waiting, not saved as waiting, and
// step_end once the store writes again makes it wait.
func TestWaitSaveFailureChangesNothing(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := fileStore(t, dir)
	rt := newRuntime(t, []run.Option{run.WithStore(st)}, approver("ask"))
	s, _, err := rt.Start(ctx, run.StartOptions{ThreadID: "T", Tools: []model.ToolSpec{{Name: "deploy"}}})
	if err != nil {
		t.Fatal(err)
	}
	deploy := model.ToolCall{ID: "d1", Name: "deploy", Args: map[string]any{}}
	if _, err := s.StepStart(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.BeforeInference(ctx, model.Request{Tools: []model.ToolSpec{{Name: "deploy"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AfterInference(ctx, model.Response{ToolCalls: []model.ToolCall{deploy}}); err != nil {
		t.Fatal(err)
	}
	if d, _, err := s.ToolGate(ctx, deploy); err != nil || d.Decision != gate.Suspend {
		t.Fatalf("gate: %+v %v", d, err)
	}
	rev := s.Revision()
	fix := breakDir(t, filepath.Join(dir, "threads"))
	_, err = s.StepEnd(ctx)
	var se *run.SaveError
	if !errors.As(err, &se) {
		t.Fatalf("step_end with the thread unsaved: %v, want a SaveError", err)
	}
	if s.Status() != run.Running || s.Termination() != "" || s.Revision() != rev || len(s.Suspended()) != 1 {
		t.Fatalf("a failed save changed the run: %s %q revision %d (was %d)", s.Status(), s.Termination(), s.Revision(), rev)
	}
	if _, ok, err := st.Run(ctx, s.RunID()); err != nil || ok {
		t.Fatalf("the run stayed saved as waiting on a thread that does not say so: %v %v", ok, err)
	}
	fix()
	if o, err := s.StepEnd(ctx); err != nil || o.Termination != "suspended" || s.Status() != run.Waiting {
		t.Fatalf("step_end again: %+v %v %s", o, err, s.Status())
	}
	th, _, err := st.Thread(ctx, "T")
	if err != nil || th.Waiting != s.RunID() {
		t.Fatalf("the thread does not name the waiting run: %+v %v", th, err)
	}
}

// A restored run saves its thread on the revision it built on, as it
// would have without the restore: when another run saved the thread
// meanwhile, run_end is revision_conflict, and the other run's values and
// conversation stay.
func TestRestoredRunDoesNotWriteOverANewerThread(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	st := fileStore(t, dir)
	rt := newRuntime(t, []run.Option{run.WithStore(st)}, counting(phase.StepStart)...)
	a, _, err := rt.Start(ctx, run.StartOptions{ThreadID: "T"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.StepStart(ctx); err != nil {
		t.Fatal(err)
	}
	if err := st.PutRun(ctx, a.Checkpoint()); err != nil {
		t.Fatal(err)
	}
	// Another process: a second run on the thread ends while the first
	// is only in the store.
	st2 := fileStore(t, dir)
	rt2 := newRuntime(t, []run.Option{run.WithStore(st2)}, counting(phase.StepStart)...)
	b, _, err := rt2.Start(ctx, run.StartOptions{RunID: "other", ThreadID: "T", Messages: []model.Message{{Role: model.RoleUser, Content: "b"}}})
	if err != nil {
		t.Fatal(err)
	}
	toEnd(t, b)
	if _, err := b.RunEnd(ctx); err != nil {
		t.Fatal(err)
	}
	saved, _, _ := st2.Thread(ctx, "T")

	a2, err := rt2.Restore(ctx, a.RunID(), nil)
	if err != nil {
		t.Fatal(err)
	}
	toEnd(t, a2)
	if _, err := a2.RunEnd(ctx); errs.CodeOf(err) != errs.RevisionConflict {
		t.Fatalf("run_end over a thread another run saved: %v, want revision_conflict", err)
	}
	if now, _, _ := st2.Thread(ctx, "T"); !reflect.DeepEqual(now, saved) {
		t.Fatalf("the thread changed:\n%+v\nwas\n%+v", now, saved)
	}
}

// A thread waiting on a run the store no longer has (its checkpoint was
// torn and set aside as corrupt, or deleted by hand) is not wedged: Start
// on it fails once with run_lost, naming the run and what was set aside,
// and releases the thread, so the next Start on it runs. A run the store
// still has, or cannot read now, keeps its thread waiting: a decision
// that may still be made is never dropped.
func TestStartReleasesAThreadWhoseWaitingRunIsLost(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// lose does something to the run's checkpoint file.
		lose         func(t *testing.T, path string)
		restoreFirst bool // a Restore of the run comes before the Start
		code         errs.Code
		msg          string // in the error
	}{
		{name: "torn checkpoint", lose: tear, code: errs.RunLost, msg: ".json.corrupt-"},
		{name: "torn checkpoint, restored first", lose: tear, restoreFirst: true, code: errs.RunLost, msg: ".json.corrupt-"},
		{name: "checkpoint deleted", lose: func(t *testing.T, path string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		}, code: errs.RunLost, msg: "no longer in the store"},
		{name: "run still saved", lose: func(*testing.T, string) {}, code: errs.InvalidTransition, msg: "resume it or cancel it"},
		{name: "checkpoint unreadable", lose: func(t *testing.T, path string) {
			// A directory in its place: reading it fails, which says
			// nothing about the run.
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			if err := os.Mkdir(path, 0o700); err != nil {
				t.Fatal(err)
			}
		}, msg: "is a directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			waiting := waitingRun(t, dir)
			tc.lose(t, filepath.Join(dir, "runs", waiting+".json"))
			// Another process: the sidecar restarted.
			st := fileStore(t, dir)
			rt := newRuntime(t, []run.Option{run.WithStore(st)}, append(counting(phase.StepStart), approver("ask"))...)
			if tc.restoreFirst {
				if _, err := rt.Restore(ctx, waiting, nil); errs.CodeOf(err) != errs.RunNotFound {
					t.Fatalf("restore: %v, want run_not_found", err)
				}
			}
			_, _, err := rt.Start(ctx, run.StartOptions{ThreadID: "T"})
			if err == nil || errs.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.msg) || !strings.Contains(err.Error(), waiting) {
				t.Fatalf("start on the thread: %v, want %q naming %s and %q", err, tc.code, waiting, tc.msg)
			}
			var le *run.LoadError
			if tc.code == "" && !errors.As(err, &le) {
				t.Fatalf("start with the run unreadable: %v, want a LoadError", err)
			}
			th, _, terr := st.Thread(ctx, "T")
			if terr != nil {
				t.Fatal(terr)
			}
			if tc.code != errs.RunLost {
				if th.Waiting != waiting {
					t.Fatalf("the thread no longer names its waiting run: %+v", th)
				}
				return
			}
			if th.Waiting != "" || th.Values["c.thread"] == nil {
				t.Fatalf("the thread was not released as it was: %+v", th)
			}
			s, _, err := rt.Start(ctx, run.StartOptions{ThreadID: "T"})
			if err != nil {
				t.Fatalf("start after the thread was released: %v", err)
			}
			toEnd(t, s)
			if _, err := s.RunEnd(ctx); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// waitingRun makes, in a file store in dir, a run on thread T that waits
// for a decision on a call, and returns its id.
func waitingRun(t *testing.T, dir string) string {
	t.Helper()
	ctx := context.Background()
	plugins := append(counting(phase.StepStart), approver("ask"))
	rt := newRuntime(t, []run.Option{run.WithStore(fileStore(t, dir))}, plugins...)
	s, _, err := rt.Start(ctx, run.StartOptions{ThreadID: "T"})
	if err != nil {
		t.Fatal(err)
	}
	deploy := model.ToolCall{ID: "d1", Name: "deploy", Args: map[string]any{}}
	if _, err := s.StepStart(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.BeforeInference(ctx, model.Request{Tools: []model.ToolSpec{{Name: "deploy"}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.AfterInference(ctx, model.Response{ToolCalls: []model.ToolCall{deploy}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.ToolGate(ctx, deploy); err != nil {
		t.Fatal(err)
	}
	if _, err := s.StepEnd(ctx); err != nil || s.Status() != run.Waiting {
		t.Fatalf("step_end: %v %s", err, s.Status())
	}
	return s.RunID()
}

// tear cuts a file in half, as a disk error or a bad edit might.
func tear(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
}
