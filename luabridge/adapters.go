package luabridge

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/schema"
	"github.com/awaken-lua/awaken-lua/model"
)

// invocation describes one call into a plugin function.
type invocation struct {
	fn    int
	kind  string // for messages: "tool_gate hook", "effect handler", ...
	phase string // for errors
	in    *plugin.Input
	out   *command.Command
	// args pushes the arguments after the function and returns how many.
	args func(inst *instance, c *hookCall) int
	nret int
	// results reads the results (on top of the stack) before the state is
	// released.
	results func(inst *instance) error
	// spec, when set, replaces args and results: a hot path passes one
	// struct instead of two closures.
	spec callSpec
	// budget replaces the plugin's hook budget (prepare runs with the load
	// budget).
	budget time.Duration
}

// callSpec pushes a call's arguments and reads its results.
type callSpec interface {
	push(inst *instance, c *hookCall) int
	read(inst *instance) error
}

// invoke takes an instance from the pool, calls the function with the
// plugin's time budget armed on the instance's own deadline, and gives the
// instance back, or discards it if the deadline fired.
func (p *luaPlugin) invoke(ctx context.Context, iv invocation) (err error) {
	inst, err := p.pool.get(ctx)
	if err != nil {
		return err
	}
	L := inst.L
	var c *hookCall
	if iv.in != nil {
		c = inst.newCall(iv.in, iv.out, iv.kind)
	}
	inst.call = c
	L.Push(inst.fns[iv.fn])
	n := 0
	if iv.spec != nil {
		n = iv.spec.push(inst, c)
	} else if iv.args != nil {
		n = iv.args(inst, c)
	}
	budget := p.timeout
	if iv.budget > 0 {
		budget = iv.budget
	}
	stop := inst.watch(ctx)
	inst.dl.arm(budget)
	callErr := L.PCall(n, iv.nret, nil)
	fired := inst.dl.disarm()
	if stop != nil {
		stop()
	}
	if callErr == nil && !fired {
		if iv.spec != nil {
			callErr = iv.spec.read(inst)
		} else if iv.results != nil {
			callErr = iv.results(inst)
		}
	}
	L.SetTop(0)
	inst.call = nil
	if c != nil {
		c.ended = true
	}
	p.pool.put(inst, fired)
	if fired {
		cause := inst.dl.Err()
		if !errors.Is(cause, errHookBudget) && cause != nil && ctx.Err() != nil {
			return ctx.Err()
		}
		var pos errs.Pos
		if callErr != nil {
			pos = luaError(callErr, errs.HookTimeout).Pos
		}
		return &errs.Error{Code: errs.HookTimeout, Plugin: p.id, Phase: iv.phase, Pos: pos,
			Msg: fmt.Sprintf("the %s ran longer than its %s budget and was stopped; make it cheaper, or raise hook_timeout in awaken.plugin{...}", iv.kind, budget)}
	}
	if callErr != nil {
		e := luaError(callErr, errs.HookFailed)
		if e.Plugin == "" {
			e.Plugin = p.id
		}
		if e.Phase == "" {
			e.Phase = iv.phase
		}
		return e
	}
	return nil
}

func pushCtx(inst *instance, c *hookCall) int {
	inst.L.Push(c.ud)
	return 1
}

// luaHook is a phase hook written in Lua: function(ctx).
type luaHook struct {
	p     *luaPlugin
	fn    int
	phase phase.Phase
}

func (h *luaHook) Run(ctx context.Context, in *plugin.Input, out *command.Command) error {
	return h.p.invoke(ctx, invocation{fn: h.fn, kind: h.phase.String() + " hook", phase: h.phase.String(),
		in: in, out: out, args: pushCtx})
}

// luaGate is a gate hook written in Lua: function(ctx, call) returning a
// decision or nil.
type luaGate struct {
	p  *luaPlugin
	fn int
}

func (g *luaGate) Gate(ctx context.Context, in *plugin.Input) (gate.Decision, error) {
	gc := &gateCall{in: in}
	err := g.p.invoke(ctx, invocation{fn: g.fn, kind: "tool_gate hook", phase: "tool_gate", in: in, nret: 1, spec: gc})
	return gc.d, err
}

// gateCall pushes (ctx, call) and reads the decision.
type gateCall struct {
	in *plugin.Input
	d  gate.Decision
}

