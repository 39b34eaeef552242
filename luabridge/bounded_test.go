package luabridge

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
	"time"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"

	"github.com/awaken-lua/awaken-lua/engine/value"
)

// openTestModule is a sandboxed state with the awaken module, as a plugin
// sees it; awaken is the module's table (behind its view).
func openTestModule(t testing.TB) (*Module, *lua.LTable) {
	t.Helper()
	m, err := OpenModule(Source{FS: fstest.MapFS{"m.lua": {Data: []byte("return {}")}}, Name: "scripts"}, "m", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m, viewed(m.inst.awaken)
}

// lib returns the function at a dotted path of the sandbox's globals
// ("string.format") or of the awaken module ("awaken.json.encode").
func lib(t testing.TB, m *Module, path string) *lua.LFunction {
	t.Helper()
	var cur lua.LValue = m.inst.globals
	for _, part := range strings.Split(path, ".") {
		tb, ok := cur.(*lua.LTable)
		if !ok {
			t.Fatalf("%s: %s is not a table", path, part)
		}
		if part == "awaken" && cur == lua.LValue(m.inst.globals) {
			cur = m.inst.awaken
			continue
		}
		cur = m.inst.L.GetField(tb, part) // through views, making lazy libraries
	}
	fn, ok := cur.(*lua.LFunction)
	if !ok {
		t.Fatalf("%s is a %s", path, cur.Type())
	}
	return fn
}

// callWithin calls fn in L, failing the test if the call has not returned
// within ten seconds (a regression must fail, not hang).
func callWithin(t *testing.T, L *lua.LState, fn lua.LValue, nret int, args ...lua.LValue) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- L.CallByParam(lua.P{Fn: fn, NRet: nret, Protect: true}, args...) }()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not return within 10s")
		return nil
	}
}

// Every library function that loops over its input looks at the call's
// deadline as it goes: called with the deadline already fired and an input
// large enough to need many polls, each stops with the deadline's error
// instead of finishing. (The VM looks at the deadline only between
// instructions; a Go function that does not poll runs to its end.)
func TestLongWorkPollsTheDeadline(t *testing.T) {
	m, _ := openTestModule(t)
	L := m.inst.L
	big := strings.Repeat("ab<\n", 1<<20) // 4 MiB
	bigTable := func(n int, v func(i int) lua.LValue) *lua.LTable {
		tb := L.CreateTable(n, 0)
		for i := 1; i <= n; i++ {
			tb.Append(v(i))
		}
		return tb
	}
	numbers := bigTable(1<<18, func(i int) lua.LValue { return lua.LNumber((i * 7919) % 1000003) })
	strs := bigTable(1<<18, func(i int) lua.LValue { return lua.LString("x") })
	keyed := L.CreateTable(0, 1<<17)
	for i := 0; i < 1<<17; i++ {
		keyed.RawSetString("k"+strconv.Itoa(i), lua.LNumber(i))
	}
	jsonDoc := "[" + strings.Repeat(`"x",`, 1<<18) + `"x"]`
	tests := []struct {
		fn   string
		args []lua.LValue
	}{
		{"string.upper", []lua.LValue{lua.LString(big)}},
		{"string.lower", []lua.LValue{lua.LString(big)}},
		{"string.reverse", []lua.LValue{lua.LString(big)}},
		{"string.format", []lua.LValue{lua.LString(strings.Repeat("x%%", 1<<17))}},
		{"table.concat", []lua.LValue{strs, lua.LString(",")}},
		{"table.sort", []lua.LValue{numbers}},
		{"awaken.json.encode", []lua.LValue{lua.LString(big)}},
		{"awaken.json.encode", []lua.LValue{strs}},
		{"awaken.json.decode", []lua.LValue{lua.LString(jsonDoc)}},
		{"awaken.json.decode", []lua.LValue{lua.LString(`"` + big[:1<<20] + `"`)}},
		{"awaken.glob", []lua.LValue{lua.LString(strings.Repeat("*a", 50) + "b"), lua.LString(strings.Repeat("a", 1<<16))}},
		{"awaken.log.info", []lua.LValue{lua.LString("m"), keyed}},
		{"string.find", []lua.LValue{lua.LString(big), lua.LString("a+x")}},
		{"awaken.regex.find", []lua.LValue{lua.LString("(a|b|<|\n)*x"), lua.LString(big)}},
		{"awaken.regex.match", []lua.LValue{lua.LString("(a|b|<|\n)*x"), lua.LString(big)}},
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range tests {
		t.Run(tc.fn, func(t *testing.T) {
			fn := lib(t, m, tc.fn)
			L.SetContext(ctx)
			defer L.SetContext(m.inst.dl)
			err := callWithin(t, L, fn, lua.MultRet, tc.args...)
			if err == nil {
				var got []string
				for i := 1; i <= L.GetTop(); i++ {
					got = append(got, truncate(L.Get(i).String(), 60))
				}
				t.Fatalf("%s ran to its end with the deadline fired: %v", tc.fn, got)
			}
			if !strings.Contains(err.Error(), context.Canceled.Error()) && !strings.Contains(err.Error(), "budget") {
				t.Fatalf("err = %v", err)
			}
			L.SetTop(0)
		})
	}
	// t.eq's comparison polls too.
	L.SetContext(ctx)
	defer L.SetContext(m.inst.dl)
	err := callWithin(t, L, L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LBool(luaEqual(L, bigTable(1<<17, func(int) lua.LValue { return lua.LString("x") }), strs)))
		return 1
	}), 1)
	if err == nil {
		t.Fatal("t.eq's comparison ran to its end with the deadline fired")
	}
}

