package run

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/engine/value"
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

// The interrupted-call result text of SPEC §5.
const interruptedText = "[tool execution was interrupted]"

// GateRecord is the gate's decision for a call, kept so that gating the same
// call again (a client retry) returns the same answer and changes nothing.
type GateRecord struct {
	Decision    string            `json:"decision"`
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
}

type stage string

const (
	stageRunStarted     stage = "run_started"
	stageStepStarted    stage = "step_started"
	stageInferenceReady stage = "inference_ready"
	stageInferred       stage = "inferred"
	stageStepEnded      stage = "step_ended"
	stageRunEnded       stage = "run_ended"
)

// Session is one run, driven one phase at a time by a host: the autonomous
// loop, the sidecar, or an embedding program. A Session is not safe for
// concurrent use; drivers serialize calls on one run.
type Session struct {
	rt     *Runtime
	agent  *agentRT
	x      *engine.Exec
	store  *state.Store
	info   plugin.RunInfo
	events event.Sink

	status      Status
	stage       stage
	termination string
	natural     bool
	aborted     bool // a hook error ended the run: run_end does not run

	messages []model.Message
	offered  []string         // tool names offered in this step; nil: not restricted
	tools    []model.ToolSpec // the step's tools (candidates, then offered)
	calls    []*CallRecord
	// hostTools are the tools the host offers unless a step names others
	// (the sidecar's creation tools); kept in the checkpoint.
	hostTools []model.ToolSpec

	thread     Thread
	threadSeen bool
	onEffect   func(key string, payload any)
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
}

// HostTools returns the tools given in StartOptions.Tools. The caller must
// not modify them.
func (s *Session) HostTools() []model.ToolSpec { return s.hostTools }

