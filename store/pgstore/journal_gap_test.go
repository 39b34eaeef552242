package pgstore_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/store/pgstore"
)

// refuseJournal makes the database refuse journal writes while the table
// awaken_test_refuse has a row, as a full disk does (SQLSTATE 53100).
func refuseJournal(t *testing.T, st *pgstore.Store) (refuse, accept func()) {
	t.Helper()
	ctx := context.Background()
	for _, sql := range []string{
		`CREATE TABLE awaken_test_refuse (x int)`,
		`CREATE FUNCTION awaken_test_refuse() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF EXISTS (SELECT 1 FROM awaken_test_refuse) THEN
				RAISE EXCEPTION 'could not extend file: No space left on device' USING ERRCODE = '53100';
			END IF;
			RETURN NEW;
		END $$`,
		`CREATE TRIGGER awaken_test_refuse BEFORE INSERT ON awaken_journal FOR EACH ROW EXECUTE FUNCTION awaken_test_refuse()`,
	} {
		if _, err := st.Exec(ctx, sql); err != nil {
			t.Fatal(err)
		}
	}
	exec := func(sql string) func() {
		return func() {
			t.Helper()
			if _, err := st.Exec(ctx, sql); err != nil {
				t.Fatal(err)
			}
		}
	}
	return exec(`INSERT INTO awaken_test_refuse VALUES (1)`), exec(`DELETE FROM awaken_test_refuse`)
}

