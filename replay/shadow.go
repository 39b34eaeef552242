package replay

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/run"
)

// maxShadowRuns bounds the runs a shadow follows at once: a run whose end
// never comes (a client that walked away) must not hold state forever.
const maxShadowRuns = 10000

// recentFlips is how many disagreements GET /v1/shadow shows.
const recentFlips = 20

// maxShadowQueue bounds the records waiting for the shadow: when the
// candidate falls behind, the shadow drops runs rather than slowing the
// enforced path or holding memory without bound.
const maxShadowQueue = 4096

// Candidate gives the shadow's current runtime, pinned until release.
type Candidate func() (rt *run.Runtime, id string, release func())

// Shadow evaluates a candidate generation beside the enforced one: it is
// the enforced runtime's journal tap (run.Recorder), and replays each
// record it sees through the candidate, on the candidate's own copy of
// the state, on a goroutine of its own. The enforced path only queues the
// record: it never waits for the candidate, and when the queue is full the
// shadow stops following that run (counted as dropped). It never changes
// the enforced answer: its failures and panics are counted, not returned.
// Disagreements are journaled (rec "shadow"), counted and summarized.
type Shadow struct {
	cand Candidate
	out  run.Recorder // the journal writer for shadow records; nil: none
	log  *slog.Logger

	// Owned by the loop.
	runs  map[string]*shadowRun
	repls map[string]*Replayer // by candidate generation id

	mu    sync.Mutex // guards count, last and out
	count map[Count]int64
	last  []journal.Flip

	phases    atomic.Int64
	following atomic.Int64
	errors    atomic.Int64
	dropped   atomic.Int64

	// The queue between the enforced path and the loop.
	qmu   sync.Mutex
	queue []*journal.Record
	lost  map[string]bool // runs whose records were dropped
	// newlyLost are the runs lost since the loop last took the queue: it
	// stops following them before it replays anything more, so that lost
	// may forget them (maxLost) without their later records being driven
	// with a phase missing, which would be a false disagreement.
	newlyLost []string
	// unfollowAll: more runs were lost at once than newlyLost holds
	// (maxLost; a candidate stuck for long), so the loop stops following
	// every run instead, which bounds what a stuck candidate makes the
	// shadow hold.
	unfollowAll bool
	busy        bool // the loop is replaying records it took
	// maxQueue and maxLost: maxShadowQueue and maxShadowRuns (tests
	// lower them).
	maxQueue, maxLost int
	closed            bool
	wake              chan struct{}
	done              chan struct{}
}

type shadowRun struct {
	r       *Replayer
	release func()
}

// NewShadow makes a shadow over the candidate; out receives its records.
func NewShadow(cand Candidate, out run.Recorder, log *slog.Logger) *Shadow {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	sh := &Shadow{cand: cand, out: out, log: log, runs: map[string]*shadowRun{}, repls: map[string]*Replayer{},
		count: map[Count]int64{}, lost: map[string]bool{}, wake: make(chan struct{}, 1), done: make(chan struct{}),
		maxQueue: maxShadowQueue, maxLost: maxShadowRuns}
	go sh.loop()
	return sh
}

// SetOut sets where shadow records go (the host's journal, made after the
// shadow it taps).
func (sh *Shadow) SetOut(out run.Recorder) {
	sh.mu.Lock()
	sh.out = out
	sh.mu.Unlock()
}

// Record queues one enforced record for the candidate; it never waits.
func (sh *Shadow) Record(rec *journal.Record) {
	if rec.Rec == journal.KindShadow {
		return
	}
	sh.qmu.Lock()
	defer sh.qmu.Unlock()
	if sh.closed {
		return
	}
	end := rec.Rec == journal.KindEnd
	lost := sh.lost[rec.RunID]
	if end {
		delete(sh.lost, rec.RunID) // no record of the run comes after it
	}
	switch {
	case lost && end:
		// The loop stops following the run (newlyLost): its end has
		// nothing left to release.
		return
	case lost:
		sh.dropped.Add(1)
		return
	case len(sh.queue) >= sh.maxQueue:
		// Not queued even when it is an end: the loop releases the run
		// all the same (newlyLost), and the queue stays bounded while
		// the candidate is stuck.
		if !end {
			if len(sh.lost) >= sh.maxLost {
				// Runs that never ended: the loop stopped following
				// them (newlyLost), so their later records are ignored
				// there.
				clear(sh.lost)
			}
			sh.lost[rec.RunID] = true
		}
		if len(sh.newlyLost) >= sh.maxLost {
			sh.newlyLost, sh.unfollowAll = sh.newlyLost[:0], true
		} else if !sh.unfollowAll {
			sh.newlyLost = append(sh.newlyLost, rec.RunID)
		}
		sh.dropped.Add(1)
		return
	}
	sh.queue = append(sh.queue, journal.Detach(rec))
	select {
	case sh.wake <- struct{}{}:
	default:
	}
}

