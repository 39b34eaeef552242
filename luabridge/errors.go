package luabridge

import (
	"errors"
	"regexp"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

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

// luaError turns an error from calling Lua into an *errs.Error with the
// given code, the position of the Lua code that raised it, and its message.
// A message that already starts with a known code (raised by the runtime,
// such as "unknown_key: ...") keeps that code.
func luaError(err error, code errs.Code) *errs.Error {
	var e *errs.Error
	if errors.As(err, &e) {
		return e
	}
	msg := err.Error()
	var trace string
	var api *lua.ApiError
	if errors.As(err, &api) {
		if api.Cause != nil {
			var pe *parse.Error
			if errors.As(api.Cause, &pe) {
				return &errs.Error{Code: code, Pos: errs.Pos{File: pe.Pos.Source, Line: pe.Pos.Line, Col: pe.Pos.Column},
					Msg: "syntax error: " + pe.Message + " near '" + pe.Token + "'"}
			}
		}
		if api.Object != nil {
			if u, ok := api.Object.(*lua.LUserData); ok {
				if re, ok := u.Value.(*raised); ok {
					return re.err
				}
			}
			msg = api.Object.String()
		}
		trace = api.StackTrace
	}
	// A hook can raise a 16 MiB message; what the runtime keeps, logs and
	// answers is its start.
	msg = clip(msg, maxErrorMessage)
	pos, rest := splitWhere(msg)
	// Errors raised by Go functions deeper in the stack carry their own
	// position first; keep the innermost one that names a plugin file.
	for {
		p2, r2 := splitWhere(rest)
		if !p2.IsValid() {
			break
		}
		pos, rest = p2, r2
	}
	out := &errs.Error{Code: code, Pos: pos, Msg: rest}
	if c, m, ok := codePrefix(rest); ok {
		out.Code, out.Msg = c, m
	}
	_ = trace
	return out
}

// codePrefix splits "unknown_key: msg" when the prefix is a known code.
func codePrefix(msg string) (errs.Code, string, bool) {
	i := strings.Index(msg, ": ")
	if i <= 0 {
		return "", msg, false
	}
	c := errs.Code(msg[:i])
	switch c {
	case errs.UnknownKey, errs.SchemaViolation, errs.UnknownActionHandler, errs.UnknownEffectHandler,
		errs.HookTimeout, errs.PluginLoadFailed, errs.ConfigInvalid, errs.InvalidTransition,
		errs.PhaseRunLoopExceeded, errs.UnknownResumeTarget, errs.HookFailed, errs.KeyAlreadyRegistered,
		errs.HandlerAlreadyRegistered, errs.ToolAlreadyRegistered, errs.RevisionConflict:
		return c, msg[i+2:], true
	}
	return "", msg, false
}

// raised carries a Go *errs.Error through a Lua error unchanged.
type raised struct{ err *errs.Error }
