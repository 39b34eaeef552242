package lpattern

import (
	"errors"
	"strings"
	"sync"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

var fuzzStates struct {
	sync.Mutex
	ours, ref *lua.LState
}

// call calls the global function path ("string.find" or "gm") in L and
// returns its results, or failed = true if it raised an error.
func call(L *lua.LState, path string, args ...lua.LValue) (vals []lua.LValue, failed bool) {
	var fn lua.LValue
	if lib, name, ok := strings.Cut(path, "."); ok {
		fn = L.GetField(L.GetGlobal(lib), name)
	} else {
		fn = L.GetGlobal(path)
	}
	base := L.GetTop()
	defer L.SetTop(base)
	if err := L.CallByParam(lua.P{Fn: fn, NRet: lua.MultRet, Protect: true}, args...); err != nil {
		return nil, true
	}
	for i := base + 1; i <= L.GetTop(); i++ {
		vals = append(vals, L.Get(i))
	}
	return vals, false
}

// gopherDeviates reports whether pattern uses something unmodified
// gopher-lua gets wrong (see the g* reasons in lua_test.go), so that it is
// no oracle for it.
func gopherDeviates(pattern string) bool {
	return strings.Contains(pattern, "%f") || // no frontier
		strings.Contains(pattern, "()") && strings.ContainsAny(pattern, "123456789") || // position back-references
		strings.Contains(pattern, "[") && strings.Contains(pattern, "-") // "[%a-z]", "[0--1]": ranges with classes or '-'
}

func FuzzPattern(f *testing.F) {
	for _, seed := range [][2]string{
		{"hello world", "o w"}, {"hello world", "(%w+)"}, {"key = value", "(%w+)%s*=%s*(%w+)"},
		{"THE (quick) fox", "%((%a+)%)"}, {"f(a(b)c)d", "%b()"}, {"THE (quick) fox", "%f[%a]%a+"},
		{"hello", "()ll()"}, {"abc", "%w*"}, {"abc", ""}, {"aaab", "a-b"}, {"aaa", "^a-$"},
		{"a]b", "[]]"}, {"a^b", "[^%^]+"}, {"a-z", "[a-]+"}, {"abcabc", "(abc)%1"},
		{"aaaa", ".-.-.-b"}, {"x", "[a"}, {"x", "%"}, {"x", "(x"}, {"x", "x)"}, {"x", "%1"},
		{"\x00ab", "%z"}, {"a.b", "%.+"}, {"mcp__github__x", "^mcp__(%w+)__"}, {"ab", "a?b?c?"},
		{"x  y", "%s+"}, {"abc", "[%a-c]"}, {"a$b", "$b"}, {"ab", "()a%1"},
	} {
		f.Add(seed[0], seed[1])
	}
	f.Fuzz(func(t *testing.T, subject, pattern string) {
		// No panic, whatever the input; a budget always ends the match.
		m := Matcher{Steps: 100_000}
		start, end, err := m.Find(subject, pattern, 0)
		var perr *Error
		switch {
		case err == nil:
			if start >= 0 && (start > end || end > len(subject)) {
				t.Fatalf("Find = %d, %d", start, end)
			}
			if start >= 0 {
				for i := 0; i < m.NumCaptures(); i++ {
					if c, err := m.Capture(i); err == nil && (c.Start < 0 || c.Start > c.End || c.End > len(subject)) {
						t.Fatalf("capture %d = %+v", i, c)
					}
				}
			}
		case errors.Is(err, ErrStepLimit), errors.Is(err, ErrTooComplex), errors.As(err, &perr):
		default:
			t.Fatalf("unexpected error %v", err)
		}

		// Find (which skips positions where no match can start) agrees
		// with trying MatchAt at every position.
		if err == nil || errors.As(err, &perr) {
			naive := Matcher{Steps: 1 << 40}
			pat, anchored := Anchored(pattern)
			nStart, nEnd := -1, -1
			var nErr error
			for st := 0; st <= len(subject); st++ {
				e, err := naive.MatchAt(subject, pat, st)
				if err != nil {
					nErr = err
					break
				}
				if e >= 0 {
					nStart, nEnd = st, e
					break
				}
				if anchored {
					break
				}
			}
			if errors.Is(nErr, ErrStepLimit) || errors.Is(nErr, ErrTooComplex) {
				return
			}
			if nStart != start || nEnd != end || (nErr == nil) != (err == nil) ||
				err != nil && err.Error() != nErr.Error() {
				t.Fatalf("Find(%q, %q) = %d, %d, %v; MatchAt at each position: %d, %d, %v",
					subject, pattern, start, end, err, nStart, nEnd, nErr)
			}
			if err == nil && start >= 0 {
				if naive.NumCaptures() != m.NumCaptures() {
					t.Fatalf("captures: %d vs %d", m.NumCaptures(), naive.NumCaptures())
				}
				for i := 0; i < m.NumCaptures(); i++ {
					c1, e1 := m.Capture(i)
					c2, e2 := naive.Capture(i)
					if c1 != c2 || (e1 == nil) != (e2 == nil) {
						t.Fatalf("capture %d: %+v %v vs %+v %v", i, c1, e1, c2, e2)
					}
				}
			}
		}

		fuzzStates.Lock()
		defer fuzzStates.Unlock()
		if fuzzStates.ours == nil {
			fuzzStates.ours, fuzzStates.ref = newOurs(t), newRef(t)
		}
		s, p := lua.LString(subject), lua.LString(pattern)

		// string.gsub (which skips positions too) agrees with Lua 5.1's
		// algorithm written out over MatchAt.
		if got, failed := call(fuzzStates.ours, "string.gsub", s, p, lua.LString("<%0>")); !failed {
			want, n, err := naiveGsub(subject, pattern)
			if err == nil && (len(got) != 2 || got[0] != lua.LString(want) || got[1] != lua.LNumber(n)) {
				t.Fatalf("gsub(%q, %q) = %s, want %q %d", subject, pattern, repr(got), want, n)
			}
		}

		// Short inputs: unmodified gopher-lua finishes quickly and, where
		// it follows Lua 5.1, must agree.
		if len(pattern) > 8 || len(subject) > 12 || gopherDeviates(pattern) {
			return
		}
		for _, c := range []struct {
			fn   string
			args []lua.LValue
		}{
			{"string.find", []lua.LValue{s, p}},
			{"string.match", []lua.LValue{s, p}},
			{"string.gsub", []lua.LValue{s, p, lua.LString("<%0>")}},
			{"gm", []lua.LValue{s, p}},
		} {
			if c.fn == "gm" && strings.HasPrefix(pattern, "^") {
				continue // gopher-lua anchors gmatch
			}
			got, failed := call(fuzzStates.ours, c.fn, c.args...)
			want, refFailed := call(fuzzStates.ref, c.fn, c.args...)
			if failed || refFailed {
				// Error messages and the moment an error is noticed
				// differ; TestConformance covers them.
				continue
			}
			if g, w := repr(trimNils(got)), repr(trimNils(want)); g != w {
				t.Fatalf("%s(%q, %q):\n  ours       %s\n  gopher-lua %s", c.fn, subject, pattern, g, w)
			}
		}
	})
}

// naiveGsub is string.gsub(s, p, "<%0>") as Lua 5.1's str_gsub does it.
func naiveGsub(s, p string) (string, int, error) {
	pat, anchored := Anchored(p)
	m := Matcher{Steps: 1 << 40}
	var b strings.Builder
	n, pos := 0, 0
	for {
		e, err := m.MatchAt(s, pat, pos)
		if err != nil {
			return "", 0, err
		}
		if e >= 0 {
			n++
			b.WriteString("<" + s[pos:e] + ">")
		}
		if e > pos {
			pos = e
		} else if pos < len(s) {
			b.WriteByte(s[pos])
			pos++
		} else {
			break
		}
		if anchored {
			break
		}
	}
	b.WriteString(s[pos:])
	return b.String(), n, nil
}