// Start begins a run: it loads the thread's state and runs run_start.
func (r *Runtime) Start(ctx context.Context, o StartOptions) (*Session, Outcome, error) {
	a, err := r.agent(o.Agent)
	if err != nil {
		return nil, Outcome{}, err
	}
	s := &Session{rt: r, agent: a, events: o.Events, status: Running, stage: stageRunStarted, onEffect: o.OnEffect}
	if s.events == nil {
		s.events = event.Discard{}
	}
	s.info = plugin.RunInfo{ID: o.RunID, ThreadID: o.ThreadID, AgentID: a.ID}
	if s.info.ID == "" {
		s.info.ID = r.newID("run")
	}
	if s.info.ThreadID == "" {
		s.info.ThreadID = r.newID("thread")
	}
	th, ok, err := r.store.Thread(ctx, s.info.ThreadID)
	if err != nil {
		return nil, Outcome{}, fmt.Errorf("load thread %q: %w", s.info.ThreadID, err)
	}
	if ok && th.Waiting != "" {
		return nil, Outcome{}, errs.New(errs.InvalidTransition,
			"thread %q has run %s waiting for decisions; resume it or cancel it before starting another", th.ID, th.Waiting)
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
	s.events.Emit(event.RunStart{RunID: s.info.ID, ThreadID: s.info.ThreadID, Generation: r.generation})
	if err := s.phase(ctx, phase.RunStart, plugin.Input{}); err != nil {
		return s, s.outcome(), err
	}
	s.checkStop()
	return s, s.outcome(), nil
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
	st, misfits := state.NewStoreAt(reg, seed, rev)
	for _, m := range misfits {
		s.rt.log.Warn("a saved value no longer fits its key's schema; it is kept aside and the key starts from its default",
			"thread_id", s.info.ThreadID, "key", m.Key, "error", m.Err.Error())
		if s.thread.Aside == nil {
			s.thread.Aside = map[string]any{}
		}
		s.thread.Aside[m.Key] = m.Value
	}
	x, err := s.rt.eng.Exec(engine.ExecConfig{Store: st, View: s.agent.view, Configs: s.agent.Configs,
		Events: s.events, Log: s.rt.log.With("run_id", s.info.ID), OnEffect: s.onEffect})
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

// Step returns the current step number (0 before the first step).
func (s *Session) Step() int { return s.info.Step }

// Status returns the run's status.
func (s *Session) Status() Status { return s.status }

// Termination returns the termination string, empty while running.
func (s *Session) Termination() string { return s.termination }

// Generation names the plugin generation the run is pinned to.
func (s *Session) Generation() string { return s.rt.generation }

// Runtime returns the runtime the run is pinned to.
func (s *Session) Runtime() *Runtime { return s.rt }

// Snapshot returns the run's current state.
func (s *Session) Snapshot() *state.Snapshot { return s.store.Snapshot() }

// Revision returns the run's state revision.
func (s *Session) Revision() uint64 { return s.store.Revision() }

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

// Suspended lists the tickets of suspended calls.
func (s *Session) Suspended() []gate.Ticket {
	var out []gate.Ticket
	for _, c := range s.calls {
		if c.Status == CallSuspended && c.Gate != nil && c.Gate.Ticket != nil {
			out = append(out, *c.Gate.Ticket)
		}
	}
	return out
}

// State returns every key with a value, by name.
func (s *Session) State() map[string]any { return s.store.Snapshot().Values(nil) }

func (s *Session) outcome() Outcome {
	return Outcome{Termination: s.termination, Revision: s.store.Revision()}
}

func (s *Session) input() plugin.Input {
	info := s.info
	info.Termination = s.termination
	return plugin.Input{Run: info, Messages: s.messages, Tools: s.tools}
}

func invalid(format string, args ...any) error {
	return errs.New(errs.InvalidTransition, format, args...)
}

// expect checks that the run may enter phase p from the current stage.
func (s *Session) expect(p phase.Phase, stages ...stage) error {
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
	return invalid("%s cannot follow %s", p, s.stage)
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
		s.termination = "cancelled"
		return err
	}
	code := errs.CodeOf(err)
	if code == "" {
		code = errs.HookFailed
	}
	s.termination = "error:" + string(code)
	s.aborted = true
	s.finish(context.WithoutCancel(ctx))
	return err
}

// checkStop turns a plugin's stop into the termination.
func (s *Session) checkStop() {
	if s.termination != "" {
		return
	}
	if code, _, ok := s.x.Stopped(); ok {
		s.termination = "stopped:" + code
	}
}

// StepStart opens the next step.
func (s *Session) StepStart(ctx context.Context) (Outcome, error) {
	if err := s.expect(phase.StepStart, stageRunStarted, stageStepEnded); err != nil {
		return s.outcome(), err
	}
	s.info.Step++
	s.stage = stageStepStarted
	s.calls, s.offered, s.tools, s.natural = nil, nil, nil, false
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

func (s *Session) runRecord() map[string]any {
	return map[string]any{"id": s.info.ID, "thread_id": s.info.ThreadID, "agent_id": s.info.AgentID,
		"status": string(s.status), "step": float64(s.info.Step), "termination": s.termination,
		"generation": s.rt.generation}
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

// BeforeInference runs before_inference and returns the request the model
// must receive: context messages placed, tools filtered, the inference
// override applied, then the request transforms in registration order.
// req.Messages, when not empty, replaces the session's conversation (a host
// that keeps the conversation sends it each time).
func (s *Session) BeforeInference(ctx context.Context, req model.Request) (model.Request, Outcome, error) {
	if err := s.expect(phase.BeforeInference, stageStepStarted); err != nil {
		return req, s.outcome(), err
	}
	if len(req.Messages) > 0 {
		s.messages = cloneMessages(req.Messages)
	}
	s.tools = req.Tools
	if err := s.phase(ctx, phase.BeforeInference, plugin.Input{}); err != nil {
		return req, s.outcome(), err
	}
	snap := s.store.Snapshot()
	out := model.Request{Params: req.Params}
	cms := readContextMessages(snap)
	out.Messages = placeContextMessages(cloneMessages(s.messages), cms)
	if len(cms) > 0 {
		ev := event.ContextMessages{Step: s.info.Step}
		for _, c := range cms {
			ev.Messages = append(ev.Messages, event.ContextMessage{Key: c.key, Target: c.target, Kind: c.kind, Role: c.role, Content: c.content})
		}
		s.events.Emit(ev)
	}
	filter, _ := snap.Lookup(KeyToolFilter)
	out.Tools = filterTools(req.Tools, filter)
	override, _ := snap.Lookup(KeyInferenceOverride)
	applyOverride(&out.Params, override)

	// Ephemeral and throttled messages are used once; the filter and the
	// override hold for this step only.
	cmd := command.Command{Plugin: "runtime"}
	keep := map[string]any{}
	used := false
	for _, c := range cms {
		if c.kind == "persistent" {
			v, _ := snap.Lookup(KeyContextMessages)
			keep[c.key] = v.(map[string]any)[c.key]
		} else {
			used = true
		}
	}
	if used {
		cmd.Update(KeyContextMessages, keep)
	}
	if filter != nil {
		cmd.Update(KeyToolFilter, nil)
	}
	if override != nil {
		cmd.Update(KeyInferenceOverride, nil)
	}
	if !cmd.Empty() {
		if err := s.x.Apply(ctx, phase.BeforeInference, s.input(), &cmd); err != nil {
			return req, s.outcome(), s.fail(ctx, err)
		}
	}
	in := s.input()
	in.Phase, in.Snap, in.Configs = phase.BeforeInference, s.store.Snapshot(), s.agent.Configs
	for _, t := range s.agent.view.Transforms() {
		start := time.Now()
		next, err := callTransform(ctx, t, &in, out)
		s.rt.eng.Observe(t.Plugin, phase.BeforeInference, "transform", start, err)
		if err != nil {
			return req, s.outcome(), s.fail(ctx, err)
		}
		out = next
	}
	s.offered = make([]string, 0, len(out.Tools))
	for _, t := range out.Tools {
		s.offered = append(s.offered, t.Name)
	}
	s.tools = out.Tools
	s.stage = stageInferenceReady
	s.checkStop()
	return out, s.outcome(), nil
}

func callTransform(ctx context.Context, t plugin.TransformEntry, in *plugin.Input, req model.Request) (out model.Request, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v", v)
		}
		if err != nil {
			err = engine.HookError(err, t.Plugin, phase.BeforeInference, t.Pos)
		}
	}()
	return t.Transform.TransformRequest(ctx, in, req)
}

func filterTools(tools []model.ToolSpec, filter any) []model.ToolSpec {
	f, _ := filter.(map[string]any)
	if f == nil {
		return append([]model.ToolSpec(nil), tools...)
	}
	in := func(list any, name string) bool {
		l, _ := list.([]any)
		for _, x := range l {
			if x == name {
				return true
			}
		}
		return false
	}
	only, restricted := f["include_only"]
	out := make([]model.ToolSpec, 0, len(tools))
	for _, t := range tools {
		if restricted && !in(only, t.Name) {
			continue
		}
		if in(f["exclude"], t.Name) {
			continue
		}
		out = append(out, t)
	}
	return out
}

func applyOverride(p *model.Params, override any) {
	o, _ := override.(map[string]any)
	if o == nil {
		return
	}
	if v, ok := o["model"].(string); ok {
		p.Model = v
	}
	if v, ok := o["temperature"].(float64); ok {
		p.Temperature = &v
	}
	if v, ok := o["max_tokens"].(float64); ok {
		n := int(v)
		p.MaxTokens = &n
	}
	if v, ok := o["top_p"].(float64); ok {
		p.TopP = &v
	}
	if v, ok := o["reasoning_effort"].(string); ok {
		p.ReasoningEffort = v
	}
}

// AfterInference records the model's answer and runs after_inference. Tool
// calls without an id get "call_<step>_<index>" (index from 1). An answer
// without tool calls ends the run "natural" after step_end.
func (s *Session) AfterInference(ctx context.Context, resp model.Response) (Outcome, error) {
	if err := s.expect(phase.AfterInference, stageInferenceReady); err != nil {
		return s.outcome(), err
	}
	resp.ToolCalls = cloneCalls(resp.ToolCalls)
	seen := map[string]bool{}
	for i := range resp.ToolCalls {
		c := &resp.ToolCalls[i]
		if c.ID == "" {
			c.ID = "call_" + strconv.Itoa(s.info.Step) + "_" + strconv.Itoa(i+1)
		}
		if seen[c.ID] {
			return s.outcome(), errs.New(errs.BadRequest, "the response has two tool calls with id %q", c.ID)
		}
		seen[c.ID] = true
		if c.Args == nil {
			c.Args = map[string]any{}
		}
		n, err := value.Normalize(c.Args)
		if err != nil {
			return s.outcome(), errs.New(errs.BadRequest, "tool call %q: arguments: %v", c.ID, err)
		}
		c.Args = n.(map[string]any)
	}
	s.stage = stageInferred
	s.calls = nil
	for _, c := range resp.ToolCalls {
		s.calls = append(s.calls, &CallRecord{Call: c, Status: CallNew})
	}
	s.messages = append(s.messages, model.Message{Role: model.RoleAssistant, Content: resp.Text, ToolCalls: cloneCalls(resp.ToolCalls)})
	s.events.Emit(event.InferenceComplete{Text: resp.Text, ToolCalls: cloneCalls(resp.ToolCalls), Usage: resp.Usage})
	r := resp
	if err := s.phase(ctx, phase.AfterInference, plugin.Input{Response: &r}); err != nil {
		return s.outcome(), err
	}
	if err := s.recordCalls(ctx, phase.AfterInference); err != nil {
		return s.outcome(), err
	}
	s.natural = len(resp.ToolCalls) == 0
	s.checkStop()
	return s.outcome(), nil
}

// recordCalls mirrors the step's tool calls into __runtime.tool_calls: only
// the given calls when some are given (the others' records are shared from
// the current value), every call otherwise.
func (s *Session) recordCalls(ctx context.Context, p phase.Phase, only ...*CallRecord) error {
	var m map[string]any
	calls := s.calls
	if len(only) > 0 {
		cur, _ := s.store.Snapshot().Lookup(KeyToolCalls)
		old, _ := cur.(map[string]any)
		m = make(map[string]any, len(old)+len(only))
		for k, v := range old {
			m[k] = v
		}
		calls = only
	} else {
		m = make(map[string]any, len(s.calls))
	}
	for _, c := range calls {
		rec := map[string]any{"id": c.Call.ID, "name": c.Call.Name, "args": c.Call.Args,
			"status": string(c.Status), "step": float64(s.info.Step)}
		if c.Gate != nil {
			rec["decision"] = c.Gate.Decision
			if c.Gate.Plugin != "" {
				rec["plugin"] = c.Gate.Plugin
			}
			if c.Gate.Reason != "" {
				rec["reason"] = c.Gate.Reason
			}
			if c.Gate.RewrittenBy != "" {
				rec["rewritten_by"] = c.Gate.RewrittenBy
			}
			if c.Gate.Ticket != nil {
				rec["ticket"] = c.Gate.Ticket.ID
			}
		}
		if c.Result != nil {
			rec["result"] = (*c.Result).Value()
		}
		m[c.Call.ID] = rec
	}
	return s.record(ctx, p, KeyToolCalls, m)
}

func (s *Session) call(id string) *CallRecord {
	for _, c := range s.calls {
		if c.Call.ID == id {
			return c
		}
	}
	return nil
}

func (s *Session) move(c *CallRecord, to CallStatus) error {
	if c.Status == to {
		return nil
	}
	if !allowed(callMoves, c.Status, to) {
		return invalid("tool call %s cannot go from %s to %s", c.Call.ID, c.Status, to)
	}
	c.Status = to
	return nil
}

// Decision is the gate's answer for one call, as drivers report it.
type Decision struct {
	Decision string            `json:"decision"` // allow, block, suspend or set_result
	Args     map[string]any    `json:"args"`
	Plugin   string            `json:"plugin,omitempty"`
	Reason   string            `json:"reason,omitempty"`
	Ticket   *gate.Ticket      `json:"ticket,omitempty"`
	Result   *model.ToolResult `json:"result,omitempty"`
}

func (g *GateRecord) decision() Decision {
	return Decision{Decision: g.Decision, Args: g.Args, Plugin: g.Plugin, Reason: g.Reason, Ticket: g.Ticket, Result: g.Result}
}

// ToolGate decides about one call of this step (a call the model did not
// make in this step is added). The decision is kept: gating the same call
// again returns it and changes nothing. Allow leaves the call for
// before_tool_execute; block and set_result leave it for after_tool_execute;
// suspend ends its part of the step. A call to a tool that was not offered in
// this step fails with an error result without running.
func (s *Session) ToolGate(ctx context.Context, call model.ToolCall) (Decision, Outcome, error) {
	if err := s.expect(phase.ToolGate, stageInferred); err != nil {
		return Decision{}, s.outcome(), err
	}
	c, err := s.callFor(call)
	if err != nil {
		return Decision{}, s.outcome(), err
	}
	if c.Gate != nil && c.Status != CallResuming {
		return c.Gate.decision(), s.outcome(), nil
	}
	res, err := s.evaluate(ctx, c)
	if err != nil {
		return Decision{}, s.outcome(), s.fail(ctx, err)
	}
	if err := s.applyGate(ctx, c, res); err != nil {
		return Decision{}, s.outcome(), err
	}
	return c.Gate.decision(), s.outcome(), nil
}

func (s *Session) callFor(call model.ToolCall) (*CallRecord, error) {
	c := s.call(call.ID)
	if c != nil {
		return c, nil
	}
	if call.ID == "" {
		return nil, errs.New(errs.BadRequest, "a tool call needs an id")
	}
	args, err := value.Normalize(call.Args)
	if err != nil {
		return nil, errs.New(errs.BadRequest, "tool call %q: arguments: %v", call.ID, err)
	}
	call.Args, _ = args.(map[string]any)
	if call.Args == nil {
		call.Args = map[string]any{}
	}
	c = &CallRecord{Call: call, Status: CallNew}
	s.calls = append(s.calls, c)
	return c, nil
}

// offeredTool reports whether the tool was offered in this step.
func (s *Session) offeredTool(name string) bool {
	if s.offered == nil {
		return true
	}
	for _, n := range s.offered {
		if n == name {
			return true
		}
	}
	return false
}

// evaluate runs the gate for c without recording anything.
func (s *Session) evaluate(ctx context.Context, c *CallRecord) (*GateRecord, error) {
	if !s.offeredTool(c.Call.Name) {
		msg := fmt.Sprintf("tool %q is not available in this step", c.Call.Name)
		if len(s.offered) > 0 {
			msg += "; available: " + strings.Join(s.offered, ", ")
		}
		r := model.Error(msg)
		return &GateRecord{Decision: "set_result", Plugin: "runtime", Reason: msg, Result: &r, Args: c.Call.Args}, nil
	}
	in := s.input()
	info := &plugin.ToolInfo{Call: c.Call}
	if c.Resume != nil {
		info.Resume = &gate.Resume{Target: c.Call.ID, Action: c.Resume.Action, Result: c.Resume.Result, Reason: c.Resume.Reason}
	}
	in.Tool = info
	res, err := s.x.Gate(ctx, in)
	if err != nil {
		return nil, err
	}
	d := res.Decision
	g := &GateRecord{Decision: d.Kind.String(), Plugin: d.Plugin, Args: res.Args, RewrittenBy: res.RewrittenBy}
	switch d.Kind {
	case gate.Allow:
		if res.RewrittenBy != "" {
			g.Plugin = res.RewrittenBy
		}
	case gate.Block:
		g.Reason = d.Reason
		if g.Reason == "" {
			g.Reason = "blocked by " + d.Plugin
		}
		r := model.ToolResult{Status: model.StatusError, Message: g.Reason, Data: map[string]any{"rejected": true}}
		g.Result = &r
	case gate.Suspend:
		t := gate.Ticket{}
		if d.Ticket != nil {
			t = *d.Ticket
		}
		if t.ID == "" {
			t.ID = "ticket_" + c.Call.ID
		}
		t.CallID = c.Call.ID
		if t.ResumeMode == "" {
			t.ResumeMode = gate.Replay
		}
		if !t.ResumeMode.Valid() {
			return nil, &errs.Error{Code: errs.HookFailed, Plugin: d.Plugin, Phase: "tool_gate",
				Msg: fmt.Sprintf("suspend: resume_mode %q is not one of replay, use_decision_as_result, pass_decision_to_tool", t.ResumeMode)}
		}
		g.Ticket, g.Reason = &t, t.Message
	case gate.SetResult:
		r := model.Success(nil)
		if d.Result != nil {
			r = *d.Result
		}
		if r.Status == "" {
			r.Status = model.StatusSuccess
		}
		g.Result = &r
	}
	return g, nil
}

// applyGate records a decision: the call's status, its result where the
// decision gives one, the event and the mirrored state.
func (s *Session) applyGate(ctx context.Context, c *CallRecord, g *GateRecord) error {
	resuming := c.Status == CallResuming
	if !resuming {
		if err := s.move(c, CallRunning); err != nil {
			return err
		}
	}
	if resuming && c.Resume != nil && g.Decision == "allow" {
		switch gate.ResumeMode(c.Resume.Mode) {
		case gate.UseDecisionAsResult:
			r := model.Success(c.Resume.Result)
			g.Decision, g.Result = "set_result", &r
		case gate.PassDecisionToTool:
			args := copyMap(g.Args)
			args["decision"] = c.Resume.Result
			g.Args = args
		}
	}
	c.Gate = g
	c.Call.Args = g.Args
	if resuming && g.Decision != "suspend" {
		if err := s.move(c, CallRunning); err != nil {
			return err
		}
	}
	if g.Decision != "allow" || g.RewrittenBy != "" {
		name := g.Decision
		if name == "allow" {
			name = "rewrite"
		}
		s.events.Emit(event.GateDecision{CallID: c.Call.ID, Decision: name, Plugin: g.Plugin, Reason: g.Reason})
	}
	switch g.Decision {
	case "suspend":
		if err := s.move(c, CallSuspended); err != nil {
			return err
		}
		pending := model.ToolResult{Status: model.StatusPending, Message: g.Ticket.Message, Data: (*g.Ticket).Value()}
		s.events.Emit(event.ToolCallDone{CallID: c.Call.ID, Status: string(CallSuspended), Result: &pending})
	}
	return s.recordCalls(ctx, phase.ToolGate, c)
}

// BeforeToolExecute runs before_tool_execute for a call the gate allowed.
func (s *Session) BeforeToolExecute(ctx context.Context, call model.ToolCall) (Outcome, error) {
	if err := s.expect(phase.BeforeToolExecute, stageInferred); err != nil {
		return s.outcome(), err
	}
	c := s.call(call.ID)
	if c == nil {
		return s.outcome(), invalid("before_tool_execute: tool call %q has not passed the gate", call.ID)
	}
	if c.Gate == nil || c.Gate.Decision != "allow" || c.Status != CallRunning || c.Started {
		return s.outcome(), invalid("before_tool_execute: tool call %s is %s (gate: %s); only a call the gate allowed runs, once",
			c.Call.ID, c.Status, gateName(c.Gate))
	}
	c.Started = true
	if err := s.phase(ctx, phase.BeforeToolExecute, plugin.Input{Tool: &plugin.ToolInfo{Call: c.Call, Resume: resumeOf(c), Gate: gateInfo(c)}}); err != nil {
		return s.outcome(), err
	}
	s.checkStop()
	if s.termination != "" {
		// Stopped before the tool ran: this call and the ones after it are
		// interrupted.
		s.interrupt()
		return s.outcome(), s.recordCalls(ctx, phase.BeforeToolExecute)
	}
	s.events.Emit(event.ToolCallStart{CallID: c.Call.ID, Name: c.Call.Name, Args: c.Call.Args})
	return s.outcome(), nil
}

func gateInfo(c *CallRecord) *plugin.GateInfo {
	if c.Gate == nil {
		return nil
	}
	return &plugin.GateInfo{Decision: c.Gate.Decision, Plugin: c.Gate.Plugin, Reason: c.Gate.Reason, RewrittenBy: c.Gate.RewrittenBy}
}

func gateName(g *GateRecord) string {
	if g == nil {
		return "not gated"
	}
	return g.Decision
}

func resumeOf(c *CallRecord) *gate.Resume {
	if c.Resume == nil {
		return nil
	}
	return &gate.Resume{Target: c.Call.ID, Action: c.Resume.Action, Result: c.Resume.Result, Reason: c.Resume.Reason}
}

// AfterToolExecute runs after_tool_execute for a call that ran (with its
// result), or that the gate blocked or answered (with the gate's result,
// whatever the host sends), then the result transforms in registration
// order, and returns the result the model will see. A result with status
// "pending" suspends the call instead. After a block, the calls of the step
// that have not run are interrupted and the run ends "blocked:<reason>".
func (s *Session) AfterToolExecute(ctx context.Context, call model.ToolCall, result model.ToolResult) (model.ToolResult, Outcome, error) {
	if err := s.expect(phase.AfterToolExecute, stageInferred); err != nil {
		return result, s.outcome(), err
	}
	c := s.call(call.ID)
	if c == nil || c.Gate == nil {
		return result, s.outcome(), invalid("after_tool_execute: tool call %q has not passed the gate", call.ID)
	}
	if c.Status != CallRunning || (c.Gate.Decision == "allow" && !c.Started) || c.Gate.Decision == "suspend" {
		return result, s.outcome(), invalid("after_tool_execute: tool call %s is %s (gate: %s, started: %v)", c.Call.ID, c.Status, c.Gate.Decision, c.Started)
	}
	if c.Gate.Result != nil {
		result = *c.Gate.Result
	}
	if result.Status == "" {
		result.Status = model.StatusSuccess
	}
	if result.Status != model.StatusSuccess && result.Status != model.StatusError && result.Status != model.StatusPending {
		return result, s.outcome(), errs.New(errs.BadRequest, "a tool result status is success, error or pending, not %q", result.Status)
	}
	if d, err := value.Normalize(result.Data); err == nil {
		result.Data = d
	} else {
		result = model.Error("the tool returned data that is not a value: " + err.Error())
	}
	if result.Status == model.StatusPending {
		return s.suspendByTool(ctx, c, result)
	}
	r := result
	if err := s.phase(ctx, phase.AfterToolExecute, plugin.Input{Tool: &plugin.ToolInfo{Call: c.Call, Result: &r, Resume: resumeOf(c), Gate: gateInfo(c)}}); err != nil {
		return result, s.outcome(), err
	}
	in := s.input()
	in.Phase, in.Snap, in.Configs = phase.AfterToolExecute, s.store.Snapshot(), s.agent.Configs
	in.Tool = &plugin.ToolInfo{Call: c.Call, Result: &r}
	for _, t := range s.agent.view.ResultTransforms() {
		start := time.Now()
		next, err := callResultTransform(ctx, t, &in, c.Call, result)
		s.rt.eng.Observe(t.Plugin, phase.AfterToolExecute, "result_transform", start, err)
		if err != nil {
			return result, s.outcome(), s.fail(ctx, err)
		}
		result = next
	}
	to := CallSucceeded
	if result.Status != model.StatusSuccess {
		to = CallFailed
	}
	if err := s.move(c, to); err != nil {
		return result, s.outcome(), err
	}
	res := result
	c.Result = &res
	s.messages = append(s.messages, ToolMessage(c.Call, result))
	s.events.Emit(event.ToolCallDone{CallID: c.Call.ID, Status: string(to), Result: &res})
	if c.Gate.Decision == "block" {
		s.termination = "blocked:" + c.Gate.Reason
	}
	s.checkStop()
	var err error
	if s.termination != "" {
		// A block or a stop ends the batch: the calls that have not run
		// get an interrupted result, so every call has its tool message.
		s.interrupt()
		err = s.recordCalls(ctx, phase.AfterToolExecute)
	} else {
		err = s.recordCalls(ctx, phase.AfterToolExecute, c)
	}
	if err != nil {
		return result, s.outcome(), err
	}
	return result, s.outcome(), nil
}

func callResultTransform(ctx context.Context, t plugin.ResultTransformEntry, in *plugin.Input, call model.ToolCall, res model.ToolResult) (out model.ToolResult, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("panic: %v", v)
		}
		if err != nil {
			err = engine.HookError(err, t.Plugin, phase.AfterToolExecute, t.Pos)
		}
	}()
	return t.Transform.TransformResult(ctx, in, call, res)
}

