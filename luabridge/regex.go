package luabridge

import (
	"container/list"
	"fmt"
	"io"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

// awaken.regex is Go's regexp package: RE2 syntax, and matching in time
// linear in the subject, whatever the pattern (no backtracking). Patterns
// compile once per generation into a bounded cache shared by the states.
//
//	awaken.regex.find(pattern, s [, init])  start, end, captures... | nil
//	awaken.regex.match(pattern, s)          captures... or the match | nil
//
// as string.find and string.match return them: positions are 1-based byte
// offsets, the end inclusive; a group that took no part in the match is
// nil. find searches from init (default 1; negative counts from the end),
// as if the subject started there: ^ matches at init. A pattern longer
// than 64 KiB, one that does not compile, or one whose program would be
// too large raises (with the caller's file:line). The subject is any
// string (strings are bounded by the 16 MiB limit). Matching costs the
// subject's length times the pattern's instructions, and times its groups
// (each thread of the matcher carries their positions), so a subject is
// matched in pieces sized by that cost that look at the call's deadline
// between them: the hook budget stops a long subject and a large pattern
// alike. A pattern whose cost for one byte would pass a piece raises.

const (
	// regexMaxPattern bounds the source of a pattern.
	regexMaxPattern = 64 << 10
	// regexMaxProgram bounds the instructions of a compiled pattern
	// (counted repetition expanded): compiling costs about 0.1 us each.
	regexMaxProgram = 1 << 17
	// regexCacheMax and regexCacheMaxProgram bound the compiled patterns a
	// generation keeps, in number and in instructions.
	regexCacheMax        = 256
	regexCacheMaxProgram = 1 << 20
	// regexPiece is how much of a subject is read between two looks at
	// the deadline; a shorter subject is matched at once.
	regexPiece = 64 << 10
	// regexWork bounds the matching work between two looks at the
	// deadline, in units of one instruction stepped over one byte, plus
	// one sixteenth for each group whose positions the step copies (a
	// unit is under a nanosecond: about 10 ms).
	regexWork = 1 << 24
)

// regexpCache is a generation's compiled patterns, least recently used
// first out. Safe for concurrent use.
type regexpCache struct {
	mu    sync.Mutex
	byPat map[string]*list.Element
	lru   list.List // of *regexEntry, most recent first
	size  int       // instructions held
}

type regexEntry struct {
	pattern string
	re      *regexp.Regexp
	size    int
	// piece is how many bytes of a subject are matched between two looks
	// at the deadline.
	piece int
}

// compile returns the compiled pattern, from the cache when it is there.
func (c *regexpCache) compile(pattern string) (*regexEntry, error) {
	c.mu.Lock()
	if e, ok := c.byPat[pattern]; ok {
		c.lru.MoveToFront(e)
		re := e.Value.(*regexEntry)
		c.mu.Unlock()
		return re, nil
	}
	c.mu.Unlock()
	re, size, err := compileRegex(pattern)
	if err != nil {
		return nil, err
	}
	perByte := size * (16 + re.NumSubexp())
	if perByte > regexWork {
		return nil, fmt.Errorf("the pattern is too costly to match: %d instructions and %d groups", size, re.NumSubexp())
	}
	entry := &regexEntry{pattern: pattern, re: re, size: size, piece: min(regexPiece, regexWork/perByte)}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byPat[pattern]; ok {
		return e.Value.(*regexEntry), nil // compiled meanwhile by another state
	}
	if c.byPat == nil {
		c.byPat = map[string]*list.Element{}
	}
	c.byPat[pattern] = c.lru.PushFront(entry)
	c.size += size
	for c.lru.Len() > regexCacheMax || (c.size > regexCacheMaxProgram && c.lru.Len() > 1) {
		old := c.lru.Remove(c.lru.Back()).(*regexEntry)
		delete(c.byPat, old.pattern)
		c.size -= old.size
	}
	return entry, nil
}

// compileRegex compiles a pattern within the limits; the error is the
// message a plugin sees.
func compileRegex(pattern string) (*regexp.Regexp, int, error) {
	if len(pattern) > regexMaxPattern {
		return nil, 0, fmt.Errorf("the pattern is %d bytes, over the limit of %d", len(pattern), regexMaxPattern)
	}
	parsed, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return nil, 0, fmt.Errorf("invalid pattern: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	size := programSize(parsed)
	if size > regexMaxProgram {
		return nil, 0, fmt.Errorf("the pattern is too large once its repetitions are expanded (over %d instructions)", regexMaxProgram)
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, 0, fmt.Errorf("invalid pattern: %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
	}
	return re, size, nil
}

// programSize estimates the instructions of a parsed pattern, counted
// repetition expanded, without expanding it (saturating past the limit).
func programSize(re *syntax.Regexp) int {
	sat := func(n int) int { return min(n, regexMaxProgram+1) }
	switch re.Op {
	case syntax.OpLiteral:
		return sat(len(re.Rune) + 1)
	case syntax.OpConcat, syntax.OpAlternate:
		n := len(re.Sub)
		for _, s := range re.Sub {
			n = sat(n + programSize(s))
		}
		return n
	case syntax.OpCapture, syntax.OpStar, syntax.OpPlus, syntax.OpQuest:
		return sat(programSize(re.Sub[0]) + 2)
	case syntax.OpRepeat:
		times := re.Max
		if times < 0 {
			times = re.Min + 1
		}
		return sat(programSize(re.Sub[0])*max(times, 1) + times + 1)
	}
	return 1
}

// pattern compiles argument n, raising on a bad pattern.
func (inst *instance) pattern(L *lua.LState, fn string) *regexEntry {
	e, err := inst.p.gen.regexps.compile(L.CheckString(1))
	if err != nil {
		L.RaiseError("awaken.regex.%s: %v", fn, err)
	}
	if e.re.NumSubexp()+2 > maxResults {
		L.RaiseError("awaken.regex.%s: the pattern has %d groups, over the limit of %d", fn, e.re.NumSubexp(), maxResults-2)
	}
	return e
}

// submatch finds the leftmost match of the pattern in s: the byte offsets
// of the match and of each group (-1 for one that took no part), or nil. A
// subject longer than the pattern's piece is read through a reader that
// stops at the call's deadline.
func submatch(L *lua.LState, e *regexEntry, s string) []int {
	if len(s) <= e.piece {
		return e.re.FindStringSubmatchIndex(s)
	}
	r := &deadlineReader{L: L, s: s, piece: e.piece}
	loc := e.re.FindReaderSubmatchIndex(r)
	if r.stopped {
		checkDone(L)
	}
	return loc
}

// deadlineReader reads a string rune by rune and reports its end early
// once the call's deadline has fired (the match then raises).
type deadlineReader struct {
	L       *lua.LState
	s       string
	piece   int
	i, next int
	stopped bool
}

func (r *deadlineReader) ReadRune() (rune, int, error) {
	if r.i >= len(r.s) {
		return 0, 0, io.EOF
	}
	if r.i >= r.next {
		if done(r.L) {
			r.stopped = true
			return 0, 0, io.EOF
		}
		r.next = r.i + r.piece
	}
	c, n := rune(r.s[r.i]), 1
	if c >= utf8.RuneSelf {
		c, n = utf8.DecodeRuneInString(r.s[r.i:])
	}
	r.i += n
	return c, n, nil
}

// pushGroups pushes the groups of a match (from group first on): each
// group's text, or nil for one that took no part.
func pushGroups(L *lua.LState, s string, loc []int, first int) int {
	n := 0
	for g := first; 2*g < len(loc); g++ {
		if loc[2*g] < 0 {
			L.Push(lua.LNil)
		} else {
			L.Push(lua.LString(s[loc[2*g]:loc[2*g+1]]))
		}
		n++
	}
	return n
}

// regexFind is awaken.regex.find(pattern, s [, init]).
func (inst *instance) regexFind(L *lua.LState) int {
	e := inst.pattern(L, "find")
	s := L.CheckString(2)
	init := L.OptInt(3, 1)
	if init < 0 {
		init = max(len(s)+init+1, 1)
	} else if init == 0 {
		init = 1
	}
	if init > len(s)+1 {
		L.Push(lua.LNil)
		return 1
	}
	off := init - 1
	loc := submatch(L, e, s[off:])
	if loc == nil {
		L.Push(lua.LNil)
		return 1
	}
	L.Push(lua.LNumber(off + loc[0] + 1))
	L.Push(lua.LNumber(off + loc[1]))
	return 2 + pushGroups(L, s[off:], loc, 1)
}

// regexMatch is awaken.regex.match(pattern, s).
func (inst *instance) regexMatch(L *lua.LState) int {
	e := inst.pattern(L, "match")
	s := L.CheckString(2)
	loc := submatch(L, e, s)
	if loc == nil {
		L.Push(lua.LNil)
		return 1
	}
	if len(loc) == 2 {
		L.Push(lua.LString(s[loc[0]:loc[1]]))
		return 1
	}
	return pushGroups(L, s, loc, 1)
}
