package server

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/internal/lrusample"
	"github.com/awaken-lua/awaken-lua/run"
	"github.com/awaken-lua/awaken-lua/server/hooks"
)

// entry is a run in memory: its session, the generation it pins, and the
// mutex that serializes every call on it. The store holds the truth (a
// checkpoint after every call that changed the run); memory is a cache that
// keeps the run on its generation while it is in use.
type entry struct {
	mu       sync.Mutex
	id       string
	threadID string
	sess     *run.Session
	gen      *host.Generation // pinned while the run is not done; nil once released
	genID    string
	genHdr   []string // {genID}, shared by the replies' headers (never modified)
	gone     bool     // dropped from the registry: a caller that waited on mu must look again
	sink     runSink

	// dirty: the run changed since its last checkpoint (memory store only;
	// durable stores are written after every change).
	dirty bool

	lastUsed  atomic.Int64 // unix nanos
	done      atomic.Bool
	suspended atomic.Int64
}

func (e *entry) touch() { e.lastUsed.Store(time.Now().UnixNano()) }

func (e *entry) used() int64 { return e.lastUsed.Load() }

// inProgress is 1 for a run not yet done, 0 for a finished one.
func inProgress(e *entry) int {
	if e.done.Load() {
		return 0
	}
	return 1
}

// release unpins the generation; the run must not call a phase afterwards
// (a done run's session only answers reads).
func (e *entry) release() {
	if e.gen != nil {
		e.gen.Release()
		e.gen = nil
	}
}

// runSink receives a run's events: the debug log and the expiry count.
type runSink struct {
	log     *slog.Logger
	runID   string
	expired *atomic.Int64 // awaken_tickets_expired_total
}

// Wants takes what Emit uses: ticket expiries, and every event while the
// log shows debug records.
func (k *runSink) Wants(typ string) bool {
	return typ == (event.TicketExpired{}).Type() || k.log.Enabled(context.Background(), slog.LevelDebug)
}

func (k *runSink) Emit(ev event.Event) {
	if _, ok := ev.(event.TicketExpired); ok && k.expired != nil {
		k.expired.Add(1)
	}
	if k.log.Enabled(context.Background(), slog.LevelDebug) {
		if b, err := event.Marshal(ev); err == nil {
			k.log.LogAttrs(context.Background(), slog.LevelDebug, "run event", slog.String("run_id", k.runID),
				slog.Any("event", json.RawMessage(b)))
		}
	}
}

// lockRun returns the run's entry, locked. A run that is not in memory is
// restored from the store on the current generation (after a restart, or
// after it idled out), so handlers only ever talk to run.Store.
func (s *Server) lockRun(ctx context.Context, id string) (*entry, error) {
	for {
		s.mu.Lock()
		e := s.runs[id]
		if e == nil {
			e = &entry{id: id}
			e.touch() // restoring: not the run for shed to drop
			e.mu.Lock()
			s.runs[id] = e
			s.mu.Unlock()
			if err := s.restore(ctx, e); err != nil {
				s.mu.Lock()
				delete(s.runs, id)
				if errs.CodeOf(err) == errs.RunNotFound {
					// Gone from the store: its hold on the thread goes too. A
					// failure that may pass (a cancelled request, a store
					// outage) keeps it, or a second run could start there.
					s.letGo(id, false)
				}
				s.mu.Unlock()
				e.gone = true
				e.mu.Unlock()
				return nil, err
			}
			s.shed(e)
			return e, nil
		}
		s.mu.Unlock()
		e.mu.Lock()
		if e.gone {
			e.mu.Unlock()
			continue
		}
		if err := s.refresh(ctx, e); err != nil {
			e.mu.Unlock()
			return nil, err
		}
		if e.gone {
			e.mu.Unlock()
			continue // it ended elsewhere: look again
		}
		return e, nil
	}
}

