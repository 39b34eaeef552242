package lpattern

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// prelude is loaded into both states; gm collects a gmatch iteration as
// "cap1|cap2,cap1|cap2".
const prelude = `
function gm(s, p)
  local out = {}
  for a, b, c in string.gmatch(s, p) do
    local parts = {tostring(a)}
    if b ~= nil then parts[#parts+1] = tostring(b) end
    if c ~= nil then parts[#parts+1] = tostring(c) end
    out[#out+1] = table.concat(parts, "|")
  end
  return table.concat(out, ",")
end
`

const testBudget = 1_000_000

func newOurs(tb testing.TB) *lua.LState {
	tb.Helper()
	L := lua.NewState()
	Open(L, func() int64 { return testBudget })
	if err := L.DoString(prelude); err != nil {
		tb.Fatal(err)
	}
	return L
}

func newRef(tb testing.TB) *lua.LState {
	tb.Helper()
	L := lua.NewState()
	if err := L.DoString(prelude); err != nil {
		tb.Fatal(err)
	}
	return L
}

var posPrefix = regexp.MustCompile(`^[^\n]*?:\d+: `)

// run runs code (an expression list, or a chunk starting with "local") and
// returns its results, or the error message without its position prefix.
func run(L *lua.LState, code string) (vals []lua.LValue, errMsg string, failed bool) {
	if !strings.HasPrefix(code, "local ") {
		code = "return " + code
	}
	base := L.GetTop()
	defer L.SetTop(base)
	fn, err := L.LoadString(code)
	if err != nil {
		return nil, "compile: " + err.Error(), true
	}
	L.Push(fn)
	if err := L.PCall(0, lua.MultRet, nil); err != nil {
		msg := err.Error()
		if ae, ok := err.(*lua.ApiError); ok {
			msg = ae.Object.String()
		}
		return nil, posPrefix.ReplaceAllString(msg, ""), true
	}
	for i := base + 1; i <= L.GetTop(); i++ {
		vals = append(vals, L.Get(i))
	}
	return vals, "", false
}

func repr(vals []lua.LValue) string {
	parts := make([]string, len(vals))
	for i, v := range vals {
		if s, ok := v.(lua.LString); ok {
			parts[i] = strconv.Quote(string(s))
		} else {
			parts[i] = v.String()
		}
	}
	return strings.Join(parts, " ")
}

// trimNils drops trailing nils: gopher-lua's string.match returns no value
// where Lua returns nil.
func trimNils(vals []lua.LValue) []lua.LValue {
	for len(vals) > 0 && vals[len(vals)-1] == lua.LNil {
		vals = vals[:len(vals)-1]
	}
	return vals
}

type conformanceCase struct {
	code string
	// want is the Lua 5.1 result: the values as repr prints them, or
	// "error: " and the message without its position.
	want string
	// gopher, when set, says why unmodified gopher-lua is not a valid
	// oracle for this case (it deviates from Lua 5.1 there).
	gopher string
}

const (
	gEmptyInit  = "gopher-lua's find with an empty pattern ignores init"
	gInitPast   = "gopher-lua does not clamp an init past the end to the end"
	gFrontier   = "gopher-lua has no %f"
	gGmatchHat  = "gopher-lua treats ^ in gmatch as an anchor"
	gReplEscape = "gopher-lua keeps '%' before a non-digit in a replacement"
	gLazy       = "Lua 5.1 reports pattern errors only when the matcher reaches them; gopher-lua parses first"
	gNoLimit    = "gopher-lua has no capture limit"
	gPosBackref = "gopher-lua matches a back-reference to a position capture as empty"
	gNegMax     = "gopher-lua treats a negative max in gsub as no limit"
	gNumRepl    = "gopher-lua rejects a number as gsub replacement"
	gBadRepl    = "gopher-lua turns an invalid replacement value into an empty string"
	gSetClass   = "gopher-lua treats %a-z in a set as a range that matches nothing"
	gUnfinished = "gopher-lua reports an unfinished capture even where Lua 5.1 never reads it"
	gSetEscape  = "gopher-lua mis-parses this set"
	gParen      = "gopher-lua's find rejects ')' although Lua 5.1 searches plainly for a pattern without specials"
	gIter       = "gopher-lua's gmatch iterator only works when called by a generic for"
	gPercent    = "gopher-lua accepts a trailing '%' in a pattern"
)

