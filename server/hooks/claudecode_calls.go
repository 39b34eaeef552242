package hooks

// The Claude Code adapter's tool-call events (claudecode.go has the
// mapping and the session events): SubagentStop, PermissionRequest,
// PreToolUse and PostToolUse, and the step they run in.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/value"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// subagentStop is a subagent's last answer: a run of its own (on the
// thread "<session>/subagent/<agent_id>") whose inference answered
// last_assistant_message without tool calls, so plugins may keep the
// subagent going with runtime.continue ({"decision": "block"}). The run
// stays open while they do, so max_continues bounds them; otherwise it
// ends.
func (c *claudeCode) subagentStop(ctx context.Context, cs *ccSession, in ccInput) (ccResult, error) {
	var res ccResult
	if in.AgentID == "" || len(in.AgentID) > c.o.MaxIDLen {
		return res, fmt.Errorf("SubagentStop needs an agent_id of at most %d bytes", c.o.MaxIDLen)
	}
	thread := subagentThread(cs.id, in.AgentID)
	id := ""
	if i := slices.IndexFunc(cs.subRuns, func(r SubRun) bool { return r.Agent == in.AgentID }); i >= 0 {
		id = cs.subRuns[i].Run
		cs.subRuns = slices.Delete(cs.subRuns, i, i+1)
	} else {
		// The adapter let go of the session (idle, or past max_runs) while
		// a runtime.continue kept the subagent's run open: the run still
		// holds its thread, and is taken up again.
		id = c.o.Runs.ThreadHolder(thread)
	}
	// The run on the thread is taken up when it is between steps or waits
	// for the model's answer: kept open by a runtime.continue, or the run
	// of the subagent's own tool calls.
	var e Run
	if id != "" {
		if le, err := c.lock(ctx, cs, id); err == nil {
			st := le.Session().Stage()
			if le.Done() || !c.adoptable(cs, le) || (st != run.StageStepEnded && st != run.StageStepStarted && st != run.StageInferenceReady) {
				c.unlock(cs, le)
			} else {
				e = le
			}
		}
	}
	if e == nil {
		// Whatever still holds the thread (a run left mid-step) ends first.
		if err := c.clearThread(ctx, cs, thread); err != nil {
			return res, err
		}
		var err error
		e, err = c.start(ctx, cs, cs.agent, thread, nil)
		if err != nil {
			return res, err
		}
	}
	sess := e.Session()
	var o run.Outcome
	err := func() error {
		if st := sess.Stage(); st != run.StageInferenceReady {
			if st != run.StageStepStarted { // a continued step has started
				if _, err := sess.StepStart(ctx); err != nil || sess.Termination() != "" {
					return err
				}
			}
			if _, _, err := sess.BeforeInference(ctx, model.Request{}); err != nil || sess.Termination() != "" {
				return err
			}
		}
		if _, err := sess.AfterInference(ctx, model.Response{Text: in.LastAssistantMessage}); err != nil || sess.Termination() != "" {
			return err
		}
		var err error
		if o, err = sess.StepEnd(ctx); err != nil || sess.Termination() != "" || len(o.Continued) == 0 {
			return err
		}
		// The continued step starts now: a plugin that stops it at its
		// step_start (the budget, past max_steps) ends the run here rather
		// than after the subagent was told to go on.
		_, err = sess.StepStart(ctx)
		return err
	}()
	if err == nil && sess.Termination() == "" && len(o.Continued) > 0 {
		parts := make([]string, len(o.Continued))
		for i, m := range o.Continued {
			parts[i] = m.Content
		}
		res.decision, res.reason = "block", strings.Join(parts, "\n\n")
		cs.subRuns = append(cs.subRuns, SubRun{Agent: in.AgentID, Run: e.ID()})
		err := c.release(ctx, cs, e, nil)
		if err == nil {
			c.trimSubRuns(ctx, cs)
		}
		return res, err
	}
	if err == nil && sess.Status() == run.Running && sess.Termination() != "" {
		_, err = sess.RunEnd(ctx)
	}
	if err == nil && sess.Status() == run.Done {
		// The subagent is over: what its session knew is of no more use,
		// and a long session must not keep every subagent it ever ran.
		c.forgetSubagent(cs, in.AgentID)
	}
	return res, c.release(ctx, cs, e, err)
}

