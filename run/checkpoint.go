package run

import (
	"context"
	"errors"
	"fmt"
	"maps"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/engine/value"
	"github.com/awaken-lua/awaken-lua/model"
)

// Checkpoint captures the run so another Session, in this process or after
// a restart, can continue it.
func (s *Session) Checkpoint() Checkpoint {
	snap := s.st().Snapshot()
	cp := Checkpoint{
		RunID: s.info.ID, ThreadID: s.info.ThreadID, AgentID: s.info.AgentID,
		Generation: s.rt.generation, Bundle: s.rt.bundle, Status: s.status, Stage: s.stage, Step: s.info.Step,
		Termination: s.termination, Natural: s.natural, Cwd: s.info.Cwd,
		Values:         snap.Values(func(k *state.Key) bool { return k.Scope == state.ScopeRun && !k.Transient }),
		ThreadValues:   snap.Values(func(k *state.Key) bool { return k.Scope == state.ScopeThread && !k.Transient }),
		Messages:       cloneMessages(s.messages),
		Revision:       snap.Revision(),
		ThreadRevision: s.thread.Revision,
		Seq:            s.seq,
	}
	// A declared thread key the run has not set is saved as null, so a
	// restore does not take the thread's value for it (after a crash
	// between saving the thread and forgetting the run, that value is the
	// run's own, counted once already).
	for _, k := range s.rt.set.Registry().Keys() {
		if k.Scope == state.ScopeThread && !k.Transient {
			if _, set := cp.ThreadValues[k.Name]; !set {
				cp.ThreadValues[k.Name] = nil
			}
		}
	}
	if s.offered != nil {
		cp.Offered = append([]string{}, s.offered...)
	}
	cp.Tools = s.hostTools
	cp.StepTools = encodeStepTools(s.tools, s.offered, s.hostTools)
	for _, c := range s.calls {
		cp.Calls = append(cp.Calls, *c)
	}
	return cloneCheckpoint(cp)
}

// save writes the thread (its thread-scoped values, its conversation once
// the run is done, and the waiting marker) and, while the run waits, the run.
//
// The order keeps the store consistent at every point a crash may stop it:
// a waiting run is written before the thread names it (and removed again if
// the thread cannot be saved); a finished run's thread is written before
// the run is forgotten, so its last checkpoint stays until its values are in
// the thread, and a retried run_end (restored from that checkpoint) finds
// them. Every failure is a *SaveError; s.thread changes only with a saved
// thread.
func (s *Session) save(ctx context.Context) error {
	st := s.rt.store
	th := s.thread
	th.ID = s.info.ThreadID
	reg := s.rt.set.Registry()
	values := map[string]any{}
	// Values of keys this generation does not declare are kept: a later
	// generation may declare them again.
	for name, v := range th.Values {
		if _, declared := reg.Key(name); !declared {
			values[name] = v
		}
	}
	for name, v := range s.st().Snapshot().Values(ThreadKept) {
		values[name] = v
	}
	th.Values = values
	th.SavedBy = s.info.ID
	switch s.status {
	case Waiting:
		th.Waiting = s.info.ID
		prev, had, err := st.Run(ctx, s.info.ID)
		if err != nil {
			return &SaveError{Op: "read run " + s.info.ID, Err: err}
		}
		if err := s.putRun(ctx); err != nil {
			return &SaveError{Op: "save run " + s.info.ID, Err: err}
		}
		rev, err := st.PutThread(ctx, th)
		if err != nil {
			// The run must not stay saved as waiting on a thread that
			// does not say so: put back what was saved before.
			s.saved = nil // the store no longer holds what putRun saved
			takeBack := st.DeleteRun
			if had {
				// As the save after the one just made: a store that
				// compares save counts (replicas sharing PostgreSQL)
				// takes it only so.
				takeBack = func(ctx context.Context, _ string) error {
					back := prev
					back.Seq = s.seq + 1
					if err := st.PutRun(ctx, back); err != nil {
						return err
					}
					s.seq = back.Seq
					return nil
				}
			}
			if uerr := takeBack(ctx, s.info.ID); uerr != nil {
				s.rt.log.Error("cannot take back a waiting run whose thread was not saved", "run_id", s.info.ID, "error", uerr.Error())
			}
			return &SaveError{Op: "save thread " + th.ID, Err: err}
		}
		th.Revision = rev
		s.thread = th
	case Done:
		th.Waiting = ""
		th.Messages = cloneMessages(recent(s.messages, s.rt.maxHistory, s.rt.maxHistorySize))
		if f, ok := st.(Finisher); ok {
			rev, err := f.FinishRun(ctx, th, s.info.ID, s.seq)
			if err != nil {
				return &SaveError{Op: "end run " + s.info.ID + " on thread " + th.ID, Err: err}
			}
			th.Revision, th.Messages = rev, nil
			s.thread, s.saved = th, nil
			break
		}
		rev, err := st.PutThread(ctx, th)
		if err != nil {
			return &SaveError{Op: "save thread " + th.ID, Err: err}
		}
		th.Revision = rev
		// A finished run never saves again; the store has the
		// conversation, and the session need not hold a second copy.
		th.Messages = nil
		s.thread = th
		s.saved = nil // the run is forgotten: nothing more to save
		if err := st.DeleteRun(ctx, s.info.ID); err != nil {
			return &SaveError{Op: "forget run " + s.info.ID + " (its thread is saved)", Err: err}
		}
	default:
		rev, err := st.PutThread(ctx, th)
		if err != nil {
			return &SaveError{Op: "save thread " + th.ID, Err: err}
		}
		th.Revision = rev
		s.thread = th
	}
	return nil
}

