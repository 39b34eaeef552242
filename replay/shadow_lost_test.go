package replay_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/replay"
	"github.com/awaken-lua/awaken-lua/run"
)

// A shadow that fell behind stops following the runs whose records it
// dropped. When it has forgotten more such runs than it keeps (they never
// ended), their later records used to be queued again and driven with the
// dropped phases missing: the candidate refused them, and the shadow
// counted a "replay failed" disagreement the candidate never made. The
// candidate here is the recording's own plugins: any disagreement is false.
func TestShadowForgettingLostRunsFlipsNothing(t *testing.T) {
	cfg, jdir := project(t, "v1", "")
	recordRuns(t, cfg)
	byRun := map[string][]*journal.Record{}
	var order []string
	if _, err := journal.Read([]string{jdir}, func(_ journal.Pos, r *journal.Record) error {
		if _, ok := byRun[r.RunID]; !ok {
			order = append(order, r.RunID)
		}
		byRun[r.RunID] = append(byRun[r.RunID], r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	a, b := byRun[order[0]], byRun[order[1]]
	if len(a) < 6 || a[3].Phase != journal.BeforeInference {
		t.Fatalf("the first run's records: %d, the fourth %s", len(a), a[3].Phase)
	}

	abs, _ := filepath.Abs(filepath.Join("testdata", "v1"))
	h, err := host.Open(context.Background(), host.Options{ConfigPath: cfg, PluginDir: abs, Candidate: true, Store: run.NewMemoryStore()})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	asked, gate := make(chan struct{}, 10), make(chan struct{})
	sh := replay.NewShadow(func() (*run.Runtime, string, func()) {
		asked <- struct{}{}
		<-gate // the first run's start holds the loop: the queue fills
		g := h.Acquire()
		return g.Runtime, g.ID, g.Release
	}, nil, nil)
	defer sh.Close()
	replay.SetShadowBounds(sh, 2, 1)
	idle := func() {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); !sh.Idle(); time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the shadow never caught up")
			}
		}
	}

	sh.Record(a[0]) // a's header: the loop asks for the candidate and waits
	select {
	case <-asked:
	case <-time.After(20 * time.Second):
		t.Fatal("the shadow never asked for the candidate")
	}
	sh.Record(a[1]) // run_start, step_start: the queue is full
	sh.Record(a[2])
	sh.Record(a[3]) // before_inference: dropped, a is lost
	sh.Record(b[0]) // b's header: dropped; past maxLost, a is forgotten
	if got := sh.Summary().Dropped; got != 2 {
		t.Fatalf("dropped %d, want 2", got)
	}
	close(gate)
	idle()
	for _, r := range a[4:] { // after_inference on: a's phases after the lost one
		sh.Record(r)
	}
	idle()
	if s := sh.Summary(); s.Disagreements != 0 || s.Following != 0 {
		t.Fatalf("%d disagreements %+v, following %d; want none: the candidate is the recording's plugins", s.Disagreements, s.Recent, s.Following)
	}
}
