package luabridge

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

// The library functions a plugin can call, bounded. gopher-lua's own
// versions build their whole result before anything can look at its size
// (string.format of two hundred 8 MiB arguments allocated 11 GB), push
// their results one slot at a time onto a stack that grows by 128 slots
// and copies itself each time (unpack of 250,000 values: 4 s), or loop in
// Go where the hook's deadline cannot reach them (table.sort of two
// million numbers: 0.7 s past a 100 ms budget). The replacements check
// the size of a result before they build it and look at the deadline
// every pollEvery units of work.

const (
	// maxResults bounds the values one call may return (unpack,
	// string.byte): Lua 5.1's own limit (LUAI_MAXCSTACK).
	maxResults = 8000
	// pollEvery is how much work (bytes, entries, comparisons) a Go
	// function does between two looks at the call's deadline.
	pollEvery = 1 << 16
)

// checkDone raises the deadline's error, as the VM does between two
// instructions, if the call's deadline has fired.
func checkDone(L *lua.LState) {
	if done(L) {
		L.RaiseError("%s", L.Context().Err().Error())
	}
}

// done reports whether the call's deadline has fired.
func done(L *lua.LState) bool {
	ctx := L.Context()
	if ctx == nil {
		return false
	}
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}

// grow makes room for n more bytes in b, doubling its capacity (append
// grows large slices by a quarter, which allocates five times the final
// size on the way to it) but never past limit.
func grow(b []byte, n, limit int) []byte {
	if len(b)+n <= cap(b) {
		return b
	}
	c := min(max(2*cap(b), len(b)+n, 64), max(limit, len(b)+n))
	nb := make([]byte, len(b), c)
	copy(nb, b)
	return nb
}

// meter counts work done by a Go function and polls the deadline every
// pollEvery units.
type meter struct {
	L *lua.LState
	n int
}

func (m *meter) add(n int) {
	m.n += n
	if m.n >= pollEvery {
		m.n = 0
		checkDone(m.L)
	}
}

// openBounded installs the bounded functions into the libraries of L.
func openBounded(L *lua.LState, lim Limits) {
	max := lim.StringMax
	g := L.G.Global
	set := func(t *lua.LTable, name string, fn lua.LGFunction) { t.RawSetString(name, L.NewFunction(fn)) }

	set(g, "unpack", baseUnpack)
	set(g, "next", baseNext)
	next := g.RawGetString("next")
	set(g, "pairs", func(L *lua.LState) int {
		L.CheckTable(1)
		L.Push(next)
		L.Push(L.Get(1))
		L.Push(lua.LNil)
		return 3
	})
	ipairsIter := L.NewFunction(ipairsAux)
	set(g, "ipairs", func(L *lua.LState) int {
		L.CheckTable(1)
		L.Push(ipairsIter)
		L.Push(L.Get(1))
		L.Push(lua.LNumber(0))
		return 3
	})
	set(g, "rawget", func(L *lua.LState) int {
		L.Push(viewed(L.CheckTable(1)).RawGet(L.CheckAny(2)))
		return 1
	})

	str := g.RawGetString(lua.StringLibName).(*lua.LTable)
	str.RawSetString("dump", lua.LNil)
	set(str, "rep", func(L *lua.LState) int {
		s := L.CheckString(1)
		n := L.CheckInt(2)
		if n <= 0 || s == "" {
			L.Push(lua.LString(""))
			return 1
		}
		if n > max/len(s) {
			L.RaiseError("string.rep: the result would be %d bytes, over the limit of %d", int64(len(s))*int64(n), max)
		}
		L.Push(lua.LString(strings.Repeat(s, n)))
		return 1
	})
	set(str, "format", func(L *lua.LState) int { return strFormat(L, max) })
	set(str, "upper", func(L *lua.LState) int { return mapBytes(L, upperByte) })
	set(str, "lower", func(L *lua.LState) int { return mapBytes(L, lowerByte) })
	set(str, "reverse", strReverse)
	set(str, "byte", strByte)

	tbl := g.RawGetString(lua.TabLibName).(*lua.LTable)
	set(tbl, "concat", func(L *lua.LState) int { return tableConcat(L, max) })
	set(tbl, "insert", tableInsert)
	set(tbl, "remove", tableRemove)
	set(tbl, "sort", tableSort)
	set(tbl, "getn", func(L *lua.LState) int {
		L.Push(lua.LNumber(viewed(L.CheckTable(1)).Len()))
		return 1
	})
	set(tbl, "maxn", func(L *lua.LState) int {
		L.Push(lua.LNumber(viewed(L.CheckTable(1)).MaxN()))
		return 1
	})
}

