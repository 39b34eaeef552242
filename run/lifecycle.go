package run

import (
	"context"
	"encoding/binary"
	"fmt"
	"sync"

	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/model"
)

// StepStart opens the next step.
func (s *Session) StepStart(ctx context.Context) (o Outcome, err error) {
	s.stamp()
	if s.rt.journal != nil {
		defer func() { s.journalPhase(journal.StepStart, err, nil) }()
	}
	if err := s.expect(phase.StepStart, StageRunStarted, StageStepEnded); err != nil {
		return s.outcome(), err
	}
	s.info.Step++
	s.stage = StageStepStarted
	s.setCalls(nil)
	s.offered, s.tools, s.natural = nil, nil, false
	s.events.Emit(event.StepStart{Step: s.info.Step})
	if err := s.record(ctx, phase.StepStart, KeyRun, s.runRecord()); err != nil {
		return s.outcome(), err
	}
	if err := s.phase(ctx, phase.StepStart, plugin.Input{}); err != nil {
		return s.outcome(), err
	}
	s.checkStop()
	return s.outcome(), nil
}

// runRecord is the value of __runtime.run as the run stands now, measured
// now and built when a plugin reads it.
func (s *Session) runRecord() any {
	r := &runRecord{id: s.info.ID, thread: s.info.ThreadID, agent: s.info.AgentID, status: string(s.status),
		step: float64(s.info.Step), termination: s.termination, generation: s.rt.generation}
	b := recordBuilder{} // measured, not built
	r.fill(&b)
	r.size = b.size()
	return r
}

// runRecord is a state.Lazy: __runtime.run's fields, and its map once read.
type runRecord struct {
	id, thread, agent, status, termination, generation string
	step                                               float64
	size                                               int
	once                                               sync.Once
	m                                                  map[string]any
}

// fill puts the fields into b (or only measures them when b.m is nil).
func (r *runRecord) fill(b *recordBuilder) {
	b.str("id", r.id)
	b.str("thread_id", r.thread)
	b.str("agent_id", r.agent)
	b.str("status", r.status)
	b.num("step", r.step)
	b.str("termination", r.termination)
	b.str("generation", r.generation)
}

func (r *runRecord) Value() any {
	r.once.Do(func() {
		b := recordBuilder{m: make(map[string]any, 7)}
		r.fill(&b)
		r.m = b.m
	})
	return r.m
}

func (r *runRecord) EncodedSize() int { return r.size }

// appendBody appends Value() in the memory store's body form without
// building it (see Session.freeze).
func (r *runRecord) appendBody(b []byte) ([]byte, bool) {
	count := recordBuilder{nosize: true}
	r.fill(&count)
	e := recordBuilder{enc: true, nosize: true, b: binary.AppendUvarint(append(b, tagObject), uint64(count.k))}
	r.fill(&e)
	return e.b, !e.bad
}

// record commits one runtime-owned value.
func (s *Session) record(ctx context.Context, p phase.Phase, key string, v any) error {
	cmd := command.Command{Plugin: "runtime"}
	cmd.UpdateValue(key, v)
	if err := s.x.Apply(ctx, p, s.input(), &cmd); err != nil {
		return s.fail(ctx, err)
	}
	return nil
}

// StepEnd closes the step. With suspended calls the run waits instead: the
// step stays open until they are resumed or cancelled.
func (s *Session) StepEnd(ctx context.Context) (o Outcome, err error) {
	s.stamp()
	if s.rt.journal != nil {
		defer func() {
			s.journalPhase(journal.StepEnd, err, func(sl *journal.Slot) { sl.Rec.Continued = len(o.Continued) })
		}()
	}
	if err := s.expect(phase.StepEnd, StageInferred); err != nil {
		return s.outcome(), err
	}
	for _, c := range s.calls {
		if !c.Status.Terminal() && c.Status != CallSuspended {
			return s.outcome(), invalid("step_end: tool call %s is %s; finish it first (tool_gate, before_tool_execute, after_tool_execute)", c.Call.ID, c.Status)
		}
	}
	if s.SuspendedCount() > 0 {
		return s.wait(ctx)
	}
	if err := s.phase(ctx, phase.StepEnd, plugin.Input{}); err != nil {
		return s.outcome(), err
	}
	s.checkStop()
	added, err := s.settleContinue(ctx)
	if err != nil {
		return s.outcome(), err
	}
	s.stage = StageStepEnded
	s.events.Emit(event.StepEnd{Step: s.info.Step})
	if s.termination == "" && s.natural {
		s.termination = Termination{Kind: Natural}.String()
	}
	if s.termination == "" && s.info.Step >= s.agent.MaxSteps {
		s.termination = MaxSteps.String()
	}
	o = s.outcome()
	o.Continued = added
	return o, nil
}

func (s *Session) wait(ctx context.Context) (Outcome, error) {
	if !allowed(runMoves, s.status, Waiting) {
		return s.outcome(), invalid("the run cannot wait from %s", s.status)
	}
	u := s.mark()
	s.status = Waiting
	s.termination = Termination{Kind: Suspended}.String()
	if err := s.record(ctx, phase.StepEnd, KeyRun, s.runRecord()); err != nil {
		return s.outcome(), err
	}
	if err := s.save(ctx); err != nil {
		// Nobody was told the run waits: it is as it was, and step_end
		// can be called again.
		s.rollback(u)
		return s.outcome(), err
	}
	s.events.Emit(event.RunFinish{Termination: Termination{Kind: Suspended}.String()})
	return s.outcome(), nil
}

