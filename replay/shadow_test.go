package replay

import (
	"fmt"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/run"
)

// A candidate that cannot keep up never slows the enforced path: records
// beyond the queue's bound are dropped (and counted), Record returns at
// once, and what was queued is still replayed.
func TestShadowDropsRatherThanWaits(t *testing.T) {
	stuck := make(chan struct{})
	started := make(chan struct{}, maxShadowQueue+100)
	sh := NewShadow(func() (*run.Runtime, string, func()) {
		started <- struct{}{}
		<-stuck
		return nil, "", nil
	}, nil, nil)
	defer sh.Close()

	sh.Record(&journal.Record{Rec: journal.KindRun, RunID: "r0"})
	select {
	case <-started: // the loop is now held inside the candidate
	case <-time.After(10 * time.Second):
		t.Fatal("the shadow never started replaying")
	}
	const extra = 50
	recorded := make(chan struct{})
	go func() {
		for i := 1; i <= maxShadowQueue+extra; i++ {
			sh.Record(&journal.Record{Rec: journal.KindRun, RunID: fmt.Sprint("r", i)})
		}
		close(recorded)
	}()
	select {
	case <-recorded:
	case <-time.After(10 * time.Second):
		close(stuck)
		t.Fatal("Record waited for a shadow that cannot keep up")
	}
	if got := sh.Summary().Dropped; got != extra {
		t.Fatalf("dropped = %d, want %d", got, extra)
	}
	if sh.Idle() {
		t.Fatal("idle while records wait")
	}
	close(stuck)
	deadline := time.Now().Add(10 * time.Second)
	for !sh.Idle() {
		if time.Now().After(deadline) {
			t.Fatal("the shadow never caught up")
		}
		time.Sleep(time.Millisecond)
	}
	if n := len(started); n != maxShadowQueue {
		// Every queued run asked the candidate once; the dropped ones never.
		t.Fatalf("the candidate was asked %d more times, want %d", n, maxShadowQueue)
	}
}