// refresh makes sure a run held in memory (e locked) is the latest saved,
// when other replicas write the store too (run.Shared): a run another
// replica saved since is restored again from the store, and a run it ended
// is dropped, so the caller finds what the store says.
func (s *Server) refresh(ctx context.Context, e *entry) error {
	sh, ok := s.h.Store().(run.Shared)
	if !ok || e.done.Load() || e.sess == nil {
		return nil
	}
	seq, stored, err := sh.RunSeq(ctx, e.id)
	if err != nil {
		return storeUnavailable(fmt.Errorf("check run %s: %w", e.id, err))
	}
	if stored && seq == e.sess.Saves() {
		return nil
	}
	s.drop(e) // stale: the next look restores it, or finds it gone
	return nil
}

// unlock ends a call on a run. A finished run's clock is not reset by
// reads: it stays readable for DoneRetention after it ended.
func (s *Server) unlock(e *entry) {
	if !e.done.Load() {
		e.touch()
	}
	e.mu.Unlock()
}

// restore loads a checkpoint from the store into e (locked, registered).
func (s *Server) restore(ctx context.Context, e *entry) error {
	cp, ok, err := s.h.Store().Run(ctx, e.id)
	if errs.CodeOf(err) != "" {
		return err // the store's answer about this run (run_lost), not its failure
	}
	if err != nil {
		return storeUnavailable(fmt.Errorf("load run %s: %w", e.id, err))
	}
	if !ok {
		return runNotFound(e.id)
	}
	g := s.h.Acquire()
	if cp.Bundle != "" && cp.Bundle != g.Runtime.Bundle() {
		// The run started on another published bundle: it goes on with
		// those plugins, not with this replica's current ones.
		if pg, err := s.h.AcquireBundle(ctx, cp.Bundle); err == nil {
			g.Release()
			g = pg
		} else {
			s.log.LogAttrs(ctx, slog.LevelWarn, "cannot load the bundle a run started on; it goes on with the current plugins",
				slog.String("run_id", e.id), slog.String("bundle", cp.Bundle), slog.String("error", err.Error()))
		}
	}
	e.sink = runSink{log: s.log, runID: e.id, expired: &s.metrics.ticketsExpired}
	sess, err := g.Runtime.RestoreCheckpoint(ctx, cp, &e.sink)
	if err != nil {
		g.Release()
		return fmt.Errorf("restore run %s: %w", e.id, err)
	}
	sess.SetHandOff(true) // every request is decoded afresh, as for a new run
	e.sess, e.gen, e.genID, e.genHdr, e.threadID = sess, g, g.ID, s.genHeader(g.ID), sess.ThreadID()
	e.suspended.Store(int64(len(sess.Suspended())))
	s.noteExpiry(e)
	e.touch()
	s.mu.Lock()
	if o, held := s.out[e.id]; held && o.thread != "" && o.thread != e.threadID && s.threads[o.thread] == e.id {
		// Held (Hold) for a thread that is not the run's: a stale or
		// hand-edited hook --local record. That thread is free.
		delete(s.threads, o.thread)
	}
	if _, busy := s.threads[e.threadID]; !busy {
		s.threads[e.threadID] = e.id
	}
	delete(s.out, e.id)
	s.mu.Unlock()
	s.log.LogAttrs(ctx, slog.LevelInfo, "run restored from the store", slog.String("run_id", e.id),
		slog.String("thread_id", e.threadID), slog.String("generation", g.ID), slog.String("saved_by", cp.Generation))
	return nil
}

