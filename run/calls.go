package run

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/value"
	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/model"
)

// interruptedText is the result of a call a block interrupted.
const interruptedText = "[tool execution was interrupted]"

// recordCalls mirrors the step's tool calls into __runtime.tool_calls: only
// the given calls when some are given (the others' records are shared with
// the current value), every call otherwise. The value is a callLog: a call
// recorded alone costs O(log n), and the map plugins read is built when
// someone reads it.
func (s *Session) recordCalls(ctx context.Context, p phase.Phase, only ...*CallRecord) error {
	limit := s.st().Limits().MaxState
	log := s.currentLog()
	if log == nil || len(only) == 0 {
		log = newCallLog(s, s.callsGen, len(s.calls), func(i int) logEntry { return s.logEntry(s.calls[i], limit, logEntry{}) })
	} else {
		for _, c := range only {
			i := s.position(c)
			log = log.with(i, s.logEntry(c, limit, log.at(i)))
		}
	}
	return s.record(ctx, p, KeyToolCalls, log)
}

// scanCalls is the number of calls up to which a lookup scans them rather
// than building an index.
const scanCalls = 8

// setCalls makes calls the step's calls.
func (s *Session) setCalls(calls []*CallRecord) {
	s.calls = calls
	s.callsGen++
	s.callsReplaced()
	s.index = nil
	s.nSuspended, s.suspendedKnown = 0, false
}

// position is c's index in the step's calls.
func (s *Session) position(c *CallRecord) int {
	if s.index == nil && len(s.calls) <= scanCalls {
		for i, x := range s.calls {
			if x == c {
				return i
			}
		}
	}
	s.reindex()
	return s.index[c.Call.ID]
}

// reindex builds the index of call ids when it is missing (a restored
// session's first use).
func (s *Session) reindex() {
	if s.index != nil {
		return
	}
	s.index = make(map[string]int, len(s.calls))
	for i, c := range s.calls {
		s.index[c.Call.ID] = i
	}
}

func (s *Session) call(id string) *CallRecord {
	if s.index == nil && len(s.calls) <= scanCalls {
		// A few calls: scanning them costs less than an index.
		for _, c := range s.calls {
			if c.Call.ID == id {
				return c
			}
		}
		return nil
	}
	s.reindex()
	if i, ok := s.index[id]; ok {
		return s.calls[i]
	}
	return nil
}

// setStatus changes c's status, keeping the count of suspended calls.
func (s *Session) setStatus(c *CallRecord, to CallStatus) {
	if s.suspendedKnown {
		if c.Status == CallSuspended {
			s.nSuspended--
		}
		if to == CallSuspended {
			s.nSuspended++
		}
	}
	c.Status = to
	s.callChanged(c)
}

func (s *Session) move(c *CallRecord, to CallStatus) error {
	if c.Status == to {
		return nil
	}
	if !allowed(callMoves, c.Status, to) {
		return invalid("tool call %s cannot go from %s to %s", c.Call.ID, c.Status, to)
	}
	s.setStatus(c, to)
	return nil
}

// Decision is the gate's answer for one call, as drivers report it.
type Decision struct {
	Decision gate.Kind         `json:"decision"` // Allow (a rewrite too), Block, Suspend or SetResult
	Args     map[string]any    `json:"args"`
	Plugin   string            `json:"plugin,omitempty"`
	Reason   string            `json:"reason,omitempty"`
	Ticket   *gate.Ticket      `json:"ticket,omitempty"`
	Result   *model.ToolResult `json:"result,omitempty"`
}

func (g *GateRecord) decision() Decision {
	return Decision{Decision: g.Decision, Args: g.Args, Plugin: g.Plugin, Reason: g.Reason, Ticket: g.Ticket, Result: g.Result}
}