// MaxSubRuns bounds the subagents' runs a session keeps open for a
// runtime.continue at their SubagentStop (more than Claude Code runs at
// once): a subagent told to go on that never stops again (interrupted)
// would otherwise be kept until SessionEnd, and a long session's subagents
// would grow its memory, and the record hook --local reads at every event,
// without bound.
const MaxSubRuns = 32

// trimSubRuns ends the oldest kept subagent runs past MaxSubRuns, as
// SessionEnd would, and forgets their subagents' sessions. A run that
// cannot be ended now is only let go of: it still holds its thread, where
// its subagent's next SubagentStop finds it.
func (c *claudeCode) trimSubRuns(ctx context.Context, cs *ccSession) {
	for len(cs.subRuns) > MaxSubRuns {
		r := cs.subRuns[0]
		cs.subRuns = slices.Delete(cs.subRuns, 0, 1)
		e, err := c.lock(ctx, cs, r.Run)
		if err == nil {
			err = c.finishRun(ctx, cs, e, &ccResult{}, false)
		}
		if err != nil && !errors.Is(err, ErrNoRun) {
			c.o.Log.LogAttrs(ctx, slog.LevelWarn, "ending a subagent's run past the bound of kept runs",
				slog.String("run_id", r.Run), slog.String("error", err.Error()))
			continue
		}
		c.forgetSubagent(cs, r.Agent)
	}
}

// forgetSubagent forgets the session of cs's subagent agentID (cs.mu
// held: a session's lock is taken before its subagents').
func (c *claudeCode) forgetSubagent(cs *ccSession, agentID string) {
	c.mu.Lock()
	sub := c.sessions[subagentThread(cs.id, agentID)]
	c.mu.Unlock()
	if sub == nil {
		return
	}
	sub.mu.Lock()
	if !sub.gone {
		c.forget(sub)
	}
	sub.mu.Unlock()
}

// permissionRequest answers Claude Code before it asks its user whether a
// call may run. The call was gated at its PreToolUse when that hook is
// installed: that decision answers (block and set_result deny, a rewrite
// allows with its input); otherwise the call is gated now. Suspend and
// allow leave the question to the user ({}); only a rewrite, which vouches
// for the exact input it made, answers for the user.
func (c *claudeCode) permissionRequest(ctx context.Context, cs *ccSession, in ccInput) (ccResult, error) {
	var res ccResult
	call, err := toolCall(in)
	if err != nil {
		return res, err
	}
	e, err := c.openRun(ctx, cs)
	if err != nil {
		return res, err
	}
	if e != nil {
		calls := e.Session().Calls()
		for i := len(calls) - 1; i >= 0; i-- {
			rec := calls[i]
			if rec.Call.Name != call.Name || rec.Gate == nil || !reflect.DeepEqual(rec.Call.Args, call.Args) {
				continue
			}
			switch rec.Gate.Decision {
			case gate.Block, gate.SetResult:
				res.decision, res.reason = "deny", rec.Gate.Reason
				if rec.Gate.Decision == gate.SetResult && rec.Gate.Result != nil {
					res.reason = "awaken-lua answered this call without running it (" + rec.Gate.Plugin + "): " + run.ResultText(*rec.Gate.Result)
				}
			case gate.Allow:
				if rec.Gate.RewrittenBy != "" {
					res.decision, res.updated = "allow", rec.Gate.Args
				}
			}
			c.unlock(cs, e)
			return res, nil
		}
		c.unlock(cs, e)
	}
	pre, err := c.preToolUse(ctx, cs, in)
	switch {
	case pre.decision == "deny":
		res.decision, res.reason = "deny", pre.reason
	case pre.decision == "allow" && pre.updated != nil:
		res.decision, res.updated = "allow", pre.updated
	}
	res.stop = pre.stop
	return res, err
}

