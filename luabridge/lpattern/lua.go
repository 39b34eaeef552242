package lpattern

import (
	"errors"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

const (
	// DefaultBudget is the step budget of one call when none is given.
	DefaultBudget = 1_000_000
	// DefaultStepsPerByte is the extra budget per byte of subject that Open
	// grants, so that linear work over a long subject (a gsub("%s+", " ")
	// over a large tool result) is not mistaken for backtracking.
	DefaultStepsPerByte = 16
	// DefaultMaxResult caps the length of a string.gsub result (16 MiB).
	DefaultMaxResult = 16 << 20
)

// Options configures the pattern functions that OpenWith installs.
type Options struct {
	// Budget returns the step budget of one call of find, match or gsub,
	// or of one call of a gmatch iterator. nil, or a result <= 0, means
	// DefaultBudget.
	Budget func() int64
	// StepsPerByte adds this many steps per byte of the subject to each
	// call's budget (0 adds nothing).
	StepsPerByte int64
	// MaxResult caps the length of a gsub result; <= 0 means
	// DefaultMaxResult.
	MaxResult int
	// MaxDepth bounds the matcher's recursion; <= 0 means DefaultMaxDepth.
	MaxDepth int
}

// Open replaces string.find, string.match, string.gmatch (and its alias
// gfind, if present) and string.gsub in L with bounded implementations.
// budget gives the step budget of each call (see Options.Budget); each call
// also gets DefaultStepsPerByte steps per subject byte. gsub results are
// capped at DefaultMaxResult bytes.
func Open(L *lua.LState, budget func() int64) {
	OpenWith(L, Options{Budget: budget, StepsPerByte: DefaultStepsPerByte})
}

// OpenWith is Open with every limit configurable.
//
// The functions are stored in the global "string" table and in the table the
// string metatable's __index refers to (the same table in a standard state),
// so methods on string values ("x"):find(...) use them too. If L has no string
// library yet, it is opened first.
func OpenWith(L *lua.LState, opts Options) {
	lib := &library{
		budget:    opts.Budget,
		perByte:   opts.StepsPerByte,
		maxResult: opts.MaxResult,
		maxDepth:  opts.MaxDepth,
	}
	if lib.perByte < 0 {
		lib.perByte = 0
	}
	if lib.maxResult <= 0 {
		lib.maxResult = DefaultMaxResult
	}
	if lib.maxDepth <= 0 {
		lib.maxDepth = DefaultMaxDepth
	}

	tables := make([]*lua.LTable, 0, 2)
	if t, ok := L.GetGlobal(lua.StringLibName).(*lua.LTable); ok {
		tables = append(tables, t)
	} else {
		L.Push(L.NewFunction(lua.OpenString))
		L.Push(lua.LString(lua.StringLibName))
		L.Call(1, 1)
		t, _ := L.Get(-1).(*lua.LTable)
		L.Pop(1)
		if t != nil {
			tables = append(tables, t)
		}
	}
	if mt, ok := L.GetMetatable(lua.LString("")).(*lua.LTable); ok {
		if t, ok := mt.RawGetString("__index").(*lua.LTable); ok && (len(tables) == 0 || t != tables[0]) {
			tables = append(tables, t)
		}
	}

	find := L.NewFunction(lib.find)
	match := L.NewFunction(lib.match)
	gmatch := L.NewFunction(lib.gmatch)
	gsub := L.NewFunction(lib.gsub)
	for _, t := range tables {
		t.RawSetString("find", find)
		t.RawSetString("match", match)
		t.RawSetString("gmatch", gmatch)
		t.RawSetString("gsub", gsub)
		if t.RawGetString("gfind") != lua.LNil {
			t.RawSetString("gfind", gmatch)
		}
	}
}

type library struct {
	budget    func() int64
	perByte   int64
	maxResult int
	maxDepth  int
}

// setup prepares m with the budget of one call on a subject of n bytes.
func (lib *library) setup(m *Matcher, n int) {
	b := int64(0)
	if lib.budget != nil {
		b = lib.budget()
	}
	if b <= 0 {
		b = DefaultBudget
	}
	if lib.perByte > 0 && n > 0 {
		if int64(n) > (math.MaxInt64-b)/lib.perByte {
			b = math.MaxInt64
		} else {
			b += int64(n) * lib.perByte
		}
	}
	m.Steps = b
	m.MaxDepth = lib.maxDepth
}

// setupL is setup plus the state's context, whose end interrupts the match.
func (lib *library) setupL(L *lua.LState, m *Matcher, n int) {
	lib.setup(m, n)
	if ctx := L.Context(); ctx != nil {
		m.Done = ctx.Done()
	}
}

func raise(L *lua.LState, err error) {
	if errors.Is(err, ErrCancelled) {
		if ctx := L.Context(); ctx != nil && ctx.Err() != nil {
			// The same error the VM raises when the context ends.
			err = ctx.Err()
		}
	}
	L.RaiseError("%s", err.Error())
}

// optInt is luaL_optinteger: nil or absent gives def; numbers are truncated;
// strings that convert to numbers are accepted.
func optInt(L *lua.LState, n int, def int) int {
	switch v := L.Get(n).(type) {
	case *lua.LNilType:
		return def
	case lua.LNumber:
		return numToInt(float64(v))
	case lua.LString:
		t := strings.TrimSpace(string(v))
		if f, err := strconv.ParseFloat(t, 64); err == nil {
			return numToInt(f)
		}
		if len(t) > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'X') {
			if u, err := strconv.ParseUint(t[2:], 16, 64); err == nil {
				return numToInt(float64(u))
			}
		}
	}
	L.TypeError(n, lua.LTNumber)
	return 0
}