// gopherAt matches the position gopher-lua's pm package appends to its
// error messages.
var gopherAt = regexp.MustCompile(` at (EOS|\d+)$`)

// gopherMessage maps a Lua 5.1 error message to the one unmodified
// gopher-lua gives for the same error, where they differ.
func gopherMessage(msg string) string {
	switch msg {
	case "malformed pattern (missing ']')":
		return "unexpected EOS"
	case "invalid pattern capture":
		return "invalid ')'"
	case "bad argument #3 to gsub (string/function/table expected)":
		return "bad argument #3 to gsub (string or table or function expected, got boolean)"
	}
	return msg
}

var conformanceCases = []conformanceCase{
	// string.find: the manual's and PiL's examples, init, plain.
	{`string.find("hello world", "o w")`, `5 7`, ""},
	{`string.find("hello world", "o", 6)`, `8 8`, ""},
	{`string.find("hello", "l")`, `3 3`, ""},
	{`string.find("hello", "xyz")`, `nil`, ""},
	{`string.find("hello", "")`, `1 0`, ""},
	{`string.find("hello", "", 3)`, `3 2`, gEmptyInit},
	{`string.find("hello", "", 10)`, `6 5`, gEmptyInit},
	{`string.find("hello", "l", -2)`, `4 4`, ""},
	{`string.find("hello", "h", -10)`, `1 1`, ""},
	{`string.find("hello", "o", 0)`, `5 5`, ""},
	{`string.find("a.b", ".", 1, true)`, `2 2`, ""},
	{`string.find("a.b", "%.")`, `2 2`, ""},
	{`string.find("a+b", "+", 1, true)`, `2 2`, ""},
	{`string.find("a+b", "a+b", 1, true)`, `1 3`, ""},
	{`string.find("a+b", "a+b")`, `nil`, ""},
	{`string.find("abc", "b", 1, false)`, `2 2`, ""},
	{`string.find("a)b", "a)")`, `1 2`, gParen},
	{`string.find("THE (quick) fox", "%((%a+)%)")`, `5 11 "quick"`, ""},
	{`("THE (quick) fox"):find("%((%a+)%)")`, `5 11 "quick"`, ""},
	{`string.find("hello", "()ll()")`, `3 4 3 5`, ""},
	{`string.find("hello", "^h")`, `1 1`, ""},
	{`string.find("hello", "^e")`, `nil`, ""},
	{`string.find("hello", "^e", 2)`, `2 2`, ""},
	{`string.find("hello", "o$")`, `5 5`, ""},
	{`string.find("hello", "l$")`, `nil`, ""},
	{`string.find("hello", "^hello$")`, `1 5`, ""},
	{`string.find("a$b", "$b")`, `2 3`, ""},
	{`string.find("x^y", "x^")`, `1 2`, ""},
	{`string.find("aaa", "a-", 2)`, `2 1`, ""},
	{`string.find("aaab", "a-b")`, `1 4`, ""},
	{`string.find("aaab", "a*")`, `1 3`, ""},
	{`string.find("", "a*")`, `1 0`, ""},
	{`string.find("", "")`, `1 0`, ""},
	{`string.find("abc", "[b-c]+")`, `2 3`, ""},
	{`string.find("hello123", "%d+")`, `6 8`, ""},
	{`string.find("f(a(b)c)d", "%b()")`, `2 8`, ""},
	{`string.find("THE (quick) fox", "%f[%a]%a+", 5)`, `6 10`, gFrontier},
	{`string.find("hello", "(l)(l)")`, `3 4 "l" "l"`, ""},
	{`string.find("abc", "$", 10)`, `4 3`, gInitPast},
	{`string.find("abc", "b", 100)`, `nil`, ""},
	{`string.find(12345, 34)`, `3 4`, ""},
	{`string.find("a\0b", "%z")`, `2 2`, ""},

	// string.match
	{`string.match("key = value", "(%w+)%s*=%s*(%w+)")`, `"key" "value"`, ""},
	{`string.match("hello world", "%w+")`, `"hello"`, ""},
	{`string.match("hello world", "%w+", 6)`, `"world"`, ""},
	{`string.match("hello", "%a+", -3)`, `"llo"`, ""},
	{`string.match("hello", ".", 0)`, `"h"`, ""},
	{`string.match("  trim me  ", "^%s*(.-)%s*$")`, `"trim me"`, ""},
	{`string.match("2024-01-15", "(%d+)-(%d+)-(%d+)")`, `"2024" "01" "15"`, ""},
	{`string.match("hello", "()ll()")`, `3 5`, ""},
	{`string.match("hello", "xyz")`, `nil`, ""},
	{`select("#", string.match("hello", "xyz"))`, `1`, "gopher-lua's match returns no value when nothing matches"},
	{`string.match("mcp__github__create_issue", "^mcp__(%w+)__(.+)$")`, `"github" "create_issue"`, ""},
	{`string.match("mcp__github__create_issue", "^mcp__github__")`, `"mcp__github__"`, ""},
	{`string.match("abc", "((a)(b))")`, `"ab" "a" "b"`, ""},
	{`string.match("abc", "a(.-)c")`, `"b"`, ""},
	{`string.match("[[nested]]", "%[%[(.-)%]%]")`, `"nested"`, ""},
	{`string.match("hello", ".-")`, `""`, ""},
	{`string.match("hello", ".*")`, `"hello"`, ""},
	{`string.match("hello", "(h)(e)(l)(l)(o)")`, `"h" "e" "l" "l" "o"`, ""},
	{`string.match("say \"hi\" now", "([\"'])(.-)%1")`, `"\"" "hi"`, ""},
	{`string.match("say 'hi' now", "([\"'])(.-)%1")`, `"'" "hi"`, ""},
	{`string.match("abcabc", "(abc)%1")`, `"abc"`, ""},
	{`string.match("abcabd", "(abc)%1")`, `nil`, ""},
	{`string.match("hello world", "%s(%w+)$")`, `"world"`, ""},
	{`string.match("abc", "[^a]+")`, `"bc"`, ""},
	{`string.match("a]b", "[]]")`, `"]"`, ""},
	{`string.match("a]b", "[^]]+")`, `"a"`, ""},
	{`string.match("a^b", "[%^]")`, `"^"`, ""},
	{`string.match("a^b", "[b^]")`, `"^"`, ""},
	{`string.match("xa-b", "[a-]+")`, `"a-"`, ""},
	{`string.match("1z-a", "[%a-]+")`, `"z-a"`, ""},
	{`string.match("1-z", "[%d-z]+")`, `"1-z"`, gSetClass},
	{`string.match("a%b", "[%%]")`, `"%"`, ""},
	{`string.match("a]b", "[%]]")`, `"]"`, ""},
	{`string.match("x", "x?x?x")`, `"x"`, ""},
	{`string.match("aaa", "^a-$")`, `"aaa"`, ""},
	{`string.match("  ", "^%s*$")`, `"  "`, ""},
	{`string.match("key=val; k2=v2", "k2=(%w+)")`, `"v2"`, ""},
	{`string.match("\0abc", "%z")`, `"\x00"`, ""},
	{`string.match("a\0b", "[%z]")`, `"\x00"`, ""},
	{`string.match("0x1F", "^0x(%x+)$")`, `"1F"`, ""},
	{`string.match("Hello", "%u%l+")`, `"Hello"`, ""},
	{`string.match("a,b;c", "%p")`, `","`, ""},
	{`string.match("\tx", "%c")`, `"\t"`, ""},
	{`string.match("abc", "%A*")`, `""`, ""},
	{`string.match("123abc", "%D+")`, `"abc"`, ""},
	{`string.match("ab12", "%W")`, `nil`, ""},
	{`string.match("a b", "%S+%s%S+")`, `"a b"`, ""},
	{`string.match("abCD", "%U+")`, `"ab"`, ""},
	{`string.match("abCD", "%L+")`, `"CD"`, ""},
	{`string.match("fg12", "%X+")`, `"g"`, ""},
	{`string.match("\1\2ab", "%C+")`, `"ab"`, ""},
	{`string.match("!?ab", "%P+")`, `"ab"`, ""},
	{`string.match("a\0b", "%Z+")`, `"a"`, ""},
	{`string.match("x.y", "%.")`, `"."`, ""},
	{`string.match("a+b", "a%+b")`, `"a+b"`, ""},
	{`string.match("abc", "a.c")`, `"abc"`, ""},
	{`string.match("ac", "ab?c")`, `"ac"`, ""},
	{`string.match("abbbc", "ab+c")`, `"abbbc"`, ""},
	{`string.match("<a><b>", "<(.-)>")`, `"a"`, ""},
	{`string.match("<a><b>", "<(.*)>")`, `"a><b"`, ""},
	{`string.match("f(a(b)c)d", "%b()")`, `"(a(b)c)"`, ""},
	{`string.match("f(a(b)c", "%b()")`, `"(b)"`, ""},
	{`string.match("if x then y end", "%bie")`, `"if x the"`, ""},
	{`string.match("'a' 'b'", "%b''")`, `"'a'"`, ""},
	{`string.match("THE (quick) fox", "%f[%a]%a+")`, `"THE"`, gFrontier},
	{`string.match("hello world", "%f[%w]%w+$")`, `"world"`, gFrontier},
	{`string.match("x abc", "%f[%l]...")`, `"x a"`, gFrontier},
	{`string.match("the cat", "%f[%a]cat%f[%A]")`, `"cat"`, gFrontier},
	{`string.match("concat cat", "%f[%a]cat%f[%A]")`, `"cat"`, gFrontier},
	{`string.match("abc", "%f[%z]")`, `""`, gFrontier},
	{`string.match("abc", "()%f[%z]")`, `4`, gFrontier},
	{`string.match("abc", "%f[%Z]()")`, `1`, gFrontier},
	{`string.match("ab", "()a()b()")`, `1 2 3`, ""},
	{`string.match("abc", "a(b)(c)", 1)`, `"b" "c"`, ""},
	{`string.match("abc", "^(a)")`, `"a"`, ""},
	{`string.match("abc", "b", 10)`, `nil`, ""},
	{`string.match("abc", "()", 10)`, `4`, gInitPast},
	{`string.match("abc", "()", "2")`, `2`, "gopher-lua's match rejects a numeric string as init"},
	{`string.match("hello", "(h)(.)")`, `"h" "e"`, ""},
	{`string.match("aaa", "(a*(.))%2")`, `"aa" "a"`, ""},
	{`string.match("aaab", "(a*(.))%2")`, `"aa" "a"`, ""},
	{`string.match("ab", "(a*(.))%2")`, `nil`, ""},
	{`string.match("aXbXc", "(X).-%1")`, `"X"`, ""},

	// string.gmatch
	{`gm("one two three", "%a+")`, `"one,two,three"`, ""},
	{`gm("k1=v1, k2=v2", "(%w+)=(%w+)")`, `"k1|v1,k2|v2"`, ""},
	{`gm("abc", "")`, `",,,"`, ""},
	{`gm("abc", "%w*")`, `"abc,"`, ""},
	{`gm("hello world", "()o()")`, `"5|6,8|9"`, ""},
	{`gm("^a^a", "^a")`, `"^a,^a"`, gGmatchHat},
	{`gm("a1b2c3", "%a%d")`, `"a1,b2,c3"`, ""},
	{`gm("THE (quick) fox", "%f[%a]%a+")`, `"THE,quick,fox"`, gFrontier},
	{`gm("  x  y ", "%S+")`, `"x,y"`, ""},
	{`gm("a,b,,c", "([^,]*)")`, `"a,,b,,,c,"`, ""},
	{`gm("", "x")`, `""`, ""},
	{`gm("abc", ".")`, `"a,b,c"`, ""},
	{`gm("a(b)c(d(e))", "%b()")`, `"(b),(d(e))"`, ""},
	{`local f = string.gmatch("ab", ".") return f(), f(), f()`, `"a" "b"`, gIter},
	{`local f = ("x y"):gmatch("%a") return f(), f(), f(), f()`, `"x" "y" nil`, gIter},
	{`local f = ("x y"):gmatch("%a") f() f() f() return f()`, ``, gIter},

	// string.gsub
	{`string.gsub("hello world", "(%w+)", "%1 %1")`, `"hello hello world world" 2`, ""},
	{`string.gsub("abc", "%w", "%%%0")`, `"%a%b%c" 3`, ""},
	{`string.gsub("hello world", "%w+", "%0 %0", 1)`, `"hello hello world" 1`, ""},
	{`string.gsub("hello world", "o", "0")`, `"hell0 w0rld" 2`, ""},
	{`string.gsub("abc", "%w*", "-")`, `"--" 2`, ""},
	{`string.gsub("abc", "", "-")`, `"-a-b-c-" 4`, ""},
	{`string.gsub("abc", "x*", "-")`, `"-a-b-c-" 4`, ""},
	{`string.gsub("abc", "b*", "-")`, `"-a--c-" 4`, ""},
	{`string.gsub("hello", "l", {l = "L"})`, `"heLLo" 2`, ""},
	{`string.gsub("$name is $age", "%$(%w+)", {name = "bob", age = 42})`, `"bob is 42" 2`, ""},
	{`string.gsub("$name $x", "%$(%w+)", {name = "bob"})`, `"bob $x" 2`, ""},
	{`string.gsub("abc", "%w", function(c) return c:upper() end)`, `"ABC" 3`, ""},
	{`string.gsub("abc", "%w", function(c) if c == "b" then return false end return "x" end)`, `"xbx" 3`, ""},
	{`string.gsub("hello world", "(o)", function(o) return nil end)`, `"hello world" 2`, ""},
	{`string.gsub("hello", "l", function() end)`, `"hello" 2`, ""},
	{`string.gsub("abc", "%w", function(c) return 1 end)`, `"111" 3`, ""},
	{`string.gsub("abc", "^a", "x")`, `"xbc" 1`, ""},
	{`string.gsub("abc", "^b", "x")`, `"abc" 0`, ""},
	{`string.gsub("aaa", "^a", "x")`, `"xaa" 1`, ""},
	{`string.gsub("aaa", "^", "x")`, `"xaaa" 1`, ""},
	{`string.gsub("aaa", "$", "x")`, `"aaax" 1`, ""},
	{`string.gsub("hello", "", "x", 2)`, `"xhxello" 2`, ""},
	{`string.gsub("hello", "l", "L", 0)`, `"hello" 0`, ""},
	{`string.gsub("hello", "l", "L", -1)`, `"hello" 0`, gNegMax},
	{`string.gsub("hello", "l", "L", 1.9)`, `"heLlo" 1`, ""},
	{`string.gsub("hello  world\t!", "%s+", " ")`, `"hello world !" 2`, ""},
	{`string.gsub("  a  b  ", "^%s+", "")`, `"a  b  " 1`, ""},
	{`string.gsub("  a  b  ", "%s+$", "")`, `"  a  b" 1`, ""},
	{`string.gsub("a.b.c", "%.", "/")`, `"a/b/c" 2`, ""},
	{`string.gsub("abc", "b", "%1")`, `"abc" 1`, ""},
	{`string.gsub("abc", "b", "%2")`, `error: invalid capture index`, ""},
	{`string.gsub("abc", "(b)", "%2")`, `error: invalid capture index`, ""},
	{`string.gsub("abc", "b", "%x")`, `"axc" 1`, gReplEscape},
	{`string.gsub("abc", "b", "%")`, `"a\x00c" 1`, gReplEscape},
	{`string.gsub("abc", "b", "%%")`, `"a%c" 1`, ""},
	{`string.gsub("abc", "b", "100%%")`, `"a100%c" 1`, ""},
	{`string.gsub("hello", "()", "%1")`, `"1h2e3l4l5o6" 6`, ""},
	{`string.gsub("abc", "(b)", 5)`, `"a5c" 1`, gNumRepl},
	{`string.gsub("hello world", "(%w+) (%w+)", "%2 %1")`, `"world hello" 1`, ""},
	{`string.gsub("abc", "(a)(b)(c)", function(a, b, c) return c .. b .. a end)`, `"cba" 1`, ""},
	{`string.gsub("abc", "%w", "%0%0")`, `"aabbcc" 3`, ""},
	{`string.gsub("x = 1, y = 2", "(%w+) = (%w+)", "%2 = %1")`, `"1 = x, 2 = y" 2`, ""},
	{`string.gsub("hello", ".", {h = "H"})`, `"Hello" 5`, ""},
	{`string.gsub("abc", "()b()", function(a, b) return a .. "-" .. b end)`, `"a2-3c" 1`, ""},
	{`string.gsub("abc", "()b", {[2] = "X"})`, `"aXc" 1`, ""},
	{`string.gsub("abc", "%w", setmetatable({}, {__index = function(t, k) return k:upper() end}))`, `"ABC" 3`, ""},
	{`string.gsub("abc", "b", {})`, `"abc" 1`, ""},
	{`string.gsub("", "", "x")`, `"x" 1`, ""},
	{`string.gsub("", "a*", "x")`, `"x" 1`, ""},
	{`string.gsub("", "a", "x")`, `"" 0`, ""},
	{`string.gsub("abc", ".", {a = 1, b = true})`, `error: invalid replacement value (a boolean)`, gBadRepl},
	{`string.gsub("alo", ".", {a = {}})`, `error: invalid replacement value (a table)`, gBadRepl},
	{`string.gsub("alo", ".", function() return {} end)`, `error: invalid replacement value (a table)`, gBadRepl},
	{`string.gsub("abc", "b", true)`, `error: bad argument #3 to gsub (string/function/table expected)`, ""},
	{`string.gsub("abc", "(", "x")`, `"xaxbxcx" 4`, gUnfinished},
	{`string.gsub("abc", "(", "%1")`, `error: unfinished capture`, ""},
	{`string.gsub("abc", "(", function(x) return x end)`, `error: unfinished capture`, ""},
	{`string.gsub("one two", "(%w+)", "<%1>")`, `"<one> <two>" 2`, ""},
	{`string.gsub("f(a(b)c)d", "%b()", "")`, `"fd" 1`, ""},
	{`string.gsub("THE (quick) fox", "%f[%a]%a+", "W")`, `"W (W) W" 3`, gFrontier},
	{`string.gsub("hello world", "%w+", "%0", 1)`, `"hello world" 1`, ""},
	{`string.gsub("abc", "", "")`, `"abc" 4`, ""},
	{`string.gsub("a b c", " ", "")`, `"abc" 2`, ""},
	{`string.gsub("a,b", ",", "%%,")`, `"a%,b" 1`, ""},
	{`string.gsub("xyz", "%w", "%0%0", 2)`, `"xxyyz" 2`, ""},
	{`string.gsub("abc", "a", "%1%1")`, `"aabc" 1`, ""},
	{`("x"):rep(3):gsub("x", "y")`, `"yyy" 3`, ""},
	{`string.gsub("hello world", "l+", function(x) return #x end)`, `"he2o wor1d" 2`, ""},
	{`string.gsub("a b", "%w", "%%1")`, `"%1 %1" 2`, ""},
	{`string.gsub("abc", "", "%0")`, `"abc" 4`, ""},
	{`string.gsub("abc", ".", "%0", 2.5)`, `"abc" 2`, ""},
	{`string.gsub("abc", ".", "x", "2")`, `"xxc" 2`, "gopher-lua rejects a numeric string as max"},
	{`string.gsub("a.b", ".", "%%")`, `"%%%" 3`, ""},
	{`string.match('x "a" y', '%b""')`, `"\"a\""`, ""},
	{`string.match("a\0b\0c", "%z(.)%z")`, `"b"`, ""},
	// Deliberately not Lua 5.1: a NUL byte in a pattern is an ordinary
	// character (Lua 5.1 stops reading the pattern there; Lua 5.2+ and
	// gopher-lua do the same as here).
	{`string.match("a\0b", "\0b")`, `"\x00b"`, ""},
	{`string.find("a\0b", "\0b")`, `2 3`, ""},

	// Malformed patterns: Lua 5.1's messages.
	{`string.find("a", "%")`, `error: malformed pattern (ends with '%')`, gPercent},
	{`string.find("a", "a%")`, `error: malformed pattern (ends with '%')`, gPercent},
	{`string.find("a", "[a")`, `error: malformed pattern (missing ']')`, ""},
	{`string.find("a", "[]")`, `error: malformed pattern (missing ']')`, ""},
	{`string.find("a", "[^]")`, `error: malformed pattern (missing ']')`, ""},
	{`string.find("a", "[%")`, `error: malformed pattern (missing ']')`, ""},
	{`string.find("a", "[a%]")`, `error: malformed pattern (missing ']')`, gSetEscape},
	{`string.find("a", "(")`, `error: unfinished capture`, ""},
	{`string.find("a", "(a")`, `error: unfinished capture`, ""},
	{`string.match("a", "(a")`, `error: unfinished capture`, ""},
	{`string.find("b", "(a")`, `nil`, gUnfinished},
	{`string.match("a", "a)")`, `error: invalid pattern capture`, ""},
	{`string.match("a", ")")`, `error: invalid pattern capture`, ""},
	{`string.find("a", "%1")`, `error: invalid capture index`, ""},
	{`string.find("aa", "(a)%2")`, `error: invalid capture index`, ""},
	{`string.find("aa", "(a%1)")`, `error: invalid capture index`, ""},
	{`string.find("a", "%0")`, `error: invalid capture index`, ""},
	{`string.find("a", "%f")`, `error: missing '[' after '%f' in pattern`, gFrontier},
	{`string.find("a", "%fa")`, `error: missing '[' after '%f' in pattern`, gFrontier},
	{`string.find("a", "%f[a")`, `error: malformed pattern (missing ']')`, ""},
	{`string.find("a", "%b")`, `error: unbalanced pattern`, gLazy},
	{`string.find("a", "%ba")`, `error: unbalanced pattern`, gLazy},
	{`string.find("a", string.rep("()", 33))`, `error: too many captures`, gNoLimit},
	{`select("#", string.find("a", string.rep("()", 32)))`, `34`, ""},
	{`gm("abc", "[a")`, `error: malformed pattern (missing ']')`, ""},
	{`gm("abc", "%")`, `error: malformed pattern (ends with '%')`, gPercent},
	{`string.gsub("abc", "[", "x")`, `error: malformed pattern (missing ']')`, ""},
	{`string.gsub("abc", "%", "x")`, `error: malformed pattern (ends with '%')`, gPercent},
	// ... but only when the matcher gets there, as in Lua 5.1.
	{`string.find("x", "a[")`, `nil`, gLazy},
	{`string.find("x", "a%")`, `nil`, gLazy},
	{`string.match("x", "a)")`, `nil`, gLazy},
	{`string.match("aa", "()a%1")`, `nil`, gPosBackref},

	// Argument errors.
	{`string.find(nil, "a")`, `error: bad argument #1 to find (string expected, got nil)`, ""},
	{`string.match("a", {})`, `error: bad argument #2 to match (string expected, got table)`, ""},
	{`string.find("a", "a", {})`, `error: bad argument #3 to find (number expected, got table)`, ""},
}