// suspendByTool suspends a call whose tool answered "pending": the ticket is
// the result's data.
func (s *Session) suspendByTool(ctx context.Context, c *CallRecord, result model.ToolResult) (model.ToolResult, Outcome, error) {
	t := gate.Ticket{ID: "ticket_" + c.Call.ID, Message: result.Message, ResumeMode: gate.UseDecisionAsResult}
	if m, ok := result.Data.(map[string]any); ok {
		if v, ok := m["id"].(string); ok && v != "" {
			t.ID = v
		}
		if v, ok := m["message"].(string); ok {
			t.Message = v
		}
		if v, ok := m["action"].(string); ok {
			t.Action = v
		}
		if v, ok := m["resume_mode"].(string); ok && gate.ResumeMode(v).Valid() && v != "" {
			t.ResumeMode = gate.ResumeMode(v)
		}
		t.Parameters = m["parameters"]
		t.ResponseSchema = m["response_schema"]
		if opts, ok := m["options"].([]any); ok {
			for _, o := range opts {
				if s, ok := o.(string); ok {
					t.Options = append(t.Options, s)
				}
			}
		}
	}
	t.CallID = c.Call.ID
	c.Gate = &GateRecord{Decision: "suspend", Plugin: "tool", Reason: t.Message, Ticket: &t, Args: c.Call.Args}
	if err := s.move(c, CallSuspended); err != nil {
		return result, s.outcome(), err
	}
	s.events.Emit(event.ToolCallDone{CallID: c.Call.ID, Status: string(CallSuspended), Result: &result})
	if err := s.recordCalls(ctx, phase.AfterToolExecute); err != nil {
		return result, s.outcome(), err
	}
	return result, s.outcome(), nil
}

