package luabridge

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/model/scripted"
	"github.com/awaken-lua/awaken-lua/run"
)

// harness is what t.harness returns: named plugins loaded into a real
// engine and runtime, with a memory store kept between calls, so thread
// state carries over. Its results are plain tables (docs/design.md).
type harness struct {
	tr     *testRun
	gen    *Generation
	rt     *run.Runtime
	store  *run.MemoryStore
	agent  run.Agent
	now    time.Time
	runs   atomic.Int64
	closed bool
	test   string // the test that made it; "" when the file did
}

const defaultThread = "main"

func (h *harness) close() {
	if !h.closed {
		h.closed = true
		h.gen.Close()
	}
}

// raiseCode raises an error whose message starts with its code, without a
// position prefix, so t.raises(fn, "^phase_run_loop_exceeded") matches.
// The error is kept by its message: a test that fails with it uncaught is
// reported position first, as check and dev print it (file:line: code: ...).
func (tr *testRun) raiseCode(L *lua.LState, err error) {
	msg := err.Error()
	// An error of the harness's own is reported at the line of the call,
	// as a failed assertion is.
	report := &errs.Error{Pos: parseWhere(L.Where(1)), Msg: msg}
	var e *errs.Error
	if errors.As(err, &e) {
		c := *e
		c.Pos = errs.Pos{}
		msg = c.Error()
		if e.Pos.IsValid() {
			msg += " (at " + e.Pos.String() + ")"
			report = e
		} else {
			c.Pos = report.Pos
			report = &c
		}
	}
	if report.Pos.IsValid() {
		if tr.raised == nil {
			tr.raised = map[string]*errs.Error{}
		}
		tr.raised[msg] = report
	}
	L.Error(lua.LString(msg), 0)
}

// findPlugin looks for a plugin by id in the test file's directory, then
// the plugin directory, then stdlib/.
func (tr *testRun) findPlugin(id string) (PluginFile, bool) {
	for _, src := range []Source{tr.dir, tr.o.Plugins, tr.o.Stdlib} {
		if src.FS == nil {
			continue
		}
		for _, p := range []string{id + ".lua", path.Join(id, "init.lua")} {
			if _, err := fs.Stat(src.FS, p); err == nil {
				return PluginFile{ID: id, Path: p, Source: src}, true
			}
		}
	}
	return PluginFile{}, false
}