func (c *claudeCode) preToolUse(ctx context.Context, cs *ccSession, in ccInput) (ccResult, error) {
	var res ccResult
	call, err := toolCall(in)
	if err != nil {
		return res, err
	}
	cs.see(call.Name, c.builtin.names)
	e, err := c.openRun(ctx, cs)
	if err != nil {
		return res, err
	}
	if e != nil && cs.deferring {
		if handled, err := c.deferred(ctx, e, cs, call.ID, &res); handled {
			return res, c.release(ctx, cs, e, err)
		}
	}
	if e == nil {
		if e, err = c.newRun(ctx, cs, nil); err != nil {
			return res, err
		}
	}
	e, err = c.toGate(ctx, cs, e, &res, call)
	if e == nil || err != nil {
		if err == nil && res.stop != "" {
			res.decision, res.reason = "deny", res.stop
		}
		return res, c.release(ctx, cs, e, err)
	}
	sess := e.Session()
	rev0 := sess.Revision()
	d, o, err := sess.ToolGate(ctx, call)
	if err != nil {
		return res, c.release(ctx, cs, e, err)
	}
	if o.Revision != rev0 {
		c.o.Decided(d.Decision)
	}
	if d.Decision != gate.Suspend {
		delete(cs.approved, call.ID)
	}
	switch d.Decision {
	case gate.Allow:
		if rec, ok := findCall(e, call.ID); ok && !rec.Started && rec.Status == run.CallRunning {
			if _, err := sess.BeforeToolExecute(ctx, call); err != nil {
				return res, c.release(ctx, cs, e, err)
			}
		}
		if d.Plugin != "" { // allowed after a rewrite
			res.decision, res.updated = "allow", d.Args
			res.reason = "awaken-lua: " + d.Plugin + " rewrote the input"
		}
	case gate.Block:
		res.decision, res.reason = "deny", d.Reason
		if rec, ok := findCall(e, call.ID); ok && rec.Status == run.CallRunning {
			if _, _, err := sess.AfterToolExecute(ctx, call, model.ToolResult{}); err != nil {
				return res, c.release(ctx, cs, e, err)
			}
		}
	case gate.SetResult:
		var result model.ToolResult
		if rec, ok := findCall(e, call.ID); ok && rec.Status == run.CallRunning {
			if result, _, err = sess.AfterToolExecute(ctx, call, model.ToolResult{}); err != nil {
				return res, c.release(ctx, cs, e, err)
			}
		} else if rec.Result != nil {
			result = *rec.Result
		} else if d.Result != nil {
			result = *d.Result
		}
		who := d.Plugin
		if who == "" {
			who = "a plugin"
		}
		res.decision = "deny"
		res.reason = "awaken-lua answered this call without running it (" + who + "): " + run.ResultText(result)
	case gate.Suspend:
		res.decision = "ask"
		res.reason = d.Reason
		if res.reason == "" {
			res.reason = "awaken-lua: " + d.Plugin + " asks for approval of this call"
		}
		if in.suspend == suspendDefer && pluginStop(e) == "" {
			if err := c.deferCall(ctx, cs, e, call.ID, &res); err != nil || res.decision == suspendDefer {
				return res, c.release(ctx, cs, e, err)
			}
		}
		// Claude Code's user decides, whenever: an expiry cannot hold the
		// call back, and would record a call the user approved late as
		// cancelled (no result, no after_tool_execute). A deferred call
		// keeps its expiry: the sidecar decides it when nobody does.
		sess.Unbound(call.ID)
	}
	if stop := pluginStop(e); stop != "" {
		res.stop = stop
		if res.decision == "" || res.decision == "allow" {
			res.decision, res.reason, res.updated = "deny", stop, nil
		}
	}
	if e.Session().Termination() != "" {
		// Blocked or stopped: end the run now; the next event starts another.
		return res, c.finishRun(ctx, cs, e, &res, false)
	}
	return res, c.release(ctx, cs, e, nil)
}