// RunEnd closes the run: queued actions are dropped except run_end's, the
// run_end hooks run, thread state is saved and the run is done. If the
// thread cannot be saved the error is a *SaveError and the session is as it
// was before the call (a retry runs run_end again).
func (s *Session) RunEnd(ctx context.Context) (o Outcome, err error) {
	s.stamp()
	if s.rt.journal != nil {
		defer func() { s.journalPhase(journal.RunEnd, err, nil) }()
	}
	u := s.mark()
	o, err = s.runEnd(ctx)
	if isSaveError(err) {
		s.rollback(u)
		o = s.outcome()
	}
	return o, err
}

func (s *Session) runEnd(ctx context.Context) (Outcome, error) {
	if s.status == Done {
		return s.outcome(), invalid("run_end: the run is done (%s)", s.termination)
	}
	if s.status == Waiting {
		return s.outcome(), invalid("run_end: the run is waiting for decisions on %s; resume or cancel them first", s.suspendedIDs())
	}
	if s.termination == "" {
		return s.outcome(), invalid("run_end: the run has not ended; it ends when the model answers without tool calls, a plugin stops it, or a call is blocked")
	}
	if s.Ended().Kind == Cancelled {
		ctx = context.WithoutCancel(ctx)
	}
	if err := s.x.DropPending(ctx, phase.RunEnd); err != nil {
		return s.outcome(), s.fail(ctx, err)
	}
	if err := s.record(ctx, phase.RunEnd, KeyRun, s.runRecord()); err != nil {
		return s.outcome(), err
	}
	if err := s.phase(ctx, phase.RunEnd, plugin.Input{}); err != nil {
		return s.outcome(), err
	}
	if err := s.finish(ctx); err != nil {
		return s.outcome(), err
	}
	return s.outcome(), nil
}

// finish marks the run done and saves the thread. A failed save is logged
// and returned; RunEnd then puts the session back as it was.
func (s *Session) finish(ctx context.Context) error {
	s.status = Done
	s.stage = StageRunEnded
	if err := s.save(ctx); err != nil {
		s.rt.log.Error("saving the thread failed", "thread_id", s.info.ThreadID, "run_id", s.info.ID, "error", err.Error())
		return err
	}
	// The end record waits for the record of the phase that ended the run,
	// so that it is the run's last record (journalEnd); it is due before
	// the event, so a sink that panics does not lose it.
	s.endDue = true
	s.events.Emit(event.RunFinish{Termination: s.termination})
	return nil
}

// Release gives up the run's hold on its thread, for a run dropped in the
// middle of a step (the sidecar's DELETE): its thread state is not saved,
// but a thread that names the run as waiting (the run waited and was
// resumed) stops naming it, so that the thread's next run starts rather
// than finding this one lost. Call it once the run is out of the store: a
// crash between the two leaves the thread naming a run that is gone,
// which the next Start reports (run_lost) and releases.
func (s *Session) Release(ctx context.Context) error {
	if s.thread.Waiting != s.info.ID {
		return nil
	}
	th := s.thread
	th.ID, th.Waiting = s.info.ThreadID, ""
	rev, err := s.rt.store.PutThread(ctx, th)
	if err != nil {
		return &SaveError{Op: fmt.Sprintf("release thread %q from run %s", th.ID, s.info.ID), Err: err}
	}
	th.Revision = rev
	s.thread = th
	return nil
}

// Cancel ends a waiting run: its suspended calls are cancelled and run_end
// runs. The termination is "cancelled". If the thread cannot be saved the
// session is as it was before the call, still waiting.
func (s *Session) Cancel(ctx context.Context, reason string) (o Outcome, err error) {
	s.stamp()
	if s.rt.journal != nil {
		defer func() { s.journalPhase(journal.Cancel, err, func(sl *journal.Slot) { sl.In.Reason = reason }) }()
	}
	if s.status != Waiting {
		return s.outcome(), invalid("cancel: only a waiting run can be cancelled; this one is %s", s.status)
	}
	u := s.mark()
	for _, c := range s.calls {
		if c.Status == CallSuspended {
			s.cancelCall(c, reason)
		}
	}
	s.status = Running
	s.termination = Termination{Kind: Cancelled}.String()
	if err := s.recordCalls(ctx, phase.RunEnd); err != nil {
		return s.outcome(), err
	}
	o, err = s.runEnd(ctx)
	if isSaveError(err) {
		s.rollback(u)
		o = s.outcome()
	}
	return o, err
}

func (s *Session) cancelCall(c *CallRecord, reason string) {
	s.setStatus(c, CallCancelled)
	msg := "the call was cancelled"
	switch reason {
	case "":
	case expiredReason:
		msg = "no decision came before the approval expired, so the call was cancelled"
	default:
		msg += ": " + reason
	}
	r := model.Error(msg)
	c.Result = &r
	s.messages = append(s.messages, ToolMessage(c.Call, r))
	s.callDone(c, CallCancelled, &r)
}

// EndUninferred ends a run whose open inference the host will never make:
// a coding agent's session start, where plugins place context in
// before_inference but no model answers. The step ends without
// after_inference or step_end (no answer was made, so no hook is told one
// was), the run ends "natural", and only RunEnd may follow.
func (s *Session) EndUninferred(ctx context.Context) (Outcome, error) {
	s.stamp()
	if err := s.expect(phase.AfterInference, StageInferenceReady); err != nil {
		return s.outcome(), err
	}
	defer s.journalPhase(journal.EndUninferred, nil, nil)
	s.stage = StageStepEnded
	s.termination = Termination{Kind: Natural}.String()
	s.events.Emit(event.StepEnd{Step: s.info.Step})
	return s.outcome(), nil
}