func (tr *testRun) newHarness(L *lua.LState) int {
	spec := L.OptTable(1, L.CreateTable(0, 0))
	raw, err := fromLua(spec, tr.inst.null)
	if err != nil {
		L.ArgError(1, err.Error())
	}
	m, _ := raw.(map[string]any)
	for k := range m {
		switch k {
		case "plugins", "config", "agent", "now":
		default:
			L.ArgError(1, fmt.Sprintf("unknown field %q (fields: plugins, config, agent, now)", k))
		}
	}
	var files []PluginFile
	var ids []string
	plugins, _ := m["plugins"].([]any)
	for _, v := range plugins {
		id, ok := v.(string)
		if !ok {
			L.ArgError(1, "plugins is a list of plugin ids")
		}
		f, found := tr.findPlugin(id)
		if !found {
			tr.raiseCode(L, errs.New(errs.PluginLoadFailed, "plugin %q is not in %s, %s or %s", id, tr.dir.Name, tr.o.Plugins.Name, tr.o.Stdlib.Name))
		}
		files = append(files, f)
		ids = append(ids, id)
	}
	l := &Loader{Plugins: tr.o.Plugins, Stdlib: tr.o.Stdlib, Limits: tr.o.Limits, Log: tr.o.Log}
	gen, err := l.LoadFiles(tr.cctx, files)
	if err != nil {
		tr.raiseCode(L, err)
	}
	h := &harness{tr: tr, gen: gen, store: run.NewMemoryStore(), now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	if tr.registry {
		tr.fileHarness = append(tr.fileHarness, h)
	} else {
		h.test = tr.running
		tr.harness = append(tr.harness, h)
	}
	if v, ok := m["now"]; ok {
		n := harnessField[float64](L, 1, "now", v, "a time in seconds")
		h.now = time.Unix(0, int64(n*1e9)).UTC()
	}
	agent := run.Agent{ID: "default", Plugins: ids}
	maxRounds := 0
	if v, ok := m["agent"]; ok {
		a := harnessField[map[string]any](L, 1, "agent", v, "a table {id, system_prompt, max_steps, ...}")
		for k, v := range a {
			switch k {
			case "system_prompt":
				agent.SystemPrompt = harnessField[string](L, 1, "agent.system_prompt", v, "a string")
			case "max_steps":
				agent.MaxSteps = int(harnessField[float64](L, 1, "agent.max_steps", v, "a number"))
			case "max_continues":
				f := harnessField[float64](L, 1, "agent.max_continues", v, "a number")
				agent.MaxContinues = int(f)
				if f == 0 {
					agent.MaxContinues = -1 // as in awaken.toml: 0 is none
				}
			case "max_phase_rounds":
				maxRounds = int(harnessField[float64](L, 1, "agent.max_phase_rounds", v, "a number"))
			case "plugins":
				agent.Plugins = nil
				list := harnessField[[]any](L, 1, "agent.plugins", v, "a list of plugin ids")
				for _, x := range list {
					agent.Plugins = append(agent.Plugins, harnessField[string](L, 1, "agent.plugins[i]", x, "a plugin id"))
				}
				if len(agent.Plugins) == 0 {
					agent.Plugins = nil
				}
			case "id":
				agent.ID = harnessField[string](L, 1, "agent.id", v, "a string")
			default:
				L.ArgError(1, fmt.Sprintf("unknown agent field %q (fields: id, system_prompt, max_steps, max_continues, max_phase_rounds, plugins)", k))
			}
		}
	}
	cfg, _ := m["config"].(map[string]any)
	if agent.Configs, err = gen.Set.Configure(cfg); err != nil {
		tr.raiseCode(L, err)
	}
	h.agent = agent
	opts := []engine.Option{engine.WithClock(h.clock), engine.WithLogger(tr.o.Log)}
	if maxRounds > 0 {
		opts = append(opts, engine.WithMaxRounds(maxRounds))
	}
	var n atomic.Int64
	h.rt, err = run.New(engine.New(gen.Set, opts...), run.WithAgents(agent), run.WithStore(h.store), run.WithGeneration(gen.ID),
		run.WithLogger(tr.o.Log), run.WithIDs(func(p string) string { return fmt.Sprintf("%s_%d", p, n.Add(1)) }))
	if err != nil {
		tr.raiseCode(L, err)
	}
	ud := L.NewUserData()
	ud.Value = h
	mt := L.CreateTable(0, 2)
	methods := L.CreateTable(0, 4)
	methods.RawSetString("gate", L.NewFunction(h.gate))
	methods.RawSetString("phase", L.NewFunction(h.phase))
	methods.RawSetString("run", L.NewFunction(h.run))
	methods.RawSetString("resume", L.NewFunction(h.resume))
	mt.RawSetString("__index", methods)
	mt.RawSetString("__metatable", lua.LString("protected"))
	ud.Metatable = mt
	L.Push(ud)
	return 1
}

// harnessMethods lists the harness methods (for the stub test).
func harnessMethods() []string { return []string{"gate", "phase", "run", "resume"} }

// clock advances a second at each read, so successive ctx:now() differ.
func (h *harness) clock() time.Time {
	t := h.now
	h.now = h.now.Add(time.Second)
	return t
}

func (h *harness) self(L *lua.LState) {
	if ud, ok := L.Get(1).(*lua.LUserData); !ok || ud.Value != h {
		L.RaiseError("call harness methods with a colon: h:gate(...), h:phase(...), h:run{...}, h:resume{...}")
	}
	if h.closed {
		// Its plugin generation is closed: every hook would fail, and a
		// gate would block for that reason alone.
		L.RaiseError("this harness was made by the test %q, which has ended; make the harness in the test that uses it, or at the top of the file to share it", h.test)
	}
}

// opts reads the optional opts table: state seeds keys, thread names the
// thread, step the run's step, cwd the agent's working directory.
type callOpts struct {
	state  map[string]any
	thread string
	step   int
	cwd    string
}

func (h *harness) opts(L *lua.LState, n int) callOpts {
	o := callOpts{thread: defaultThread, step: 1}
	t, ok := L.Get(n).(*lua.LTable)
	if !ok {
		return o
	}
	raw, err := fromLua(t, h.tr.inst.null)
	if err != nil {
		L.ArgError(n, err.Error())
	}
	m, _ := raw.(map[string]any)
	for k, v := range m {
		switch k {
		case "state":
			o.state = harnessField[map[string]any](L, n, "opts.state", v, "a table of key values")
		case "thread":
			o.thread = harnessField[string](L, n, "opts.thread", v, "a thread name")
		case "step":
			o.step = int(harnessField[float64](L, n, "opts.step", v, "a step number"))
		case "cwd":
			o.cwd = harnessField[string](L, n, "opts.cwd", v, "a directory")
		default:
			L.ArgError(n, fmt.Sprintf("unknown option %q (options: state, thread, step, cwd)", k))
		}
	}
	return o
}

// harnessField is v as a T, or an argument error at stack index n: a
// value of the wrong type must not be taken as absent (thread = 1 as the
// thread "", max_steps = "3" as no limit).
func harnessField[T any](L *lua.LState, n int, name string, v any, want string) T {
	x, ok := v.(T)
	if !ok {
		if m, isMap := v.(map[string]any); isMap && len(m) == 0 {
			var zero T
			if _, wantList := any(zero).([]any); wantList {
				return any([]any{}).(T) // an empty table reads as an empty object
			}
		}
		L.ArgError(n, fmt.Sprintf("%s must be %s, got %s", name, want, luaTypeName(v)))
	}
	return x
}

// luaTypeName names the Lua type of a converted value.
func luaTypeName(v any) string {
	switch v.(type) {
	case nil:
		return "nil"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case map[string]any, []any:
		return "a table"
	}
	return fmt.Sprintf("a %T", v)
}

// seeds checks opts.state against the declared keys and splits it into
// run-scoped and thread-scoped values, as a checkpoint holds them; the
// restored session takes the thread's saved values for the keys not seeded.
func (h *harness) seeds(L *lua.LState, o callOpts) (runVals, threadVals map[string]any) {
	reg := h.gen.Set.Registry()
	seed := map[string]any{}
	for k, v := range o.state {
		key, ok := reg.Key(k)
		if !ok {
			st, _ := state.NewStore(reg, nil)
			_, err := st.Snapshot().Lookup(k)
			h.tr.raiseCode(L, err)
		}
		if key.Transient {
			h.tr.raiseCode(L, errs.New(errs.BadRequest, "opts.state.%s: the key is declared persist = false, so a run the harness restores at a phase starts it from its default; set it in an earlier phase of h:run instead", k))
		}
		seed[k] = v
	}
	st, misfits := state.NewStore(reg, seed)
	for _, mf := range misfits {
		h.tr.raiseCode(L, fmt.Errorf("%w: opts.state.%s: %v", errs.SchemaViolation, mf.Key, mf.Err))
	}
	return splitScopes(st)
}

// checkpoint is a run on opts' thread restored at stage, with opts.state
// seeded: the point a run has reached just before the phase a harness
// method runs.
func (h *harness) checkpoint(L *lua.LState, o callOpts, stage run.Stage, calls ...run.CallRecord) run.Checkpoint {
	runVals, threadVals := h.seeds(L, o)
	th, _, err := h.store.Thread(h.tr.cctx, o.thread)
	if err != nil {
		h.tr.raiseCode(L, err)
	}
	info := h.info(o)
	return run.Checkpoint{RunID: info.ID, ThreadID: o.thread, AgentID: h.agent.ID, Status: run.Running, Stage: stage,
		Step: o.step, Cwd: o.cwd, Values: runVals, ThreadValues: threadVals, ThreadRevision: th.Revision, Calls: calls}
}

func (h *harness) info(o callOpts) plugin.RunInfo {
	return plugin.RunInfo{ID: fmt.Sprintf("run_%d", h.runs.Add(1)), ThreadID: o.thread, AgentID: h.agent.ID, Step: o.step}
}

// gate decides about one call as a run's gate does: a session of the
// harness's runtime, restored at the point where the model has made the
// call (or where it is resumed), on the thread's state and opts.state,
// gates it with Session.ToolGate, and nothing is saved. It returns
// {decision, args, reason?, ticket?, result?, rewritten_by?}.
func (h *harness) gate(L *lua.LState) int {
	h.self(L)
	call := h.toolCall(L, 2)
	o := h.opts(L, 3)
	cr := run.CallRecord{Call: call.Call, Status: run.CallNew}
	if r := call.Resume; r != nil {
		// A call resumed by a decision: suspended by an earlier gate,
		// now passing it again.
		cr.Status = run.CallResuming
		cr.Gate = &run.GateRecord{Decision: gate.Suspend, Args: call.Call.Args, Ticket: &gate.Ticket{ID: "ticket_" + call.Call.ID, CallID: call.Call.ID, ResumeMode: gate.Replay}}
		cr.Resume = &run.ResumeRecord{Action: r.Action, Result: r.Result, Reason: r.Reason, Mode: string(gate.Replay)}
	}
	sess, err := h.rt.RestoreCheckpoint(h.tr.cctx, h.checkpoint(L, o, run.StageInferred, cr), nil)
	if err != nil {
		h.tr.raiseCode(L, err)
	}
	d, _, err := sess.ToolGate(h.tr.cctx, call.Call)
	if err != nil {
		h.tr.raiseCode(L, err)
	}
	out := map[string]any{"args": d.Args, "decision": d.Decision.String()}
	switch d.Decision {
	case gate.Block:
		out["reason"] = d.Reason
	case gate.Suspend:
		if d.Ticket != nil {
			out["ticket"] = d.Ticket.Value()
		}
	case gate.SetResult:
		if d.Result != nil {
			out["result"] = d.Result.Value()
		}
	}
	if c, ok := sess.Call(call.Call.ID); ok && c.Gate != nil && c.Gate.RewrittenBy != "" {
		out["rewritten_by"] = c.Gate.RewrittenBy
	}
	L.Push(toLua(L, h.tr.inst.null, out))
	return 1
}

// splitScopes returns a store's run-scoped and thread-scoped values, as a
// checkpoint keeps them.
func splitScopes(st *state.Store) (runVals, threadVals map[string]any) {
	snap := st.Snapshot()
	return snap.Values(func(k *state.Key) bool { return k.Scope != state.ScopeThread }),
		snap.Values(func(k *state.Key) bool { return k.Scope == state.ScopeThread })
}

// toolCall reads {id?, name, args?, resume?, result?} at stack index n.
func (h *harness) toolCall(L *lua.LState, n int) plugin.ToolInfo {
	raw, err := fromLua(L.CheckTable(n), h.tr.inst.null)
	if err != nil {
		L.ArgError(n, err.Error())
	}
	return h.toolCallFrom(L, n, raw)
}

func (h *harness) toolCallFrom(L *lua.LState, n int, raw any) plugin.ToolInfo {
	m := harnessField[map[string]any](L, n, "the tool call", raw, "a table {id?, name, args?, ...}")
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(callFields, k) {
			L.ArgError(n, fmt.Sprintf("the tool call has no field %q%s (fields: %s)", k, errs.DidYouMean(k, callFields), strings.Join(callFields, ", ")))
		}
	}
	for _, k := range []string{"id", "name", "decision", "decided_by", "reason", "rewritten_by"} {
		if v, ok := m[k]; ok {
			harnessField[string](L, n, "the tool call's "+k, v, "a string")
		}
	}
	if v, ok := m["args"]; ok {
		harnessField[map[string]any](L, n, "the tool call's args", v, "a table of named arguments")
	}
	if v, ok := m["resume"]; ok {
		harnessField[map[string]any](L, n, "the tool call's resume", v, "a table {action, result?, reason?}")
	}
	var t plugin.ToolInfo
	t.Call.ID, _ = m["id"].(string)
	if t.Call.ID == "" {
		t.Call.ID = "call_1_1"
	}
	t.Call.Name, _ = m["name"].(string)
	if t.Call.Name == "" {
		L.ArgError(n, "a tool call needs a name")
	}
	t.Call.Args, _ = m["args"].(map[string]any)
	if t.Call.Args == nil {
		t.Call.Args = map[string]any{}
	}
	if r, ok := m["resume"].(map[string]any); ok {
		t.Resume = &gate.Resume{Target: t.Call.ID}
		t.Resume.Action, _ = r["action"].(string)
		t.Resume.Reason, _ = r["reason"].(string)
		t.Resume.Result = r["result"]
		if t.Resume.Action == "" {
			t.Resume.Action = "resume"
		}
	}
	if r, ok := m["result"]; ok {
		res, err := h.tr.inst.toResult(toLua(L, h.tr.inst.null, r))
		if err != nil {
			L.ArgError(n, err.Error())
		}
		t.Result = &res
	}
	if d, ok := m["decision"].(string); ok {
		k, ok := gate.ParseKind(d)
		if !ok {
			L.ArgError(n, fmt.Sprintf("decision %q is not a gate decision (allow, block, suspend or set_result)", d))
		}
		t.Gate = &plugin.GateInfo{Decision: k}
		t.Gate.Plugin, _ = m["decided_by"].(string)
		t.Gate.Reason, _ = m["reason"].(string)
		t.Gate.RewrittenBy, _ = m["rewritten_by"].(string)
	}
	return t
}