// ToolGate decides about one call of this step: a call the model
// announced (after_inference, AnnounceCall), or a resumed one. The decision
// is kept: gating the same call again returns it and changes nothing. Allow
// leaves the call for before_tool_execute; block and set_result leave it for
// after_tool_execute; suspend ends its part of the step. A call to a tool
// that was not offered in this step fails with an error result without
// running.
func (s *Session) ToolGate(ctx context.Context, call model.ToolCall) (Decision, Outcome, error) {
	// A gate that fails ends the run without a phase record.
	defer s.journalEnd()
	if err := s.expect(phase.ToolGate, StageInferred); err != nil {
		return Decision{}, s.outcome(), err
	}
	c, err := s.addressed(phase.ToolGate, call)
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

// AnnounceCall adds a tool call to the open step, for a host that learns of
// the model's calls one at a time (a coding agent's hook for each of its
// parallel tool calls): after_inference announced the step's first calls,
// and the gate refuses a call that was not announced. The call is checked
// like after_inference's: an id not used in this step, a name, arguments
// that are a JSON object.
func (s *Session) AnnounceCall(ctx context.Context, call model.ToolCall) (o Outcome, err error) {
	s.stamp()
	if s.rt.journal != nil {
		defer func() { s.journalPhase(journal.Announce, err, func(sl *journal.Slot) { sl.SetCall(call) }) }()
	}
	if err := s.expect(phase.ToolGate, StageInferred); err != nil {
		return s.outcome(), err
	}
	if err := checkCall("$.call", &call); err != nil {
		return s.outcome(), err
	}
	if s.call(call.ID) != nil {
		return s.outcome(), errs.Field("$.call.id", "the step already has a tool call with id %q; give each call its own id", call.ID)
	}
	if !s.handOff {
		call.Args = copyMap(call.Args)
	}
	if s.index != nil {
		s.index[call.ID] = len(s.calls)
	}
	s.calls = append(s.calls, &CallRecord{Call: call, Status: CallNew})
	s.callChanged(s.calls[len(s.calls)-1])
	return s.outcome(), nil
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
	s.stamp()
	if !s.offeredTool(c.Call.Name) {
		msg := fmt.Sprintf("tool %q is not available in this step", c.Call.Name)
		if len(s.offered) > 0 {
			msg += "; available: " + strings.Join(s.offered, ", ")
		}
		r := model.Error(msg)
		return &GateRecord{Decision: gate.SetResult, Plugin: "runtime", Reason: msg, Result: &r, Args: c.Call.Args}, nil
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
	g := &GateRecord{Decision: d.Kind, Plugin: d.Plugin, Args: res.Args, RewrittenBy: res.RewrittenBy}
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
		s.arm(&t)
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
	if s.rt.journal != nil {
		call := c.Call
		defer s.journalGate(call, g)
	}
	resuming := c.Status == CallResuming
	if !resuming {
		if err := s.move(c, CallRunning); err != nil {
			return err
		}
	}
	if resuming && c.Resume != nil && g.Decision == gate.Allow {
		switch gate.ResumeMode(c.Resume.Mode) {
		case gate.UseDecisionAsResult:
			r := model.Success(c.Resume.Result)
			g.Decision, g.Result = gate.SetResult, &r
		case gate.PassDecisionToTool:
			args := copyMap(g.Args)
			args["decision"] = c.Resume.Result
			g.Args = args
		}
	}
	c.Gate = g
	if c.Sent == nil && !value.Equal(c.Call.Args, g.Args) {
		c.Sent = c.Call.Args
	}
	c.Call.Args = g.Args
	if resuming && g.Decision != gate.Suspend {
		if err := s.move(c, CallRunning); err != nil {
			return err
		}
	}
	if (g.Decision != gate.Allow || g.RewrittenBy != "") && event.Wants(s.events, event.GateDecision{}.Type()) {
		name := g.Decision
		if name == gate.Allow {
			name = gate.Rewrite
		}
		s.events.Emit(event.GateDecision{CallID: c.Call.ID, Decision: name.String(), Plugin: g.Plugin, Reason: g.Reason})
	}
	switch g.Decision {
	case gate.Suspend:
		if err := s.move(c, CallSuspended); err != nil {
			return err
		}
		if event.Wants(s.events, event.ToolCallDone{}.Type()) {
			pending := model.ToolResult{Status: model.StatusPending, Message: g.Ticket.Message, Data: (*g.Ticket).Value()}
			s.callDone(c, CallSuspended, &pending)
		}
	}
	return s.recordCalls(ctx, phase.ToolGate, c)
}

// BeforeToolExecute runs before_tool_execute for a call the gate allowed.
func (s *Session) BeforeToolExecute(ctx context.Context, call model.ToolCall) (o Outcome, err error) {
	s.stamp()
	if s.rt.journal != nil {
		defer func() {
			s.journalPhase(journal.BeforeToolExecute, err, func(sl *journal.Slot) {
				sl.SetCall(model.ToolCall{ID: call.ID, Name: call.Name})
			})
		}()
	}
	if err := s.expect(phase.BeforeToolExecute, StageInferred); err != nil {
		return s.outcome(), err
	}
	c, err := s.addressed(phase.BeforeToolExecute, call)
	if err != nil {
		return s.outcome(), err
	}
	if c.Gate == nil || c.Gate.Decision != gate.Allow || c.Status != CallRunning || c.Started {
		return s.outcome(), invalid("before_tool_execute: tool call %s is %s (gate: %s); only a call the gate allowed runs, once",
			c.Call.ID, c.Status, gateName(c.Gate))
	}
	c.Started = true
	s.callChanged(c)
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
	if event.Wants(s.events, event.ToolCallStart{}.Type()) {
		s.events.Emit(event.ToolCallStart{CallID: c.Call.ID, Name: c.Call.Name, Args: c.Call.Args})
	}
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
	return g.Decision.String()
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
func (s *Session) AfterToolExecute(ctx context.Context, call model.ToolCall, result model.ToolResult) (_ model.ToolResult, o Outcome, err error) {
	s.stamp()
	if s.rt.journal != nil {
		given := result
		defer func() {
			s.journalPhase(journal.AfterToolExecute, err, func(sl *journal.Slot) {
				sl.SetCall(model.ToolCall{ID: call.ID, Name: call.Name})
				sl.SetResult(given)
			})
		}()
	}
	if err := s.expect(phase.AfterToolExecute, StageInferred); err != nil {
		return result, s.outcome(), err
	}
	c, err := s.addressed(phase.AfterToolExecute, call)
	if err != nil {
		return result, s.outcome(), err
	}
	if c.Gate == nil {
		return result, s.outcome(), invalid("after_tool_execute: tool call %q has not passed the gate", call.ID)
	}
	if c.Status != CallRunning || (c.Gate.Decision == gate.Allow && !c.Started) || c.Gate.Decision == gate.Suspend {
		return result, s.outcome(), invalid("after_tool_execute: tool call %s is %s (gate: %s, started: %v)", c.Call.ID, c.Status, c.Gate.Decision, c.Started)
	}
	if c.Gate.Result != nil {
		result = *c.Gate.Result // the gate answered: what the host sends is not used
	} else if err := checkResultStatus(result); err != nil {
		return result, s.outcome(), err
	}
	if d, err := value.Normalize(result.Data); err == nil {
		result.Data = d
	} else {
		result = model.Error("the tool returned data that is not a value: " + err.Error())
	}
	if result.Status == model.StatusPending {
		t, err := toolTicket(c, result)
		if err == nil {
			return s.suspendByTool(ctx, c, result, t)
		}
		// Nobody could answer a ticket that does not read: the call fails.
		result = model.Error("the tool answered pending, but its data is not a ticket: " + err.Error())
	}
	r := result
	if err := s.phase(ctx, phase.AfterToolExecute, plugin.Input{Tool: &plugin.ToolInfo{Call: c.Call, Result: &r, Resume: resumeOf(c), Gate: gateInfo(c)}}); err != nil {
		return result, s.outcome(), err
	}
	in := s.input()
	in.Phase, in.Snap, in.Configs = phase.AfterToolExecute, s.st().Snapshot(), s.agent.Configs
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
	s.callDone(c, to, &res)
	if c.Gate.Decision == gate.Block {
		s.termination = Termination{Kind: Blocked, Detail: c.Gate.Reason}.String()
	}
	s.checkStop()
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

// toolTicket reads the ticket of a tool that answered "pending": the
// result's data, as awaken.pending writes it; the id, message and resume
// mode default to the call's, the result's message and
// use_decision_as_result.
func toolTicket(c *CallRecord, result model.ToolResult) (gate.Ticket, error) {
	t, err := gate.TicketFromValue(result.Data)
	if err != nil {
		return t, err
	}
	if t.ID == "" {
		t.ID = "ticket_" + c.Call.ID
	}
	if t.Message == "" {
		t.Message = result.Message
	}
	if t.ResumeMode == "" {
		t.ResumeMode = gate.UseDecisionAsResult
	}
	return t, nil
}

// suspendByTool suspends a call whose tool answered "pending" with ticket t.
func (s *Session) suspendByTool(ctx context.Context, c *CallRecord, result model.ToolResult, t gate.Ticket) (model.ToolResult, Outcome, error) {
	t.CallID = c.Call.ID
	s.arm(&t)
	c.Gate = &GateRecord{Decision: gate.Suspend, Plugin: "tool", Reason: t.Message, Ticket: &t, Args: c.Call.Args}
	if err := s.move(c, CallSuspended); err != nil {
		return result, s.outcome(), err
	}
	s.callDone(c, CallSuspended, &result)
	if err := s.recordCalls(ctx, phase.AfterToolExecute, c); err != nil {
		return result, s.outcome(), err
	}
	return result, s.outcome(), nil
}

// interrupt fails every call of the step that has not run yet.
func (s *Session) interrupt() {
	for _, c := range s.calls {
		if c.Status == CallNew || c.Status == CallResuming || (c.Status == CallRunning && c.Result == nil) {
			s.setStatus(c, CallFailed)
			r := model.Error(interruptedText)
			c.Result = &r
			s.messages = append(s.messages, ToolMessage(c.Call, r))
			s.callDone(c, CallFailed, &r)
		}
	}
}

// RunCalls drives the step's calls that wait for the gate, for a host that
// runs the tools itself (the loop): in model order each is gated; allowed
// calls wait in a batch, and a call the gate decides otherwise about first
// makes the waiting ones run, then is gated again, since its decision may
// depend on what they did (docs/design.md). exec runs one allowed call's
// tool; its failures are error results. Blocked and set_result calls get
// their after_tool_execute; suspended ones wait for Resume. It stops when
// the run ends, and returns what stopped a phase.
func (s *Session) RunCalls(ctx context.Context, exec func(context.Context, model.ToolCall) model.ToolResult) error {
	// A gate that fails ends the run without a phase record.
	defer s.journalEnd()
	var ready []*CallRecord
	for _, c := range s.calls {
		if s.termination != "" || s.status != Running {
			break
		}
		if c.Status != CallNew && c.Status != CallResuming {
			continue
		}
		g, err := s.evaluate(ctx, c)
		if err != nil {
			return s.fail(ctx, err)
		}
		if g.Decision != gate.Allow && len(ready) > 0 {
			if err := s.runBatch(ctx, ready, exec); err != nil {
				return err
			}
			ready = nil
			if s.termination != "" {
				break
			}
			if g, err = s.evaluate(ctx, c); err != nil {
				return s.fail(ctx, err)
			}
		}
		if err := s.applyGate(ctx, c, g); err != nil {
			return err
		}
		switch c.Gate.Decision {
		case gate.Allow:
			ready = append(ready, c)
		case gate.Block, gate.SetResult:
			if _, _, err := s.AfterToolExecute(ctx, c.Call, model.ToolResult{}); err != nil {
				return err
			}
		}
	}
	if s.termination == "" {
		return s.runBatch(ctx, ready, exec)
	}
	return nil
}

// runBatch runs allowed calls: before_tool_execute, the tool,
// after_tool_execute. A run that ends on the way interrupts the rest.
func (s *Session) runBatch(ctx context.Context, ready []*CallRecord, exec func(context.Context, model.ToolCall) model.ToolResult) error {
	for _, c := range ready {
		if s.termination != "" || c.Status != CallRunning || c.Started {
			continue
		}
		if _, err := s.BeforeToolExecute(ctx, c.Call); err != nil {
			return err
		}
		if s.termination != "" {
			s.interrupt()
			return nil
		}
		res := exec(ctx, c.Call)
		if err := ctx.Err(); err != nil {
			return err
		}
		if _, _, err := s.AfterToolExecute(ctx, c.Call, res); err != nil {
			return err
		}
	}
	return nil
}

// callDone emits tool_call_done for c, if the sink wants it (the event
// boxes the call's result).
func (s *Session) callDone(c *CallRecord, status CallStatus, r *model.ToolResult) {
	if event.Wants(s.events, event.ToolCallDone{}.Type()) {
		s.events.Emit(event.ToolCallDone{CallID: c.Call.ID, Name: c.Call.Name, Status: string(status), Result: r})
	}
}