// Results are checked before they are built: asking for more than the limit
// fails at once, without allocating the result.
func TestResultsCheckedBeforeBuilt(t *testing.T) {
	m, _ := openTestModule(t)
	L := m.inst.L
	mib8 := lua.LString(strings.Repeat("x", 8<<20))
	many := L.CreateTable(1000, 0)
	for i := 0; i < 1000; i++ {
		many.Append(mib8)
	}
	wideFormat := lua.LString(strings.Repeat("%s", 200))
	args200 := make([]lua.LValue, 0, 201)
	args200 = append(args200, wideFormat)
	for i := 0; i < 200; i++ {
		args200 = append(args200, mib8)
	}
	tests := []struct {
		fn    string
		args  []lua.LValue
		want  string // in the error, or in the second result
		alloc uint64 // at most this many bytes allocated
	}{
		{"string.format", args200, "over the limit", 64 << 20},
		{"string.format", []lua.LValue{lua.LString("%q%q"), mib8, mib8}, "over the limit", 64 << 20},
		{"string.rep", []lua.LValue{mib8, lua.LNumber(3)}, "over the limit", 1 << 20},
		{"table.concat", []lua.LValue{many}, "over the limit", 64 << 20},
		{"unpack", []lua.LValue{many, lua.LNumber(1), lua.LNumber(1 << 20)}, "too many results", 1 << 20},
		{"string.byte", []lua.LValue{mib8, lua.LNumber(1), lua.LNumber(-1)}, "too many results", 1 << 20},
		{"table.insert", []lua.LValue{L.CreateTable(0, 0), lua.LNumber(60_000_000), lua.LTrue}, "out of bounds", 1 << 20},
		{"awaken.json.encode", []lua.LValue{many}, "more than", 64 << 20},
		{"awaken.json.encode", []lua.LValue{lua.LString(strings.Repeat("<", 3<<20))}, "over the limit", 64 << 20},
		{"awaken.json.decode", []lua.LValue{lua.LString("[" + strings.Repeat("1,", 1<<20) + "1]")}, "more than", 128 << 20},
		{"awaken.glob", []lua.LValue{lua.LString(strings.Repeat("*", 100<<10)), lua.LString("x")}, "over the limit", 1 << 20},
		{"awaken.regex.find", []lua.LValue{lua.LString(strings.Repeat("a", 100<<10)), lua.LString("x")}, "over the limit", 1 << 20},
		{"awaken.regex.match", []lua.LValue{lua.LString("(?:" + strings.Repeat("a", 50<<10) + "){3}"), lua.LString("x")}, "too large", 8 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.fn, func(t *testing.T) {
			fn := lib(t, m, tc.fn)
			before := allocated()
			err := callWithin(t, L, fn, 2, tc.args...)
			used := allocated() - before
			msg := ""
			if err != nil {
				msg = err.Error()
			} else {
				msg = L.Get(-1).String()
			}
			L.SetTop(0)
			if !strings.Contains(msg, tc.want) {
				t.Fatalf("got %q, want %q", truncate(msg, 200), tc.want)
			}
			if used > tc.alloc {
				t.Fatalf("allocated %d MiB, at most %d MiB expected", used>>20, tc.alloc>>20)
			}
		})
	}
}