func (gc *gateCall) push(inst *instance, c *hookCall) int {
	inst.L.Push(c.ud)
	tool := inst.toolToLua(gc.in.Tool)
	c.tool = tool
	inst.L.Push(tool)
	return 2
}

func (gc *gateCall) read(inst *instance) error {
	var err error
	gc.d, err = inst.decisionFrom(inst.L.Get(-1))
	return err
}

// decisionFrom reads what a gate hook returned.
func (inst *instance) decisionFrom(v lua.LValue) (gate.Decision, error) {
	switch x := v.(type) {
	case *lua.LNilType:
		return gate.Decision{}, nil
	case *lua.LUserData:
		if dv, ok := x.Value.(*decisionValue); ok {
			return dv.d, nil
		}
	case *lua.LTable:
		raw, err := fromLua(x, inst.null)
		if err != nil {
			return gate.Decision{}, err
		}
		m, _ := raw.(map[string]any)
		name, _ := m["decision"].(string)
		k, ok := gate.ParseKind(name)
		if !ok {
			break
		}
		d := gate.Decision{Kind: k}
		switch k {
		case gate.Block:
			d.Reason, _ = m["reason"].(string)
		case gate.Rewrite:
			d.Args, _ = m["args"].(map[string]any)
		case gate.SetResult:
			r, err := inst.toResult(toLua(inst.L, inst.null, m["result"]))
			if err != nil {
				return d, err
			}
			d.Result = &r
		case gate.Suspend:
			t, err := gate.TicketFromValue(m["ticket"])
			if err != nil {
				return d, err
			}
			d.Ticket = &t
		}
		return d, nil
	}
	return gate.Decision{}, errs.New(errs.HookFailed,
		"a tool_gate hook returns nil (allow) or a decision from awaken.block, awaken.suspend, awaken.set_result or awaken.rewrite, not a %s", v.Type().String())
}

// luaAction is an action handler written in Lua: function(ctx, payload).
type luaAction struct {
	p   *luaPlugin
	fn  int
	key string
}

func (a *luaAction) Handle(ctx context.Context, in *plugin.Input, payload any, out *command.Command) error {
	return a.p.invoke(ctx, invocation{fn: a.fn, kind: "action handler (" + a.key + ")", phase: in.Phase.String(),
		in: in, out: out, args: func(inst *instance, c *hookCall) int {
			inst.L.Push(c.ud)
			inst.L.Push(toLua(inst.L, inst.null, payload))
			return 2
		}})
}

// luaEffect is an effect handler written in Lua: function(ctx, payload),
// read-only.
type luaEffect struct {
	p   *luaPlugin
	fn  int
	key string
}

func (e *luaEffect) Handle(ctx context.Context, in *plugin.Input, payload any) error {
	return e.p.invoke(ctx, invocation{fn: e.fn, kind: "effect handler (" + e.key + ")", phase: in.Phase.String(),
		in: in, args: func(inst *instance, c *hookCall) int {
			inst.L.Push(c.ud)
			inst.L.Push(toLua(inst.L, inst.null, payload))
			return 2
		}})
}

// luaTool is a tool written in Lua: execute(ctx, args) returning a result.
type luaTool struct {
	p      *luaPlugin
	fn     int
	spec   model.ToolSpec
	params *schema.Schema
}

func (t *luaTool) Spec() model.ToolSpec { return t.spec }

func (t *luaTool) Execute(ctx context.Context, in *plugin.Input, args map[string]any, out *command.Command) (model.ToolResult, error) {
	if t.params != nil {
		conformed, err := t.params.Conform(args)
		if err != nil {
			return model.Error(fmt.Sprintf("invalid arguments for %s: %v", t.spec.Name, trimCode(err))), nil
		}
		args, _ = conformed.(map[string]any)
	}
	var res model.ToolResult
	err := t.p.invoke(ctx, invocation{fn: t.fn, kind: "tool " + t.spec.Name, phase: "tool", in: in, out: out, nret: 1,
		args: func(inst *instance, c *hookCall) int {
			inst.L.Push(c.ud)
			inst.L.Push(toLua(inst.L, inst.null, args))
			return 2
		},
		results: func(inst *instance) error {
			var err error
			res, err = inst.toResult(inst.L.Get(-1))
			return err
		}})
	return res, err
}

