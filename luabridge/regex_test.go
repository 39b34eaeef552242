package luabridge

import (
	"fmt"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// awaken.regex.find and match return what string.find and string.match
// would for the same match: 1-based inclusive positions, the groups (nil
// for one that took no part), nil for no match.
func TestRegexResults(t *testing.T) {
	m, _ := openTestModule(t)
	L := m.inst.L
	find, match := lib(t, m, "awaken.regex.find"), lib(t, m, "awaken.regex.match")
	call := func(fn *lua.LFunction, args ...lua.LValue) string {
		t.Helper()
		if err := callWithin(t, L, fn, lua.MultRet, args...); err != nil {
			t.Fatal(err)
		}
		var out []string
		for i := 1; i <= L.GetTop(); i++ {
			out = append(out, L.Get(i).String())
		}
		L.SetTop(0)
		return strings.Join(out, " ")
	}
	s := func(v string) lua.LValue { return lua.LString(v) }
	n := func(v float64) lua.LValue { return lua.LNumber(v) }
	tests := []struct {
		fn   *lua.LFunction
		args []lua.LValue
		want string
	}{
		{find, []lua.LValue{s("b+"), s("abbbc")}, "2 4"},
		{find, []lua.LValue{s("x"), s("abc")}, "nil"},
		{find, []lua.LValue{s("(a)(x)?(c)"), s("zac")}, "2 3 a nil c"},
		{find, []lua.LValue{s(""), s("abc")}, "1 0"},
		{find, []lua.LValue{s("^b"), s("ab"), n(2)}, "2 2"}, // ^ at init
		{find, []lua.LValue{s("^b"), s("ab")}, "nil"},
		{find, []lua.LValue{s("c"), s("abc"), n(-1)}, "3 3"},
		{find, []lua.LValue{s("a"), s("abc"), n(-2)}, "nil"},
		{find, []lua.LValue{s("a"), s("abc"), n(10)}, "nil"},
		{find, []lua.LValue{s("$"), s("abc"), n(4)}, "4 3"},
		{find, []lua.LValue{s("é+"), s("xéé!")}, "2 5"}, // byte offsets
		{find, []lua.LValue{s("a|ab"), s("ab")}, "1 1"}, // leftmost first, as Perl
		{match, []lua.LValue{s(`(\w+)@(\w+)`), s("mail me@host now")}, "me host"},
		{match, []lua.LValue{s(`\d+`), s("ab12cd")}, "12"},
		{match, []lua.LValue{s(`(?i)HELLO`), s("say hello")}, "hello"},
		{match, []lua.LValue{s(`x`), s("ab")}, "nil"},
		{match, []lua.LValue{s(`(a)|(b)`), s("b")}, "nil b"},
		{match, []lua.LValue{s(`a.c`), s("a\nc")}, "nil"}, // . stops at newlines without (?s)
		{match, []lua.LValue{s(`(?s)a.c`), s("a\nc")}, "a\nc"},
	}
	for i, tc := range tests {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if got := call(tc.fn, tc.args...); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
	// A long subject (read in pieces) gives what a short one does.
	long := strings.Repeat("ab", regexPiece) + "é<x>"
	if got := call(find, s(`<(.)>`), s(long)); got != fmt.Sprintf("%d %d x", 2*regexPiece+3, 2*regexPiece+5) {
		t.Fatalf("long subject: %q", got)
	}
}

// The compile cache holds at most regexCacheMax patterns, most recently
// used first; a pattern used again is not compiled again.
func TestRegexCacheIsBounded(t *testing.T) {
	var c regexpCache
	first, err := c.compile("p0")
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i < 3*regexCacheMax; i++ {
		if _, err := c.compile(fmt.Sprintf("p%d", i)); err != nil {
			t.Fatal(err)
		}
		if i%10 == 0 { // p0 stays in use
			if re, _ := c.compile("p0"); re != first {
				t.Fatalf("p0 was compiled again after %d patterns", i)
			}
		}
	}
	if c.lru.Len() != regexCacheMax || len(c.byPat) != regexCacheMax {
		t.Fatalf("the cache holds %d (%d) patterns, want %d", c.lru.Len(), len(c.byPat), regexCacheMax)
	}
	big := "(?:" + strings.Repeat("a", 60<<10) + ")"
	for i := 0; i < 40; i++ {
		if _, err := c.compile(fmt.Sprintf("%s{%d}", big, 1+i%2)); err != nil {
			t.Fatal(err)
		}
	}
	if c.size > regexCacheMaxProgram {
		t.Fatalf("the cache holds %d instructions, over %d", c.size, regexCacheMaxProgram)
	}
}
