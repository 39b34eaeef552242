package luabridge

import (
	lua "github.com/yuin/gopher-lua"

	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/model"
)

// hookCall is one call into a plugin: what ctx reads and where its writes
// go. ctx is a userdata whose fields convert on first read, into plain
// tables built for this call only.
type hookCall struct {
	in   *plugin.Input
	out  *command.Command // nil where writes are not allowed
	kind string           // "tool_gate hook", "effect handler", ... for messages
	ud   *lua.LUserData
	// ended: the call returned; its ctx, kept past it, is refused.
	ended bool

	run, config, tool, messages, response, tools lua.LValue
}

func (inst *instance) newCall(in *plugin.Input, out *command.Command, kind string) *hookCall {
	c := &hookCall{in: in, out: out, kind: kind}
	ud := inst.L.NewUserData()
	ud.Value = c
	ud.Metatable = inst.ctxMeta
	c.ud = ud
	return c
}

// openCtx makes the methods of ctx and the metatables of ctx, tool calls,
// results and lazy requests.
func (inst *instance) openCtx() {
	L := inst.L
	inst.methods = map[string]*lua.LFunction{
		"get":      L.NewFunction(inst.ctxGet),
		"update":   L.NewFunction(inst.ctxUpdate),
		"schedule": L.NewFunction(inst.ctxSchedule),
		"emit":     L.NewFunction(inst.ctxEmit),
		"stop":     L.NewFunction(inst.ctxStop),
		"now":      L.NewFunction(inst.ctxNow),
	}
	inst.callMeta = L.CreateTable(0, 4)
	inst.callMeta.RawSetString("__index", L.NewFunction(inst.callIndex))
	inst.callMeta.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("the tool call is read-only (a gate changes a call's arguments by returning awaken.rewrite(args))")
		return 0
	}))
	inst.callMeta.RawSetString("__metatable", lua.LString("protected"))
	inst.callMeta.RawSetString("__tostring", L.NewFunction(func(L *lua.LState) int {
		cv, _ := L.CheckUserData(1).Value.(*callView)
		name := ""
		if cv != nil {
			name = cv.t.Call.Name
		}
		L.Push(lua.LString("tool call " + name))
		return 1
	}))
	inst.resultMeta = L.CreateTable(0, 3)
	inst.resultMeta.RawSetString("__index", L.NewFunction(inst.resultIndex))
	inst.resultMeta.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("the tool result is read-only here: change results in p:result_transform")
		return 0
	}))
	inst.resultMeta.RawSetString("__metatable", lua.LString("protected"))
	inst.requestMeta = L.CreateTable(0, 1)
	inst.requestMeta.RawSetString("__index", L.NewFunction(inst.requestIndex))
	inst.ctxMeta = L.CreateTable(0, 4)
	inst.ctxMeta.RawSetString("__index", L.NewFunction(inst.ctxIndex))
	inst.ctxMeta.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("ctx is read-only: use ctx:update(key, value) to write state")
		return 0
	}))
	inst.ctxMeta.RawSetString("__metatable", lua.LString("protected"))
	inst.ctxMeta.RawSetString("__tostring", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LString("ctx"))
		return 1
	}))
}

// current returns the call that ctx (argument 1) belongs to; a ctx kept
// from an earlier call is refused.
func (inst *instance) current(L *lua.LState) *hookCall {
	ud, ok := L.Get(1).(*lua.LUserData)
	if !ok {
		L.RaiseError("call ctx methods with a colon: ctx:get(key), ctx:update(key, value), ...")
	}
	c, ok := ud.Value.(*hookCall)
	if !ok {
		L.RaiseError("call ctx methods with a colon: ctx:get(key), ctx:update(key, value), ...")
	}
	if c != inst.call {
		L.RaiseError("this ctx belongs to a call that has ended; use the ctx your function received")
	}
	return c
}

// ctxFields are the fields ctxIndex answers (besides the methods); the
// LuaLS stub must list the same (luabridge/stub_test.go).
var ctxFields = [...]string{"phase", "run", "config", "prepared", "messages", "tool", "response", "tools", "plugin"}

