package run

import (
	"context"
	"errors"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/model"
)

// Recorder receives a runtime's journal: a header when a run starts, one
// record per phase a host drives (what the phase received from outside and
// what the plugins decided), and a record when the run ends, the run's
// last (after the record of the phase that ended it). Record is
// called on the run's goroutine with a record made for it: it may keep
// rec, and must not modify it (another recorder may read it too).
type Recorder interface {
	Record(rec *journal.Record)
}

// WithJournal records every run of the runtime; hash names the plugin
// generation in the run headers.
func WithJournal(j Recorder, hash string) Option {
	return func(r *Runtime) error { r.journal, r.hash = j, hash; return nil }
}

// SetNow fixes the clock the session's next phases read (ctx:now() and
// ticket expiry); the zero time goes back to the runtime's clock. Replay
// and shadow generations use it to read the clock a recording read.
func (s *Session) SetNow(t time.Time) { s.fixedNow = t }

// stamp reads the clock once for the phase about to run.
func (s *Session) stamp() {
	if !s.fixedNow.IsZero() {
		s.now = s.fixedNow
		return
	}
	s.now = s.rt.clock()
}

// recordable reports whether a phase method that returned err ran (and is
// journaled): a refused call (a bad request, a phase out of order) or a
// failed save (the host retries it) changed nothing.
func recordable(err error) bool {
	if err == nil {
		return true
	}
	if isSaveError(err) {
		return false
	}
	switch errs.CodeOf(err) {
	case errs.BadRequest, errs.InvalidTransition, errs.UnknownResumeTarget, errs.PhaseOutOfOrder, errs.RevisionConflict:
		return false
	}
	var se *errs.Error
	return !errors.As(err, &se) || se.Path == ""
}

// journalPhase writes a phase record after a phase method ran; fill sets
// the input and what the phase decided.
func (s *Session) journalPhase(p string, err error, fill func(*journal.Slot)) {
	if s.rt.journal == nil {
		return
	}
	defer s.journalEnd()
	if !recordable(err) {
		return
	}
	var sl *journal.Slot
	if a, ok := s.rt.journal.(journal.Slots); ok {
		sl = a.Slot()
	} else {
		sl = journal.NewSlot()
	}
	r := &sl.Rec
	r.Rec, r.RunID, r.Phase, r.Step, r.Termination = journal.KindPhase, s.info.ID, p, s.info.Step, s.termination
	r.Save = s.seq
	sl.In.Now, sl.In.Cwd = s.now, s.info.Cwd
	if err != nil {
		r.Failed = err.Error()
	}
	if fill != nil {
		fill(sl)
	}
	s.rt.journal.Record(r)
}

// journalStart writes the run header and run_start's record.
func (s *Session) journalStart(o StartOptions, err error) {
	if s.rt.journal == nil {
		return
	}
	s.rt.journal.Record(&journal.Record{Rec: journal.KindRun, Format: journal.Format, RunID: s.info.ID,
		ThreadID: s.info.ThreadID, Agent: s.info.AgentID, TS: s.now,
		Generation: &journal.Generation{ID: s.rt.generation, Hash: s.rt.hash}, ConfigHash: s.rt.configHash,
		Plugins: s.rt.PluginOrder(s.info.AgentID)})
	s.journalPhase(journal.RunStart, err, func(sl *journal.Slot) {
		sl.In.Messages, sl.In.Tools, sl.In.Thread = o.Messages, o.Tools, &journal.Thread{Values: s.thread.Values}
	})
}

// journalGate writes the gate's decision for a call as it was applied.
func (s *Session) journalGate(call model.ToolCall, g *GateRecord) {
	if s.rt.journal == nil {
		return
	}
	s.journalPhase(journal.ToolGate, nil, func(sl *journal.Slot) {
		sl.SetCall(call)
		d := journal.Decision{CallID: call.ID, Tool: call.Name, Decision: g.Decision, Plugin: g.Plugin, Reason: g.Reason}
		if g.RewrittenBy != "" {
			d.Args = g.Args
		}
		sl.SetDecision(d)
	})
}

// Abandoned is the termination in the end record of a run its host forgot
// in the middle of a step (JournalAbandon).
const Abandoned = "abandoned"

// JournalAbandon writes the end record of a run that is not done and that
// its host forgets for good (deleted in the middle of a step, or let go of
// with nowhere to park it): nothing else would end it, and a reader of the
// journal (replay, a shadow policy) would follow it forever.
func (s *Session) JournalAbandon() {
	if s.rt.journal == nil || s.status == Done {
		return
	}
	s.stamp()
	s.rt.journal.Record(&journal.Record{Rec: journal.KindEnd, RunID: s.info.ID, Termination: Abandoned,
		Steps: s.info.Step, TS: s.now})
}

// journalEnd writes the record of a run that is done, once the phase that
// ended it is recorded: end is a run's last record, so a reader that
// forgets a run at its end has seen all of it. Phase methods that end a
// run without a phase record (a failing gate) call it too.
func (s *Session) journalEnd() {
	if s.rt.journal == nil || !s.endDue {
		return
	}
	s.endDue = false
	s.rt.journal.Record(&journal.Record{Rec: journal.KindEnd, RunID: s.info.ID, Termination: s.termination,
		Steps: s.info.Step, TS: s.now})
}

// placed lists context messages as a journal records them.
func journalContext(cms []contextMessage) []journal.Context {
	if len(cms) == 0 {
		return nil
	}
	out := make([]journal.Context, len(cms))
	for i, c := range cms {
		out[i] = journal.Context{Key: c.key, Target: c.target, Role: c.role, Content: c.content}
	}
	return out
}

func toolNames(tools []model.ToolSpec) []string {
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = t.Name
	}
	return out
}

// Derive returns a copy of the runtime changed by opts (a store or a
// journal of its own), sharing the plugins, agents and tools: replay and
// shadow generations run recorded inputs on their own copy of the state.
func (r *Runtime) Derive(opts ...Option) (*Runtime, error) {
	cp := *r
	for _, o := range opts {
		if err := o(&cp); err != nil {
			return nil, err
		}
	}
	return &cp, nil
}

// Probe decides about a call of this step as the gate would, with the
// given arguments, and records nothing: replay uses it to learn whether a
// decision depends on a field the journal masked.
func (s *Session) Probe(ctx context.Context, call model.ToolCall) (Decision, error) {
	c := s.call(call.ID)
	if c == nil {
		return Decision{}, errs.Field("$.call.id", "probe: the model made no tool call %q in this step", call.ID)
	}
	tmp := *c
	tmp.Call.Args = call.Args
	tmp.Resume = c.Resume
	g, err := s.evaluate(ctx, &tmp)
	if err != nil {
		return Decision{}, err
	}
	return g.decision(), nil
}