// baseUnpack is unpack(t [, i [, j]]), refusing more than maxResults
// values (as Lua 5.1 does: "too many results to unpack").
func baseUnpack(L *lua.LState) int {
	t := viewed(L.CheckTable(1))
	i := L.OptInt(2, 1)
	j := L.OptInt(3, t.Len())
	if i > j {
		return 0
	}
	// j - i can pass the largest int (unpack(t, -2^62, 2^62)); as an
	// unsigned number it is exact, since i <= j.
	if d := uint64(j) - uint64(i); d >= maxResults {
		L.RaiseError("unpack: too many results (%d values from %d to %d, the limit is %d)", d+1, i, j, maxResults)
	}
	for k := i; k <= j; k++ {
		L.Push(t.RawGetInt(k))
	}
	return j - i + 1
}

func baseNext(L *lua.LState) int {
	t := viewed(L.CheckTable(1))
	k, v := t.Next(L.Get(2))
	if k == lua.LNil {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(k)
	L.Push(v)
	return 2
}

func ipairsAux(L *lua.LState) int {
	t := viewed(L.CheckTable(1))
	i := L.CheckInt(2) + 1
	v := t.RawGetInt(i)
	if v == lua.LNil {
		return 0
	}
	L.Push(luaInt(i))
	L.Push(v)
	return 2
}

// smallInts are the numbers 0..255 as Lua values, made once: a number
// pushed as a Lua value is boxed, an allocation per ipairs step otherwise.
// Read only.
var smallInts = func() (a [256]lua.LValue) {
	for i := range a {
		a[i] = lua.LNumber(i)
	}
	return a
}()

func luaInt(i int) lua.LValue {
	if i >= 0 && i < len(smallInts) {
		return smallInts[i]
	}
	return lua.LNumber(i)
}

// strByte is string.byte(s [, i [, j]]) with at most maxResults results.
func strByte(L *lua.LState) int {
	s := L.CheckString(1)
	i := L.OptInt(2, 1)
	j := L.OptInt(3, i)
	l := len(s)
	if i < 0 {
		i = l + i + 1
	}
	if j < 0 {
		j = l + j + 1
	}
	i = max(i, 1)
	j = min(j, l)
	if i > j {
		return 0
	}
	if j-i+1 > maxResults {
		L.RaiseError("string.byte: too many results (%d, the limit is %d)", j-i+1, maxResults)
	}
	for k := i; k <= j; k++ {
		L.Push(lua.LNumber(s[k-1]))
	}
	return j - i + 1
}

func upperByte(c byte) byte {
	if 'a' <= c && c <= 'z' {
		return c - 'a' + 'A'
	}
	return c
}

func lowerByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c - 'A' + 'a'
	}
	return c
}

// mapBytes is string.upper and string.lower: byte by byte in the C
// locale, as Lua does, so the result has the input's length and binary
// strings come back intact.
func mapBytes(L *lua.LState, f func(byte) byte) int {
	s := L.CheckString(1)
	b := make([]byte, len(s))
	m := meter{L: L}
	for i := 0; i < len(s); i++ {
		b[i] = f(s[i])
		if i&(pollEvery-1) == pollEvery-1 {
			m.add(pollEvery)
		}
	}
	L.Push(lua.LString(b))
	return 1
}

func strReverse(L *lua.LState) int {
	s := L.CheckString(1)
	b := make([]byte, len(s))
	m := meter{L: L}
	for i, j := 0, len(s)-1; j >= 0; i, j = i+1, j-1 {
		b[i] = s[j]
		if i&(pollEvery-1) == pollEvery-1 {
			m.add(pollEvery)
		}
	}
	L.Push(lua.LString(b))
	return 1
}