// loop replays the queued records in the order the enforced path made
// them, until Close.
func (sh *Shadow) loop() {
	defer close(sh.done)
	var batch []*journal.Record
	var lost []string
	for {
		sh.qmu.Lock()
		for i := range batch {
			batch[i] = nil
		}
		batch, sh.queue = sh.queue, batch[:0]
		lost, sh.newlyLost = sh.newlyLost, lost[:0]
		all := sh.unfollowAll
		sh.unfollowAll = false
		sh.busy = len(batch) > 0
		closed := sh.closed
		sh.qmu.Unlock()
		for _, rec := range batch {
			sh.apply(rec)
		}
		// After the batch: the queue was full from a run's first drop
		// until the loop took it, so the batch holds only records made
		// before the drop, and the next batch none of the run's.
		for _, id := range lost {
			sh.unfollow(id)
		}
		if all {
			for id := range sh.runs {
				sh.unfollow(id)
			}
		}
		if len(batch) == 0 {
			if closed {
				return
			}
			<-sh.wake
		}
	}
}

// Idle reports whether every queued record has been replayed.
func (sh *Shadow) Idle() bool {
	sh.qmu.Lock()
	defer sh.qmu.Unlock()
	return len(sh.queue) == 0 && !sh.busy
}

// apply replays one record through the candidate (on the loop).
func (sh *Shadow) apply(rec *journal.Record) {
	defer func() {
		if v := recover(); v != nil {
			sh.errors.Add(1)
			sh.log.Error("the shadow generation panicked; the enforced answer is unchanged, and the shadow stops following the run",
				"run_id", rec.RunID, "panic", fmt.Sprint(v))
			// The candidate's copy of the run stopped in the middle of
			// a phase: driven on, it would refuse the run's next records,
			// which would count as disagreements it never made.
			sh.unfollow(rec.RunID)
		}
	}()
	// runs and repls belong to the loop: nothing else touches them.
	sr := sh.runs[rec.RunID]
	if rec.Rec == journal.KindRun && sr == nil {
		if sr = sh.start(); sr == nil {
			return
		}
		sh.runs[rec.RunID] = sr
		sh.following.Store(int64(len(sh.runs)))
	}
	if sr == nil {
		return
	}
	if rec.Rec == journal.KindEnd {
		defer func() {
			// Live records come in the order this version writes: end is
			// the run's last, whether or not the candidate finished it.
			sr.r.forget(rec.RunID)
			delete(sh.runs, rec.RunID)
			sh.following.Store(int64(len(sh.runs)))
			sr.release()
		}()
	}
	if rec.Rec == journal.KindPhase {
		sh.phases.Add(1)
		if sh.isLost(rec.RunID) {
			return // its later records are gone: following it would only err
		}
	}
	flip, err := sr.r.Apply(context.Background(), rec)
	if err != nil {
		sh.errors.Add(1)
		sh.log.Warn("the shadow generation could not follow a run; the enforced answer is unchanged", "run_id", rec.RunID, "error", err.Error())
		return
	}
	if flip != nil {
		sh.disagree(rec, flip)
	}
}

// unfollow stops following a run (on the loop): its later records are
// ignored, and what it holds is released.
func (sh *Shadow) unfollow(id string) {
	sr := sh.runs[id]
	if sr == nil {
		return
	}
	sr.r.forget(id)
	delete(sh.runs, id)
	sh.following.Store(int64(len(sh.runs)))
	sr.release()
}

