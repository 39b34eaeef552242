package luabridge

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"

	"github.com/awaken-lua/awaken-lua/engine/value"
)

// Limits on values crossing from Lua to Go: a plugin cannot hand the runtime
// a cyclic, absurdly deep or absurdly large structure.
const (
	maxEntries = 1 << 20
	// maxBytes bounds the string bytes (keys and values) of one value;
	// each use of a shared string counts, so a table of a thousand
	// references to one 8 MiB string is 8 GB, and refused.
	maxBytes = 64 << 20
)

// toLua converts a canonical value into a fresh Lua value: tables are plain
// tables built for the call, so pairs, ipairs and # work on them, and a
// plugin that mutates one cannot touch the runtime's copy.
func toLua(L *lua.LState, null lua.LValue, v any) lua.LValue {
	switch x := v.(type) {
	case nil:
		return lua.LNil
	case value.Null:
		return null
	case bool:
		return lua.LBool(x)
	case float64:
		return lua.LNumber(x)
	case string:
		return lua.LString(x)
	case []any:
		t := L.CreateTable(len(x), 0)
		for _, e := range x {
			if e == nil {
				// A hole would shift the elements after it (and end
				// ipairs there): a null in a list is awaken.null.
				t.Append(null)
				continue
			}
			t.Append(toLua(L, null, e))
		}
		return t
	case map[string]any:
		t := L.CreateTable(0, len(x))
		for k, e := range x {
			t.RawSetString(k, toLua(L, null, e))
		}
		return t
	case []string:
		t := L.CreateTable(len(x), 0)
		for _, e := range x {
			t.Append(lua.LString(e))
		}
		return t
	case int:
		return lua.LNumber(x)
	case lua.LValue:
		return x
	}
	n, err := value.Normalize(v)
	if err != nil {
		return lua.LString(fmt.Sprint(v))
	}
	return toLua(L, null, n)
}

// fromLua converts a Lua value into a canonical value. A table whose keys
// are exactly 1..n is a list; one with string keys is an object; an empty
// table is an empty object (schemas turn it into a list where they expect
// one). Functions, userdata other than awaken.null, cycles, mixed or
// non-string keys are errors that name the path.
func fromLua(v lua.LValue, null lua.LValue) (any, error) {
	c := converter{null: null, maxEntries: maxEntries, maxBytes: maxBytes}
	return c.run(v)
}

// fromLuaShared is fromLua for what a plugin's prepare returns: it may
// hold shared values (compiled awaken.rules), kept as they are.
func fromLuaShared(v lua.LValue, null lua.LValue) (any, error) {
	c := converter{null: null, maxEntries: maxEntries, maxBytes: maxBytes, shared: true}
	return c.run(v)
}

// fromLuaIn is fromLua for a Go function called from Lua: a long
// conversion raises the deadline's error once the call's deadline has
// fired.
func fromLuaIn(L *lua.LState, v lua.LValue, null lua.LValue) (any, error) {
	c := converter{null: null, maxEntries: maxEntries, maxBytes: maxBytes, L: L}
	return c.run(v)
}

func (c *converter) run(v lua.LValue) (any, error) {
	out, err := c.convert(v, 0)
	if err != nil {
		return nil, err.(*convError).render()
	}
	return out, nil
}

type converter struct {
	null lua.LValue
	// path holds the tables from the root to the one converted: a table
	// met again on it is a cycle. A short path is scanned; past
	// pathScan tables onPath keeps them as a set too, so that a path as
	// deep as a value may be costs no more than its length.
	path       []*lua.LTable
	onPath     map[*lua.LTable]bool
	entries    int
	bytes      int
	maxEntries int
	maxBytes   int
	L          *lua.LState // when set, its deadline is polled (and raises)
	shared     bool        // shared values are kept (fromLuaShared)
	nextPoll   int         // entries at which the deadline is polled next
}

// pathScan is the length of path up to which a cycle is looked for by
// scanning it.
const pathScan = 32

// enter puts t on the path, or reports false when it is there already.
func (c *converter) enter(t *lua.LTable) bool {
	if c.onPath != nil {
		if c.onPath[t] {
			return false
		}
		c.onPath[t] = true
	} else {
		for _, s := range c.path {
			if s == t {
				return false
			}
		}
		if len(c.path) == pathScan {
			c.onPath = make(map[*lua.LTable]bool, 2*pathScan)
			for _, s := range c.path {
				c.onPath[s] = true
			}
			c.onPath[t] = true
		}
	}
	c.path = append(c.path, t)
	return true
}

// leave takes the last table off the path.
func (c *converter) leave() {
	t := c.path[len(c.path)-1]
	c.path = c.path[:len(c.path)-1]
	if c.onPath != nil {
		delete(c.onPath, t)
	}
}

// addBytes counts n bytes of strings.
func (c *converter) addBytes(n int) error {
	c.bytes += n
	if c.bytes > c.maxBytes {
		return failf("more than %d bytes of strings", c.maxBytes)
	}
	return nil
}

// convError is a conversion failure; its path is built as the error
// unwinds, so converting what succeeds builds no path strings.
type convError struct {
	segs []string // innermost first
	msg  string
}

func (e *convError) Error() string { return e.render().Error() }

