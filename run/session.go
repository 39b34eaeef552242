package run

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"
	"unsafe"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/model"
)

// Status is a run's status: running -> waiting | done; waiting -> running |
// done; done is final.
type Status string

// Run statuses.
const (
	Running Status = "running"
	Waiting Status = "waiting"
	Done    Status = "done"
)

// CallStatus is a tool call's status: new -> running -> succeeded | failed |
// suspended | cancelled; suspended -> resuming | cancelled; resuming ->
// running | suspended | succeeded | failed | cancelled.
type CallStatus string

// Tool-call statuses.
const (
	CallNew       CallStatus = "new"
	CallRunning   CallStatus = "running"
	CallSucceeded CallStatus = "succeeded"
	CallFailed    CallStatus = "failed"
	CallSuspended CallStatus = "suspended"
	CallResuming  CallStatus = "resuming"
	CallCancelled CallStatus = "cancelled"
)

var callMoves = map[CallStatus][]CallStatus{
	CallNew:       {CallRunning},
	CallRunning:   {CallSucceeded, CallFailed, CallSuspended, CallCancelled},
	CallSuspended: {CallResuming, CallCancelled},
	CallResuming:  {CallRunning, CallSuspended, CallSucceeded, CallFailed, CallCancelled},
}

var runMoves = map[Status][]Status{
	Running: {Waiting, Done},
	Waiting: {Running, Done},
}

func allowed[T comparable](moves map[T][]T, from, to T) bool {
	for _, t := range moves[from] {
		if t == to {
			return true
		}
	}
	return false
}

// Terminal reports whether a call status never changes again.
func (c CallStatus) Terminal() bool {
	return c == CallSucceeded || c == CallFailed || c == CallCancelled
}

// GateRecord is the gate's decision for a call, kept so that gating the same
// call again (a client retry) returns the same answer and changes nothing.
type GateRecord struct {
	Decision    gate.Kind         `json:"decision"` // Allow for a rewrite too (RewrittenBy says so)
	Plugin      string            `json:"plugin,omitempty"`
	Reason      string            `json:"reason,omitempty"`
	Ticket      *gate.Ticket      `json:"ticket,omitempty"`
	Result      *model.ToolResult `json:"result,omitempty"`
	Args        map[string]any    `json:"args"`
	RewrittenBy string            `json:"rewritten_by,omitempty"`
}

// ResumeRecord is the decision a suspended call was resumed or cancelled with.
type ResumeRecord struct {
	Action   string `json:"action"`
	Result   any    `json:"result,omitempty"`
	Reason   string `json:"reason,omitempty"`
	TicketID string `json:"ticket_id,omitempty"`
	Mode     string `json:"mode,omitempty"`
}

// Outcome is what a phase method reports besides errors.
type Outcome struct {
	// Termination is set once the run is ending (or waiting: "suspended").
	Termination string
	Revision    uint64
	// Continued, from StepEnd, are the messages runtime.continue added to
	// the conversation: the run goes on with another step.
	Continued []model.Message
	// Context, from BeforeInference, are the context messages plugins
	// placed in the request (a host that cannot send the request itself,
	// a hook adapter, passes them on).
	Context []model.Message
}

// Stage is where a run is within its phases: the phase method that may
// come next follows from it (a checkpoint keeps it).
type Stage string

// Stages, in the order a step goes through them.
const (
	StageRunStarted     Stage = "run_started"     // run_start ran; step_start is next
	StageStepStarted    Stage = "step_started"    // before_inference is next
	StageInferenceReady Stage = "inference_ready" // the request is ready; after_inference is next
	StageInferred       Stage = "inferred"        // the model answered; the calls' phases, then step_end
	StageStepEnded      Stage = "step_ended"      // step_start, or run_end once the run ends
	StageRunEnded       Stage = "run_ended"
)

