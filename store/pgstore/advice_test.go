package pgstore_test

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/awaken-lua/awaken-lua/run"
	"github.com/awaken-lua/awaken-lua/store/pgstore"
)

// A database that refuses writes for good (a standby, or read-only by
// setting) fails a save with advice that fits, not only "retry it": a
// retry fails the same way until the store points at a writable primary.
func TestReadOnlyDatabaseSaysWhatToDo(t *testing.T) {
	ctx := context.Background()
	dsn, err := cluster.NewDatabase(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s, err := pgstore.Open(ctx, dsn, pgstore.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, db, _ := strings.Cut(dsn, "dbname=")
	db, _, _ = strings.Cut(db, " ")
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "ALTER DATABASE "+pgx.Identifier{db}.Sanitize()+" SET default_transaction_read_only = on"); err != nil {
		t.Fatal(err)
	}
	conn.Close(ctx)
	ro, err := pgstore.Open(ctx, dsn, pgstore.Options{MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	_, err = ro.PutThread(ctx, run.Thread{ID: "t", Values: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "read-only") || !strings.Contains(err.Error(), "primary") {
		t.Fatalf("a save on a read-only database: %v", err)
	}
}
