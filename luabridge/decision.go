package luabridge

import (
	"fmt"

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
	return inst.pushDecision(L, gate.Decision{Kind: gate.Block, Reason: validUTF8(L.CheckString(1))})
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

func (inst *instance) suspend(L *lua.LState) int {
	t := L.OptTable(1, L.CreateTable(0, 0))
	v, err := fromLuaIn(L, t, inst.null)
	if err != nil {
		L.ArgError(1, err.Error())
	}
	tk, err := gate.TicketFromValue(v)
	if err != nil {
		L.ArgError(1, err.Error())
	}
	return inst.pushDecision(L, gate.Decision{Kind: gate.Suspend, Ticket: &tk})
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
	L.Push(toLua(L, inst.null, model.Error(validUTF8(L.CheckString(1))).Value()))
	return 1
}

func (inst *instance) pending(L *lua.LState) int {
	v, err := fromLuaIn(L, L.OptTable(1, L.CreateTable(0, 0)), inst.null)
	if err != nil {
		L.ArgError(1, err.Error())
	}
	tk, err := gate.TicketFromValue(v)
	if err != nil {
		L.ArgError(1, err.Error())
	}
	data := tk.Value()
	if tk.Timeout > 0 {
		data["timeout"] = tk.Timeout.String() // Value leaves it out: it is not part of a ticket's JSON
	}
	L.Push(toLua(L, inst.null, map[string]any{"status": model.StatusPending, "message": tk.Message, "data": data}))
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
