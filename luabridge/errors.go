package luabridge

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// Errors cross the Lua boundary in two shapes. The runtime's own errors
// (an unknown key, a write that does not fit its schema, a registration
// mistake) are raised as a raised value: a userdata that carries the
// *errs.Error, code and position included, so nothing is flattened into a
// string and parsed back. Lua's own errors (error("..."), a bad argument,
// indexing nil) are strings that start with "file.lua:line:".

// raised carries a Go *errs.Error through a Lua error unchanged. Lua code
// that catches one with pcall sees a value whose tostring is the message
// the error would print ("file.lua:12: unknown_key: ...").
type raised struct{ err *errs.Error }

// raise raises an error with the code and the position of the Lua code
// that called the current Go function.
func raise(L *lua.LState, code errs.Code, format string, args ...any) {
	raiseErr(L, &errs.Error{Code: code, Msg: fmt.Sprintf(format, args...)})
}

// raiseErr raises err as a raised value; an error without a position gets
// the position of the Lua code that called the current Go function.
func raiseErr(L *lua.LState, err *errs.Error) {
	if !err.Pos.IsValid() {
		err = err.At(parseWhere(L.Where(1)))
	}
	ud := L.NewUserData()
	ud.Value = &raised{err: err}
	ud.Metatable = raisedMeta(L)
	L.Error(ud, 0)
}

// raisedMetaKey is the registry field that holds the metatable of raised
// values: made on the first raise, so a state that never raises does not
// carry it.
const raisedMetaKey = "awaken.raised"

func raisedMeta(L *lua.LState) *lua.LTable {
	reg := L.Get(lua.RegistryIndex).(*lua.LTable)
	if mt, ok := reg.RawGetString(raisedMetaKey).(*lua.LTable); ok {
		return mt
	}
	mt := L.CreateTable(0, 3)
	mt.RawSetString("__tostring", L.NewFunction(raisedString))
	mt.RawSetString("__concat", L.NewFunction(raisedConcat))
	mt.RawSetString("__metatable", lua.LString("protected"))
	reg.RawSetString(raisedMetaKey, mt)
	return mt
}

func raisedString(L *lua.LState) int {
	L.Push(lua.LString(errorText(L.Get(1))))
	return 1
}

// raisedConcat lets `"failed: " .. err` work as it did on a message.
func raisedConcat(L *lua.LState) int {
	L.Push(lua.LString(errorText(L.Get(1)) + errorText(L.Get(2))))
	return 1
}

// errorText is the message of a raised value, or the string of anything
// else (as tostring would give it).
func errorText(v lua.LValue) string {
	if u, ok := v.(*lua.LUserData); ok {
		if re, ok := u.Value.(*raised); ok {
			return re.err.Error()
		}
	}
	return v.String()
}

// A Lua runtime error starts with "chunk:line:" when raised from Lua code.
var wherePattern = regexp.MustCompile(`^([^\s:][^:\n]*\.lua):(\d+):\s?`)

// splitWhere separates a leading "file.lua:line:" from a message.
func splitWhere(msg string) (errs.Pos, string) {
	m := wherePattern.FindStringSubmatch(msg)
	if m == nil {
		return errs.Pos{}, msg
	}
	line, _ := strconv.Atoi(m[2])
	return errs.Pos{File: m[1], Line: line}, strings.TrimSpace(msg[len(m[0]):])
}

// parseWhere reads L.Where output ("file.lua:12: ") into a position.
func parseWhere(w string) errs.Pos {
	p, _ := splitWhere(strings.TrimSpace(w) + " x")
	return p
}

// maxErrorMessage bounds the message of an error raised by Lua code.
const maxErrorMessage = 8 << 10

// luaError turns an error from calling Lua into an *errs.Error (a copy the
// caller may change). A raised value keeps its own code and position;
// anything else gets the given code, the position of the Lua code that
// raised it, and its message.
func luaError(err error, code errs.Code) *errs.Error {
	var e *errs.Error
	if errors.As(err, &e) {
		c := *e
		return &c
	}
	msg := err.Error()
	var api *lua.ApiError
	if errors.As(err, &api) {
		var pe *parse.Error
		if api.Cause != nil && errors.As(api.Cause, &pe) {
			return syntaxError(code, pe.Pos.Source, nil, pe)
		}
		if u, ok := api.Object.(*lua.LUserData); ok {
			if re, ok := u.Value.(*raised); ok {
				c := *re.err
				return &c
			}
		}
		if api.Object != nil {
			msg = errorObjectText(api.Object)
		}
	}
	// A hook can raise a 16 MiB message; what the runtime keeps, logs and
	// answers is its start.
	msg = errs.Clip(msg, maxErrorMessage)
	pos, rest := splitWhere(msg)
	// A message rethrown with error(msg) carries the position of each
	// rethrow before the original one; keep the innermost.
	for {
		p2, r2 := splitWhere(rest)
		if !p2.IsValid() {
			break
		}
		pos, rest = p2, r2
	}
	if !pos.IsValid() && api != nil {
		// error() puts no position on what is not a string (nor on a
		// string with level 0): the innermost Lua line of the stack is
		// where it was raised.
		pos = traceWhere(api.StackTrace)
	}
	return &errs.Error{Code: code, Pos: pos, Msg: rest}
}

// errorObjectText is the message of an error object: a string or a
// number as it is, and anything else by its type, as the Lua interpreter
// reports it. tostring of a table or a function is its address, which
// differs in every run, and a __tostring is plugin code that may raise or
// loop, with the hook's budget over.
func errorObjectText(v lua.LValue) string {
	switch v.(type) {
	case lua.LString, lua.LNumber, lua.LBool, *lua.LNilType:
		return v.String()
	}
	return "(error object is a " + v.Type().String() + " value)"
}

// traceWhere is the first position of a .lua file in a stack traceback,
// from the innermost frame out.
func traceWhere(trace string) errs.Pos {
	for trace != "" {
		line, rest, _ := strings.Cut(trace, "\n")
		trace = rest
		if p, _ := splitWhere(strings.TrimSpace(line)); p.IsValid() {
			return p
		}
	}
	return errs.Pos{}
}