// toGate brings the run to a step where the call can be gated: it answers
// an open inference with the call, joins a step whose other calls are still
// running (parallel tools), or closes the step and opens another.
func (c *claudeCode) toGate(ctx context.Context, cs *ccSession, e Run, res *ccResult, call model.ToolCall) (Run, error) {
	for range maxGateMoves {
		ne, err := c.drive(ctx, cs, e, res, run.StageInferred, call.Name)
		if ne == nil || err != nil {
			return ne, err
		}
		e = ne
		sess := e.Session()
		if stageOf(e) == run.StageInferenceReady {
			if _, err := sess.AfterInference(ctx, model.Response{ToolCalls: []model.ToolCall{call}}); err != nil {
				return e, err
			}
			if sess.Termination() != "" {
				// A plugin stopped the run as the call came in: drive
				// denies the call with the stop, or carries on in a new
				// run after another ending.
				continue
			}
			if cs.listed[call.Name] {
				return e, nil
			}
			// This inference did not offer the tool: the call fails here
			// with "not available" and is gated again in a fresh step,
			// which offers it.
			if err := c.settleUnoffered(ctx, e, call); err != nil {
				return e, err
			}
			if _, err := c.closeStep(ctx, cs, e, true); err != nil {
				return e, err
			}
			continue
		}
		// An open step (stage inferred).
		if rec, ok := findCall(e, call.ID); ok {
			if rec.Call.Name != call.Name || !value.Equal(rec.SentArgs(), call.Args) {
				// The kept decision is about the input first sent (not
				// the arguments a rewrite made of it); the agent would
				// run this one.
				return e, errs.New(errs.BadRequest, "tool_use_id %q was already decided for %s with other input; "+
					"give each tool call its own tool_use_id", call.ID, rec.Call.Name)
			}
			return e, nil // a retry: the gate answers with its kept decision
		}
		if c.stepBusy(e) && cs.listed[call.Name] && e.Session().NumCalls() < stepCap(cs) {
			// A parallel call joins the step.
			if _, err := sess.AnnounceCall(ctx, call); err != nil {
				return e, err
			}
			return e, nil
		}
		if _, err := c.closeStep(ctx, cs, e, true); err != nil {
			return e, err
		}
	}
	return e, fmt.Errorf("could not open a step for call %s", call.ID)
}

// stepCap is how many calls a step of cs may hold: a call past it opens a
// new step, and those of the old one still waiting are settled as unreported.
func stepCap(cs *ccSession) int {
	if cs.posts {
		return MaxStepCalls
	}
	return PreOnlyBatch
}

// settleUnoffered finishes a call to a tool the step did not offer.
func (c *claudeCode) settleUnoffered(ctx context.Context, e Run, call model.ToolCall) error {
	sess := e.Session()
	d, _, err := sess.ToolGate(ctx, call)
	if err != nil {
		return err
	}
	if d.Decision == gate.Block || d.Decision == gate.SetResult {
		_, _, err = sess.AfterToolExecute(ctx, call, model.ToolResult{})
	}
	return err
}

// stepBusy reports whether a call of the open step still waits for its
// PostToolUse.
func (c *claudeCode) stepBusy(e Run) bool {
	for rec := range e.Session().EachCall() {
		if rec.Status == run.CallRunning || rec.Status == run.CallNew || rec.Status == run.CallResuming {
			return true
		}
	}
	return false
}

// closeStep ends the open step. Calls still running get an error result
// when final (their PostToolUse never came: Claude Code's user denied them
// or they failed); otherwise the step stays open for them. Suspended calls
// are resumed when Claude Code ran them (PostToolUse after "ask") and
// cancelled when final; then step_end runs.
func (c *claudeCode) closeStep(ctx context.Context, cs *ccSession, e Run, final bool) (bool, error) {
	sess := e.Session()
	var suspended []run.CallRecord
	for _, rec := range sess.Calls() {
		switch rec.Status {
		case run.CallRunning, run.CallNew, run.CallResuming:
			if !final {
				return false, nil
			}
		case run.CallSuspended:
			if _, ok := cs.approved[rec.Call.ID]; !ok && !final {
				return false, nil
			}
			suspended = append(suspended, rec)
		}
	}
	for _, rec := range sess.Calls() {
		if sess.Termination() != "" {
			return true, nil
		}
		if err := c.abandon(ctx, cs, e, rec); err != nil {
			return true, err
		}
	}
	if len(suspended) > 0 && sess.Termination() == "" {
		if err := c.resolve(ctx, cs, e, suspended); err != nil {
			return true, err
		}
	}
	if sess.Termination() != "" || sess.Status() != run.Running {
		return true, nil
	}
	o, err := sess.StepEnd(ctx)
	cs.continued = o.Continued
	return true, err
}

// abandon finishes a call whose PostToolUse never came.
func (c *claudeCode) abandon(ctx context.Context, cs *ccSession, e Run, rec run.CallRecord) error {
	sess := e.Session()
	noResult := model.Error("Claude Code reported no result for this call (the user denied it, or it failed)")
	if !cs.posts {
		// Only PreToolUse is installed: the call ran, or not; nobody says.
		noResult = model.ToolResult{Status: model.StatusSuccess,
			Message: "Claude Code reports no tool results to awaken-lua (no PostToolUse hook), so this result is unknown"}
	}
	switch rec.Status {
	case run.CallNew, run.CallResuming:
		d, _, err := sess.ToolGate(ctx, rec.Call)
		if err != nil || d.Decision == gate.Suspend {
			return err
		}
		if d.Decision == gate.Allow {
			if _, err := sess.BeforeToolExecute(ctx, rec.Call); err != nil {
				return err
			}
		}
		_, _, err = sess.AfterToolExecute(ctx, rec.Call, noResult)
		return err
	case run.CallRunning:
		if rec.Gate != nil && rec.Gate.Decision == gate.Allow && !rec.Started {
			if _, err := sess.BeforeToolExecute(ctx, rec.Call); err != nil {
				return err
			}
		}
		_, _, err := sess.AfterToolExecute(ctx, rec.Call, noResult)
		return err
	}
	return nil
}