// string.format formats each conversion as gopher-lua's did, and sizes each
// one exactly or from above before building it.
func TestFormatMatchesGopherLua(t *testing.T) {
	m, _ := openTestModule(t)
	ours := lib(t, m, "string.format")
	ref := lua.NewState()
	defer ref.Close()
	theirs := ref.GetField(ref.GetGlobal("string"), "format")
	cases := [][]lua.LValue{
		{lua.LString("%d %5.2f %-5s| %05d %x %X %o %e %g %c %%"), lua.LNumber(42), lua.LNumber(3.14159), lua.LString("ab"),
			lua.LNumber(-7), lua.LNumber(255), lua.LNumber(255), lua.LNumber(8), lua.LNumber(12345.678), lua.LNumber(0.0001), lua.LNumber(65)},
		{lua.LString("%q"), lua.LString("a\"b\\c\n\x00\xff\u2028é")},
		{lua.LString("%s %s %s"), lua.LTrue, lua.LNumber(1.5), lua.LString("x")},
		{lua.LString("%.3s|%10.2s|%-3s|"), lua.LString("abcdef"), lua.LString("xyz"), lua.LString("abcdef")},
		{lua.LString("% x|%#x|% #X|%x"), lua.LString("ab"), lua.LString("ab"), lua.LString("ab"), lua.LNumber(4096)},
		{lua.LString("%i %d"), lua.LNumber(-3.7), lua.LString("12")},
		{lua.LString("no conversions")},
		{lua.LString("%5s%-5d"), lua.LString("é"), lua.LNumber(1)},
	}
	for _, args := range cases {
		want := call1(t, ref, theirs, args)
		got := call1(t, m.inst.L, ours, args)
		if got != want {
			t.Errorf("format(%q): got %q, want %q", args[0], got, want)
		}
	}
	for _, f := range []string{"%d", "%", "%5", "%z", "%100d", "%.100f", "%*d"} {
		err := m.inst.L.CallByParam(lua.P{Fn: ours, NRet: 1, Protect: true}, lua.LString(f))
		if err == nil {
			t.Errorf("format(%q) with no argument succeeded", f)
		}
		m.inst.L.SetTop(0)
	}
	// The bound of each conversion is never below what fmt produces.
	for _, s := range []string{"", "abc", "a\"b\\c\n\x00\xff\u2028é\U0001F600\u00ad\x7f"} {
		for _, spec := range []string{"%s", "%q", "%x", "% x", "%#x", "% #X", "%d", "%f", "%c", "%10.3s", "%-20q"} {
			conv := spec[len(spec)-1]
			flags := strings.TrimRight(strings.TrimLeft(spec[1:len(spec)-1], "0123456789."), "0123456789.")
			width, precision := 0, -1
			if w := regexp.MustCompile(`\d+`).FindString(spec); w != "" && !strings.Contains(spec, "."+w) {
				width, _ = strconv.Atoi(w)
			}
			if i := strings.IndexByte(spec, '.'); i >= 0 {
				precision, _ = strconv.Atoi(spec[i+1 : len(spec)-1])
				if w := spec[1:i]; w != "" {
					width, _ = strconv.Atoi(strings.TrimLeft(w, "-+ #0"))
				}
			}
			got := len(fmt.Sprintf(spec, lua.LString(s)))
			if b := formatBound(lua.LString(s), conv, flags, width, precision); b < got {
				t.Errorf("formatBound(%q, %q) = %d < %d", s, spec, b, got)
			}
		}
		if quotedLen(s) != len(strconv.Quote(s)) {
			t.Errorf("quotedLen(%q) = %d, want %d", s, quotedLen(s), len(strconv.Quote(s)))
		}
	}
}

func call1(t *testing.T, L *lua.LState, fn lua.LValue, args []lua.LValue) string {
	t.Helper()
	if err := L.CallByParam(lua.P{Fn: fn, NRet: 1, Protect: true}, args...); err != nil {
		return "error: " + err.Error()
	}
	s := L.Get(-1).String()
	L.Pop(1)
	return s
}

func FuzzQuotedLen(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\x00\xff\u2028", "\U0001F600\u00ad"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if quotedLen(s) != len(strconv.Quote(s)) {
			t.Fatalf("quotedLen(%q) = %d, want %d", s, quotedLen(s), len(strconv.Quote(s)))
		}
	})
}