// Session is one run, driven one phase at a time by a host: the autonomous
// loop, the sidecar, or an embedding program. A Session is not safe for
// concurrent use; drivers serialize calls on one run.
type Session struct {
	rt     *Runtime
	agent  *agentRT
	x      *engine.Exec // nil once a done run is compacted
	store  *state.Store // nil once a done run is compacted: see st
	info   plugin.RunInfo
	events event.Sink

	status      Status
	stage       Stage
	termination string
	// The flags sit together: a Session is a sidecar's largest object per
	// run, and padding after each would take it past its size class.
	natural bool
	aborted bool     // a hook error ended the run: run_end does not run
	expired []string // calls settled by expiry since the session was made

	messages []model.Message
	offered  []string         // tool names offered in this step; nil: not restricted
	tools    []model.ToolSpec // the step's tools (candidates, then offered)
	calls    []*CallRecord
	// index maps the step's call ids to their position in calls; nil
	// while not built (a restored session builds it on first use).
	index map[string]int
	// callsGen counts the times calls was replaced, so the mirrored
	// __runtime.tool_calls is derived only from a log of these calls.
	callsGen uint64
	// nSuspended counts the suspended calls while suspendedKnown.
	nSuspended     int
	suspendedKnown bool
	// hostTools are the tools the host offers unless a step names others
	// (the sidecar's creation tools); kept in the checkpoint.
	hostTools []model.ToolSpec

	thread     Thread
	threadSeen bool
	handOff    bool // see SetHandOff
	onEffect   func(key string, payload any)

	// seq is the Seq of the run's last save (or of the checkpoint it was
	// restored from); saved tracks what changed since (see SaveRun).
	seq   uint64
	saved *savedRun

	// now is the clock the current phase reads (stamp); fixedNow, when
	// set, replaces the runtime's clock (SetNow).
	now, fixedNow time.Time
	// placed receives before_inference's context messages while the
	// journal records them.
	placed *[]journal.Context
	// endDue: the run is done and its end record is not written yet; it
	// follows the record of the phase that ended the run (journalEnd).
	endDue bool

	// frozen is a compacted done run's state (every key's value, as State
	// returns it) in the memory store's pointer-free form, at revision
	// frozenRev; store and x are nil then (see Compact).
	frozen    []byte
	frozenRev uint64
}

// StartOptions start a run.
type StartOptions struct {
	Agent    string
	ThreadID string // empty: a new thread
	RunID    string // empty: a fresh id
	Messages []model.Message
	// Tools are the tools the host offers in every step unless it names
	// others (HostTools returns them, also after a restore).
	Tools  []model.ToolSpec
	Events event.Sink
	// OnEffect, when set, sees each effect as it is dispatched.
	OnEffect func(key string, payload any)
	// Now, when set, is the clock the run reads (see SetNow).
	Now time.Time
	// Cwd is the agent's working directory, as SetCwd sets it.
	Cwd string
}

// TransformsResults reports whether the run's plugins review tool results
// (result transforms: a redaction, say) before the model reads them.
func (s *Session) TransformsResults() bool { return len(s.agent.view.ResultTransforms()) > 0 }

// HostTools returns the tools given in StartOptions.Tools. The caller must
// not modify them.
func (s *Session) HostTools() []model.ToolSpec { return s.hostTools }

// Offered returns the names of the tools the open step offers (nil: not
// restricted, or no step open). Read only.
func (s *Session) Offered() []string { return s.offered }