// SaveThread writes the thread-scoped values the run holds now to its
// thread, as the run's end will, without ending the run; the thread's
// conversation is saved only at the end. A host that drives a run part of
// the way and leaves it there (the test harness's h:phase) keeps the
// thread's state this way. A waiting or finished run has saved it already.
func (s *Session) SaveThread(ctx context.Context) error {
	if s.status != Running {
		return nil
	}
	return s.save(ctx)
}

// ThreadKept reports whether a thread keeps a key's value across runs:
// thread-scoped keys, except those declared persist = false.
func ThreadKept(k *state.Key) bool { return k.Scope == state.ScopeThread && !k.Transient }

// SaveError is a failure to write a run's thread or checkpoint to the
// store. The call that saved changed nothing in the session; the cause
// keeps its code (revision_conflict), and a cause without one is an I/O
// failure of the store.
type SaveError struct {
	Op  string
	Err error
}

func (e *SaveError) Error() string { return e.Op + ": " + e.Err.Error() }
func (e *SaveError) Unwrap() error { return e.Err }

// LoadError is a failure to read a thread or a run from the store: nothing
// was changed, and the call can be made again once the store answers.
type LoadError struct {
	Op  string
	Err error
}

func (e *LoadError) Error() string { return e.Op + ": " + e.Err.Error() }
func (e *LoadError) Unwrap() error { return e.Err }

func isSaveError(err error) bool {
	var se *SaveError
	return errors.As(err, &se)
}

// undo is what a call that saves needs to put the session back when the
// save fails: the state as it was (a snapshot is immutable, so keeping it
// copies nothing) and the session's own fields.
type undo struct {
	snap        *state.Snapshot
	status      Status
	stage       Stage
	termination string
	natural     bool
	aborted     bool
	messages    []model.Message
	calls       []CallRecord
}

func (s *Session) mark() undo {
	u := undo{snap: s.st().Snapshot(), status: s.status, stage: s.stage, termination: s.termination,
		natural: s.natural, aborted: s.aborted, messages: s.messages[:len(s.messages):len(s.messages)]}
	u.calls = make([]CallRecord, len(s.calls))
	for i, c := range s.calls {
		u.calls[i] = *c
	}
	return u
}

// rollback puts the session back as mark found it. The state store is
// rebuilt from the snapshot at its revision, as a restore would; values of
// transient keys start from their defaults, as after a restore.
func (s *Session) rollback(u undo) {
	s.saved = nil // the changes tracked since the last save are not these
	keep := func(scope state.Scope) map[string]any {
		return u.snap.Values(func(k *state.Key) bool { return k.Scope == scope })
	}
	if err := s.open(keep(state.ScopeThread), keep(state.ScopeRun), u.snap.Revision()); err != nil {
		s.rt.log.Error("cannot put the run's state back after a failed save", "run_id", s.info.ID, "error", err.Error())
	}
	s.status, s.stage, s.termination, s.natural, s.aborted = u.status, u.stage, u.termination, u.natural, u.aborted
	s.messages = u.messages
	s.calls = make([]*CallRecord, len(u.calls))
	for i := range u.calls {
		s.calls[i] = &u.calls[i]
	}
}

// Restore continues a run saved in the runtime's store (a waiting run, or a
// run a sidecar checkpointed), pinned to this runtime's generation.
func (r *Runtime) Restore(ctx context.Context, runID string, events event.Sink, onEffect ...func(key string, payload any)) (*Session, error) {
	cp, ok, err := r.store.Run(ctx, runID)
	if err != nil {
		return nil, &LoadError{Op: "load run " + runID, Err: err}
	}
	if !ok {
		return nil, errs.New(errs.RunNotFound, "run %q is not in the store", runID)
	}
	return r.RestoreCheckpoint(ctx, cp, events, onEffect...)
}