// luaTransform is a request transform: function(request) -> request.
type luaTransform struct {
	p  *luaPlugin
	fn int
}

func (t *luaTransform) TransformRequest(ctx context.Context, in *plugin.Input, req model.Request) (model.Request, error) {
	out := req
	var given *lua.LTable
	err := t.p.invoke(ctx, invocation{fn: t.fn, kind: "request transform", phase: "before_inference", in: in, nret: 1,
		args: func(inst *instance, c *hookCall) int {
			given = inst.lazyRequest(req)
			inst.L.Push(given)
			inst.L.Push(c.ud)
			return 2
		},
		results: func(inst *instance) error {
			defer func() { inst.pendingReq = nil }()
			v := inst.L.Get(-1)
			if v == lua.LNil {
				return nil // no change
			}
			var r model.Request
			var err error
			if v == lua.LValue(given) {
				r, err = inst.requestBack(given, req)
			} else {
				r, err = requestFromLua(v, inst.null)
			}
			if err != nil {
				return errs.New(errs.HookFailed, "the request transform returned an invalid request: %v", err)
			}
			out = r
			return nil
		}})
	return out, err
}

// lazyRequest gives a transform the request as a table whose messages and
// tools convert on first read: a transform that only edits the tools does
// not pay for the conversation, which grows every step.
func (inst *instance) lazyRequest(r model.Request) *lua.LTable {
	L := inst.L
	rr := r
	inst.pendingReq = &rr
	t := L.CreateTable(0, 3)
	t.RawSetString("params", paramsToLua(L, r.Params))
	t.Metatable = inst.requestMeta
	return t
}

func (inst *instance) requestIndex(L *lua.LState) int {
	t := L.CheckTable(1)
	r := inst.pendingReq
	if r == nil {
		L.Push(lua.LNil)
		return 1
	}
	var v lua.LValue = lua.LNil
	switch L.CheckString(2) {
	case "messages":
		v = messagesToLua(L, inst.null, r.Messages)
	case "tools":
		v = toolsToLua(L, inst.null, r.Tools)
	default:
		L.Push(lua.LNil)
		return 1
	}
	t.RawSetString(L.CheckString(2), v)
	L.Push(v)
	return 1
}

// requestBack reads a lazy request table back: a part the transform never
// read is the original, unconverted.
func (inst *instance) requestBack(t *lua.LTable, orig model.Request) (model.Request, error) {
	out := model.Request{Messages: orig.Messages, Tools: orig.Tools}
	whole := inst.L.CreateTable(0, 3)
	whole.RawSetString("params", t.RawGetString("params"))
	msgs, tools := t.RawGetString("messages"), t.RawGetString("tools")
	whole.RawSetString("messages", msgs)
	whole.RawSetString("tools", tools)
	r, err := requestFromLua(whole, inst.null)
	if err != nil {
		return out, err
	}
	out.Params = r.Params
	if msgs != lua.LNil {
		out.Messages = r.Messages
	}
	if tools != lua.LNil {
		out.Tools = r.Tools
	}
	return out, nil
}

// luaResultTransform is a result transform: function(call, result) -> result.
type luaResultTransform struct {
	p  *luaPlugin
	fn int
}

func (t *luaResultTransform) TransformResult(ctx context.Context, in *plugin.Input, call model.ToolCall, res model.ToolResult) (model.ToolResult, error) {
	out := res
	err := t.p.invoke(ctx, invocation{fn: t.fn, kind: "result transform", phase: "after_tool_execute", in: in, nret: 1,
		args: func(inst *instance, c *hookCall) int {
			inst.L.Push(inst.callTable(&plugin.ToolInfo{Call: call}))
			inst.L.Push(toLua(inst.L, inst.null, res.Value()))
			inst.L.Push(c.ud)
			return 3
		},
		results: func(inst *instance) error {
			v := inst.L.Get(-1)
			if v == lua.LNil {
				return nil
			}
			r, err := inst.toResult(v)
			if err != nil {
				return errs.New(errs.HookFailed, "the result transform returned an invalid result: %v", err)
			}
			out = r
			return nil
		}})
	return out, err
}