// stringFields raises unless each of fields of spec (argument 2) is a
// string or absent.
func stringFields(L *lua.LState, spec *lua.LTable, fields ...string) {
	for _, f := range fields {
		if v := spec.RawGetString(f); v != lua.LNil && v.Type() != lua.LTString {
			L.ArgError(2, fmt.Sprintf("%s must be a string, got a %s", f, v.Type().String()))
		}
	}
}

// The fields of a scripted turn, of a tool call in it, and of a decision
// given to h:resume: a misspelt one must not be dropped (a reason that
// never reaches the plugin, a turn that answers nothing).
var (
	turnFields     = []string{"text", "tool_calls", "usage"}
	turnCallFields = []string{"id", "name", "args"}
	decisionFields = []string{"target", "action", "reason", "result"}
)

// knownFields raises, naming what, on the first key of m not in fields.
func knownFields(L *lua.LState, n int, what string, m map[string]any, fields []string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !slices.Contains(fields, k) {
			L.ArgError(n, fmt.Sprintf("%s has no field %q%s (fields: %s)", what, k, errs.DidYouMean(k, fields), strings.Join(fields, ", ")))
		}
	}
}

// callFields are the fields of a tool call given to h:gate and h:phase.
var callFields = []string{"id", "name", "args", "resume", "result", "decision", "decided_by", "reason", "rewritten_by"}

