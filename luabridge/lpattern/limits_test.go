package lpattern

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"
)

func wantLuaError(t *testing.T, L *lua.LState, code, want string) {
	t.Helper()
	err := L.DoString(code)
	if err == nil {
		t.Fatalf("%s: no error, want %q", code, want)
	}
	msg := err.(*lua.ApiError).Object.String()
	if !strings.Contains(msg, want) {
		t.Fatalf("%s: error %q, want it to contain %q", code, msg, want)
	}
}

func TestStepLimitLua(t *testing.T) {
	L := newOurs(t)
	defer L.Close()
	for _, code := range []string{
		`local x = 1
return ("a"):rep(400):find(".-.-.-b")`,
		`local x = 1
return string.find(("a"):rep(3000), ".-.-.-.-b")`,
		`local x = 1
return ("a"):rep(400):match(".-.-.-b")`,
		`local x = 1
return string.gsub(("a"):rep(400), ".-.-.-b", "")`,
		`local x = 1
for w in ("a"):rep(400):gmatch(".-.-.-b") do end`,
		`local x = 1
return ("a"):rep(400):find("(.-)(.-)(.-)%f[b]")`,
	} {
		// The error carries the position of the Lua caller (line 2).
		wantLuaError(t, L, code, "<string>:2: "+ErrStepLimit.Error())
	}
	// The state is still usable afterwards.
	if err := L.DoString(`assert(("ab"):find("b") == 2)`); err != nil {
		t.Fatal(err)
	}
}

func TestStepLimitGo(t *testing.T) {
	m := Matcher{Steps: 1_000_000}
	_, _, err := m.Find(strings.Repeat("a", 400), ".-.-.-b", 0)
	if !errors.Is(err, ErrStepLimit) {
		t.Fatalf("err = %v, want ErrStepLimit", err)
	}
	if m.Steps >= 0 {
		t.Fatalf("Steps = %d after exhaustion", m.Steps)
	}
	m = Matcher{Steps: 1_000_000}
	if _, err := m.MatchAt(strings.Repeat("a", 3000), ".-.-.-.-b", 0); !errors.Is(err, ErrStepLimit) {
		t.Fatalf("err = %v, want ErrStepLimit", err)
	}
	// The zero Matcher has no budget.
	var zero Matcher
	if _, _, err := zero.Find("abc", "b+", 0); !errors.Is(err, ErrStepLimit) {
		t.Fatalf("zero Matcher: err = %v", err)
	}
}

// The budget is per call: many calls that each stay under it all succeed.
func TestBudgetPerCall(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	Open(L, func() int64 { return 200_000 })
	// About 30k steps per call, far more than 200k in total.
	if err := L.DoString(`
local s = ("a"):rep(60) .. "b"
for i = 1, 100 do
  assert(s:find(".-.-b") == 1)
  assert(select(2, s:gsub("a", "x")) == 60)
end
local n = 0
for w in (s .. " "):rep(50):gmatch(".-.-b") do n = n + 1 end
assert(n == 50, n)
`); err != nil {
		t.Fatal(err)
	}
}

func TestStepsPerByte(t *testing.T) {
	big := strings.Repeat("word  ", 400_000) // 2.4 MB
	code := `local s = ... ; local r, n = s:gsub("%s+", " ") ; assert(n == 400000, n)`
	run := func(opts Options) error {
		L := lua.NewState()
		defer L.Close()
		OpenWith(L, opts)
		fn, err := L.LoadString(code)
		if err != nil {
			t.Fatal(err)
		}
		return L.CallByParam(lua.P{Fn: fn, Protect: true}, lua.LString(big))
	}
	if err := run(Options{Budget: func() int64 { return 1_000_000 }}); err == nil ||
		!strings.Contains(err.Error(), ErrStepLimit.Error()) {
		t.Fatalf("without a per-byte allowance: err = %v, want the step limit", err)
	}
	if err := run(Options{Budget: func() int64 { return 1_000_000 }, StepsPerByte: DefaultStepsPerByte}); err != nil {
		t.Fatalf("with the per-byte allowance: %v", err)
	}
}

