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

// A candidate stuck on one record (a hook that hangs) must not make the
// shadow hold the enforced path's records without bound: end records,
// which release a run, and the runs to stop following are bounded too,
// by the queue's bound and the lost runs'.
func TestShadowQueueStaysBoundedWhileTheCandidateIsStuck(t *testing.T) {
	stuck := make(chan struct{})
	started := make(chan struct{}, 1)
	sh := NewShadow(func() (*run.Runtime, string, func()) {
		select {
		case started <- struct{}{}:
			<-stuck
		default:
		}
		return nil, "", nil
	}, nil, nil)
	defer sh.Close()
	const queue, lost = 8, 4
	SetShadowBounds(sh, queue, lost)
	sh.Record(&journal.Record{Rec: journal.KindRun, RunID: "r0"})
	select {
	case <-started: // the loop is now held inside the candidate
	case <-time.After(10 * time.Second):
		t.Fatal("the shadow never started replaying")
	}
	for i := 1; i <= 10*queue; i++ {
		id := fmt.Sprint("r", i)
		sh.Record(&journal.Record{Rec: journal.KindRun, RunID: id})
		sh.Record(&journal.Record{Rec: journal.KindPhase, RunID: id, Phase: journal.RunStart})
		sh.Record(&journal.Record{Rec: journal.KindEnd, RunID: id})
	}
	sh.qmu.Lock()
	held, forget := len(sh.queue), len(sh.newlyLost)
	sh.qmu.Unlock()
	if held > queue || forget > lost {
		t.Errorf("the shadow holds %d records (bound %d) and %d runs to stop following (bound %d)", held, queue, forget, lost)
	}
	close(stuck)
	deadline := time.Now().Add(10 * time.Second)
	for !sh.Idle() {
		if time.Now().After(deadline) {
			t.Fatal("the shadow never caught up")
		}
		time.Sleep(time.Millisecond)
	}
	if s := sh.Summary(); s.Following != 0 {
		t.Fatalf("following %d runs that ended", s.Following)
	}
}