func TestConformance(t *testing.T) {
	ours, ref := newOurs(t), newRef(t)
	defer ours.Close()
	defer ref.Close()
	if len(conformanceCases) < 100 {
		t.Fatalf("only %d cases", len(conformanceCases))
	}
	oracleChecked := 0
	for _, c := range conformanceCases {
		got, gotErr, failed := run(ours, c.code)
		gotRepr := repr(got)
		if failed {
			gotRepr = "error: " + gotErr
		}
		if gotRepr != c.want {
			t.Errorf("%s\n  got  %s\n  want %s", c.code, gotRepr, c.want)
		}
		if c.gopher != "" {
			continue
		}
		oracleChecked++
		refVals, refErr, refFailed := run(ref, c.code)
		switch {
		case failed != refFailed:
			t.Errorf("%s: oracle disagrees: ours %q (failed=%v), gopher-lua %s %q (failed=%v)",
				c.code, gotRepr, failed, repr(refVals), refErr, refFailed)
		case failed && gopherMessage(gotErr) != gopherAt.ReplaceAllString(refErr, ""):
			t.Errorf("%s: oracle's message differs: ours %q, gopher-lua %q", c.code, gotErr, refErr)
		case !failed && repr(trimNils(got)) != repr(trimNils(refVals)):
			t.Errorf("%s: oracle disagrees:\n  ours       %s\n  gopher-lua %s", c.code, gotRepr, repr(refVals))
		}
	}
	t.Logf("%d cases, %d checked against gopher-lua", len(conformanceCases), oracleChecked)
}
