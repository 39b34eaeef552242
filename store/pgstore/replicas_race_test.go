package pgstore_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

func approvingRuntime(t *testing.T, st run.Store) *run.Runtime {
	t.Helper()
	approver := plugin.New("approver", func(r *plugin.Registrar) error {
		return r.Gate(plugin.GateFunc(func(ctx context.Context, in *plugin.Input) (gate.Decision, error) {
			if in.Tool.Call.Name != "deploy" || in.Tool.Resume != nil {
				return gate.Decision{}, nil
			}
			return gate.Decision{Kind: gate.Suspend, Ticket: &gate.Ticket{ID: "t-" + in.Tool.Call.ID, Message: "deploy?",
				Timeout: time.Millisecond}}, nil
		}), errs.Pos{})
	})
	set, err := run.NewSet(approver)
	if err != nil {
		t.Fatal(err)
	}
	rt, err := run.New(engine.New(set), run.WithStore(st))
	if err != nil {
		t.Fatal(err)
	}
	return rt
}

// A step_end that makes the run wait, whose thread save loses a revision
// race to another replica, leaves the run stored as it was (running):
// the take-back is written as the next save, which PostgreSQL's compare
// of save counts takes, so no janitor settles a wait nobody was told of.
func TestWaitTakeBackOnPostgres(t *testing.T) {
	t.Run("memory", func(t *testing.T) { waitTakeBack(t, run.NewMemoryStore()) })
	t.Run("postgres", func(t *testing.T) { waitTakeBack(t, open(t)) })
}

func waitTakeBack(t *testing.T, st run.Store) {
	ctx := context.Background()
	s := suspendedDeploy(t, approvingRuntime(t, st))
	// The server checkpoints after every call (settle -> SaveRun).
	if err := s.SaveRun(ctx); err != nil {
		t.Fatal(err)
	}
	// Another replica's run saves thread T meanwhile.
	th, _, _ := st.Thread(ctx, "T")
	th.ID = "T"
	if _, err := st.PutThread(ctx, th); err != nil {
		t.Fatal(err)
	}
	_, err := s.StepEnd(ctx)
	var se *run.SaveError
	if !errors.As(err, &se) {
		t.Fatalf("step_end: %v, want a SaveError", err)
	}
	cp, ok, err := st.Run(ctx, s.RunID())
	if err != nil || !ok {
		t.Fatalf("run: %v %v", ok, err)
	}
	var ids []string
	if cl, ok := st.(run.ExpiryClaimer); ok {
		ids, _ = cl.ClaimExpired(ctx, time.Now().Add(time.Second), time.Minute, 10)
	}
	if cp.Status == run.Waiting || len(ids) != 0 {
		t.Errorf("a failed step_end left the run saved as %s (seq %d) on a thread that does not name it; session says %s; janitor claims %v",
			cp.Status, cp.Seq, s.Status(), ids)
	}
	// The session goes on from the take-back: its next save is accepted.
	if err := s.SaveRun(ctx); err != nil {
		t.Fatalf("the save after the take-back: %v", err)
	}
}

// suspendedDeploy starts a run on thread T whose model calls deploy (id
// d1), and gates the call: the approving runtime suspends it.
func suspendedDeploy(t *testing.T, rt *run.Runtime) *run.Session {
	t.Helper()
	ctx := context.Background()
	s, _, err := rt.Start(ctx, run.StartOptions{ThreadID: "T", Tools: []model.ToolSpec{{Name: "deploy"}}})
	if err != nil {
		t.Fatal(err)
	}
	deploy := model.ToolCall{ID: "d1", Name: "deploy", Args: map[string]any{}}
	s.StepStart(ctx)
	s.BeforeInference(ctx, model.Request{Tools: []model.ToolSpec{{Name: "deploy"}}})
	s.AfterInference(ctx, model.Response{ToolCalls: []model.ToolCall{deploy}})
	if d, _, err := s.ToolGate(ctx, deploy); err != nil || d.Decision != gate.Suspend {
		t.Fatalf("gate: %+v %v", d, err)
	}
	return s
}