// run runs a whole run on the scripted model: {termination, state, events,
// messages, requests, steps, suspended}.
func (h *harness) run(L *lua.LState) int {
	h.self(L)
	spec := L.CheckTable(2)
	stringFields(L, spec, "prompt", "thread")
	prompt := optString(spec, "prompt")
	thread := optString(spec, "thread")
	if thread == "" {
		thread = defaultThread
	}
	m, tools := h.modelAndTools(L, spec)
	for _, k := range sortedLuaKeys(spec) {
		switch k {
		case "prompt", "thread", "turns", "tools", "messages":
		default:
			L.ArgError(2, fmt.Sprintf("unknown field %q (fields: prompt, turns, tools, thread, messages)", k))
		}
	}
	var msgs []model.Message
	if v := spec.RawGetString("messages"); v != lua.LNil {
		raw, err := fromLua(v, h.tr.inst.null)
		if err == nil {
			msgs, err = model.MessagesFromValue(raw)
		}
		if err != nil {
			L.ArgError(2, "messages: "+err.Error())
		}
	}
	rec := &event.Recorder{}
	var effects []any
	res, err := h.rt.Run(h.tr.cctx, run.Request{ThreadID: thread, Prompt: prompt, Messages: msgs, Model: m, Tools: tools, Events: rec,
		OnEffect: recordEffect(&effects)})
	if err != nil {
		h.tr.raiseCode(L, err)
	}
	L.Push(h.result(L, res, rec, effects))
	return 1
}