// reserveThread claims a thread for a new run, so two live runs never
// share one (the second one's thread save would fail its revision check).
func (s *Server) reserveThread(ctx context.Context, thread string) error {
	if thread == "" {
		return nil
	}
	if _, shared := s.h.Store().(run.Shared); shared {
		// The run this replica holds on the thread may have ended on
		// another one: look (lockRun refreshes it, or finds it gone).
		s.mu.Lock()
		other := s.threads[thread]
		s.mu.Unlock()
		if other != "" {
			if e, err := s.lockRun(ctx, other); err == nil {
				s.unlock(e)
			}
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if other, busy := s.threads[thread]; busy {
		if other == "" {
			return fail(http.StatusConflict, errs.PhaseOutOfOrder, "another run is starting on thread %q; retry when it has started", thread)
		}
		return fail(http.StatusConflict, errs.PhaseOutOfOrder,
			"thread %q has run %s in progress; end it (run_end) or DELETE /v1/runs/%s before starting another", thread, other, other)
	}
	s.threads[thread] = ""
	return nil
}

func (s *Server) unreserveThread(thread string) {
	if thread == "" {
		return
	}
	s.mu.Lock()
	if s.threads[thread] == "" {
		delete(s.threads, thread)
	}
	s.mu.Unlock()
}

// register adds a new run; the caller holds e.mu.
func (s *Server) register(e *entry) {
	e.touch()
	s.mu.Lock()
	s.runs[e.id] = e
	if !e.done.Load() {
		s.threads[e.threadID] = e.id
	} else if s.threads[e.threadID] == "" {
		delete(s.threads, e.threadID)
	}
	s.mu.Unlock()
}

// settle follows every call on a run (e locked): a run that is done unpins
// its generation (its session already saved the thread and forgot the
// checkpoint); a run that changed is checkpointed, so another process can
// continue it.
//
// The memory store is the exception: it dies with the process, so a copy
// per call would buy nothing but its cost (the deep copy of a checkpoint
// is most of a tool_gate call's work). There a run is checkpointed when it
// leaves memory (see sweep); the session itself saves a run that waits.
func (s *Server) settle(ctx context.Context, e *entry, changed bool) error {
	e.suspended.Store(int64(len(e.sess.Suspended())))
	s.noteExpiry(e)
	if e.sess.Status() == run.Done {
		e.dirty = false
		s.finish(e)
		return nil
	}
	if !changed {
		return nil
	}
	if s.volatile {
		e.dirty = true
		return nil
	}
	if err := s.checkpoint(ctx, e); err != nil {
		// The session holds what the call did, the store what was there
		// before, and the store is the truth: the run leaves memory and
		// the next call restores it, so a retry runs the call again. Its
		// thread stays held, unless the store never had the run (a new
		// run's thread is free again).
		s.unload(e, time.Now(), e.sess.Saves() > 0)
		return err
	}
	return nil
}

// checkpoint saves the run (what changed since its last save, when the
// store keeps a log of changes: see run.Session.SaveRun); a failure is
// store_unavailable.
func (s *Server) checkpoint(ctx context.Context, e *entry) error {
	if err := e.sess.SaveRun(context.WithoutCancel(ctx)); err != nil {
		if errs.CodeOf(err) == errs.RevisionConflict {
			// Another replica saved the run first: this call lost, and
			// changed nothing; its retry restores the run as saved.
			return fail(http.StatusConflict, errs.RevisionConflict, "run %s was changed by another replica during this call, so this call changed nothing; call again", e.id)
		}
		return storeUnavailable(fmt.Errorf("save run %s: %w", e.id, err))
	}
	e.dirty = false
	s.health.wrote()
	return nil
}

// finish marks a run done (e locked) and unpins its generation; the entry
// stays readable for DoneRetention, holding only what a read answers.
func (s *Server) finish(e *entry) {
	if e.done.Swap(true) {
		return
	}
	e.touch()
	e.release()
	e.sess.Compact()
	s.mu.Lock()
	if s.threads[e.threadID] == e.id {
		delete(s.threads, e.threadID)
	}
	s.mu.Unlock()
}

// drop removes a run from memory (e locked) and unpins its generation.
func (s *Server) drop(e *entry) { s.unload(e, time.Now(), false) }

// unload removes a run from memory (e locked) and unpins its generation.
// out keeps track of a run in progress that the store keeps: it holds its
// thread, so the thread's next run waits for it to end as before and a
// coding agent's session can take it up again, and with the memory store
// it is parked there. A waiting run needs no hold: its thread in the store
// names it, and a new run there is refused all the same.
func (s *Server) unload(e *entry, now time.Time, out bool) {
	s.mu.Lock()
	if s.runs[e.id] == e {
		delete(s.runs, e.id)
	}
	holds := s.threads[e.threadID] == e.id
	out = out && e.sess != nil && e.sess.Status() == run.Running
	parked := out && s.volatile
	switch {
	case out && (holds || parked):
		o := outRun{at: now, parked: parked}
		if holds {
			o.thread = e.threadID
		}
		s.out[e.id] = o
		s.trimOut()
	case holds:
		delete(s.threads, e.threadID)
	}
	s.mu.Unlock()
	e.gone = true
	e.release()
}

// sweepLoop drops idle and long-finished runs from memory.
func (s *Server) sweepLoop() {
	defer s.janitor.Done()
	every := min(s.idle, s.retain) / 4
	every = max(every, 10*time.Millisecond)
	every = min(every, time.Minute)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.sweep(now)
			s.agents.Sweep(now, s.idle)
			s.expire(now)
		}
	}
}