// tableConcat is table.concat(t [, sep [, i [, j]]]) as gopher-lua has it
// (the range is clamped to the list), built in one buffer whose size is
// checked before each piece is appended.
func tableConcat(L *lua.LState, limit int) int {
	t := viewed(L.CheckTable(1))
	sep := L.OptString(2, "")
	n := t.Len()
	i := L.OptInt(3, 1)
	j := L.OptInt(4, n)
	if L.GetTop() == 3 && (i > n || i < 1) {
		L.Push(lua.LString(""))
		return 1
	}
	i = max(min(i, n), 1)
	j = min(j, n)
	if i > j {
		L.Push(lua.LString(""))
		return 1
	}
	var b []byte
	m := meter{L: L}
	for k := i; k <= j; k++ {
		var piece string
		switch v := t.RawGetInt(k).(type) {
		case lua.LString:
			piece = string(v)
		case lua.LNumber:
			piece = v.String()
		default:
			L.RaiseError("invalid value (%s) at index %d in table for concat", v.Type().String(), k)
		}
		extra := len(piece)
		if k != j {
			extra += len(sep)
		}
		if extra > limit-len(b) {
			L.RaiseError("table.concat: the result would be over the limit of %d bytes", limit)
		}
		b = grow(b, extra, limit)
		b = append(b, piece...)
		if k != j {
			b = append(b, sep...)
		}
		m.add(extra + 1)
	}
	L.Push(lua.LString(b))
	return 1
}

// tableInsert is table.insert(t, [pos,] v). A position past the end of the
// list is refused (as Lua 5.3 does): gopher-lua would fill the gap with
// nils one slot at a time, gigabytes for table.insert(t, 6e7, v).
func tableInsert(L *lua.LState) int {
	t := L.CheckTable(1)
	checkWritable(L, t, "table.insert")
	switch L.GetTop() {
	case 2:
		t.Append(L.Get(2))
	case 3:
		pos := L.CheckInt(2)
		n := t.Len()
		if pos < 1 || pos > n+1 {
			L.RaiseError("table.insert: position %d is out of bounds (the list has %d items)", pos, n)
		}
		t.Insert(pos, L.CheckAny(3))
	default:
		L.RaiseError("wrong number of arguments to 'insert'")
	}
	return 0
}

func tableRemove(L *lua.LState) int {
	t := L.CheckTable(1)
	checkWritable(L, t, "table.remove")
	if L.GetTop() == 1 {
		L.Push(t.Remove(-1))
	} else {
		L.Push(t.Remove(L.CheckInt(2)))
	}
	return 1
}

// tableSort sorts t[1..#t], polling the deadline between comparisons (a
// comparison function is Lua and is interrupted by the VM itself).
func tableSort(L *lua.LState) int {
	t := L.CheckTable(1)
	checkWritable(L, t, "table.sort")
	s := &luaSorter{L: L, m: meter{L: L}}
	if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
		s.fn = L.CheckFunction(2)
	}
	n := t.Len()
	s.vals = make([]lua.LValue, n)
	for i := range s.vals {
		s.vals[i] = t.RawGetInt(i + 1)
	}
	sort.Sort(s)
	for i, v := range s.vals {
		t.RawSetInt(i+1, v)
	}
	return 0
}

type luaSorter struct {
	L    *lua.LState
	fn   *lua.LFunction
	vals []lua.LValue
	m    meter
}

func (s *luaSorter) Len() int      { return len(s.vals) }
func (s *luaSorter) Swap(i, j int) { s.vals[i], s.vals[j] = s.vals[j], s.vals[i] }
func (s *luaSorter) Less(i, j int) bool {
	s.m.add(1)
	if s.fn == nil {
		return s.L.LessThan(s.vals[i], s.vals[j])
	}
	s.L.Push(s.fn)
	s.L.Push(s.vals[i])
	s.L.Push(s.vals[j])
	s.L.Call(2, 1)
	v := s.L.Get(-1)
	s.L.Pop(1)
	return lua.LVAsBool(v)
}