func (h *harness) resume(L *lua.LState) int {
	h.self(L)
	spec := L.CheckTable(2)
	stringFields(L, spec, "thread")
	thread := optString(spec, "thread")
	if thread == "" {
		thread = defaultThread
	}
	m, tools := h.modelAndTools(L, spec)
	for _, k := range sortedLuaKeys(spec) {
		switch k {
		case "thread", "decisions", "turns", "tools", "after":
		default:
			L.ArgError(2, fmt.Sprintf("unknown field %q%s (fields: decisions, turns, tools, thread, after)", k,
				errs.DidYouMean(k, []string{"thread", "decisions", "turns", "tools", "after"})))
		}
	}
	if v := spec.RawGetString("after"); v != lua.LNil {
		// The decisions come this long after the run suspended: tickets
		// whose timeout passed meanwhile expire first.
		d, err := time.ParseDuration(lua.LVAsString(v))
		if _, ok := v.(lua.LString); !ok || err != nil || d < 0 {
			L.ArgError(2, fmt.Sprintf("after must be a duration such as \"2h\", got the %s %q", v.Type().String(), lua.LVAsString(v)))
		}
		h.now = h.now.Add(d)
	}
	raw, err := fromLua(spec.RawGetString("decisions"), h.tr.inst.null)
	if err != nil {
		L.ArgError(2, "decisions: "+err.Error())
	}
	if raw != nil {
		// one decision without the list around it is not "no decisions"
		raw = harnessField[[]any](L, 2, "decisions", raw, "a list of decisions {{target, action, reason?, result?}, ...}")
	}
	list, _ := raw.([]any)
	var ds []run.ResumeDecision
	for i, x := range list {
		d, _ := x.(map[string]any)
		knownFields(L, 2, fmt.Sprintf("decisions[%d]", i+1), d, decisionFields)
		var rd run.ResumeDecision
		rd.Target, _ = d["target"].(string)
		rd.Action, _ = d["action"].(string)
		rd.Reason, _ = d["reason"].(string)
		rd.Result = d["result"]
		if rd.Target == "" || rd.Action == "" {
			L.ArgError(2, fmt.Sprintf("decisions[%d] needs a target and an action (\"resume\" or \"cancel\")", i+1))
		}
		ds = append(ds, rd)
	}
	rec := &event.Recorder{}
	var effects []any
	res, err := h.rt.ResumeRun(h.tr.cctx, run.ResumeRequest{ThreadID: thread, Decisions: ds, Model: m, Tools: tools, Events: rec,
		OnEffect: recordEffect(&effects)})
	if err != nil {
		h.tr.raiseCode(L, err)
	}
	L.Push(h.result(L, res, rec, effects))
	return 1
}