func (s *Server) sweep(now time.Time) {
	s.mu.Lock()
	for id, o := range s.out {
		if _, back := s.runs[id]; back || now.Sub(o.at) <= s.abandon {
			continue
		}
		s.letGo(id, true)
	}
	var idle []*entry
	for _, e := range s.runs {
		if s.idleAt(e, now) {
			idle = append(idle, e)
		}
	}
	s.mu.Unlock()
	// Each run is saved and dropped under its own lock only, so that the
	// sweep never holds up the other runs' calls.
	for _, e := range idle {
		if !e.mu.TryLock() {
			continue // a busy run is not idle
		}
		if !e.gone && e.sess != nil && s.idleAt(e, now) {
			s.leave(e, now, slog.LevelInfo, "idle run dropped from memory; its checkpoint stays in the store")
		}
		e.mu.Unlock()
	}
}

// idleAt reports whether e is due to leave memory: idle past the idle
// timeout, or done past the retention.
func (s *Server) idleAt(e *entry, now time.Time) bool {
	idle := now.Sub(time.Unix(0, e.lastUsed.Load()))
	if e.done.Load() {
		return idle > s.retain
	}
	return idle > s.idle
}

// leave takes a run (e locked) out of memory: a run that changed since its
// last checkpoint is saved first (with the memory store it is parked
// there), so a later call restores it. It reports false, and the run stays,
// when the save fails.
func (s *Server) leave(e *entry, now time.Time, level slog.Level, why string) bool {
	done := e.done.Load()
	if e.dirty && !done {
		if err := s.checkpoint(context.Background(), e); err != nil {
			s.health.failed(err)
			s.log.LogAttrs(context.Background(), slog.LevelError, "cannot save a run leaving memory; it stays in memory",
				slog.String("run_id", e.id), slog.String("error", err.Error()))
			return false
		}
	}
	s.unload(e, now, !done)
	if !done {
		s.log.LogAttrs(context.Background(), level, why, slog.String("run_id", e.id),
			slog.Duration("idle", now.Sub(time.Unix(0, e.lastUsed.Load()))))
	}
	return true
}

// evict takes a run out of memory past max_runs (e locked). With the
// memory store a run in the middle of a step is forgotten, as after a
// restart: parking it would copy it and keep it in memory all the same.
// Any other run leaves as an idle one does, and its next call restores it.
func (s *Server) evict(e *entry, now time.Time) {
	if !s.volatile || e.done.Load() || e.sess.Status() != run.Running {
		s.leave(e, now, slog.LevelDebug, "run dropped from memory past [server] max_runs; its checkpoint stays in the store")
		return
	}
	// The store may hold an older copy (the run was parked, then restored).
	if err := s.h.Store().DeleteRun(context.Background(), e.id); err != nil {
		s.log.LogAttrs(context.Background(), slog.LevelWarn, "cannot forget a run", slog.String("run_id", e.id), slog.String("error", err.Error()))
	}
	e.sess.JournalAbandon()
	s.drop(e)
	s.log.LogAttrs(context.Background(), slog.LevelDebug, "run forgotten past [server] max_runs (memory store)",
		slog.String("run_id", e.id), slog.Duration("idle", now.Sub(time.Unix(0, e.lastUsed.Load()))))
}