func (inst *instance) ctxIndex(L *lua.LState) int {
	c := inst.current(L)
	key := L.CheckString(2)
	if m, ok := inst.methods[key]; ok {
		L.Push(m)
		return 1
	}
	in := c.in
	switch key {
	case "phase":
		L.Push(lua.LString(in.Phase.String()))
	case "run":
		if c.run == nil {
			t := L.CreateTable(0, 6)
			t.RawSetString("id", lua.LString(in.Run.ID))
			t.RawSetString("thread_id", lua.LString(in.Run.ThreadID))
			t.RawSetString("agent_id", lua.LString(in.Run.AgentID))
			t.RawSetString("step", lua.LNumber(in.Run.Step))
			if in.Run.Termination != "" {
				t.RawSetString("termination", lua.LString(in.Run.Termination))
			}
			if in.Run.Cwd != "" {
				t.RawSetString("cwd", lua.LString(in.Run.Cwd))
			}
			c.run = t
		}
		L.Push(c.run)
	case "config":
		if c.config == nil {
			c.config = inst.configTable(in)
		}
		L.Push(c.config)
	case "prepared":
		L.Push(inst.preparedTable(L, in)) // kept per state and config
	case "messages":
		if c.messages == nil {
			c.messages = messagesToLua(L, inst.null, in.Messages)
		}
		L.Push(c.messages)
	case "tool":
		if c.tool == nil {
			if in.Tool == nil {
				c.tool = lua.LNil
			} else {
				c.tool = inst.toolToLua(in.Tool)
			}
		}
		L.Push(c.tool)
	case "response":
		if c.response == nil {
			if in.Response == nil {
				c.response = lua.LNil
			} else {
				c.response = inst.responseToLua(*in.Response)
			}
		}
		L.Push(c.response)
	case "tools":
		if c.tools == nil {
			t := L.CreateTable(len(in.Tools), 0)
			for _, ts := range in.Tools {
				tt := L.CreateTable(0, 2)
				tt.RawSetString("name", lua.LString(ts.Name))
				tt.RawSetString("description", lua.LString(ts.Description))
				t.Append(tt)
			}
			c.tools = t
		}
		L.Push(c.tools)
	case "plugin":
		L.Push(lua.LString(inst.p.id))
	default:
		L.Push(lua.LNil)
	}
	return 1
}

// callView is the Lua view of a tool call (the gate's call, ctx.tool):
// id, name, args, result and resume, converted on first read. args, result
// and resume are plain tables built for the call.
type callView struct {
	t                    *plugin.ToolInfo
	args, result, resume lua.LValue
}

func (inst *instance) toolToLua(t *plugin.ToolInfo) lua.LValue {
	ud := inst.L.NewUserData()
	ud.Value = &callView{t: t}
	ud.Metatable = inst.callMeta
	return ud
}

func (inst *instance) callIndex(L *lua.LState) int {
	cv, ok := L.CheckUserData(1).Value.(*callView)
	if !ok {
		L.ArgError(1, "a tool call expected")
	}
	t := cv.t
	switch L.CheckString(2) {
	case "id":
		L.Push(lua.LString(t.Call.ID))
	case "name":
		L.Push(lua.LString(t.Call.Name))
	case "args":
		if cv.args == nil {
			cv.args = toLua(L, inst.null, t.Call.Args)
			if cv.args == lua.LNil {
				cv.args = L.CreateTable(0, 0)
			}
		}
		L.Push(cv.args)
	case "result":
		if cv.result == nil {
			cv.result = lua.LNil
			if t.Result != nil {
				ud := L.NewUserData()
				ud.Value = &resultView{r: t.Result}
				ud.Metatable = inst.resultMeta
				cv.result = ud
			}
		}
		L.Push(cv.result)
	case "decision", "decided_by", "reason", "rewritten_by":
		g := t.Gate
		v := ""
		if g != nil {
			switch L.CheckString(2) {
			case "decision":
				v = g.Decision.String()
			case "decided_by":
				v = g.Plugin
			case "reason":
				v = g.Reason
			case "rewritten_by":
				v = g.RewrittenBy
			}
		}
		if v == "" {
			L.Push(lua.LNil)
		} else {
			L.Push(lua.LString(v))
		}
	case "resume":
		if cv.resume == nil {
			cv.resume = lua.LNil
			if t.Resume != nil {
				r := L.CreateTable(0, 3)
				r.RawSetString("action", lua.LString(t.Resume.Action))
				if t.Resume.Result != nil {
					r.RawSetString("result", toLua(L, inst.null, t.Resume.Result))
				}
				if t.Resume.Reason != "" {
					r.RawSetString("reason", lua.LString(t.Resume.Reason))
				}
				cv.resume = r
			}
		}
		L.Push(cv.resume)
	default:
		L.Push(lua.LNil)
	}
	return 1
}