// resolve settles suspended calls: the run waits (step_end), calls Claude
// Code ran after "ask" are resumed, gated again and given their result;
// the others are cancelled. A call suspended again is cancelled too:
// Claude Code's user already answered.
func (c *claudeCode) resolve(ctx context.Context, cs *ccSession, e Run, suspended []run.CallRecord) error {
	sess := e.Session()
	for round := 0; round < 2; round++ {
		if _, err := sess.StepEnd(ctx); err != nil || sess.Status() != run.Waiting {
			return err
		}
		var ds []run.ResumeDecision
		for _, rec := range suspended {
			if _, ok := cs.approved[rec.Call.ID]; ok && round == 0 {
				ds = append(ds, run.ResumeDecision{Target: rec.Call.ID, Action: "resume"})
			} else {
				ds = append(ds, run.ResumeDecision{Target: rec.Call.ID, Action: "cancel", Reason: "not approved in Claude Code"})
			}
		}
		if _, _, err := sess.Resume(ctx, ds); err != nil {
			return err
		}
		suspended = suspended[:0]
		for _, d := range ds {
			if d.Action != "resume" || sess.Termination() != "" {
				continue
			}
			rec, _ := findCall(e, d.Target)
			g, _, err := sess.ToolGate(ctx, rec.Call)
			if err != nil {
				return err
			}
			result := cs.approved[d.Target]
			switch g.Decision {
			case gate.Suspend:
				suspended = append(suspended, rec)
				continue
			case gate.Allow:
				if _, err := sess.BeforeToolExecute(ctx, rec.Call); err != nil {
					return err
				}
			}
			if _, _, err := sess.AfterToolExecute(ctx, rec.Call, result); err != nil {
				return err
			}
		}
		for _, d := range ds {
			delete(cs.approved, d.Target)
		}
		if len(suspended) == 0 {
			return nil
		}
	}
	return nil
}

