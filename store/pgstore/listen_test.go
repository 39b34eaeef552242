package pgstore_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/store/pgstore"
)

// A replica that shuts down while the database does not answer (a
// partition) stops listening for bundles: the listener's clean-up
// (UNLISTEN) does not wait for the database forever, holding its
// connection, and the store's Close, which waits for it, with it.
func TestListenStopsWhileTheDatabaseIsSilent(t *testing.T) {
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
	s, err := pgstore.Open(ctx, px.DSN(db), pgstore.Options{MaxConns: 2, StatementTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	t.Cleanup(px.Resume) // first: Close then finds the database answering
	lctx, stop := context.WithCancel(ctx)
	var woken atomic.Int32
	done := make(chan error, 1)
	go func() { done <- s.Listen(lctx, func() { woken.Add(1) }) }()
	deadline := time.Now().Add(20 * time.Second)
	for woken.Load() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the listener never started")
		}
		time.Sleep(10 * time.Millisecond)
	}
	px.Stall()
	stop()
	if err := within(t, "Listen after its context ended", func() error { return <-done }); err == nil {
		t.Fatal("Listen returned nil")
	}
}