// modelAndTools reads turns (a scripted model) and tools (Lua functions run
// in the test's own state).
func (h *harness) modelAndTools(L *lua.LState, spec *lua.LTable) (model.Model, []plugin.Tool) {
	raw, err := fromLua(spec.RawGetString("turns"), h.tr.inst.null)
	if err != nil {
		L.ArgError(2, "turns: "+err.Error())
	}
	if raw != nil {
		// a turn written without the list around it ({text = "done"}) is
		// not a script with no turns
		raw = harnessField[[]any](L, 2, "turns", raw, "a list of the model's answers {{text?, tool_calls?, usage?}, ...}")
	}
	list, _ := raw.([]any)
	var turns []scripted.Turn
	for i, x := range list {
		t, ok := x.(map[string]any)
		if !ok {
			L.ArgError(2, fmt.Sprintf("turns[%d] is a table {text?, tool_calls?, usage?}", i+1))
		}
		knownFields(L, 2, fmt.Sprintf("turns[%d]", i+1), t, turnFields)
		if calls, ok := t["tool_calls"].([]any); ok {
			for j, c := range calls {
				cm, _ := c.(map[string]any)
				knownFields(L, 2, fmt.Sprintf("turns[%d]: tool_calls[%d]", i+1, j+1), cm, turnCallFields)
			}
		}
		r, err := model.ResponseFromValue(t)
		if err != nil {
			L.ArgError(2, fmt.Sprintf("turns[%d]: %v", i+1, err))
		}
		turns = append(turns, scripted.Turn{Text: r.Text, ToolCalls: r.ToolCalls, Usage: r.Usage})
	}
	var tools []plugin.Tool
	if v := spec.RawGetString("tools"); v != lua.LNil && v.Type() != lua.LTTable {
		L.ArgError(2, fmt.Sprintf("tools must be a table of functions(args, ctx) by tool name, got a %s", v.Type().String()))
	}
	if tt, ok := spec.RawGetString("tools").(*lua.LTable); ok {
		for _, name := range sortedLuaKeys(tt) {
			fn, ok := tt.RawGetString(name).(*lua.LFunction)
			if !ok {
				L.ArgError(2, fmt.Sprintf("tools.%s must be a function(args, ctx) returning a result", name))
			}
			tools = append(tools, &testTool{h: h, name: name, fn: fn})
		}
	}
	return scripted.New(turns), tools
}