func TestDeepRecursion(t *testing.T) {
	L := newOurs(t)
	defer L.Close()
	// Exponential and deep: stopped by the depth bound, not the Go stack.
	wantLuaError(t, L, `return string.find(string.rep("a", 1000), string.rep("a?", 1000) .. string.rep("a", 1000))`,
		"pattern too complex")
	wantLuaError(t, L, `return string.match(("x"):rep(250), string.rep("x?", 250))`, "pattern too complex")
	wantLuaError(t, L, `return string.match(("a"):rep(300), string.rep("a*", 300))`, "pattern too complex")
	if err := L.DoString(`assert(string.match("aaa", string.rep("a?", 150)) == "aaa")`); err != nil {
		t.Fatal(err)
	}

	// A larger MaxDepth is honoured, and the budget still stops the
	// exponential search.
	m := Matcher{Steps: 1_000_000, MaxDepth: 5000}
	_, _, err := m.Find(strings.Repeat("a", 1000), strings.Repeat("a?", 1000)+strings.Repeat("a", 1000), 0)
	if !errors.Is(err, ErrStepLimit) {
		t.Fatalf("err = %v, want ErrStepLimit", err)
	}
	m = Matcher{Steps: 1_000_000, MaxDepth: 5000}
	start, end, err := m.Find(strings.Repeat("a", 1000), strings.Repeat("a?", 1000), 0)
	if err != nil || start != 0 || end != 1000 {
		t.Fatalf("Find = %d, %d, %v", start, end, err)
	}
	m = Matcher{Steps: 1_000_000}
	if _, _, err := m.Find(strings.Repeat("a", 201), strings.Repeat("a?", 201), 0); !errors.Is(err, ErrTooComplex) {
		t.Fatalf("err = %v, want ErrTooComplex", err)
	}
}

func TestGsubTooLarge(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	OpenWith(L, Options{MaxResult: 1000})
	wantLuaError(t, L, `return string.gsub(("a"):rep(100), "a", ("b"):rep(20))`, "<string>:1: gsub result too large")
	wantLuaError(t, L, `return string.gsub(("a"):rep(100), "%w+", ("%0"):rep(20))`, "gsub result too large")
	wantLuaError(t, L, `return string.gsub(("a"):rep(100), "a", function() return ("b"):rep(20) end)`, "gsub result too large")
	wantLuaError(t, L, `return string.gsub(("a"):rep(100), "a", {a = ("b"):rep(20)})`, "gsub result too large")
	wantLuaError(t, L, `return string.gsub(("a"):rep(1001), "x", "y")`, "gsub result too large")
	if err := L.DoString(`
local r, n = string.gsub(("a"):rep(100), "a", ("b"):rep(10))
assert(#r == 1000 and n == 100)
`); err != nil {
		t.Fatal(err)
	}
}

func TestOpenReplacesEverywhere(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	Open(L, nil)
	for _, code := range []string{
		`return string.gfind(("a"):rep(400), ".-.-.-b")()`,
		`local f = string.find; return f(("a"):rep(400), ".-.-.-b")`,
		`local s = ("a"):rep(400); return s:find(".-.-.-b")`,
		`return getmetatable("").__index.match(("a"):rep(400), ".-.-.-b")`,
	} {
		wantLuaError(t, L, code, ErrStepLimit.Error())
	}
}

func TestOpenWithoutStringLib(t *testing.T) {
	L := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer L.Close()
	lua.OpenBase(L)
	Open(L, nil)
	if err := L.DoString(`assert(string.find("hello", "l+") == 3); assert(("x"):match("x") == "x")`); err != nil {
		t.Fatal(err)
	}
}