// reduce runs a custom reducer written in Lua: function(value, update).
func (p *luaPlugin) reduce(fn int, key string, cur, upd any) (any, error) {
	var out any
	err := p.invoke(context.Background(), invocation{fn: fn, kind: "reducer of " + key, phase: "commit", nret: 1,
		args: func(inst *instance, _ *hookCall) int {
			inst.L.Push(toLua(inst.L, inst.null, cur))
			inst.L.Push(toLua(inst.L, inst.null, upd))
			return 2
		},
		results: func(inst *instance) error {
			var err error
			out, err = fromLua(inst.L.Get(-1), inst.null)
			return err
		}})
	return out, err
}

// validateConfig runs a plugin's validate(config): nil, a message, or a
// list of messages.
func (p *luaPlugin) validateConfig(fn int, cfg any) error {
	var problems []string
	err := p.invoke(context.Background(), invocation{fn: fn, kind: "config validator", phase: "load", nret: 1,
		args: func(inst *instance, _ *hookCall) int {
			inst.L.Push(toLua(inst.L, inst.null, cfg))
			return 1
		},
		results: func(inst *instance) error {
			switch v := inst.L.Get(-1).(type) {
			case *lua.LNilType:
			case lua.LString:
				problems = append(problems, string(v))
			case *lua.LTable:
				v.ForEach(func(_, e lua.LValue) { problems = append(problems, e.String()) })
			case lua.LBool:
				if !bool(v) {
					problems = append(problems, "invalid config")
				}
			}
			return nil
		}})
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		var list errs.List
		for _, m := range problems {
			list = append(list, &errs.Error{Code: errs.ConfigInvalid, Plugin: p.id, Msg: m})
		}
		return list.Err()
	}
	return nil
}

func toolsToLua(L *lua.LState, null lua.LValue, specs []model.ToolSpec) *lua.LTable {
	tools := L.CreateTable(len(specs), 0)
	for _, ts := range specs {
		tt := L.CreateTable(0, 3)
		tt.RawSetString("name", lua.LString(ts.Name))
		tt.RawSetString("description", lua.LString(ts.Description))
		if ts.Parameters != nil {
			tt.RawSetString("parameters", toLua(L, null, ts.Parameters))
		}
		tools.Append(tt)
	}
	return tools
}

func paramsToLua(L *lua.LState, p model.Params) *lua.LTable {
	params := L.CreateTable(0, 5)
	if p.Model != "" {
		params.RawSetString("model", lua.LString(p.Model))
	}
	if p.Temperature != nil {
		params.RawSetString("temperature", lua.LNumber(*p.Temperature))
	}
	if p.MaxTokens != nil {
		params.RawSetString("max_tokens", lua.LNumber(*p.MaxTokens))
	}
	if p.TopP != nil {
		params.RawSetString("top_p", lua.LNumber(*p.TopP))
	}
	if p.ReasoningEffort != "" {
		params.RawSetString("reasoning_effort", lua.LString(p.ReasoningEffort))
	}
	return params
}

func requestFromLua(v lua.LValue, null lua.LValue) (model.Request, error) {
	raw, err := fromLua(v, null)
	if err != nil {
		return model.Request{}, err
	}
	return model.RequestFromValue(raw)
}

func asList(v any) ([]any, bool) { return model.ListFromValue(v) }

// maxHookTimeout bounds a plugin's hook_timeout, as awaken.toml bounds
// durations: a larger value (or NaN, or infinity) would overflow the
// timer into a budget that fires at once.
const maxHookTimeout = time.Hour

func parseDurationValue(v lua.LValue) (time.Duration, error) {
	switch x := v.(type) {
	case lua.LNumber:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
			return 0, fmt.Errorf("%v is not a positive number of milliseconds", f)
		}
		if f > float64(maxHookTimeout/time.Millisecond) {
			return 0, fmt.Errorf("%v ms is more than the %s a hook may have", f, maxHookTimeout)
		}
		return time.Duration(f * float64(time.Millisecond)), nil
	case lua.LString:
		d, err := time.ParseDuration(string(x))
		if err != nil || d <= 0 {
			return 0, fmt.Errorf("%q is not a duration such as \"250ms\"", string(x))
		}
		if d > maxHookTimeout {
			return 0, fmt.Errorf("%s is more than the %s a hook may have", d, maxHookTimeout)
		}
		return d, nil
	}
	return 0, fmt.Errorf("a duration such as \"250ms\" or a number of milliseconds")
}