// Start begins a run: it loads the thread's state and runs run_start.
func (r *Runtime) Start(ctx context.Context, o StartOptions) (*Session, Outcome, error) {
	a, err := r.agent(o.Agent)
	if err != nil {
		return nil, Outcome{}, err
	}
	if err := checkMessages("$.messages", o.Messages); err != nil {
		return nil, Outcome{}, err
	}
	if err := checkTools("$.tools", o.Tools); err != nil {
		return nil, Outcome{}, err
	}
	s := &Session{rt: r, agent: a, events: o.Events, status: Running, stage: StageRunStarted, onEffect: o.OnEffect}
	if s.events == nil {
		s.events = event.Discard{}
	}
	s.info = plugin.RunInfo{ID: o.RunID, ThreadID: o.ThreadID, AgentID: a.ID, Cwd: o.Cwd}
	s.fixedNow = o.Now
	s.stamp()
	if s.info.ID == "" {
		s.info.ID = r.newID("run")
	}
	if s.info.ThreadID == "" {
		s.info.ThreadID = r.newID("thread")
	}
	th, ok, err := r.store.Thread(ctx, s.info.ThreadID)
	if err != nil {
		return nil, Outcome{}, &LoadError{Op: fmt.Sprintf("load thread %q", s.info.ThreadID), Err: err}
	}
	if ok && th.Waiting != "" {
		return nil, Outcome{}, r.waitingOn(ctx, th)
	}
	if !ok {
		th = Thread{ID: s.info.ThreadID}
	}
	s.thread, s.threadSeen = th, ok
	if err := s.open(th.Values, nil, 0); err != nil {
		return nil, Outcome{}, err
	}
	s.messages = cloneMessages(o.Messages)
	s.hostTools = cloneTools(o.Tools)
	prompt := ""
	for i := len(s.messages) - 1; i >= 0; i-- {
		if s.messages[i].Role == model.RoleUser {
			prompt = s.messages[i].Content
			break
		}
	}
	s.events.Emit(event.RunStart{RunID: s.info.ID, ThreadID: s.info.ThreadID, Generation: r.generation, Agent: s.info.AgentID, Prompt: prompt})
	err = s.phase(ctx, phase.RunStart, plugin.Input{})
	if err == nil {
		s.checkStop()
	}
	s.journalStart(o, err)
	return s, s.outcome(), err
}

// waitingOn is why a run cannot start on th, which names a run waiting
// for decisions: invalid_transition while the store has that run, and
// run_lost once it does not. A waiting run is saved before its thread
// names it and forgotten only after its thread stops naming it, so a
// thread naming a run the store lacks can only mean the run was lost (a
// checkpoint set aside as corrupt does not come back): nothing can resume
// or cancel it any more, and the thread is released (a save on the
// revision read, so a run that changed the thread since wins), so the
// next Start runs. The error says so once, since the run's pending
// decisions are gone.
func (r *Runtime) waitingOn(ctx context.Context, th Thread) error {
	id := th.Waiting
	_, ok, err := r.store.Run(ctx, id)
	if err != nil {
		return &LoadError{Op: fmt.Sprintf("load run %s, which thread %q waits on", id, th.ID), Err: err}
	}
	if ok {
		return errs.New(errs.InvalidTransition,
			"thread %q has run %s waiting for decisions; resume it or cancel it before starting another", th.ID, id)
	}
	what := "which is no longer in the store (deleted outside awaken-lua?)"
	if sa, ok := r.store.(SetAsider); ok {
		where, found, err := sa.SetAsideRun(ctx, id)
		if err != nil {
			return &LoadError{Op: fmt.Sprintf("look for run %s, which thread %q waits on", id, th.ID), Err: err}
		}
		if found {
			what = fmt.Sprintf("whose checkpoint the store found corrupt and set aside as %s (kept for repair)", where)
		}
	}
	released := th
	released.Waiting = ""
	if _, err := r.store.PutThread(ctx, released); err != nil {
		return &SaveError{Op: fmt.Sprintf("release thread %q from lost run %s", th.ID, id), Err: err}
	}
	r.log.Warn("a thread waited on a run the store no longer has; the thread is released and the run's pending decisions are lost",
		"thread_id", th.ID, "run_id", id, "run", what)
	return errs.New(errs.RunLost, "thread %q was waiting for decisions on run %s, %s: its pending decisions are lost; "+
		"the thread is released, start the run again", th.ID, id, what)
}

// open makes the run's store at revision rev from thread values
// (thread-scoped keys) and run values (run-scoped keys of a checkpoint), and
// binds the engine.
func (s *Session) open(threadValues, runValues map[string]any, rev uint64) error {
	reg := s.rt.set.Registry()
	seed := map[string]any{}
	for _, k := range reg.Keys() {
		src := runValues
		if k.Scope == state.ScopeThread {
			src = threadValues
		}
		if v, ok := src[k.Name]; ok && !k.Transient {
			seed[k.Name] = v
		}
	}
	st, misfits, err := state.Open(reg, seed, rev, s.rt.eng.StateLimits())
	if err != nil {
		return fmt.Errorf("thread %q, run %s: %w", s.info.ThreadID, s.info.ID, err)
	}
	for _, m := range misfits {
		s.rt.log.Warn("a saved value no longer fits its key's schema; it is kept aside and the key starts from its default",
			"thread_id", s.info.ThreadID, "key", m.Key, "error", m.Err.Error())
		if s.thread.Aside == nil {
			s.thread.Aside = map[string]any{}
		}
		s.thread.Aside[m.Key] = m.Value
	}
	x, err := s.rt.eng.Exec(engine.ExecConfig{Store: st, View: s.agent.view, Configs: s.agent.Configs,
		Events: s.events, Log: s.rt.log, OnEffect: s.onEffect, NoAudit: s.rt.noAudit})
	if err != nil {
		return err
	}
	s.store, s.x = st, x
	return nil
}

