package luabridge

import (
	"fmt"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
	lua "github.com/yuin/gopher-lua"
)

// phase runs one phase as a run reaches it: a session of the harness's
// runtime on opts' thread, restored at the stage the phase follows with
// opts.state seeded (run_start: a run started afresh), runs the phase
// through the Session's own method for it. The thread then keeps what the
// run's thread-scoped keys hold (Session.SaveThread), as if the run had
// stopped there. It returns {state, effects, pending_actions,
// failed_actions, revision}.
func (h *harness) phase(L *lua.LState) int {
	h.self(L)
	name := L.CheckString(2)
	p, ok := phase.Parse(name)
	if !ok || p == phase.ToolGate {
		L.ArgError(2, fmt.Sprintf("a phase other than tool_gate (use h:gate): one of %s", strings.Join(phase.Names(), ", ")))
	}
	in := h.phaseInput(L, 3)
	o := h.opts(L, 4)
	ctx := h.tr.cctx
	var effects []any
	onEffect := recordEffect(&effects)
	msgs, err := h.rt.Conversation(ctx, h.agent.ID, o.thread, in.Messages)
	if err != nil {
		h.tr.raiseCode(L, err)
	}
	var sess *run.Session
	restore := func(stage run.Stage, step int, calls ...run.CallRecord) {
		cp := h.checkpoint(L, o, stage, calls...)
		cp.Step, cp.Messages = step, msgs
		if p == phase.RunEnd {
			cp.Termination = run.Termination{Kind: run.Natural}.String()
		}
		if sess, err = h.rt.RestoreCheckpoint(ctx, cp, nil, onEffect); err != nil {
			h.tr.raiseCode(L, err)
		}
	}
	switch p {
	case phase.RunStart:
		if len(o.state) > 0 {
			L.ArgError(4, "run_start begins a run from the thread's saved state: opts.state seeds the keys of a later phase")
		}
		sess, _, err = h.rt.Start(ctx, run.StartOptions{Agent: h.agent.ID, ThreadID: o.thread, RunID: h.info(o).ID,
			Messages: msgs, Tools: in.Tools, OnEffect: onEffect, Cwd: o.cwd})
	case phase.StepStart:
		stage := run.StageStepEnded
		if o.step <= 1 {
			stage = run.StageRunStarted
		}
		restore(stage, o.step-1)
		_, err = sess.StepStart(ctx)
	case phase.BeforeInference:
		restore(run.StageStepStarted, o.step)
		_, _, err = sess.BeforeInference(ctx, model.Request{Messages: msgs, Tools: in.Tools})
	case phase.AfterInference:
		restore(run.StageInferenceReady, o.step)
		var resp model.Response
		if in.Response != nil {
			resp = *in.Response
		}
		_, err = sess.AfterInference(ctx, resp)
	case phase.BeforeToolExecute, phase.AfterToolExecute:
		if in.Tool == nil {
			L.ArgError(3, fmt.Sprintf("%s runs for a tool call: give input.tool = {id?, name, args?, result?, decision?, resume?}", p))
		}
		restore(run.StageInferred, o.step, h.callRecord(in.Tool, o, p))
		if p == phase.BeforeToolExecute {
			_, err = sess.BeforeToolExecute(ctx, in.Tool.Call)
			break
		}
		res := model.Success("")
		if in.Tool.Result != nil {
			res = *in.Tool.Result
		}
		_, _, err = sess.AfterToolExecute(ctx, in.Tool.Call, res)
	case phase.StepEnd:
		restore(run.StageInferred, o.step)
		_, err = sess.StepEnd(ctx)
	case phase.RunEnd:
		restore(run.StageStepEnded, o.step)
		_, err = sess.RunEnd(ctx)
	}
	if err != nil {
		h.tr.raiseCode(L, err)
	}
	if err := sess.SaveThread(ctx); err != nil {
		h.tr.raiseCode(L, err)
	}
	pending := []any{}
	for _, a := range sess.PendingActions() {
		pending = append(pending, map[string]any{"key": a.Key, "phase": a.Phase.String(), "payload": a.Payload})
	}
	failed := []any{}
	for _, d := range sess.FailedActions() {
		failed = append(failed, map[string]any{"key": d.Key, "payload": d.Payload, "error": d.Error})
	}
	if effects == nil {
		effects = []any{}
	}
	out := map[string]any{
		"state":           pluginState(sess.State()),
		"effects":         effects,
		"pending_actions": pending,
		"failed_actions":  failed,
		"revision":        float64(sess.Revision()),
	}
	L.Push(toLua(L, h.tr.inst.null, out))
	return 1
}