func TestParallelStates(t *testing.T) {
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			L := lua.NewState()
			defer L.Close()
			Open(L, func() int64 { return 100_000 })
			code := fmt.Sprintf(`
for i = 1, 10 do
  local s = ("k%d=v%d "):rep(20)
  local n = 0
  for k, v in s:gmatch("(%%w+)=(%%w+)") do n = n + 1 end
  assert(n == 20)
  assert(not pcall(string.find, ("a"):rep(300), ".-.-.-b"))
end`, g, g)
			if err := L.DoString(code); err != nil {
				t.Error(err)
			}
		}(g)
	}
	wg.Wait()
}

func TestMatcherAPI(t *testing.T) {
	var m Matcher
	m.Steps = 1000
	start, end, err := m.Find("THE (quick) fox", "%((%a+)%)", 0)
	if err != nil || start != 4 || end != 11 {
		t.Fatalf("Find = %d, %d, %v", start, end, err)
	}
	if m.NumCaptures() != 1 {
		t.Fatalf("NumCaptures = %d", m.NumCaptures())
	}
	if c, err := m.Capture(0); err != nil || c != (Capture{Start: 5, End: 10}) {
		t.Fatalf("Capture(0) = %+v, %v", c, err)
	}
	if _, err := m.Capture(1); err == nil || err.Error() != "invalid capture index" {
		t.Fatalf("Capture(1) err = %v", err)
	}

	start, end, err = m.Find("hello", "()ll()", 0)
	if err != nil || start != 2 || end != 4 {
		t.Fatalf("Find = %d, %d, %v", start, end, err)
	}
	if c, _ := m.Capture(1); c != (Capture{Start: 4, End: 4, Position: true}) {
		t.Fatalf("Capture(1) = %+v", c)
	}

	// Anchors, init and no match.
	if s, _, _ := m.Find("hello", "^l", 2); s != 2 {
		t.Fatalf("anchored at init: %d", s)
	}
	if s, _, _ := m.Find("hello", "^l", 0); s != -1 {
		t.Fatalf("anchored: %d", s)
	}
	if s, e, _ := m.Find("hello", "", 99); s != 5 || e != 5 {
		t.Fatalf("init past the end: %d %d", s, e)
	}

	// MatchAt does not treat '^' as an anchor.
	if e, err := m.MatchAt("^ab", "^a", 0); err != nil || e != 2 {
		t.Fatalf("MatchAt = %d, %v", e, err)
	}
	if e, _ := m.MatchAt("ab", "b", 0); e != -1 {
		t.Fatalf("MatchAt = %d", e)
	}
	if e, _ := m.MatchAt("ab", "", 3); e != -1 {
		t.Fatalf("MatchAt out of range = %d", e)
	}

	// Pattern errors are *Error values with Lua's messages.
	_, _, err = m.Find("a", "[a", 0)
	var perr *Error
	if !errors.As(err, &perr) || perr.Msg != "malformed pattern (missing ']')" {
		t.Fatalf("err = %v", err)
	}
	// An unfinished capture is only an error when it is read.
	if _, _, err := m.Find("a", "(a", 0); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Capture(0); err == nil || err.Error() != "unfinished capture" {
		t.Fatalf("Capture of an unfinished capture: %v", err)
	}

	if p, ok := Anchored("^abc"); p != "abc" || !ok {
		t.Fatal("Anchored")
	}
	if HasSpecials("abc]") || !HasSpecials("a.c") {
		t.Fatal("HasSpecials")
	}
}