func numToInt(f float64) int {
	switch {
	case f != f:
		return 0
	case f >= math.MaxInt32:
		return math.MaxInt32
	case f <= math.MinInt32:
		return math.MinInt32
	}
	return int(f)
}

// startIndex turns a Lua init argument into a 0-based offset in [0, n].
func startIndex(init, n int) int {
	if init < 0 {
		init += n + 1
		if init < 0 {
			init = 0
		}
	}
	init--
	if init < 0 {
		return 0
	}
	if init > n {
		return n
	}
	return init
}

func (lib *library) find(L *lua.LState) int { return lib.findAux(L, true) }

func (lib *library) match(L *lua.LState) int { return lib.findAux(L, false) }

func (lib *library) findAux(L *lua.LState, find bool) int {
	s := L.CheckString(1)
	p := L.CheckString(2)
	init := startIndex(optInt(L, 3, 1), len(s))
	if find && (lua.LVAsBool(L.Get(4)) || !HasSpecials(p)) {
		if i := strings.Index(s[init:], p); i >= 0 {
			L.Push(lua.LNumber(init + i + 1))
			L.Push(lua.LNumber(init + i + len(p)))
			return 2
		}
		L.Push(lua.LNil)
		return 1
	}
	var m Matcher
	lib.setupL(L, &m, len(s))
	start, end, err := m.Find(s, p, init)
	if err != nil {
		raise(L, err)
	}
	if start < 0 {
		L.Push(lua.LNil)
		return 1
	}
	if find {
		L.Push(lua.LNumber(start + 1))
		L.Push(lua.LNumber(end))
		return 2 + pushCaptures(L, &m, s, -1, -1)
	}
	return pushCaptures(L, &m, s, start, end)
}

// captureValue is Lua's push_onecapture: capture i, or the whole match
// s[start:end] when the pattern has no captures and i == 0.
func captureValue(L *lua.LState, m *Matcher, s string, i, start, end int) lua.LValue {
	if i >= m.level {
		if i != 0 || start < 0 {
			raise(L, errInvalidCaptureIdx)
		}
		return lua.LString(s[start:end])
	}
	c, err := m.Capture(i)
	if err != nil {
		raise(L, err)
	}
	if c.Position {
		return lua.LNumber(c.Start + 1)
	}
	return lua.LString(s[c.Start:c.End])
}

// pushCaptures pushes all captures, or the whole match s[start:end] when
// there are none and start >= 0, and returns how many values it pushed.
func pushCaptures(L *lua.LState, m *Matcher, s string, start, end int) int {
	n := m.level
	if n == 0 && start >= 0 {
		n = 1
	}
	for i := 0; i < n; i++ {
		L.Push(captureValue(L, m, s, i, start, end))
	}
	return n
}

func (lib *library) gmatch(L *lua.LState) int {
	s := L.CheckString(1)
	p := L.CheckString(2)
	pos := 0
	L.Push(L.NewFunction(func(L *lua.LState) int {
		if pos > len(s) {
			return 0
		}
		var m Matcher
		lib.setupL(L, &m, len(s)-pos)
		// A leading '^' is not an anchor in gmatch (Lua 5.1).
		start, end, err := m.find(s, p, pos, false)
		m.disarm()
		if err != nil {
			raise(L, err)
		}
		if start < 0 {
			pos = len(s) + 1
			return 0
		}
		pos = end
		if end == start {
			pos++ // an empty match: go on at the next position
		}
		return pushCaptures(L, &m, s, start, end)
	}))
	return 1
}

// gsubBuffer accumulates a gsub result lazily: src[last:] is not copied
// until a replacement forces it, so a gsub that changes nothing returns the
// subject itself.
type gsubBuffer struct {
	L       *lua.LState
	src     string
	buf     []byte
	last    int // src[last:] has not been copied yet
	changed bool
	max     int
}

// begin starts the replacement of src[start:end]: it copies the text before
// it. The replacement is then appended to b.buf, and end is called.
func (b *gsubBuffer) begin(start int) {
	b.check(start - b.last)
	if b.buf == nil {
		size := len(b.src) + 16
		if size > b.max {
			size = b.max
		}
		b.buf = make([]byte, 0, size)
	}
	b.buf = append(b.buf, b.src[b.last:start]...)
}