// recordEffect collects {key, payload} of dispatched effects. Effects run on
// the run's goroutine, after each phase.
func recordEffect(into *[]any) func(key string, payload any) {
	return func(key string, payload any) {
		*into = append(*into, map[string]any{"key": key, "payload": payload})
	}
}

func (h *harness) result(L *lua.LState, res run.Result, rec *event.Recorder, effects []any) lua.LValue {
	events := []any{}
	for _, ev := range rec.Events() {
		m, err := event.Map(ev)
		if err == nil {
			events = append(events, m)
		}
	}
	msgs := []any{}
	for _, m := range res.Messages {
		msgs = append(msgs, m.Value())
	}
	reqs := []any{}
	for _, r := range res.Requests {
		rm := []any{}
		for _, m := range r.Messages {
			rm = append(rm, m.Value())
		}
		ids := []any{}
		for _, t := range r.Tools {
			ids = append(ids, t.Name)
		}
		params := map[string]any{}
		if r.Params.Model != "" {
			params["model"] = r.Params.Model
		}
		if r.Params.Temperature != nil {
			params["temperature"] = *r.Params.Temperature
		}
		if r.Params.MaxTokens != nil {
			params["max_tokens"] = float64(*r.Params.MaxTokens)
		}
		if r.Params.TopP != nil {
			params["top_p"] = *r.Params.TopP
		}
		if r.Params.ReasoningEffort != "" {
			params["reasoning_effort"] = r.Params.ReasoningEffort
		}
		reqs = append(reqs, map[string]any{"messages": rm, "tools": ids, "params": params})
	}
	suspended := []any{}
	for _, t := range res.Suspended {
		suspended = append(suspended, t.Value())
	}
	expired := []any{}
	for _, id := range res.Expired {
		expired = append(expired, id)
	}
	out := map[string]any{
		"termination": res.Termination,
		"state":       pluginState(res.State),
		"events":      events,
		"messages":    msgs,
		"requests":    reqs,
		"steps":       float64(res.Steps),
		"suspended":   suspended,
		"expired":     expired,
		"run_id":      res.RunID,
		"thread":      res.ThreadID,
		"effects":     append([]any{}, effects...),
	}
	if res.Err != nil {
		out["error"] = res.Err.Error()
	}
	return toLua(L, h.tr.inst.null, out)
}

// testTool is a tool whose function lives in the test's own Lua state; the
// run calls it on the test's goroutine.
type testTool struct {
	h    *harness
	name string
	fn   *lua.LFunction
}

func (t *testTool) Spec() model.ToolSpec {
	return model.ToolSpec{Name: t.name, Description: "test tool " + t.name, Parameters: map[string]any{"type": "object"}}
}

func (t *testTool) Execute(ctx context.Context, in *plugin.Input, args map[string]any, out *command.Command) (model.ToolResult, error) {
	inst := t.h.tr.inst
	L := inst.L
	c := L.CreateTable(0, 4)
	if in.Tool != nil {
		c.RawSetString("id", lua.LString(in.Tool.Call.ID))
	}
	c.RawSetString("name", lua.LString(t.name))
	c.RawSetString("step", lua.LNumber(in.Run.Step))
	c.RawSetString("thread_id", lua.LString(in.Run.ThreadID))
	L.Push(t.fn)
	L.Push(toLua(L, inst.null, args))
	L.Push(c)
	if err := L.PCall(2, 1, nil); err != nil {
		return model.ToolResult{}, errors.New(failureText(err))
	}
	v := L.Get(-1)
	L.Pop(1)
	return inst.toResult(v)
}

var _ = sort.Strings
