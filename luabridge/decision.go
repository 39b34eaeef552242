package luabridge

import (
	"fmt"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/model"
)

// decisionValue is what awaken.block, suspend, set_result and rewrite
// return: a gate decision, readable from Lua (d.decision, d.reason, ...).
type decisionValue struct{ d gate.Decision }

// openDecisions makes the metatable of decision values.
func (inst *instance) openDecisions() {
	L := inst.L
	inst.decisionMeta = L.CreateTable(0, 2)
	inst.decisionMeta.RawSetString("__index", L.NewFunction(inst.decisionIndex))
	inst.decisionMeta.RawSetString("__metatable", lua.LString("protected"))
}

func (inst *instance) pushDecision(L *lua.LState, d gate.Decision) int {
	ud := L.NewUserData()
	ud.Value = &decisionValue{d: d}
	ud.Metatable = inst.decisionMeta
	L.Push(ud)
	return 1
}

func (inst *instance) decisionIndex(L *lua.LState) int {
	d := L.CheckUserData(1).Value.(*decisionValue).d
	switch L.CheckString(2) {
	case "decision":
		L.Push(lua.LString(d.Kind.String()))
	case "reason":
		if d.Kind == gate.Block {
			L.Push(lua.LString(d.Reason))
		} else {
			L.Push(lua.LNil)
		}
	case "args":
		if d.Args == nil {
			L.Push(lua.LNil)
		} else {
			L.Push(toLua(L, inst.null, d.Args))
		}
	case "result":
		if d.Result == nil {
			L.Push(lua.LNil)
		} else {
			L.Push(toLua(L, inst.null, (*d.Result).Value()))
		}
	case "ticket":
		if d.Ticket == nil {
			L.Push(lua.LNil)
		} else {
			L.Push(toLua(L, inst.null, (*d.Ticket).Value()))
		}
	default:
		L.Push(lua.LNil)
	}
	return 1
}

func (inst *instance) block(L *lua.LState) int {
	return inst.pushDecision(L, gate.Decision{Kind: gate.Block, Reason: L.CheckString(1)})
}

func (inst *instance) rewrite(L *lua.LState) int {
	t := L.CheckTable(1)
	v, err := fromLuaIn(L, t, inst.null)
	if err != nil {
		L.ArgError(1, err.Error())
	}
	args, ok := v.(map[string]any)
	if !ok {
		L.ArgError(1, "the new arguments must be a table of named fields")
	}
	return inst.pushDecision(L, gate.Decision{Kind: gate.Rewrite, Args: args})
}

func (inst *instance) setResult(L *lua.LState) int {
	r, err := inst.toResult(L.Get(1))
	if err != nil {
		L.ArgError(1, err.Error())
	}
	return inst.pushDecision(L, gate.Decision{Kind: gate.SetResult, Result: &r})
}

var ticketFields = map[string]bool{"id": true, "action": true, "message": true, "parameters": true,
	"response_schema": true, "options": true, "resume_mode": true, "timeout": true, "on_timeout": true}

func (inst *instance) suspend(L *lua.LState) int {
	t := L.OptTable(1, L.CreateTable(0, 0))
	v, err := fromLuaIn(L, t, inst.null)
	if err != nil {
		L.ArgError(1, err.Error())
	}
	tk, err := ticketFrom(v)
	if err != nil {
		L.ArgError(1, err.Error())
	}
	return inst.pushDecision(L, gate.Decision{Kind: gate.Suspend, Ticket: &tk})
}

