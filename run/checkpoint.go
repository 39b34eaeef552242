package run

import (
	"context"
	"fmt"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/model"
)

// Checkpoint captures the run so another Session, in this process or after
// a restart, can continue it.
func (s *Session) Checkpoint() Checkpoint {
	snap := s.store.Snapshot()
	cp := Checkpoint{
		RunID: s.info.ID, ThreadID: s.info.ThreadID, AgentID: s.info.AgentID,
		Generation: s.rt.generation, Status: s.status, Stage: string(s.stage), Step: s.info.Step,
		Termination: s.termination, Natural: s.natural,
		Values:   snap.Values(func(k *state.Key) bool { return k.Scope == state.ScopeRun && !k.Transient }),
		Messages: cloneMessages(s.messages),
		Revision: snap.Revision(),
	}
	if s.offered != nil {
		cp.Offered = append([]string{}, s.offered...)
	}
	cp.Tools = s.hostTools
	for _, c := range s.calls {
		cp.Calls = append(cp.Calls, *c)
	}
	return cloneCheckpoint(cp)
}

// save writes the thread (its thread-scoped values, its conversation once
// the run is done, and the waiting marker) and, while the run waits, the run.
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
	for name, v := range s.store.Snapshot().Values(func(k *state.Key) bool { return k.Scope == state.ScopeThread && !k.Transient }) {
		values[name] = v
	}
	th.Values = values
	switch s.status {
	case Waiting:
		th.Waiting = s.info.ID
		if err := st.PutRun(ctx, s.Checkpoint()); err != nil {
			return fmt.Errorf("save run %s: %w", s.info.ID, err)
		}
	case Done:
		th.Waiting = ""
		th.Messages = cloneMessages(s.messages)
		if err := st.DeleteRun(ctx, s.info.ID); err != nil {
			return fmt.Errorf("forget run %s: %w", s.info.ID, err)
		}
	}
	rev, err := st.PutThread(ctx, th)
	if err != nil {
		return fmt.Errorf("save thread %s: %w", th.ID, err)
	}
	th.Revision = rev
	s.thread = th
	return nil
}

// Restore continues a run saved in the runtime's store (a waiting run, or a
// run a sidecar checkpointed), pinned to this runtime's generation.
func (r *Runtime) Restore(ctx context.Context, runID string, events event.Sink, onEffect ...func(key string, payload any)) (*Session, error) {
	cp, ok, err := r.store.Run(ctx, runID)
	if err != nil {
		return nil, fmt.Errorf("load run %s: %w", runID, err)
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
	s := &Session{rt: r, agent: a, events: events, status: cp.Status, stage: stage(cp.Stage),
		termination: cp.Termination, natural: cp.Natural}
	if s.events == nil {
		s.events = event.Discard{}
	}
	if len(onEffect) > 0 {
		s.onEffect = onEffect[0]
	}
	s.info.ID, s.info.ThreadID, s.info.AgentID, s.info.Step = cp.RunID, cp.ThreadID, cp.AgentID, cp.Step
	th, ok, err := r.store.Thread(ctx, cp.ThreadID)
	if err != nil {
		return nil, fmt.Errorf("load thread %q: %w", cp.ThreadID, err)
	}
	if !ok {
		th = Thread{ID: cp.ThreadID}
	}
	s.thread, s.threadSeen = th, ok
	if err := s.open(th.Values, cp.Values, cp.Revision); err != nil {
		return nil, err
	}
	cp = cloneCheckpoint(cp)
	s.messages, s.hostTools = cp.Messages, cp.Tools
	if cp.Offered != nil {
		s.offered = cp.Offered
	}
	for i := range cp.Calls {
		c := cp.Calls[i]
		s.calls = append(s.calls, &c)
	}
	return s, nil
}

// ThreadMessages returns a thread's saved conversation.
func (r *Runtime) ThreadMessages(ctx context.Context, threadID string) ([]model.Message, error) {
	th, _, err := r.store.Thread(ctx, threadID)
	return th.Messages, err
}