// Every character class agrees with the C locale's definition.
func TestClasses(t *testing.T) {
	in := func(c byte, lo, hi byte) bool { return lo <= c && c <= hi }
	def := map[byte]func(c byte) bool{
		'a': func(c byte) bool { return in(c, 'a', 'z') || in(c, 'A', 'Z') },
		'c': func(c byte) bool { return c < 32 || c == 127 },
		'd': func(c byte) bool { return in(c, '0', '9') },
		'l': func(c byte) bool { return in(c, 'a', 'z') },
		'p': func(c byte) bool {
			return in(c, 33, 47) || in(c, 58, 64) || in(c, 91, 96) || in(c, 123, 126)
		},
		's': func(c byte) bool { return c == ' ' || in(c, '\t', '\r') },
		'u': func(c byte) bool { return in(c, 'A', 'Z') },
		'w': func(c byte) bool { return in(c, 'a', 'z') || in(c, 'A', 'Z') || in(c, '0', '9') },
		'x': func(c byte) bool { return in(c, 'a', 'f') || in(c, 'A', 'F') || in(c, '0', '9') },
		'z': func(c byte) bool { return c == 0 },
	}
	for cl, f := range def {
		for i := 0; i < 256; i++ {
			c := byte(i)
			if matchClass(c, cl) != f(c) {
				t.Errorf("%%%c on %d", cl, c)
			}
			if matchClass(c, cl-'a'+'A') == f(c) {
				t.Errorf("%%%c on %d", cl-'a'+'A', c)
			}
		}
	}
	if !matchClass('.', '.') || matchClass('a', '.') || !matchClass('g', 'g') {
		t.Error("a non-class letter stands for itself")
	}
}

func TestDoneChannel(t *testing.T) {
	done := make(chan struct{})
	close(done)
	m := Matcher{Steps: 1 << 50, Done: done}
	_, _, err := m.Find(strings.Repeat("a", 400), ".-.-.-b", 0)
	if !errors.Is(err, ErrCancelled) {
		t.Fatalf("err = %v, want ErrCancelled", err)
	}
	// A Done channel that stays open changes nothing: the whole budget is
	// available, and what is left is reported back.
	open := make(chan struct{})
	m = Matcher{Steps: 3 * PollSteps, Done: open}
	_, _, err = m.Find(strings.Repeat("a", 400), ".-.-.-b", 0)
	if !errors.Is(err, ErrStepLimit) {
		t.Fatalf("err = %v, want ErrStepLimit", err)
	}
	m = Matcher{Steps: 10 * PollSteps, Done: open}
	if s, e, err := m.Find(strings.Repeat("a", 100)+"b", ".-.-b", 0); s != 0 || e != 101 || err != nil {
		t.Fatalf("Find = %d %d %v", s, e, err)
	}
	plain := Matcher{Steps: 10 * PollSteps}
	plain.Find(strings.Repeat("a", 100)+"b", ".-.-b", 0)
	if m.Steps != plain.Steps || m.Steps <= 0 {
		t.Fatalf("Steps left: %d with Done, %d without", m.Steps, plain.Steps)
	}
}

// The state's context interrupts a long match even when the budget would
// allow it to go on.
func TestContextInterrupts(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	Open(L, func() int64 { return 1 << 50 })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	L.SetContext(ctx)
	err := L.DoString(`return ("a"):rep(400):find(".-.-.-b")`)
	if err == nil || !strings.Contains(err.Error(), context.DeadlineExceeded.Error()) {
		t.Fatalf("err = %v, want the context's error", err)
	}
}

func TestSetupBudget(t *testing.T) {
	lib := &library{budget: func() int64 { return 1000 }, perByte: 16, maxDepth: DefaultMaxDepth}
	for _, c := range []struct {
		n    int
		want int64
	}{{0, 1000}, {10, 1160}, {1 << 62, math.MaxInt64}} {
		var m Matcher
		lib.setup(&m, c.n)
		if m.Steps != c.want {
			t.Errorf("subject of %d bytes: budget %d, want %d", c.n, m.Steps, c.want)
		}
	}
	lib = &library{}
	var m Matcher
	lib.setup(&m, 100)
	if m.Steps != DefaultBudget {
		t.Errorf("no budget function: %d", m.Steps)
	}
}