func (b *gsubBuffer) end(end int) {
	b.last = end
	b.changed = true
}

// check raises an error if n more bytes would make the result too large.
func (b *gsubBuffer) check(n int) {
	if n > b.max-len(b.buf) {
		b.L.RaiseError("gsub result too large")
	}
}

func (b *gsubBuffer) appendString(s string) {
	b.check(len(s))
	b.buf = append(b.buf, s...)
}

func (lib *library) gsub(L *lua.LState) int {
	src := L.CheckString(1)
	p := L.CheckString(2)
	repl := L.Get(3)
	maxN := optInt(L, 4, len(src)+1)
	var replStr string
	switch repl.Type() {
	case lua.LTNumber, lua.LTString:
		replStr = lua.LVAsString(repl)
	case lua.LTTable, lua.LTFunction:
	default:
		L.ArgError(3, "string/function/table expected")
	}
	pat, anchored := Anchored(p)
	var m Matcher
	lib.setupL(L, &m, len(src))
	m.reset(src, pat)
	var sk skipper
	if !anchored {
		sk = m.newSkipper()
	}
	out := gsubBuffer{L: L, src: src, max: lib.maxResult}
	n := 0
	pos := 0
	for n < maxN {
		// Skip the positions where no match can start: they stay as
		// they are.
		next, ok := m.next(sk, pos)
		if !ok {
			raise(L, m.err)
		}
		if next < 0 {
			break
		}
		pos = next
		m.level = 0
		end := m.match(pos, 0, 1)
		if end == abort {
			raise(L, m.err)
		}
		if end >= 0 {
			n++
			switch r := repl.(type) {
			case *lua.LTable:
				v := L.GetTable(r, captureValue(L, &m, src, 0, pos, end))
				addValue(L, &out, v, pos, end)
			case *lua.LFunction:
				L.Push(r)
				nargs := pushCaptures(L, &m, src, pos, end)
				L.Call(nargs, 1)
				v := L.Get(-1)
				L.Pop(1)
				addValue(L, &out, v, pos, end)
			default:
				out.begin(pos)
				expandRepl(L, &m, &out, replStr, pos, end)
				out.end(end)
			}
		}
		if end > pos {
			pos = end
		} else if pos < len(src) {
			pos++
		} else {
			break
		}
		if anchored {
			break
		}
	}
	if !out.changed {
		if len(src) > out.max {
			L.RaiseError("gsub result too large")
		}
		L.Push(lua.LString(src))
	} else {
		out.appendString(src[out.last:])
		L.Push(lua.LString(string(out.buf)))
	}
	L.Push(lua.LNumber(n))
	return 2
}

// addValue is the tail of Lua's add_value for table and function
// replacements: false or nil keeps the match, strings and numbers replace
// it, anything else is an error.
func addValue(L *lua.LState, out *gsubBuffer, v lua.LValue, start, end int) {
	switch v.Type() {
	case lua.LTNil:
		return
	case lua.LTBool:
		if !lua.LVAsBool(v) {
			return
		}
	case lua.LTString, lua.LTNumber:
		out.begin(start)
		out.appendString(lua.LVAsString(v))
		out.end(end)
		return
	}
	L.RaiseError("invalid replacement value (a %s)", v.Type().String())
}

// expandRepl appends the replacement string repl for the match
// src[start:end] to out, as Lua 5.1's add_s does: %0 is the whole match,
// %1-%9 a capture, and '%' before any other character stands for that
// character (so %% is '%'). A '%' at the very end of repl adds a NUL byte,
// which is what Lua 5.1 does when it reads the string's terminator.
func expandRepl(L *lua.LState, m *Matcher, out *gsubBuffer, repl string, start, end int) {
	src := out.src
	for {
		i := strings.IndexByte(repl, '%')
		if i < 0 {
			out.appendString(repl)
			return
		}
		out.appendString(repl[:i])
		if i+1 >= len(repl) {
			out.appendString("\x00")
			return
		}
		c := repl[i+1]
		repl = repl[i+2:]
		switch {
		case c == '0':
			out.appendString(src[start:end])
		case '1' <= c && c <= '9':
			l := int(c - '1')
			if l >= m.level {
				if l != 0 {
					raise(L, errInvalidCaptureIdx)
				}
				out.appendString(src[start:end])
				continue
			}
			cp, err := m.Capture(l)
			if err != nil {
				raise(L, err)
			}
			if cp.Position {
				out.check(20)
				out.buf = strconv.AppendInt(out.buf, int64(cp.Start+1), 10)
			} else {
				out.appendString(src[cp.Start:cp.End])
			}
		default:
			out.check(1)
			out.buf = append(out.buf, c)
		}
	}
}