// RunID returns the run's id.
func (s *Session) RunID() string { return s.info.ID }

// ThreadID returns the run's thread id.
func (s *Session) ThreadID() string { return s.info.ThreadID }

// AgentID returns the agent's id.
func (s *Session) AgentID() string { return s.info.AgentID }

// SetCwd sets the working directory the agent reported, which hooks read
// as ctx.run.cwd from the next phase on ("": none). A hook adapter sets it
// from each event before the phases the event drives; the checkpoint keeps
// it, so a call resumed later is gated with the directory it was made in,
// and the journal records it with every phase, so replay reads the same.
func (s *Session) SetCwd(dir string) {
	if s.info.Cwd != dir { // an event repeats it: keep the string held already
		s.info.Cwd = dir
	}
}

// Cwd returns the working directory SetCwd set.
func (s *Session) Cwd() string { return s.info.Cwd }

// Step returns the current step number (0 before the first step).
func (s *Session) Step() int { return s.info.Step }

// Status returns the run's status.
func (s *Session) Status() Status { return s.status }

// Stage names where the run is within its phases (the Checkpoint's
// Stage), without copying the run as Checkpoint does.
func (s *Session) Stage() Stage { return s.stage }

// Saves counts the run's saves (the Checkpoint.Seq of its last save, or of
// the checkpoint it was restored from).
func (s *Session) Saves() uint64 { return s.seq }

// Termination returns the termination string, empty while running.
func (s *Session) Termination() string { return s.termination }

// Generation names the plugin generation the run is pinned to.
func (s *Session) Generation() string { return s.rt.generation }

// Runtime returns the runtime the run is pinned to.
func (s *Session) Runtime() *Runtime { return s.rt }

// Snapshot returns the run's current state.
func (s *Session) Snapshot() *state.Snapshot { return s.st().Snapshot() }

// Revision returns the run's state revision.
func (s *Session) Revision() uint64 {
	if s.store == nil {
		return s.frozenRev
	}
	return s.store.Revision()
}

// st returns the run's state store. A compacted done run has none: the
// rare read that needs one (a snapshot, a checkpoint) gets it back from
// the frozen values, and the session keeps it from then on.
func (s *Session) st() *state.Store {
	if s.store == nil {
		s.store, _ = state.NewStoreAt(s.rt.set.Registry(), s.frozenState(), s.frozenRev)
	}
	return s.store
}

// bodyAppender is a state.Lazy of the runtime's own (the step's call log,
// the run record) that appends its Value() in the memory store's body form
// without building it.
type bodyAppender interface {
	appendBody(b []byte) ([]byte, bool)
}

// freeze encodes the state as State returns it (Snapshot.Values) in the
// memory store's body form, the runtime's own lazy values straight from
// their records (building their maps first would cost a done run more than
// the rest of its end); false when a value is one that form cannot keep.
func (s *Session) freeze(snap *state.Snapshot) ([]byte, bool) {
	keys := s.rt.set.Registry().Keys()
	n := 0
	for _, k := range keys {
		if snap.Has(k) {
			n++
		}
	}
	// The body form of a value is about as long as its JSON (Size) or
	// shorter, but for a float's 9 bytes: one allocation, seldom two.
	b := binary.AppendUvarint(append(make([]byte, 0, snap.Size()+8*n+16), tagObject), uint64(n))
	for _, k := range keys {
		v := snap.Raw(k)
		if v == nil {
			continue
		}
		b = appendString(b, k.Name)
		if lz, ok := v.(bodyAppender); ok {
			if b, ok = lz.appendBody(b); !ok {
				return nil, false
			}
			continue
		}
		if lz, ok := v.(state.Lazy); ok {
			v = lz.Value()
		}
		if _, ok := valueSize(v); !ok {
			return nil, false
		}
		b = appendValue(b, v)
	}
	return b, true
}