// resultView is a read-only view of a tool result (ctx.tool.result):
// status and message are cheap; data converts on first read, into a plain
// table built for the call. Hooks read the status of every result; most
// never touch a large data.
type resultView struct {
	r    *model.ToolResult
	data lua.LValue
}

func (inst *instance) resultIndex(L *lua.LState) int {
	rv, ok := L.CheckUserData(1).Value.(*resultView)
	if !ok {
		L.ArgError(1, "a tool result expected")
	}
	switch L.CheckString(2) {
	case "status":
		L.Push(lua.LString(rv.r.Status))
	case "message":
		if rv.r.Message == "" {
			L.Push(lua.LNil)
		} else {
			L.Push(lua.LString(rv.r.Message))
		}
	case "data":
		if rv.data == nil {
			rv.data = toLua(L, inst.null, rv.r.Data)
		}
		L.Push(rv.data)
	default:
		L.Push(lua.LNil)
	}
	return 1
}

// callTable is a tool call as a plain table, where a value must be stored
// or iterated (transforms).
func (inst *instance) callTable(t *plugin.ToolInfo) *lua.LTable {
	L := inst.L
	tb := L.CreateTable(0, 3)
	tb.RawSetString("id", lua.LString(t.Call.ID))
	tb.RawSetString("name", lua.LString(t.Call.Name))
	tb.RawSetString("args", toLua(L, inst.null, t.Call.Args))
	return tb
}

func messagesToLua(L *lua.LState, null lua.LValue, msgs []model.Message) *lua.LTable {
	t := L.CreateTable(len(msgs), 0)
	for _, m := range msgs {
		t.Append(messageToLua(L, null, m))
	}
	return t
}

func messageToLua(L *lua.LState, null lua.LValue, m model.Message) *lua.LTable {
	mt := L.CreateTable(0, 4)
	mt.RawSetString("role", lua.LString(m.Role))
	mt.RawSetString("content", lua.LString(m.Content))
	if len(m.ToolCalls) > 0 {
		mt.RawSetString("tool_calls", callsToLua(L, null, m.ToolCalls))
	}
	if m.ToolCallID != "" {
		mt.RawSetString("tool_call_id", lua.LString(m.ToolCallID))
	}
	return mt
}

func callsToLua(L *lua.LState, null lua.LValue, calls []model.ToolCall) *lua.LTable {
	t := L.CreateTable(len(calls), 0)
	for _, c := range calls {
		ct := L.CreateTable(0, 3)
		ct.RawSetString("id", lua.LString(c.ID))
		ct.RawSetString("name", lua.LString(c.Name))
		ct.RawSetString("args", toLua(L, null, c.Args))
		t.Append(ct)
	}
	return t
}

// responseToLua is ctx.response. Its tool calls are read-only views like
// the gate's call, their args converted on first read: an after_inference
// hook mostly counts the calls, and a table per call and per args would be
// most of its cost.
func (inst *instance) responseToLua(r model.Response) *lua.LTable {
	L := inst.L
	t := L.CreateTable(0, 3)
	t.RawSetString("text", lua.LString(r.Text))
	calls := L.CreateTable(len(r.ToolCalls), 0)
	infos := make([]plugin.ToolInfo, len(r.ToolCalls))
	for i := range r.ToolCalls {
		infos[i].Call = r.ToolCalls[i]
		calls.Append(inst.toolToLua(&infos[i]))
	}
	t.RawSetString("tool_calls", calls)
	if r.Usage != nil {
		u := L.CreateTable(0, 3)
		u.RawSetString("prompt_tokens", lua.LNumber(r.Usage.PromptTokens))
		u.RawSetString("completion_tokens", lua.LNumber(r.Usage.CompletionTokens))
		u.RawSetString("total_tokens", lua.LNumber(r.Usage.TotalTokens))
		t.RawSetString("usage", u)
	}
	return t
}

