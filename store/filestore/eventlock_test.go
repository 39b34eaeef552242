package filestore

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// An event lock excludes another holder of the same key, in this process
// too (each LockEvent opens the file: an OFD lock is the open file's),
// gives up when the context is done rather than wait for ever, and is
// taken by a waiter as soon as the holder lets go.
func TestLockEvent(t *testing.T) {
	dir := t.TempDir()
	a, b := open(t, dir), open(t, dir)
	unlock, err := a.LockEvent(context.Background(), "session-1")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	start := time.Now()
	if u, err := b.LockEvent(ctx, "session-1"); errs.CodeOf(err) != CodeLockTimeout || !errors.Is(err, context.DeadlineExceeded) {
		if u != nil {
			u()
		}
		t.Fatalf("a held lock: %v, want %s", err, CodeLockTimeout)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("the wait took %v past a 30ms deadline", d)
	}
	if runtime.GOOS == "linux" { // flock(2) elsewhere locks the whole file
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		u, err := b.LockEvent(ctx, "session-2")
		cancel()
		if err != nil {
			t.Fatalf("another session waited for the first: %v", err)
		}
		u()
	}
	got := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		u, err := b.LockEvent(ctx, "session-1")
		if err == nil {
			u()
		}
		got <- err
	}()
	unlock()
	if err := <-got; err != nil {
		t.Fatalf("the waiter after the holder let go: %v", err)
	}
	// A cancelled wait ends too.
	unlock, _ = a.LockEvent(context.Background(), "session-1")
	defer unlock()
	ctx, cancel = context.WithCancel(context.Background())
	cancel()
	if _, err := b.LockEvent(ctx, "session-1"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}
