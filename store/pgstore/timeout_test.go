package pgstore_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/run"
	"github.com/awaken-lua/awaken-lua/store/pgstore"
)

// within runs f and returns its error, failing the test if f has not
// returned after a generous wait: a store call the database holds.
func within(t *testing.T, what string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatalf("%s was still waiting for the database after 20 s", what)
		return nil
	}
}

// A save that waits for a row another session holds locked (a replica
// stopped in the middle of a transaction) gives up after the statement
// timeout, even with a context that never ends, and says what to do.
func TestStatementTimeoutEndsALockWait(t *testing.T) {
	s, dsn := openWith(t, pgstore.Options{MaxConns: 4, StatementTimeout: 300 * time.Millisecond})
	ctx := context.Background()
	cp := run.Checkpoint{RunID: "r", ThreadID: "t", Status: run.Running, Stage: run.StageInferred, Seq: 1, Values: map[string]any{}}
	if err := s.PutRun(ctx, cp); err != nil {
		t.Fatal(err)
	}
	holder, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close(ctx)
	tx, err := holder.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "SELECT 1 FROM awaken_runs WHERE id = 'r' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	d := run.Delta{RunID: "r", Base: 1, Status: run.Running, Stage: run.StageInferred, Values: map[string]any{}}
	err = within(t, "a save of a locked run", func() error { return s.AppendRun(ctx, d) })
	if err == nil || !strings.Contains(err.Error(), "statement_timeout") {
		t.Fatalf("a save of a locked run: %v, want an error naming statement_timeout", err)
	}
	err = within(t, "ending a locked run", func() error {
		_, err := s.FinishRun(ctx, run.Thread{ID: "t"}, "r", 1)
		return err
	})
	if err == nil {
		t.Fatal("a run ended while another session held it locked")
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.AppendRun(ctx, d); err != nil {
		t.Fatalf("the save once the lock is gone: %v", err)
	}
}

// A database that stops answering (a hung server, a dropped network) does
// not hold a call forever: the store bounds each call on its side too.
func TestUnansweringDatabaseIsBounded(t *testing.T) {
	ctx := context.Background()
	dsn, err := cluster.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, db, _ := strings.Cut(dsn, "dbname=")
	db, _, _ = strings.Cut(db, " ")
	px, err := cluster.Proxy()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(px.Close)
	s, err := pgstore.Open(ctx, px.DSN(db), pgstore.Options{MaxConns: 4, StatementTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	t.Cleanup(px.Resume) // before Close, which waits for the calls
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	px.Stall()
	if err := within(t, "a read", func() error { _, _, err := s.RunSeq(ctx, "r"); return err }); err == nil {
		t.Fatal("a read answered by a database that does not answer")
	}
	if err := within(t, "a probe", func() error { return s.Probe(ctx) }); err == nil {
		t.Fatal("a database that does not answer is ready")
	}
	px.Resume()
	if _, _, err := s.RunSeq(ctx, "r"); err != nil {
		t.Fatalf("a read once the database answers again: %v", err)
	}
}

// Reading the journal is not bound by the statement timeout: a journal
// takes as long to read as it is big, and the reader (replay, verify)
// takes its time with each line.
func TestSlowJournalReaderOutlastsTheTimeout(t *testing.T) {
	s, _ := openWith(t, pgstore.Options{MaxConns: 2, StatementTimeout: 200 * time.Millisecond})
	ctx := context.Background()
	if err := s.WriteLines(ctx, "a", [][]byte{[]byte("1"), []byte("2")}); err != nil {
		t.Fatal(err)
	}
	var got []string
	err := s.JournalLines(ctx, time.Time{}, func(l journal.Line) error {
		got = append(got, string(l.Data))
		time.Sleep(time.Second) // a reader slower than the timeout, on purpose
		return nil
	})
	if err != nil || len(got) != 2 {
		t.Fatalf("a slow read of the journal: %v after %v", err, got)
	}
}