// interrupt fails every call of the step that has not run yet.
func (s *Session) interrupt() {
	for _, c := range s.calls {
		if c.Status == CallNew || c.Status == CallResuming || (c.Status == CallRunning && c.Result == nil) {
			c.Status = CallFailed
			r := model.Error(interruptedText)
			c.Result = &r
			s.messages = append(s.messages, ToolMessage(c.Call, r))
			s.events.Emit(event.ToolCallDone{CallID: c.Call.ID, Status: string(CallFailed), Result: &r})
		}
	}
}

// StepEnd closes the step. With suspended calls the run waits instead: the
// step stays open until they are resumed or cancelled.
func (s *Session) StepEnd(ctx context.Context) (Outcome, error) {
	if err := s.expect(phase.StepEnd, stageInferred); err != nil {
		return s.outcome(), err
	}
	for _, c := range s.calls {
		if !c.Status.Terminal() && c.Status != CallSuspended {
			return s.outcome(), invalid("step_end: tool call %s is %s; finish it first (tool_gate, before_tool_execute, after_tool_execute)", c.Call.ID, c.Status)
		}
	}
	if len(s.Suspended()) > 0 {
		return s.wait(ctx)
	}
	if err := s.phase(ctx, phase.StepEnd, plugin.Input{}); err != nil {
		return s.outcome(), err
	}
	s.stage = stageStepEnded
	s.events.Emit(event.StepEnd{Step: s.info.Step})
	s.checkStop()
	if s.termination == "" && s.natural {
		s.termination = "natural"
	}
	if s.termination == "" && s.info.Step >= s.agent.MaxSteps {
		s.termination = "stopped:max_steps"
	}
	return s.outcome(), nil
}