// frozenState decodes a compacted run's state: a fresh map whose strings
// are views of frozen, which is never written once made.
func (s *Session) frozenState() map[string]any {
	r := bodyReader{b: s.frozen, s: unsafe.String(unsafe.SliceData(s.frozen), len(s.frozen))}
	m := r.object()
	if r.err != nil {
		// Only a bug gets here: Compact wrote the bytes itself.
		s.rt.log.Error("a compacted run's state does not read back (a bug)", "run_id", s.info.ID, "error", r.err.Error())
	}
	return m
}

// Messages returns the conversation as the session knows it.
func (s *Session) Messages() []model.Message { return cloneMessages(s.messages) }

// Calls returns the tool calls of the current step.
func (s *Session) Calls() []CallRecord {
	out := make([]CallRecord, len(s.calls))
	for i, c := range s.calls {
		out[i] = *c
	}
	return out
}

// EachCall yields the tool calls of the current step as Calls returns
// them, without copying the list; the loop must not move the session.
func (s *Session) EachCall() iter.Seq[CallRecord] {
	return func(yield func(CallRecord) bool) {
		for _, c := range s.calls {
			if !yield(*c) {
				return
			}
		}
	}
}

// SetHandOff says whether the host hands over the responses and tool
// calls it passes (their argument maps included) and never changes them
// afterwards, so the session keeps them without a copy. The sidecar
// decodes each request afresh; a host that reuses its values (a scripted
// model's) must leave it off, the default.
func (s *Session) SetHandOff(on bool) { s.handOff = on }

// NumCalls is the number of tool calls of the current step.
func (s *Session) NumCalls() int { return len(s.calls) }

// Call returns the call of this step with the given id.
func (s *Session) Call(id string) (CallRecord, bool) {
	c := s.call(id)
	if c == nil {
		return CallRecord{}, false
	}
	return *c, true
}

// SuspendedCount is the number of suspended calls, in O(1).
func (s *Session) SuspendedCount() int {
	if !s.suspendedKnown {
		s.nSuspended = 0
		for _, c := range s.calls {
			if c.Status == CallSuspended {
				s.nSuspended++
			}
		}
		s.suspendedKnown = true
	}
	return s.nSuspended
}

// Suspended lists the tickets of suspended calls.
func (s *Session) Suspended() []gate.Ticket {
	if s.SuspendedCount() == 0 {
		return nil
	}
	var out []gate.Ticket
	for _, c := range s.calls {
		if c.Status == CallSuspended && c.Gate != nil && c.Gate.Ticket != nil {
			out = append(out, *c.Gate.Ticket)
		}
	}
	return out
}

// State returns every key with a value, by name.
func (s *Session) State() map[string]any {
	if s.store == nil {
		return s.frozenState()
	}
	return s.store.Snapshot().Values(nil)
}

// PendingActions lists the actions queued for later phases, oldest first
// (none once a done run is compacted).
func (s *Session) PendingActions() []engine.QueuedAction {
	if s.x == nil {
		return nil
	}
	return s.x.PendingActions()
}

// FailedActions lists the actions that failed (the dead letters), oldest
// first (none once a done run is compacted).
func (s *Session) FailedActions() []engine.DeadLetter {
	if s.x == nil {
		return nil
	}
	return s.x.FailedActions()
}

func (s *Session) outcome() Outcome {
	return Outcome{Termination: s.termination, Revision: s.Revision()}
}

func (s *Session) input() plugin.Input {
	info := s.info
	info.Termination = s.termination
	return plugin.Input{Run: info, Messages: s.messages, Tools: s.tools, Now: s.now}
}

func invalid(format string, args ...any) error {
	return errs.New(errs.InvalidTransition, format, args...)
}