// start pins the candidate's current generation for a new run.
func (sh *Shadow) start() *shadowRun {
	if len(sh.runs) >= maxShadowRuns {
		for id, sr := range sh.runs { // drop one: the oldest is not known, any will do
			delete(sh.runs, id)
			sr.r.forget(id)
			sr.release()
			break
		}
	}
	rt, id, release := sh.cand()
	if rt == nil {
		return nil
	}
	r := sh.repls[id]
	if r == nil {
		var err error
		if r, err = New(rt); err != nil {
			release()
			sh.errors.Add(1)
			return nil
		}
		for gid := range sh.repls {
			if sh.inUse(gid) == 0 {
				delete(sh.repls, gid)
			}
		}
		sh.repls[id] = r
	}
	return &shadowRun{r: r, release: release}
}

func (sh *Shadow) inUse(gid string) int {
	n := 0
	for _, sr := range sh.runs {
		if sh.repls[gid] == sr.r {
			n++
		}
	}
	return n
}

func (sh *Shadow) disagree(rec *journal.Record, f *journal.Flip) {
	sh.mu.Lock()
	from, to := flipLabels(f.Kind)
	sh.count[Count{Kind: from + "->" + to, Plugin: f.Plugin}]++
	sh.last = append(sh.last, *f)
	if len(sh.last) > recentFlips {
		sh.last = sh.last[len(sh.last)-recentFlips:]
	}
	out := sh.out
	sh.mu.Unlock()
	if out != nil {
		out.Record(&journal.Record{Rec: journal.KindShadow, RunID: rec.RunID, Phase: rec.Phase, Step: rec.Step, Shadow: f})
	}
}

// flipLabels splits a flip kind into the metric's from and to labels:
// allow->block stays a pair; "context changed" is context->changed.
func flipLabels(kind string) (string, string) {
	if a, b, ok := strings.Cut(kind, "->"); ok {
		return a, b
	}
	if a, b, ok := strings.Cut(kind, " "); ok {
		return a, b
	}
	return kind, "changed"
}

// Disagreement is one counter of awaken_shadow_disagreements_total.
type Disagreement struct {
	Plugin string `json:"plugin"`
	From   string `json:"from"`
	To     string `json:"to"`
	N      int64  `json:"n"`
}

// Summary is what GET /v1/shadow reports.
type Summary struct {
	Phases        int64          `json:"phases"`
	Following     int            `json:"following"`
	Errors        int64          `json:"errors"`
	Dropped       int64          `json:"dropped"`
	Disagreements int64          `json:"disagreements"`
	By            []Disagreement `json:"by"`
	Recent        []journal.Flip `json:"recent"`
}

// Summary reports the counts so far.
func (sh *Shadow) Summary() Summary {
	sh.mu.Lock()
	defer sh.mu.Unlock()
	s := Summary{Phases: sh.phases.Load(), Following: int(sh.following.Load()), Errors: sh.errors.Load(), Dropped: sh.dropped.Load(),
		By: []Disagreement{}, Recent: append([]journal.Flip{}, sh.last...)}
	for c, n := range sh.count {
		from, to, _ := strings.Cut(c.Kind, "->")
		s.By = append(s.By, Disagreement{Plugin: c.Plugin, From: from, To: to, N: n})
		s.Disagreements += n
	}
	sort.Slice(s.By, func(i, j int) bool {
		a, b := s.By[i], s.By[j]
		if a.N != b.N {
			return a.N > b.N
		}
		return a.Plugin+a.From+a.To < b.Plugin+b.From+b.To
	})
	return s
}

func (sh *Shadow) isLost(runID string) bool {
	sh.qmu.Lock()
	defer sh.qmu.Unlock()
	return sh.lost[runID]
}

// Close replays what is queued, stops the loop and releases the
// generations the shadow pins.
func (sh *Shadow) Close() {
	sh.qmu.Lock()
	already := sh.closed
	sh.closed = true
	sh.qmu.Unlock()
	if !already {
		select {
		case sh.wake <- struct{}{}:
		default:
		}
	}
	<-sh.done
	sh.following.Store(0)
	for id, sr := range sh.runs {
		sr.release()
		delete(sh.runs, id)
	}
}