func (s *Session) wait(ctx context.Context) (Outcome, error) {
	if !allowed(runMoves, s.status, Waiting) {
		return s.outcome(), invalid("the run cannot wait from %s", s.status)
	}
	s.status = Waiting
	s.termination = "suspended"
	if err := s.record(ctx, phase.StepEnd, KeyRun, s.runRecord()); err != nil {
		return s.outcome(), err
	}
	s.events.Emit(event.RunFinish{Termination: "suspended"})
	if err := s.save(ctx); err != nil {
		return s.outcome(), err
	}
	return s.outcome(), nil
}

// RunEnd closes the run: queued actions are dropped except run_end's, the
// run_end hooks run, thread state is saved and the run is done.
func (s *Session) RunEnd(ctx context.Context) (Outcome, error) {
	if s.status == Done {
		return s.outcome(), invalid("run_end: the run is done (%s)", s.termination)
	}
	if s.status == Waiting {
		return s.outcome(), invalid("run_end: the run is waiting for decisions on %s; resume or cancel them first", s.suspendedIDs())
	}
	if s.termination == "" {
		return s.outcome(), invalid("run_end: the run has not ended; it ends when the model answers without tool calls, a plugin stops it, or a call is blocked")
	}
	if s.termination == "cancelled" {
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
	s.finish(ctx)
	return s.outcome(), nil
}

// finish marks the run done and saves the thread.
func (s *Session) finish(ctx context.Context) {
	s.status = Done
	s.stage = stageRunEnded
	s.events.Emit(event.RunFinish{Termination: s.termination})
	if err := s.save(ctx); err != nil {
		s.rt.log.Error("saving the thread failed", "thread_id", s.info.ThreadID, "error", err.Error())
	}
}

// Cancel ends a waiting run: its suspended calls are cancelled and run_end
// runs. The termination is "cancelled".
func (s *Session) Cancel(ctx context.Context, reason string) (Outcome, error) {
	if s.status != Waiting {
		return s.outcome(), invalid("cancel: only a waiting run can be cancelled; this one is %s", s.status)
	}
	for _, c := range s.calls {
		if c.Status == CallSuspended {
			s.cancelCall(c, reason)
		}
	}
	s.status = Running
	s.termination = "cancelled"
	if err := s.recordCalls(ctx, phase.RunEnd); err != nil {
		return s.outcome(), err
	}
	return s.RunEnd(ctx)
}

func (s *Session) cancelCall(c *CallRecord, reason string) {
	c.Status = CallCancelled
	msg := "the call was cancelled"
	if reason != "" {
		msg += ": " + reason
	}
	r := model.Error(msg)
	c.Result = &r
	s.messages = append(s.messages, ToolMessage(c.Call, r))
	s.events.Emit(event.ToolCallDone{CallID: c.Call.ID, Status: string(CallCancelled), Result: &r})
}

// ResumeDecision is a host's decision for a suspended call.
type ResumeDecision = gate.Resume

// Resume applies decisions to suspended calls, addressed by call id or
// ticket id: "resume" makes the call pass the gate again (with call.resume
// set), "cancel" cancels it without running it. Every target is checked
// first; an unknown one is unknown_resume_target and nothing changes. The run
// is running again afterwards: the host gates and runs the resumed calls,
// then ends the step.
func (s *Session) Resume(ctx context.Context, decisions []ResumeDecision) ([]CallRecord, Outcome, error) {
	if s.status != Waiting {
		return nil, s.outcome(), invalid("resume: the run is %s, not waiting", s.status)
	}
	targets := make([]*CallRecord, len(decisions))
	for i, d := range decisions {
		var hit *CallRecord
		for _, c := range s.calls {
			if c.Status == CallSuspended && (c.Call.ID == d.Target || (c.Gate != nil && c.Gate.Ticket != nil && c.Gate.Ticket.ID == d.Target)) {
				hit = c
				break
			}
		}
		if hit == nil {
			return nil, s.outcome(), errs.New(errs.UnknownResumeTarget,
				"%q is not a suspended call or ticket of run %s; suspended: %s", d.Target, s.info.ID, s.suspendedIDs())
		}
		if d.Action != "resume" && d.Action != "cancel" {
			return nil, s.outcome(), errs.New(errs.BadRequest, "decision for %q: action is \"resume\" or \"cancel\", not %q", d.Target, d.Action)
		}
		for _, t := range targets[:i] {
			if t == hit {
				return nil, s.outcome(), errs.New(errs.BadRequest, "two decisions target call %s", hit.Call.ID)
			}
		}
		targets[i] = hit
	}
	if !allowed(runMoves, s.status, Running) {
		return nil, s.outcome(), invalid("resume: the run cannot go from %s to running", s.status)
	}
	s.status = Running
	s.termination = ""
	var out []CallRecord
	for i, d := range decisions {
		c := targets[i]
		if d.Action == "cancel" {
			s.cancelCall(c, d.Reason)
		} else {
			mode := string(gate.Replay)
			if c.Gate != nil && c.Gate.Ticket != nil {
				mode = string(c.Gate.Ticket.ResumeMode)
			}
			c.Resume = &ResumeRecord{Action: d.Action, Result: value.MustNormalize(d.Result), Reason: d.Reason, Mode: mode}
			if c.Gate != nil && c.Gate.Ticket != nil {
				c.Resume.TicketID = c.Gate.Ticket.ID
			}
			if err := s.move(c, CallResuming); err != nil {
				return nil, s.outcome(), err
			}
			c.Started = false
			s.events.Emit(event.ToolCallResumed{CallID: c.Call.ID, Result: c.Resume.Result})
		}
		out = append(out, *c)
	}
	if err := s.record(ctx, phase.StepEnd, KeyRun, s.runRecord()); err != nil {
		return nil, s.outcome(), err
	}
	if err := s.recordCalls(ctx, phase.ToolGate); err != nil {
		return nil, s.outcome(), err
	}
	return out, s.outcome(), nil
}

// ToolMessage is the tool message the model sees for a call's result.
func ToolMessage(call model.ToolCall, r model.ToolResult) model.Message {
	return model.Message{Role: model.RoleTool, ToolCallID: call.ID, Content: ResultText(r)}
}

// ResultText renders a result as text: success data as is when it is a
// string and as JSON otherwise; an error as "error: <message>".
func ResultText(r model.ToolResult) string {
	data := ""
	switch d := r.Data.(type) {
	case nil:
	case string:
		data = d
	default:
		b, err := json.Marshal(d)
		if err != nil {
			data = fmt.Sprint(d)
		} else {
			data = string(b)
		}
	}
	switch r.Status {
	case model.StatusError:
		if data != "" && r.Message != "" {
			return "error: " + r.Message + "\n" + data
		}
		if r.Message != "" {
			return "error: " + r.Message
		}
		return "error: " + data
	case model.StatusPending:
		return "pending: " + r.Message
	}
	if data == "" {
		return r.Message
	}
	return data
}

func newRandomID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}
