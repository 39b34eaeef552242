package pgstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/run"
	"github.com/awaken-lua/awaken-lua/store/pgstore"
)

// A database whose default isolation is stricter than read committed (a
// DBA's ALTER DATABASE ... SET default_transaction_isolation) must still
// answer a save that lost a race to another replica's with
// revision_conflict ("call again", on the new base), not with a
// serialization failure, a 503 that retries on the stale one.
func TestStricterDefaultIsolationStillConflicts(t *testing.T) {
	ctx := context.Background()
	dsn, err := cluster.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	other, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(ctx)
	if _, err := other.Exec(ctx, "ALTER DATABASE "+other.Config().Database+" SET default_transaction_isolation = 'repeatable read'"); err != nil {
		t.Fatal(err)
	}
	s, err := pgstore.Open(ctx, dsn, pgstore.Options{MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	cp := run.Checkpoint{RunID: "r", ThreadID: "t", Status: run.Running, Stage: run.StageInferred, Seq: 1, Values: map[string]any{}}
	if err := s.PutRun(ctx, cp); err != nil {
		t.Fatal(err)
	}
	// Another replica's save holds the run's row; this one's waits for it.
	tx, err := other.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "UPDATE awaken_runs SET seq = 2 WHERE id = 'r'"); err != nil {
		t.Fatal(err)
	}
	saved := make(chan error, 1)
	go func() {
		saved <- s.AppendRun(ctx, run.Delta{RunID: "r", Base: 1, Status: run.Running, Stage: run.StageInferred, Values: map[string]any{}})
	}()
	watch, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer watch.Close(ctx)
	deadline := time.Now().Add(20 * time.Second)
	for {
		var n int
		if err := watch.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
			AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the save never waited for the row")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-saved; errs.CodeOf(err) != errs.RevisionConflict {
		t.Fatalf("a save that lost the race, under repeatable read: %v; want revision_conflict", err)
	}
}

// A save is acknowledged once committed, and an acknowledged save must
// survive the database's crash: a database (or server) set to
// synchronous_commit = off acknowledges commits it may lose. The store's
// sessions commit synchronously; a stricter setting (remote_apply, for a
// standby) is kept.
func TestCommitsAreDurableWhateverTheDefault(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct{ db, want string }{{"off", "on"}, {"remote_apply", "remote_apply"}} {
		dsn, err := cluster.NewDatabase(ctx)
		if err != nil {
			t.Fatal(err)
		}
		admin, err := pgx.Connect(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := admin.Exec(ctx, "ALTER DATABASE "+admin.Config().Database+" SET synchronous_commit = "+tc.db); err != nil {
			t.Fatal(err)
		}
		admin.Close(ctx)
		s, err := pgstore.Open(ctx, dsn, pgstore.Options{MaxConns: 1})
		if err != nil {
			t.Fatal(err)
		}
		n, err := s.Exec(ctx, "SELECT 1 WHERE current_setting('synchronous_commit') = $1", tc.want)
		s.Close()
		if err != nil || n != 1 {
			t.Errorf("a session on a database set to synchronous_commit = %s: not %s (%v)", tc.db, tc.want, err)
		}
	}
}