// RestoreCheckpoint makes a Session from a checkpoint.
func (r *Runtime) RestoreCheckpoint(ctx context.Context, cp Checkpoint, events event.Sink, onEffect ...func(key string, payload any)) (*Session, error) {
	a, err := r.agent(cp.AgentID)
	if err != nil {
		return nil, err
	}
	s := &Session{rt: r, agent: a, events: events, status: cp.Status, stage: cp.Stage,
		termination: cp.Termination, natural: cp.Natural}
	if s.events == nil {
		s.events = event.Discard{}
	}
	if len(onEffect) > 0 {
		s.onEffect = onEffect[0]
	}
	s.info.ID, s.info.ThreadID, s.info.AgentID, s.info.Step, s.info.Cwd = cp.RunID, cp.ThreadID, cp.AgentID, cp.Step, cp.Cwd
	th, ok, err := r.store.Thread(ctx, cp.ThreadID)
	if err != nil {
		return nil, &LoadError{Op: fmt.Sprintf("load thread %q", cp.ThreadID), Err: err}
	}
	if !ok {
		th = Thread{ID: cp.ThreadID}
	}
	// The run's own thread-scoped values (null: not set) win over the
	// thread's: they are what the run's acknowledged calls wrote, and reach
	// the thread only when the run waits or ends. Keys the run's generation
	// did not declare keep the thread's values.
	threadValues := th.Values
	if cp.ThreadValues != nil {
		threadValues = make(map[string]any, len(th.Values)+len(cp.ThreadValues))
		maps.Copy(threadValues, th.Values)
		maps.Copy(threadValues, cp.ThreadValues)
		// The run saves the thread on the revision it builds on, as it
		// would have without the restore: if another run saved the thread
		// since, this run's save is revision_conflict instead of writing
		// over the other's values and conversation. A save by this run
		// itself (its run_end, when a crash came before the run was
		// forgotten) is the base.
		if th.Revision != cp.ThreadRevision && th.SavedBy != cp.RunID {
			th.Revision = cp.ThreadRevision
		}
	}
	s.thread, s.threadSeen = th, ok
	// The first save after a restore is whole (s.saved is nil): the run's
	// generation, keys or values that no longer fit may differ from the
	// checkpoint's, and the restore cost as much anyway.
	s.seq = cp.Seq
	if err := s.open(threadValues, cp.Values, cp.Revision); err != nil {
		return nil, err
	}
	cp = cloneCheckpoint(cp)
	s.messages, s.hostTools = cp.Messages, cp.Tools
	if cp.Offered != nil {
		s.offered = cp.Offered
	}
	if s.tools, err = decodeStepTools(&cp); err != nil {
		return nil, err
	}
	for i := range cp.Calls {
		c := cp.Calls[i]
		s.calls = append(s.calls, &c)
	}
	return s, nil
}

// recent returns the last messages of msgs: at most n of them (any number
// when n <= 0) and at most size bytes as JSON (any size when size <= 0),
// starting after a tool result whose call was cut off: a conversation
// never opens with an answer to a question it no longer holds. However
// few messages or bytes are allowed, the last message stays, with the
// message of the calls it answers when it is a tool result: cut there,
// the conversation would be empty.
func recent(msgs []model.Message, n, size int) []model.Message {
	keep := len(msgs) - 1
	for keep > 0 && msgs[keep].Role == model.RoleTool {
		keep--
	}
	from := 0
	if n > 0 && len(msgs) > n {
		from = min(len(msgs)-n, keep)
	}
	if size > 0 {
		total := 0
		for i := len(msgs) - 1; i >= from; i-- {
			if total += messageSize(msgs[i], size-total); total > size {
				from = min(i+1, keep)
				break
			}
		}
	}
	if from <= 0 {
		return msgs
	}
	out := msgs[from:]
	for len(out) > 0 && out[0].Role == model.RoleTool {
		out = out[1:]
	}
	return out
}

// messageSize is about the bytes of m as JSON, counted no further than
// past limit.
func messageSize(m model.Message, limit int) int {
	n := 48 + value.StringSize(m.Role) + value.StringSize(m.Content) + value.StringSize(m.ToolCallID)
	for _, c := range m.ToolCalls {
		if n > limit {
			break
		}
		args, err := value.EncodedSize(c.Args, limit-n)
		if err != nil {
			args = limit // not encodable: it counts as all that is left
		}
		n += 32 + value.StringSize(c.ID) + value.StringSize(c.Name) + args
	}
	return n
}

// ThreadMessages returns a thread's saved conversation.
func (r *Runtime) ThreadMessages(ctx context.Context, threadID string) ([]model.Message, error) {
	th, _, err := r.store.Thread(ctx, threadID)
	return th.Messages, err
}