// phaseInput reads h:phase's input table {tool?, response?, messages?,
// tools?} at stack index n.
func (h *harness) phaseInput(L *lua.LState, n int) plugin.Input {
	in := plugin.Input{}
	t, ok := L.Get(n).(*lua.LTable)
	if !ok {
		return in
	}
	raw, err := fromLua(t, h.tr.inst.null)
	if err != nil {
		L.ArgError(n, err.Error())
	}
	m, _ := raw.(map[string]any)
	for k := range m {
		switch k {
		case "tool":
			tool := h.toolCallFrom(L, n, m["tool"])
			in.Tool = &tool
		case "response":
			r, err := model.ResponseFromValue(m["response"])
			if err != nil {
				L.ArgError(n, err.Error())
			}
			in.Response = &r
		case "messages":
			msgs, err := model.MessagesFromValue(m["messages"])
			if err != nil {
				L.ArgError(n, err.Error())
			}
			in.Messages = msgs
		case "tools":
			list, _ := asList(m["tools"])
			for i, x := range list {
				tm, ok := x.(map[string]any)
				name, _ := tm["name"].(string)
				if !ok || name == "" {
					L.ArgError(n, fmt.Sprintf("tools[%d] is a table {name, description?}", i+1))
				}
				desc, _ := tm["description"].(string)
				in.Tools = append(in.Tools, model.ToolSpec{Name: name, Description: desc})
			}
		default:
			L.ArgError(n, fmt.Sprintf("unknown input %q (inputs: tool, response, messages, tools)", k))
		}
	}
	return in
}

// callRecord is the call a call phase (p) runs for: the input's tool, past
// the gate with the decision the tool names, or else the one opts.state's
// __runtime.tool_calls records for it, or else allowed; resumed from a
// suspension when the tool names a resume. For after_tool_execute an
// allowed call has started, as before_tool_execute leaves it.
func (h *harness) callRecord(tool *plugin.ToolInfo, o callOpts, p phase.Phase) run.CallRecord {
	g := run.GateRecord{Decision: gate.Allow, Args: tool.Call.Args}
	if tool.Gate != nil {
		g.Decision, g.Plugin, g.Reason, g.RewrittenBy = tool.Gate.Decision, tool.Gate.Plugin, tool.Gate.Reason, tool.Gate.RewrittenBy
	} else {
		recs, _ := o.state[run.KeyToolCalls].(map[string]any)
		rec, _ := recs[tool.Call.ID].(map[string]any)
		if k, ok := gate.ParseKind(str(rec["decision"])); ok {
			g.Decision, g.Plugin, g.Reason, g.RewrittenBy = k, str(rec["plugin"]), str(rec["reason"]), str(rec["rewritten_by"])
		}
	}
	if g.Decision == gate.SetResult && tool.Result != nil {
		r := *tool.Result
		g.Result = &r
	}
	cr := run.CallRecord{Call: tool.Call, Status: run.CallRunning, Gate: &g,
		Started: p == phase.AfterToolExecute && g.Decision == gate.Allow}
	if r := tool.Resume; r != nil {
		cr.Resume = &run.ResumeRecord{Action: r.Action, Result: r.Result, Reason: r.Reason, Mode: string(gate.Replay)}
	}
	return cr
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// pluginState leaves out the runtime's own keys: the harness reports those
// as pending_actions and failed_actions.
func pluginState(values map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range values {
		if !strings.HasPrefix(k, plugin.RuntimeKeyPrefix) {
			out[k] = v
		}
	}
	return out
}