// Two replicas hold one waiting run at save N: B saves an approval (save
// N+1), then A cancels from save N. Ending the run is one transaction
// that checks the run's save count, so A's cancel is revision_conflict
// and B's approval stays.
func TestRunEndLosesToAConcurrentSave(t *testing.T) {
	st, ctx := open(t), context.Background()
	rtA, rtB := approvingRuntime(t, st), approvingRuntime(t, st)
	s := suspendedDeploy(t, rtA)
	if _, err := s.StepEnd(ctx); err != nil || s.Status() != run.Waiting {
		t.Fatalf("step_end: %v %s", err, s.Status())
	}
	cp, _, _ := st.Run(ctx, s.RunID())
	// Replica A and replica B both hold the waiting run at save cp.Seq
	// (each passed its RunSeq refresh).
	a, err := rtA.RestoreCheckpoint(ctx, cp, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := rtB.RestoreCheckpoint(ctx, cp, nil)
	if err != nil {
		t.Fatal(err)
	}
	// B: a human approves (POST resume), saved as the server's settle does.
	_, _, errB := b.Resume(ctx, []run.ResumeDecision{{Target: "d1", Action: "resume"}})
	if errB == nil {
		errB = b.SaveRun(ctx)
	}
	// A: another client cancels (DELETE /v1/runs/{id}).
	_, errA := a.Cancel(ctx, "user")
	_, stored, _ := st.Run(ctx, s.RunID())
	th, _, _ := st.Thread(ctx, "T")
	t.Logf("B resume+save: %v; A cancel: %v; run stored: %v; thread waiting %q", errB, errA, stored, th.Waiting)
	if errB != nil || errs.CodeOf(errA) != errs.RevisionConflict || !stored || th.Waiting != s.RunID() {
		t.Errorf("B's approval: %v; A's cancel: %v (want revision_conflict); run stored %v, thread waiting on %q",
			errB, errA, stored, th.Waiting)
	}
}

// A run that becomes waiting through a delta is indexed by the delta's
// next expiry, so a janitor claims it once its approval has expired.
func TestAppendRunKeepsNextExpiry(t *testing.T) {
	st, ctx := open(t), context.Background()
	cp := run.Checkpoint{RunID: "r", ThreadID: "t", Status: run.Running, Stage: run.StageInferred, Seq: 1, Values: map[string]any{}}
	if err := st.PutRun(ctx, cp); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(-time.Minute)
	rec := run.CallRecord{Call: model.ToolCall{ID: "c1", Name: "deploy"}, Status: run.CallSuspended,
		Gate: &run.GateRecord{Ticket: &gate.Ticket{ID: "t1", ExpiresAt: at}}}
	d := run.Delta{RunID: "r", Base: 1, Status: run.Waiting, Stage: run.StageInferred, CallCount: 1,
		Calls: []run.CallChange{{Index: 0, Record: rec}}, NextExpiry: at}
	if err := st.AppendRun(ctx, d); err != nil {
		t.Fatal(err)
	}
	got, _, _ := st.Run(ctx, "r")
	ids, _ := st.ClaimExpired(ctx, time.Now(), time.Minute, 10)
	if got.NextExpiry().IsZero() || len(ids) != 1 {
		t.Errorf("a run waiting with an approval expired at %v: claimed %v", got.NextExpiry(), ids)
	}
}

// Age-out removes whole streams: a stream still written, whose first
// lines are old, stays whole and verifies (removing its head would make
// verify call it tampered); a stream whose last line is old goes.
func TestAgeOutKeepsStreamsWhole(t *testing.T) {
	st, ctx := open(t), context.Background()
	write := func() {
		w, err := journal.Open(journal.Options{Sink: st})
		if err != nil {
			t.Fatal(err)
		}
		w.Record(&journal.Record{Rec: journal.KindRun, Format: journal.Format, RunID: "a"})
		w.Record(&journal.Record{Rec: journal.KindRun, Format: journal.Format, RunID: "b"})
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write() // an old stream: both lines 40 days old
	if _, err := st.Exec(ctx, `UPDATE awaken_journal SET created_at = now() - interval '40 days'`); err != nil {
		t.Fatal(err)
	}
	write() // a stream still written: its first line 40 days old
	if _, err := st.Exec(ctx, `UPDATE awaken_journal SET created_at = now() - interval '40 days'
		WHERE seq = (SELECT min(seq) FROM awaken_journal WHERE created_at > now() - interval '1 day')`); err != nil {
		t.Fatal(err)
	}
	if err := st.AgeOut(ctx, time.Now().Add(-30*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	n, err := journal.VerifyLines(func(y func(journal.Line) error) error { return st.JournalLines(ctx, time.Time{}, y) })
	if err != nil || n != 2 {
		t.Fatalf("after age-out: %d lines verified, %v; want the newer stream's 2", n, err)
	}
}

// A claim on an expired approval holds for its lease on the database's
// clock: a replica whose clock runs ten minutes ahead does not take it,
// and one whose clock lags 30 s behind takes a claim whose lease is over
// (timed by the callers' clocks, the first would and the second would
// not).
func TestClaimExpiredLeaseOnDatabaseClock(t *testing.T) {
	st, ctx := open(t), context.Background()
	waiting := func(id string) {
		t.Helper()
		rec := run.CallRecord{Call: model.ToolCall{ID: "c1", Name: "deploy"}, Status: run.CallSuspended,
			Gate: &run.GateRecord{Ticket: &gate.Ticket{ID: "t1", ExpiresAt: time.Now().Add(-time.Minute)}}}
		cp := run.Checkpoint{RunID: id, ThreadID: "t-" + id, Status: run.Waiting, Stage: run.StageInferred, Seq: 1,
			Values: map[string]any{}, Calls: []run.CallRecord{rec}}
		if err := st.PutRun(ctx, cp); err != nil {
			t.Fatal(err)
		}
	}
	claim := func(now time.Time, lease time.Duration) []string {
		t.Helper()
		ids, err := st.ClaimExpired(ctx, now, lease, 10)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	waiting("r1")
	if ids := claim(time.Now(), time.Minute); len(ids) != 1 {
		t.Fatalf("first claim: %v, want [r1]", ids)
	}
	if ids := claim(time.Now().Add(10*time.Minute), time.Minute); len(ids) != 0 {
		t.Errorf("a replica ten minutes ahead took a claim held for a minute: %v", ids)
	}
	waiting("r2")
	if ids := claim(time.Now(), 50*time.Millisecond); len(ids) != 1 || ids[0] != "r2" {
		t.Fatalf("claim of r2: %v", ids)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(claim(time.Now().Add(-30*time.Second), time.Minute)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a replica 30 s behind never took a claim whose 50 ms lease ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A run that another replica deleted (DELETE /v1/runs/{id} on a running
// run) cannot then be ended from a copy loaded before: both would have
// won, the DELETE answered 204 and the run's end written its thread.
// The run not being stored is a conflict once it was saved; a run never
// saved still ends.
func TestRunEndLosesToAConcurrentDelete(t *testing.T) {
	st, ctx := open(t), context.Background()
	rev, err := st.PutThread(ctx, run.Thread{ID: "T"})
	if err != nil {
		t.Fatal(err)
	}
	cp := run.Checkpoint{RunID: "r", ThreadID: "T", Status: run.Running, Stage: run.StageInferred, Seq: 1, Values: map[string]any{}}
	if err := st.PutRun(ctx, cp); err != nil {
		t.Fatal(err)
	}
	if err := st.DeleteRun(ctx, "r"); err != nil { // replica B
		t.Fatal(err)
	}
	_, err = st.FinishRun(ctx, run.Thread{ID: "T", Revision: rev}, "r", 1) // replica A
	if errs.CodeOf(err) != errs.RevisionConflict {
		t.Fatalf("ending a run another replica deleted: %v, want revision_conflict", err)
	}
	if th, _, _ := st.Thread(ctx, "T"); th.Revision != rev {
		t.Fatalf("the thread was written (revision %d, was %d)", th.Revision, rev)
	}
	if _, err := st.FinishRun(ctx, run.Thread{ID: "T", Revision: rev}, "never_saved", 0); err != nil {
		t.Fatalf("ending a run never saved: %v", err)
	}
}