// awaken.json is encoding/json, byte for byte, on every document encoding/json
// accepts, and refuses what it refuses.
func FuzzJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2.5,-0,1e21,1e-7,null,true,"x<y>&\u2028"]}`, `[]`, `{}`, `"\ud83d\ude00"`, `"\ud83d"`,
		`[1,]`, `01`, `{"a":1,"a":2}`, `1e400`, "\"\xff\"", `[[[[[]]]]]`, ` 1 `, `"\u0000\b\f\n\r\t\/"`, `-`, `tru`,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000), strings.Repeat(`{"a":`, 10000) + "1" + strings.Repeat("}", 10000)} {
		f.Add(s)
	}
	m, _ := openTestModule(f)
	L := m.inst.L
	null := m.inst.null
	f.Fuzz(func(t *testing.T, doc string) {
		if strings.Count(doc, "[")+strings.Count(doc, "{") > value.MaxDepth { // encoding/json's limit
			return
		}
		d := jsonDecoder{L: L, null: null, s: doc, max: maxEntries}
		lv, err := d.decode()
		var want any
		wantErr := json.Unmarshal([]byte(doc), &want)
		if (err == nil) != (wantErr == nil) {
			t.Fatalf("decode(%q): err %v, encoding/json: %v", doc, err, wantErr)
		}
		if err != nil {
			return
		}
		got, err := fromLua(lv, null)
		if err != nil {
			// Deeper than values may be stored, or a key such as "1" in an
			// object that also holds list items: not a decoding problem.
			return
		}
		want = nullsInLists(want)
		if !value.Equal(normalizeEmpty(got), normalizeEmpty(want)) {
			t.Fatalf("decode(%q) = %#v, encoding/json: %#v", doc, got, want)
		}
		// Encoding what was decoded gives encoding/json's bytes.
		e := jsonEncoder{max: 16 << 20}
		if err := e.encode(got); err != nil {
			t.Fatalf("encode(%#v): %v", got, err)
		}
		ref, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		if string(e.buf) != string(ref) {
			t.Fatalf("encode(%#v) = %s, encoding/json: %s", got, e.buf, ref)
		}
	})
}

// nullsInLists is what awaken.json.decode makes of nulls: awaken.null in a
// list, absent in an object.
func nullsInLists(v any) any {
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			if e == nil {
				x[i] = value.Null{}
			} else {
				x[i] = nullsInLists(e)
			}
		}
	case map[string]any:
		for k, e := range x {
			if e == nil {
				delete(x, k)
			} else {
				x[k] = nullsInLists(e)
			}
		}
	}
	return v
}

// normalizeEmpty makes empty lists empty objects: a Lua table does not know
// which it was.
func normalizeEmpty(v any) any {
	switch x := v.(type) {
	case []any:
		if len(x) == 0 {
			return map[string]any{}
		}
		for i, e := range x {
			x[i] = normalizeEmpty(e)
		}
	case map[string]any:
		for k, e := range x {
			x[k] = normalizeEmpty(e)
		}
	}
	return v
}

// The JSON encoder of strings escapes exactly as encoding/json does.
func FuzzJSONString(f *testing.F) {
	for _, s := range []string{"", "a<b>&c", "\x00\x1f\x7f", "\xff\xfe", "\u2028\u2029", "é\U0001F600", `"\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e := jsonEncoder{max: 16 << 20}
		if err := e.str(s); err != nil {
			t.Fatal(err)
		}
		ref, _ := json.Marshal(s)
		if string(e.buf) != string(ref) {
			t.Fatalf("str(%q) = %s, encoding/json: %s", s, e.buf, ref)
		}
	})
}