func (c *claudeCode) postToolUse(ctx context.Context, cs *ccSession, in ccInput) (ccResult, error) {
	var res ccResult
	call, err := toolCall(in)
	if err != nil {
		return res, err
	}
	result := model.Success(in.ToolResponse)
	if in.HookEventName == evPostToolUseFailure {
		msg := fmt.Sprint(in.Error)
		if s, ok := in.Error.(string); ok {
			msg = s
		}
		result = model.Error(msg)
	}
	if d, err := value.Normalize(result.Data); err == nil {
		result.Data = d
	} else {
		result.Data = nil
	}
	e, err := c.openRun(ctx, cs)
	if err != nil || e == nil {
		return res, err // a call this adapter never gated (say, before a restart)
	}
	sess := e.Session()
	if in.byInput {
		call.ID = openCallByInput(e, call)
	}
	rec, ok := findCall(e, call.ID)
	if !ok {
		return res, c.release(ctx, cs, e, nil)
	}
	switch rec.Status {
	case run.CallSuspended:
		if cs.approved == nil {
			cs.approved = map[string]model.ToolResult{}
		}
		cs.approved[call.ID] = result // Claude Code's user approved the "ask"
	case run.CallRunning:
		if rec.Gate != nil && rec.Gate.Decision == gate.Allow {
			if !rec.Started {
				if _, err := sess.BeforeToolExecute(ctx, rec.Call); err != nil {
					return res, c.release(ctx, cs, e, err)
				}
			}
			out, _, err := sess.AfterToolExecute(ctx, rec.Call, result)
			if err != nil && in.HookEventName == evPostToolUse && sess.TransformsResults() {
				// The plugins that review the output (a redaction that ran
				// out of time on a large one, say) could not: what they
				// would have taken out may be in it, so Claude reads none
				// of it, in the tool's shape.
				c.o.Failed(err)
				c.failClosed("Claude Code", in.HookEventName, err)
				res.toolOutput, res.hasToolOutput = withheld(result.Data,
					"[awaken-lua withheld this output: a plugin that reviews tool output failed: "+errs.Clip(err.Error(), 300)+"]"), true
				res.mcp = strings.HasPrefix(call.Name, "mcp__")
				return res, c.release(ctx, cs, e, nil)
			}
			if err != nil {
				return res, c.release(ctx, cs, e, err)
			}
			// A result transform (redaction) changed the output: Claude
			// reads the changed one (updatedToolOutput, any tool since
			// Claude Code v2.1.121; updatedMCPToolOutput, MCP tools, for
			// earlier versions). The transform saw tool_response as Claude
			// Code sent it; what a Lua table cannot tell (an empty list
			// from an empty object, a null member from a missing one) is
			// put back as it was, so an output a plugin copied unchanged is
			// no change, and a changed one keeps the tool's shape, the only
			// one Claude Code takes.
			if in.HookEventName == evPostToolUse && out.Status == model.StatusSuccess {
				if data := reshape(result.Data, out.Data); !value.Equal(data, result.Data) {
					res.toolOutput, res.hasToolOutput = data, true
					res.mcp = strings.HasPrefix(call.Name, "mcp__")
				}
			}
		}
	}
	if stop := pluginStop(e); stop != "" {
		res.stop = stop
		return res, c.finishRun(ctx, cs, e, &res, false)
	}
	if sess.Termination() == "" && sess.Status() == run.Running {
		closed, err := c.closeStep(ctx, cs, e, false)
		if err != nil {
			return res, c.release(ctx, cs, e, err)
		}
		if closed {
			// Claude infers next: open that inference so the context
			// messages plugins scheduled reach it now.
			e, err = c.drive(ctx, cs, e, &res, run.StageInferenceReady, "")
			return res, c.release(ctx, cs, e, err)
		}
	}
	return res, c.release(ctx, cs, e, nil)
}

// openCallByInput is the id of the latest call of e's open step with
// call's tool and input that waits for its result, or "". The latest: an
// earlier one with the same input is one the agent never ran (its user
// declined it, and the model asked again).
func openCallByInput(e Run, call model.ToolCall) string {
	calls := e.Session().Calls()
	for i := len(calls) - 1; i >= 0; i-- {
		rec := calls[i]
		switch rec.Status {
		case run.CallRunning, run.CallNew, run.CallResuming, run.CallSuspended:
			if rec.Call.Name == call.Name && value.Equal(rec.SentArgs(), call.Args) {
				return rec.Call.ID
			}
		}
	}
	return ""
}

// reshape returns out, a tool output as a plugin returned it, with what
// the Lua view of orig (the output as the tool gave it) lost put back: an
// empty list where orig has one and out an empty object, and orig's null
// members that out lacks. out is not modified.
// withheld is data with every string in it, or data itself when it is
// none of a string, an object or a list, replaced by msg: a tool output
// nobody may read, in the shape the tool gave it.
func withheld(data any, msg string) any {
	switch x := data.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, v := range x {
			out[k] = withheld(v, msg)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, v := range x {
			out[i] = withheld(v, msg)
		}
		return out
	case bool, float64:
		return x
	}
	return msg
}

func reshape(orig, out any) any {
	switch o := orig.(type) {
	case []any:
		switch x := out.(type) {
		case map[string]any:
			if len(x) == 0 {
				return []any{}
			}
		case []any:
			var y []any
			for i := range min(len(o), len(x)) {
				if v := reshape(o[i], x[i]); !value.Same(v, x[i]) {
					if y == nil {
						y = slices.Clone(x)
					}
					y[i] = v
				}
			}
			if y != nil {
				return y
			}
		}
	case map[string]any:
		x, ok := out.(map[string]any)
		if !ok {
			return out
		}
		var y map[string]any
		set := func(k string, v any) {
			if y == nil {
				y = make(map[string]any, len(x)+1)
				maps.Copy(y, x)
			}
			y[k] = v
		}
		for k, ov := range o {
			xv, present := x[k]
			switch {
			case !present && (ov == nil || ov == value.Null{}):
				set(k, ov)
			case present:
				if v := reshape(ov, xv); !value.Same(v, xv) {
					set(k, v)
				}
			}
		}
		if y != nil {
			return y
		}
	}
	return out
}