func (e *convError) render() error {
	var b strings.Builder
	b.WriteByte('$')
	for i := len(e.segs) - 1; i >= 0; i-- {
		// A path thousands of tables deep is named by its ends.
		if n := len(e.segs); n > 2*pathEnds && i == n-1-pathEnds {
			fmt.Fprintf(&b, "...(%d more)...", n-2*pathEnds)
			i = pathEnds - 1 // the last pathEnds segments
		}
		b.WriteString(e.segs[i])
	}
	return fmt.Errorf("%s: %s", b.String(), e.msg)
}

// pathEnds is how many segments of a long path an error names at each end.
const pathEnds = 16

func failf(format string, args ...any) error { return &convError{msg: fmt.Sprintf(format, args...)} }

// at adds a path segment to a conversion error.
func at(err error, seg string) error {
	e := err.(*convError)
	e.segs = append(e.segs, seg)
	return e
}

func (c *converter) convert(v lua.LValue, depth int) (any, error) {
	switch x := v.(type) {
	case *lua.LNilType:
		return nil, nil
	case lua.LBool:
		return bool(x), nil
	case lua.LNumber:
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, failf("%v is not a finite number", f)
		}
		return f, nil
	case lua.LString:
		v := validUTF8(string(x)) // counted as kept: a bad byte grows to three
		if err := c.addBytes(len(v)); err != nil {
			return nil, err
		}
		return v, nil
	case *lua.LTable:
		return c.table(viewed(x), depth)
	case *lua.LUserData:
		if v == c.null {
			return value.Null{}, nil
		}
		switch v := x.Value.(type) {
		case *keyHandle:
			return v.name, nil
		case *resultView:
			// Storing ctx.tool.result stores what it shows.
			return (*v.r).Value(), nil
		case *callView:
			return map[string]any{"id": v.t.Call.ID, "name": v.t.Call.Name, "args": v.t.Call.Args}, nil
		case shared:
			if c.shared {
				return v, nil
			}
			return nil, failf("%s cannot be stored; return it from prepare (ctx.prepared) to compile it once", v)
		}
		return nil, failf("a %s cannot be stored; use tables, strings, numbers and booleans", describe(x))
	}
	return nil, failf("a %s cannot be stored; use tables, strings, numbers and booleans", v.Type().String())
}

// validUTF8 is s with each byte that is not part of valid UTF-8 replaced
// by U+FFFD, as encoding/json writes it: a value Lua made (a string cut
// mid-character by sub) is then the same in memory, in every store and in
// the journal, rather than changed by the first that encodes it.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func describe(u *lua.LUserData) string {
	if _, ok := u.Value.(*decisionValue); ok {
		return "gate decision"
	}
	return "userdata"
}

func (c *converter) table(t *lua.LTable, depth int) (any, error) {
	if depth >= value.MaxDepth {
		return nil, failf("tables are nested more than %d deep", value.MaxDepth)
	}
	if !c.enter(t) {
		return nil, failf("the table contains itself")
	}
	defer c.leave()

	n := t.MaxN()
	count := 0
	var badKey lua.LValue
	stringKeys, listKeys := 0, 0
	t.ForEach(func(k, _ lua.LValue) {
		count++
		switch k := k.(type) {
		case lua.LString:
			stringKeys++
		case lua.LNumber:
			// A list's keys are exactly 1..n: 0, 1.5 or a key past a hole
			// is not one of them.
			if f := float64(k); f >= 1 && f <= float64(n) && f == math.Trunc(f) {
				listKeys++
			}
		default:
			if badKey == nil {
				badKey = k
			}
		}
	})
	c.entries += count
	if c.entries > c.maxEntries {
		return nil, failf("more than %d table entries", c.maxEntries)
	}
	if c.L != nil && c.entries >= c.nextPoll {
		c.nextPoll = c.entries + pollEvery/16
		checkDone(c.L)
	}
	if badKey != nil {
		return nil, failf("a table key of type %s cannot be stored; use string keys or a list", badKey.Type().String())
	}
	if count == 0 {
		return map[string]any{}, nil
	}
	if n == count && listKeys == count {
		out := make([]any, n)
		for i := 1; i <= n; i++ {
			e, err := c.convert(t.RawGetInt(i), depth+1)
			if err != nil {
				return nil, at(err, "["+strconv.Itoa(i-1)+"]")
			}
			out[i-1] = e
		}
		return out, nil
	}
	if stringKeys != count {
		return nil, failf("the table mixes list items and named fields (or has holes); use one or the other")
	}
	out := make(map[string]any, count)
	var err error
	t.ForEach(func(k, e lua.LValue) {
		if err != nil {
			return
		}
		key := validUTF8(string(k.(lua.LString)))
		if err = c.addBytes(len(key)); err != nil {
			return
		}
		if _, twice := out[key]; twice {
			err = failf("two keys are %q once their bytes that are not UTF-8 are replaced; use keys of valid UTF-8 text", key)
			return
		}
		var conv any
		conv, err = c.convert(e, depth+1)
		if err != nil {
			err = at(err, "."+key)
			return
		}
		out[key] = conv
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// sortedLuaKeys lists a table's string keys in order (for deterministic
// messages).
func sortedLuaKeys(t *lua.LTable) []string {
	var out []string
	t.ForEach(func(k, _ lua.LValue) {
		if s, ok := k.(lua.LString); ok {
			out = append(out, string(s))
		}
	})
	sort.Strings(out)
	return out
}