// letGo ends the hold of a run out of memory on its thread (s.mu held),
// and with abandon forgets the copy parked in the memory store: a durable
// store keeps the run, which a later call restores.
func (s *Server) letGo(id string, abandon bool) {
	o := s.out[id]
	if o.thread != "" && s.threads[o.thread] == id {
		delete(s.threads, o.thread)
	}
	delete(s.out, id)
	if !abandon || !o.parked {
		return
	}
	if err := s.h.Store().DeleteRun(context.Background(), id); err != nil {
		s.log.LogAttrs(context.Background(), slog.LevelWarn, "cannot forget an abandoned run",
			slog.String("run_id", id), slog.String("error", err.Error()))
	}
}

// trimOut bounds the runs out of memory that hold a thread or are parked
// (s.mu held), MaxRuns of them with the memory store (each a parked copy)
// and HoldsPerRun times that with a durable one: past it, the oldest of a
// few sampled is let go of as an abandoned one is.
func (s *Server) trimOut() {
	bound := s.maxRuns
	if !s.volatile && bound <= math.MaxInt/HoldsPerRun {
		bound *= HoldsPerRun
	}
	for len(s.out) > bound {
		var buf [lrusample.Size]lrusample.Entry[string, outRun]
		sample := lrusample.Oldest(s.out, func(id string, o outRun) (int64, bool) {
			_, back := s.runs[id] // being restored
			return o.at.UnixNano(), !back
		}, &buf)
		if len(sample) == 0 {
			return
		}
		s.letGo(sample[0].Key, true)
	}
}

// shed keeps MaxRuns runs in memory (see Options): while more are there,
// the least recently used of a few sampled leaves (keep, the run being
// added, excepted). A new run calls it, so it costs one eviction per run
// past the bound.
func (s *Server) shed(keep *entry) {
	now := time.Now()
	var buf [lrusample.Size]lrusample.Entry[string, *entry]
	for range lrusample.Size {
		s.mu.Lock()
		if len(s.runs) <= s.maxRuns {
			s.mu.Unlock()
			return
		}
		sample := lrusample.Oldest(s.runs, func(_ string, e *entry) (int64, bool) { return e.used(), e != keep }, &buf)
		s.mu.Unlock()
		// A finished run is kept only to be read: it goes before any run
		// in progress, however recently it finished.
		slices.SortStableFunc(sample, func(a, b lrusample.Entry[string, *entry]) int {
			return cmp.Compare(inProgress(a.Val), inProgress(b.Val))
		})
		evicted := false
		for _, en := range sample {
			victim := en.Val
			if !victim.mu.TryLock() {
				continue // busy, so not the one to drop: the next
			}
			if !victim.gone && victim.sess != nil {
				s.evict(victim, now)
				evicted = true
			}
			victim.mu.Unlock()
			if evicted {
				break
			}
		}
		if !evicted {
			return // every run sampled is busy: the next new run tries again
		}
	}
}

// noteExpiry records when the run's next ticket expires (e locked), so
// the janitor settles it even after the run left memory.
func (s *Server) noteExpiry(e *entry) {
	at := time.Time{}
	if e.sess != nil && e.sess.Status() == run.Waiting {
		at = e.sess.NextExpiry()
	}
	s.mu.Lock()
	if at.IsZero() {
		delete(s.expiries, e.id)
	} else {
		s.expiries[e.id] = at
	}
	s.mu.Unlock()
}