// gapWriter opens a journal writer on st with a clock the test moves (a
// refused batch is retried once the clock passes its backoff), and rows
// counts the journal's rows.
func gapWriter(t *testing.T, st *pgstore.Store) (clock *atomic.Int64, w *journal.Writer, rows func() int64) {
	t.Helper()
	clock = new(atomic.Int64)
	clock.Store(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixNano())
	now := func() time.Time { return time.Unix(0, clock.Load()) }
	w, err := journal.Open(journal.Options{Sink: st, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	rows = func() int64 {
		n, err := st.Exec(context.Background(), `SELECT 1 FROM awaken_journal`)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	return clock, w, rows
}

// readBack reads the journal st keeps: each run's records as rec:phase,
// and the problems the reader found.
func readBack(t *testing.T, st *pgstore.Store) (map[string][]string, []journal.Problem) {
	t.Helper()
	got := map[string][]string{}
	problems, err := journal.Lines(journalOf(st))(func(_ journal.Pos, r *journal.Record) error {
		got[r.RunID] = append(got[r.RunID], r.Rec+":"+r.Phase)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, problems
}

// journalOf is the journal st keeps, line by line.
func journalOf(st *pgstore.Store) func(func(journal.Line) error) error {
	return func(y func(journal.Line) error) error { return st.JournalLines(context.Background(), time.Time{}, y) }
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A batch the database refuses loses records of the runs in flight; the
// writer goes on in a new stream. A reader must see the loss and leave
// out those runs from their first lost record (replayed with a phase
// missing, a run shows flips the candidate did not make), and only those.
func TestJournalLostBatchLeavesRunsOut(t *testing.T) {
	st := open(t)
	refuse, accept := refuseJournal(t, st)
	clock, w, rows := gapWriter(t, st)
	header := func(id string) *journal.Record {
		return &journal.Record{Rec: journal.KindRun, Format: journal.Format, RunID: id, Agent: "a"}
	}
	phase := func(id string, save uint64, p string) *journal.Record {
		return &journal.Record{Rec: journal.KindPhase, RunID: id, Save: save, Phase: p, Step: 1}
	}
	w.Record(header("a"))
	w.Record(phase("a", 1, journal.RunStart))
	w.Record(header("b"))
	w.Record(phase("b", 1, journal.RunStart))
	waitFor(t, "the first batch", func() bool { return rows() == 4 })

	refuse()
	w.Record(phase("a", 2, journal.StepStart)) // refused: lost
	waitFor(t, "the refused batch", func() bool { return w.Lost() == 1 })
	accept()
	clock.Add(int64(time.Minute)) // the retry is due

	w.Record(phase("a", 3, journal.BeforeInference))
	w.Record(&journal.Record{Rec: journal.KindEnd, RunID: "a", Termination: "natural"})
	w.Record(phase("b", 2, journal.StepStart))
	w.Record(&journal.Record{Rec: journal.KindEnd, RunID: "b", Termination: "natural"})
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "1 records lost") {
		t.Fatalf("close: %v, want the lost record counted", err)
	}

	if _, err := journal.VerifyLines(journalOf(st)); err != nil {
		t.Fatalf("verify: %v", err)
	}
	got, problems := readBack(t, st)
	if a := strings.Join(got["a"], " "); a != "run: phase:run_start" {
		t.Errorf("run a, which lost a phase: read %q, want its records up to the lost one", a)
	}
	if b := strings.Join(got["b"], " "); b != "run: phase:run_start phase:step_start end:" {
		t.Errorf("run b, which lost nothing: read %q", b)
	}
	if len(got) != 2 {
		t.Errorf("records of other runs: %v", got)
	}
	if len(problems) != 1 || problems[0].RunID != "a" || !strings.Contains(problems[0].Msg, "left out") {
		t.Errorf("problems %v, want one about run a", problems)
	}
}

// A run goes on on another replica after its first replica lost one of
// its records; that replica writes nothing more but closes: the marker
// it writes at close still names the run, whose later records (the
// other replica's) are left out.
func TestJournalLostRecordOtherReplica(t *testing.T) {
	st, ctx := open(t), context.Background()
	refuse, accept := refuseJournal(t, st)
	w1, err := journal.Open(journal.Options{Sink: st})
	if err != nil {
		t.Fatal(err)
	}
	w2, err := journal.Open(journal.Options{Sink: st})
	if err != nil {
		t.Fatal(err)
	}
	w1.Record(&journal.Record{Rec: journal.KindRun, Format: journal.Format, RunID: "a"})
	w1.Record(&journal.Record{Rec: journal.KindPhase, RunID: "a", Save: 1, Phase: journal.RunStart})
	waitFor(t, "the first batch", func() bool {
		n, err := st.Exec(ctx, `SELECT 1 FROM awaken_journal`)
		return err == nil && n == 2
	})
	refuse()
	w1.Record(&journal.Record{Rec: journal.KindPhase, RunID: "a", Save: 2, Phase: journal.StepStart})
	waitFor(t, "the refused batch", func() bool { return w1.Lost() == 1 })
	accept()
	w2.Record(&journal.Record{Rec: journal.KindPhase, RunID: "a", Save: 3, Phase: journal.BeforeInference})
	w2.Record(&journal.Record{Rec: journal.KindEnd, RunID: "a", Termination: "natural"})
	if err := w2.Close(); err != nil {
		t.Fatal(err)
	}
	w1.Close()
	got, problems := readBack(t, st)
	if g := strings.Join(got["a"], " "); g != "run: phase:run_start" || len(problems) != 1 || problems[0].RunID != "a" {
		t.Errorf("read %q, problems %v; want run a up to its lost record, and a problem", g, problems)
	}
}

// A shadow record (a candidate's disagreement, which replay does not
// drive) that a refused batch lost takes nothing from its run: the
// marker must not name the run, whose phases were all written (a shadow
// record carries no save, and named as lost it would cut the run from
// its first phase).
func TestJournalLostShadowRecordKeepsItsRun(t *testing.T) {
	st := open(t)
	refuse, accept := refuseJournal(t, st)
	clock, w, rows := gapWriter(t, st)
	w.Record(&journal.Record{Rec: journal.KindRun, Format: journal.Format, RunID: "a", Agent: "a"})
	w.Record(&journal.Record{Rec: journal.KindPhase, RunID: "a", Save: 1, Phase: journal.RunStart, Step: 1})
	waitFor(t, "the first batch", func() bool { return rows() == 2 })

	refuse()
	w.Record(&journal.Record{Rec: journal.KindShadow, RunID: "a", Phase: journal.RunStart, Step: 1,
		Shadow: &journal.Flip{Kind: "allow->block", From: "allow", To: "block"}})
	waitFor(t, "the refused batch", func() bool { return w.Lost() == 1 })
	accept()
	clock.Add(int64(time.Minute)) // the retry is due

	w.Record(&journal.Record{Rec: journal.KindPhase, RunID: "a", Save: 2, Phase: journal.StepStart, Step: 1})
	w.Record(&journal.Record{Rec: journal.KindEnd, RunID: "a", Termination: "natural"})
	w.Close()

	got, problems := readBack(t, st)
	if g := strings.Join(got["a"], " "); g != "run: phase:run_start phase:step_start end:" || len(problems) != 0 {
		t.Errorf("read %q, problems %v; want all of run a, which lost only a shadow record", g, problems)
	}
}

// A writer idle for longer than max_age (a replica few calls reach) finds
// its stream aged out by another replica, which removes a stream whose
// last line is that old. Chaining its next line to the removed one would
// make verify report the journal tampered with: it starts a new stream.
func TestIdleStreamAgedOutByAnotherReplica(t *testing.T) {
	st, ctx := open(t), context.Background()
	clock, w, rows := gapWriter(t, st)
	w.Record(&journal.Record{Rec: journal.KindRun, Format: journal.Format, RunID: "a", Agent: "a"})
	waitFor(t, "the first line", func() bool { return rows() == 1 })
	clock.Add(int64(journal.DefaultMaxAge + time.Hour))
	// Another replica ages out the journal: the stream's last line is
	// past max_age by the database's clock (moved here by the cut).
	if err := st.AgeOut(ctx, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if rows() != 0 {
		t.Fatal("the idle stream was not aged out")
	}
	w.Record(&journal.Record{Rec: journal.KindRun, Format: journal.Format, RunID: "b", Agent: "a"})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if n, err := journal.VerifyLines(journalOf(st)); err != nil || n != 1 {
		t.Fatalf("verify after the idle stream aged out: %d lines, %v", n, err)
	}
}