func (inst *instance) ctxGet(L *lua.LState) int {
	c := inst.current(L)
	name, k := inst.keyFor(L, 2)
	snap := c.in.Snap
	if snap == nil {
		L.Push(lua.LNil)
		return 1
	}
	var v any
	if k != nil {
		v = snap.Get(k)
	} else {
		var err error
		if v, err = snap.Lookup(name); err != nil {
			raise(L, errs.UnknownKey, "%s", trimCode(err))
		}
	}
	L.Push(toLua(L, inst.null, v))
	return 1
}

func trimCode(err error) string {
	e, ok := err.(*errs.Error)
	if ok {
		return e.Msg
	}
	return err.Error()
}

func (inst *instance) writable(L *lua.LState, c *hookCall, method string) {
	if c.out == nil {
		L.RaiseError("ctx:%s is not allowed in a %s: it is read-only (gates return a decision; transforms return a value; effect handlers only observe)", method, c.kind)
	}
}

func (inst *instance) ctxUpdate(L *lua.LState) int {
	c := inst.current(L)
	inst.writable(L, c, "update")
	name, k := inst.keyFor(L, 2)
	if k == nil && c.in.Snap != nil {
		if _, ok := c.in.Snap.Registry().Key(name); !ok {
			_, err := c.in.Snap.Lookup(name)
			raise(L, errs.UnknownKey, "%s", trimCode(err))
		}
	}
	v, err := fromLuaIn(L, L.Get(3), inst.null)
	if err != nil {
		raise(L, errs.SchemaViolation, "ctx:update(%q): %v", name, err)
	}
	if k == nil && c.in.Snap != nil {
		k, _ = c.in.Snap.Registry().Key(name)
	}
	// A replaced value is checked here, so the error points at this line;
	// reduced values are checked when the command commits.
	if k != nil && k.Schema != nil && k.Reduce == nil && (k.Reducer == "" || k.Reducer == "replace") && v != nil {
		if err := k.Schema.Validate(v); err != nil {
			raise(L, errs.SchemaViolation, "ctx:update(%q): the value does not fit the key's schema: %s", name, trimCode(err))
		}
	}
	c.out.UpdateValue(name, v)
	return 0
}

func (inst *instance) ctxSchedule(L *lua.LState) int {
	c := inst.current(L)
	inst.writable(L, c, "schedule")
	key := L.CheckString(2)
	set := inst.p.gen.set
	if set != nil {
		if _, ok := set.Action(key); !ok {
			raise(L, errs.UnknownActionHandler, "no handler is registered for action %q%s", key, errs.DidYouMean(key, set.ActionKeys()))
		}
	}
	v, err := fromLuaIn(L, L.Get(3), inst.null)
	if err != nil {
		raise(L, errs.SchemaViolation, "ctx:schedule(%q): %v", key, err)
	}
	c.out.Actions = append(c.out.Actions, command.Action{Key: key, Payload: v, Plugin: c.out.Plugin})
	return 0
}

func (inst *instance) ctxEmit(L *lua.LState) int {
	c := inst.current(L)
	inst.writable(L, c, "emit")
	key := L.CheckString(2)
	set := inst.p.gen.set
	if set != nil {
		if _, ok := set.Effect(key); !ok {
			raise(L, errs.UnknownEffectHandler, "no handler is registered for effect %q%s", key, errs.DidYouMean(key, set.EffectKeys()))
		}
	}
	v, err := fromLuaIn(L, L.Get(3), inst.null)
	if err != nil {
		raise(L, errs.SchemaViolation, "ctx:emit(%q): %v", key, err)
	}
	c.out.Effects = append(c.out.Effects, command.Effect{Key: key, Payload: v, Plugin: c.out.Plugin})
	return 0
}

func (inst *instance) ctxStop(L *lua.LState) int {
	c := inst.current(L)
	inst.writable(L, c, "stop")
	code := validUTF8(L.CheckString(2))
	if code == "" {
		L.ArgError(2, "a stop code such as \"budget_steps\" expected")
	}
	c.out.StopRun(code, validUTF8(L.OptString(3, "")))
	return 0
}

// ctxNow returns the host's time in seconds (with a fraction): hooks must
// not read the wall clock, so replays stay deterministic.
func (inst *instance) ctxNow(L *lua.LState) int {
	c := inst.current(L)
	t := c.in.Now
	L.Push(lua.LNumber(float64(t.UnixNano()) / 1e9))
	return 1
}