// NoteStoredExpiries notes the waiting runs whose approval expires that
// the store keeps (run.ExpiryLister), so that after a restart the janitor
// settles them although no call has loaded them: `serve` calls it once at
// start. A run a call noted already keeps what the call noted.
func (s *Server) NoteStoredExpiries(ctx context.Context) (int, error) {
	l, ok := s.h.Store().(run.ExpiryLister)
	if !ok {
		return 0, nil
	}
	due, err := l.WaitingExpiries(ctx)
	if err != nil {
		return 0, storeUnavailable(fmt.Errorf("list the waiting runs: %w", err))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, at := range due {
		if _, noted := s.expiries[id]; !noted {
			s.expiries[id] = at
		}
	}
	return len(due), nil
}

// expire settles the suspended calls whose tickets expired, without
// waiting for a client to ask: each due run is locked (restored from the
// store when it left memory), its expired calls are decided as their
// tickets say, and it is saved.
func (s *Server) expire(now time.Time) {
	var due []string
	if cl, ok := s.h.Store().(run.ExpiryClaimer); ok {
		// Several replicas: the store says which runs are due, in memory
		// here or not, and gives each to one replica.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		ids, err := cl.ClaimExpired(ctx, now, expiryLease, 64)
		cancel()
		if err != nil {
			s.log.LogAttrs(context.Background(), slog.LevelWarn, "cannot claim expired approvals; will retry", slog.String("error", err.Error()))
		}
		due = ids
	} else {
		s.mu.Lock()
		for id, at := range s.expiries {
			if !now.Before(at) {
				due = append(due, id)
			}
		}
		s.mu.Unlock()
	}
	for _, id := range due {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		err := s.expireRun(ctx, id)
		cancel()
		if err != nil {
			s.log.LogAttrs(context.Background(), slog.LevelWarn, "cannot settle an expired approval; will retry",
				slog.String("run_id", id), slog.String("error", err.Error()))
		}
	}
}

// expiryLease is how long a replica's claim on an expired run holds: past
// it, another replica settles the run if this one has not.
const expiryLease = 30 * time.Second

func (s *Server) expireRun(ctx context.Context, id string) error {
	e, err := s.lockRun(ctx, id)
	if err != nil {
		s.mu.Lock()
		delete(s.expiries, id) // a run that is gone expires nothing
		s.mu.Unlock()
		return err
	}
	settled, _, err := e.sess.Expire(ctx)
	if err == nil && len(settled) > 0 {
		s.log.LogAttrs(ctx, slog.LevelInfo, "approvals expired; the runtime settled the calls",
			slog.String("run_id", id), slog.Int("calls", len(settled)))
	}
	if serr := s.settle(ctx, e, len(settled) > 0); err == nil {
		err = serr
	}
	s.unlock(e)
	return err
}

// openSuspensions counts suspended calls of the runs in memory.
func (s *Server) openSuspensions() (runs, suspended int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.runs {
		if !e.done.Load() {
			runs++
		}
		suspended += e.suspended.Load()
	}
	return runs, suspended
}

// Hold records that run runID, saved in the store, holds thread threadID
// although it is not in memory: `hook --local` serves each event in a
// process of its own, and tells the next one which runs the session's
// last event left. The thread's next event takes the run up as a session
// takes up a run it lost track of; a run that has ended since is not
// found, and the event starts a new one.
func (s *Server) Hold(threadID, runID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, busy := s.threads[threadID]; busy {
		return
	}
	s.threads[threadID] = runID
	s.out[runID] = outRun{at: time.Now(), thread: threadID}
}

// Holds returns the threads that runs in progress hold, in memory or out
// (see Hold): thread id -> run id.
func (s *Server) Holds() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.threads)
}

// HookFacts returns what the hook adapters learned of the sessions they
// hold besides their runs (hooks.SessionFacts), by session: `hook --local`
// records them with the runs (Holds) for the session's next event.
func (s *Server) HookFacts() map[string]hooks.SessionFacts { return s.agents.Facts() }

// RestoreHookFacts gives the hook adapters what HookFacts returned in an
// earlier process, before the event that follows; a session idle past the
// idle timeout is left out, as the sidecar's sweep forgets it.
func (s *Server) RestoreHookFacts(facts map[string]hooks.SessionFacts) {
	s.agents.Restore(facts, s.idle)
}

// threadHolder is the id of the run in memory that holds a thread, or "".
func (s *Server) threadHolder(threadID string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.threads[threadID]
}