// strFormat is string.format with Lua's conversions (c d i o u x X e E f
// g G q s), formatted as gopher-lua does (by Go's fmt), one conversion at a
// time: the size of each piece is known or bounded before it is built,
// and the result never passes max.
func strFormat(L *lua.LState, limit int) int {
	f := L.CheckString(1)
	arg := 1
	var out []byte
	m := meter{L: L}
	room := func(n int) {
		if n > limit-len(out) {
			L.RaiseError("string.format: the result would be over the limit of %d bytes", limit)
		}
		out = grow(out, n, limit)
		m.add(n + 1)
	}
	for i := 0; i < len(f); {
		p := strings.IndexByte(f[i:], '%')
		if p < 0 {
			room(len(f) - i)
			out = append(out, f[i:]...)
			break
		}
		room(p)
		out = append(out, f[i:i+p]...)
		i += p + 1
		if i < len(f) && f[i] == '%' {
			room(1)
			out = append(out, '%')
			i++
			continue
		}
		// %[flags][width][.precision]conversion
		start := i
		for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
			i++
		}
		flags := f[start:i]
		width, precision := 0, -1
		digits := 0
		for i < len(f) && f[i] >= '0' && f[i] <= '9' {
			width = width*10 + int(f[i]-'0')
			digits++
			i++
		}
		if digits > 2 {
			L.RaiseError("invalid format (width or precision too long)")
		}
		if i < len(f) && f[i] == '.' {
			i++
			precision, digits = 0, 0
			for i < len(f) && f[i] >= '0' && f[i] <= '9' {
				precision = precision*10 + int(f[i]-'0')
				digits++
				i++
			}
			if digits > 2 {
				L.RaiseError("invalid format (width or precision too long)")
			}
		}
		if i >= len(f) {
			L.RaiseError("invalid option '%%' to 'format'")
		}
		conv := f[i]
		spec := f[start-1 : i+1]
		i++
		if strings.IndexByte("cdiouxXeEfgGqs", conv) < 0 {
			L.RaiseError("invalid option '%%%c' to 'format'", conv)
		}
		arg++
		if arg > L.GetTop() {
			L.ArgError(arg, "no value")
		}
		v := L.Get(arg)
		if conv == 'u' {
			spec = spec[:len(spec)-1] + "d"
		}
		if conv == 's' && flags == "" && width == 0 && precision < 0 {
			if s, ok := v.(lua.LString); ok {
				room(len(s))
				out = append(out, s...)
				continue
			}
		}
		room(formatBound(v, conv, flags, width, precision))
		out = fmt.Appendf(out, spec, v)
		if len(out) > limit {
			L.RaiseError("string.format: the result would be over the limit of %d bytes", limit)
		}
	}
	L.Push(lua.LString(out))
	return 1
}

// formatBound is an upper bound of the length of one conversion of v.
func formatBound(v lua.LValue, conv byte, flags string, width, precision int) int {
	pad := width + 8
	s, isString := v.(lua.LString)
	if !isString {
		if _, ok := v.(lua.LNumber); ok {
			// %f of 1e308 has 309 digits, plus a precision of at most 99.
			return 320 + precision + pad
		}
		return 128 + pad
	}
	n := len(s)
	switch conv {
	case 's':
		if precision >= 0 && precision < n {
			n = precision
		}
		return n + pad
	case 'q':
		return quotedLen(string(s)) + pad
	case 'x', 'X':
		// Two digits a byte; "% x" puts a space between bytes and "% #x" a
		// 0x before each.
		size := 2 * n
		if strings.IndexByte(flags, ' ') >= 0 {
			size += n
			if strings.IndexByte(flags, '#') >= 0 {
				size += 2 * n
			}
		} else if strings.IndexByte(flags, '#') >= 0 {
			size += 2
		}
		return size + pad
	}
	// Other conversions of a string print it once, inside "%!f(string=...)",
	// or format the number it holds.
	return n + 32 + 320 + precision + pad
}

// quotedLen is len(strconv.Quote(s)), computed without building it.
func quotedLen(s string) int {
	n := 2
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			n += 4 // \xff
		case r == '"' || r == '\\':
			n += 2
		case r < utf8.RuneSelf && strconv.IsPrint(r):
			n++
		case r < utf8.RuneSelf:
			switch r {
			case '\a', '\b', '\f', '\n', '\r', '\t', '\v':
				n += 2
			default:
				n += 4 // \x00
			}
		case strconv.IsPrint(r):
			n += size
		case r < 0x10000:
			n += 6 // \u2028
		default:
			n += 10 // \U000e0001
		}
	}
	return n
}