// expect checks that the run may enter phase p from the current stage.
func (s *Session) expect(p phase.Phase, stages ...Stage) error {
	switch s.status {
	case Done:
		return invalid("%s: the run is done (%s)", p, s.termination)
	case Waiting:
		return invalid("%s: the run is waiting for decisions on %s; resume it first", p, s.suspendedIDs())
	}
	if s.termination != "" {
		return invalid("%s: the run is ending (%s); only run_end may follow", p, s.termination)
	}
	for _, st := range stages {
		if s.stage == st {
			return nil
		}
	}
	last, next := s.stage.position()
	return invalid("%s is out of order: the last phase was %s, so %s comes next "+
		"(a step: step_start, before_inference, after_inference, then tool_gate, before_tool_execute and after_tool_execute for each tool call, then step_end)",
		p, last, next)
}

// position says a stage in the API's words: the phase that ran last and
// what may come next (the stage names are internal).
func (st Stage) position() (last, next string) {
	switch st {
	case StageRunStarted:
		return "run_start", "step_start"
	case StageStepStarted:
		return "step_start", "before_inference"
	case StageInferenceReady:
		return "before_inference", "after_inference"
	case StageInferred:
		return "after_inference", "a tool call's tool_gate (or step_end when the calls are done)"
	case StageStepEnded:
		return "step_end", "step_start"
	case StageRunEnded:
		return "run_end", "nothing"
	}
	return string(st), "step_start"
}

func (s *Session) suspendedIDs() string {
	var ids []string
	for _, c := range s.calls {
		if c.Status == CallSuspended {
			ids = append(ids, c.Call.ID)
		}
	}
	return strings.Join(ids, ", ")
}

// phase runs p's hooks and actions; a hook error ends the run
// "error:<code>" without run_end, and cancellation ends it "cancelled".
func (s *Session) phase(ctx context.Context, p phase.Phase, in plugin.Input) error {
	base := s.input()
	base.Tool, base.Response = in.Tool, in.Response
	if err := s.x.Phase(ctx, p, base); err != nil {
		return s.fail(ctx, err)
	}
	return nil
}

// fail ends the run for an error from a phase.
func (s *Session) fail(ctx context.Context, err error) error {
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		s.termination = Termination{Kind: Cancelled}.String()
		return err
	}
	code := errs.CodeOf(err)
	if code == "" {
		code = errs.HookFailed
	}
	s.termination = Termination{Kind: Errored, Detail: string(code)}.String()
	s.aborted = true
	if s.finish(context.WithoutCancel(ctx)) != nil {
		// Nothing retries a failed run (RunEnd refuses a done one): its
		// end is due though its thread could not be saved.
		s.endDue = true
	}
	return err
}

// checkStop turns a plugin's stop into the termination.
func (s *Session) checkStop() {
	if s.termination != "" {
		return
	}
	if code, _, ok := s.x.Stopped(); ok {
		s.termination = Termination{Kind: Stopped, Detail: code}.String()
	}
}

// Compact lets a finished run's session go of what only its phases read:
// the run's conversation, the copy of the thread's conversation it
// started from (the store keeps the thread), its last step's calls and
// tools, and its engine and state store, the state kept as one
// pointer-free byte slice. A host that keeps a done session to answer
// reads (the sidecar keeps a finished run readable for a while) calls it
// as the run ends, so that what it holds does not grow with the
// conversations of the runs its sessions finished, and so that the
// collector, which traces every held object on each cycle, has little to
// trace in it (docs/design.md, "Stores"). Status, stage, step, revision,
// state, termination, the saves and the other reads a done run answers
// stay as they were; Messages and Calls are then empty, and so are
// PendingActions and FailedActions. It does nothing to a run that is not
// done.
func (s *Session) Compact() {
	if s.status != Done {
		return
	}
	if s.store != nil {
		snap := s.store.Snapshot()
		if b, ok := s.freeze(snap); ok {
			s.frozen, s.frozenRev = b, snap.Revision()
			s.store, s.x = nil, nil
		}
	}
	s.messages, s.offered, s.tools, s.hostTools = nil, nil, nil, nil
	s.calls, s.index = nil, nil
	s.callsGen++
	s.nSuspended, s.suspendedKnown = 0, true
	if s.thread.Waiting == "" {
		// Release writes the thread only while it names this run.
		s.thread.Messages = nil
	}
}