// globRegexp is the translation of a glob into a regular expression that
// awaken.glob used before it had an automaton of its own: the reference the
// fuzz target holds the automaton to.
func globRegexp(pattern string) *regexp.Regexp {
	path := strings.Contains(pattern, "/")
	var b strings.Builder
	b.WriteString(`\A(?s:`)
	p := pattern
	for len(p) > 0 {
		c := p[0]
		switch {
		case c == '*' && len(p) > 1 && p[1] == '*':
			p = p[2:]
			if strings.HasPrefix(p, "/") {
				b.WriteString(`(?:.*/)?`)
				p = p[1:]
			} else {
				b.WriteString(`.*`)
			}
			continue
		case c == '*':
			if path {
				b.WriteString(`[^/]*`)
			} else {
				b.WriteString(`.*`)
			}
		case c == '?':
			if path {
				b.WriteString(`[^/]`)
			} else {
				b.WriteString(`.`)
			}
		case c == '[':
			end := strings.IndexByte(p[1:], ']')
			if end < 0 {
				b.WriteString(`\[`)
				break
			}
			set := p[1 : end+1]
			b.WriteByte('[')
			if strings.HasPrefix(set, "!") || strings.HasPrefix(set, "^") {
				b.WriteByte('^')
				set = set[1:]
			}
			for i := 0; i < len(set); i++ {
				if set[i] == '\\' || set[i] == ']' || set[i] == '[' || set[i] == '^' {
					b.WriteByte('\\')
				}
				b.WriteByte(set[i])
			}
			b.WriteByte(']')
			p = p[end+2:]
			continue
		case c == '\\' && len(p) > 1:
			b.WriteString(regexp.QuoteMeta(p[1:2]))
			p = p[2:]
			continue
		default:
			b.WriteString(regexp.QuoteMeta(p[:1]))
		}
		p = p[1:]
	}
	b.WriteString(`)\z`)
	re, err := regexp.Compile(b.String())
	if err != nil {
		if re, err = regexp.Compile(`\A` + regexp.QuoteMeta(pattern) + `\z`); err != nil {
			return regexp.MustCompile(`[^\x00-\x{10FFFF}]`)
		}
	}
	return re
}

// The glob automaton agrees with the regular expression translation on
// valid UTF-8 (where sets are ones both read the same way).
func FuzzGlob(f *testing.F) {
	for _, c := range [][2]string{{"src/**/*.go", "src/a/b/c.go"}, {"mcp__github__*", "mcp__github__x"}, {"npm *", "npm i"},
		{"a?c", "abc"}, {"[a-c]x", "bx"}, {"[!a-c]x", "dx"}, {"**/x", "x"}, {"a/**", "a/b/c"}, {`\*x`, "*x"}, {"[z-a]", "[z-a]"},
		{"*a*a*a*b", "aaaaaaaaaaaaaaaa"}, {"a/*/c", "a//c"}, {"é?", "éé"}, {"[]]", "]"}, {"[!]", "[!]"}} {
		f.Add(c[0], c[1])
	}
	f.Fuzz(func(t *testing.T, pattern, s string) {
		if !utf8.ValidString(pattern) || !utf8.ValidString(s) || len(pattern) > 64 || len(s) > 256 {
			return
		}
		if strings.Contains(pattern, "[") && strings.ContainsAny(pattern, "-\\^") {
			// Ranges and escapes inside sets are where the regular
			// expression syntax and the glob's own differ.
			return
		}
		want := globRegexp(pattern).MatchString(s)
		if got := Glob(pattern, s); got != want {
			t.Fatalf("Glob(%q, %q) = %v, the regular expression says %v", pattern, s, got, want)
		}
	})
}

// t.eq on tables that share subtables compares each pair of tables once:
// two DAGs of 2^60 paths are equal, and differ once a leaf differs; cycles
// compare too.
func TestEqualityMemoises(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	dag := func(leaf lua.LValue) *lua.LTable {
		t := L.CreateTable(0, 0)
		t.RawSetString("leaf", leaf)
		for i := 0; i < 60; i++ {
			n := L.CreateTable(2, 0)
			n.Append(t)
			n.Append(t)
			t = n
		}
		return t
	}
	done := make(chan [2]bool, 1)
	go func() {
		done <- [2]bool{luaEqual(nil, dag(lua.LString("x")), dag(lua.LString("x"))), luaEqual(nil, dag(lua.LString("x")), dag(lua.LString("y")))}
	}()
	select {
	case got := <-done:
		if !got[0] || got[1] {
			t.Fatalf("equal DAGs: %v, different DAGs: %v", got[0], got[1])
		}
	case <-time.After(10 * time.Second):
		t.Fatal("t.eq did not finish on two DAGs of 60 levels")
	}
	cyc := func(v string) *lua.LTable {
		a, b := L.CreateTable(0, 0), L.CreateTable(0, 0)
		a.RawSetString("next", b)
		b.RawSetString("next", a)
		a.RawSetString("v", lua.LString(v))
		return a
	}
	if !luaEqual(nil, cyc("x"), cyc("x")) || luaEqual(nil, cyc("x"), cyc("y")) {
		t.Fatal("cycles compare wrong")
	}
}

// allocated is the bytes allocated by the process so far.
func allocated() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.TotalAlloc
}