func ticketFrom(v any) (gate.Ticket, error) {
	m, _ := v.(map[string]any)
	var tk gate.Ticket
	for k := range m {
		if !ticketFields[k] {
			return tk, fmt.Errorf("unknown ticket field %q (fields: id, action, message, parameters, response_schema, options, resume_mode, timeout, on_timeout)", k)
		}
	}
	str := func(k string) (string, error) {
		switch x := m[k].(type) {
		case nil:
			return "", nil
		case string:
			return x, nil
		}
		return "", fmt.Errorf("ticket field %s must be a string", k)
	}
	var err error
	if tk.ID, err = str("id"); err != nil {
		return tk, err
	}
	if tk.Action, err = str("action"); err != nil {
		return tk, err
	}
	if tk.Message, err = str("message"); err != nil {
		return tk, err
	}
	mode, err := str("resume_mode")
	if err != nil {
		return tk, err
	}
	tk.ResumeMode = gate.ResumeMode(mode)
	if !tk.ResumeMode.Valid() {
		return tk, fmt.Errorf("resume_mode %q is not one of replay, use_decision_as_result, pass_decision_to_tool", mode)
	}
	if to, ok := m["timeout"]; ok {
		d, err := ticketTimeout(to)
		if err != nil {
			return tk, err
		}
		tk.Timeout = d
	}
	if tk.OnTimeout, err = str("on_timeout"); err != nil {
		return tk, err
	}
	switch tk.OnTimeout {
	case "", gate.OnTimeoutCancel, gate.OnTimeoutResume:
	default:
		return tk, fmt.Errorf("on_timeout %q is not \"cancel\" or \"resume\"", tk.OnTimeout)
	}
	tk.Parameters = m["parameters"]
	tk.ResponseSchema = m["response_schema"]
	switch o := m["options"].(type) {
	case nil:
	case []any:
		for _, x := range o {
			s, ok := x.(string)
			if !ok {
				return tk, fmt.Errorf("ticket options must be strings")
			}
			tk.Options = append(tk.Options, s)
		}
	default:
		return tk, fmt.Errorf("ticket options must be a list of strings")
	}
	return tk, nil
}

func (inst *instance) success(L *lua.LState) int {
	v, err := fromLuaIn(L, L.Get(1), inst.null)
	if err != nil {
		L.ArgError(1, err.Error())
	}
	L.Push(toLua(L, inst.null, model.Success(v).Value()))
	return 1
}

func (inst *instance) errorResult(L *lua.LState) int {
	L.Push(toLua(L, inst.null, model.Error(L.CheckString(1)).Value()))
	return 1
}

func (inst *instance) pending(L *lua.LState) int {
	v, err := fromLuaIn(L, L.OptTable(1, L.CreateTable(0, 0)), inst.null)
	if err != nil {
		L.ArgError(1, err.Error())
	}
	tk, err := ticketFrom(v)
	if err != nil {
		L.ArgError(1, err.Error())
	}
	L.Push(toLua(L, inst.null, map[string]any{"status": model.StatusPending, "message": tk.Message, "data": tk.Value()}))
	return 1
}

// toResult reads a tool result: a table {status, data?, message?}; any
// other value counts as success data.
func (inst *instance) toResult(lv lua.LValue) (model.ToolResult, error) {
	v, err := fromLua(lv, inst.null)
	if err != nil {
		return model.ToolResult{}, err
	}
	if m, ok := v.(map[string]any); ok {
		if st, ok := m["status"].(string); ok {
			r := model.ToolResult{Status: st, Data: m["data"]}
			if msg, ok := m["message"]; ok {
				s, isStr := msg.(string)
				if !isStr {
					return r, fmt.Errorf("a result's message must be a string")
				}
				r.Message = s
			}
			for k := range m {
				if k != "status" && k != "data" && k != "message" {
					return r, fmt.Errorf("a result has the fields status, data and message; %q is not one of them (use awaken.success(data))", k)
				}
			}
			switch st {
			case model.StatusSuccess, model.StatusError, model.StatusPending:
			default:
				return r, fmt.Errorf("a result's status is \"success\", \"error\" or \"pending\", not %q", st)
			}
			return r, nil
		}
	}
	return model.Success(v), nil
}

// maxTicketTimeout bounds how long a ticket may wait for a decision.
const maxTicketTimeout = 30 * 24 * time.Hour

// ticketTimeout reads a ticket's timeout: a duration such as "10m".
func ticketTimeout(v any) (time.Duration, error) {
	s, ok := v.(string)
	d, err := time.ParseDuration(s)
	if !ok || err != nil || d <= 0 {
		return 0, fmt.Errorf("ticket timeout must be a positive duration such as \"10m\" or \"24h\", got %v", v)
	}
	if d > maxTicketTimeout {
		return 0, fmt.Errorf("ticket timeout %s is more than %s", s, maxTicketTimeout)
	}
	return d, nil
}
