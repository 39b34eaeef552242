// Package lpattern is a Lua 5.1 string pattern matcher (reference manual
// §5.4.1) whose work is bounded: every primitive step of a match consumes one
// unit of a budget, and recursion depth is capped, so a pathological pattern
// such as ("a"):rep(400):find(".-.-.-b") stops with ErrStepLimit instead of
// running for minutes.
//
// The matcher interprets the pattern text directly (no compilation step, no
// allocation) with the usual backtracking algorithm. Errors in a pattern are
// reported when the matcher reaches them, as Lua 5.1 does, so a malformed
// tail of a pattern that is never reached is not an error.
//
// Open installs string.find, string.match, string.gmatch and string.gsub
// built on this matcher into a gopher-lua state. They follow Lua 5.1 (not
// gopher-lua's own versions where those differ), with these deliberate
// differences:
//
//   - A match that takes more steps than its budget stops with
//     ErrStepLimit; one that recurses deeper than MaxDepth (200, like Lua
//     5.2's MAXCCALLS) stops with "pattern too complex"; a match is also
//     stopped when the state's context ends.
//   - A gsub result longer than Options.MaxResult is an error.
//   - A NUL byte in a pattern is an ordinary character, as in Lua 5.2+
//     (Lua 5.1 stops reading the pattern at it); use %z or "\0" alike.
//   - Numbers become strings (a number as gsub replacement, a position
//     capture in a replacement string) with gopher-lua's formatting, and
//     argument errors use gopher-lua's wording, like the rest of the state.
package lpattern

import (
	"errors"
	"strings"
)

const (
	// MaxCaptures is the maximum number of captures in one pattern
	// (LUA_MAXCAPTURES).
	MaxCaptures = 32
	// DefaultMaxDepth bounds the recursion of the matcher (Lua's MAXCCALLS).
	DefaultMaxDepth = 200
	// PollSteps is how often a Matcher with a Done channel polls it.
	PollSteps = 1 << 14
)

// ErrStepLimit is returned when a match exhausts its step budget.
var ErrStepLimit = errors.New("pattern step limit exceeded: the pattern backtracks too much on this input; simplify it (avoid several .- or .* in a row) or shorten the input")

// ErrCancelled is returned when the Matcher's Done channel is closed during
// a match.
var ErrCancelled = errors.New("pattern matching cancelled")

// ErrTooComplex is returned when a match recurses deeper than the matcher's
// MaxDepth (Lua 5.2+ reports the same message; Lua 5.1 would overflow the C
// stack instead).
var ErrTooComplex = errors.New("pattern too complex")

// Error is an error in a pattern (or in a gsub replacement string), with the
// message Lua 5.1 gives for it.
type Error struct {
	Msg string
}

func (e *Error) Error() string { return e.Msg }

var (
	errEndsWithPercent   = &Error{"malformed pattern (ends with '%')"}
	errMissingBracket    = &Error{"malformed pattern (missing ']')"}
	errInvalidCaptureIdx = &Error{"invalid capture index"}
	errInvalidPatCapture = &Error{"invalid pattern capture"}
	errUnfinishedCapture = &Error{"unfinished capture"}
	errMissingFrontier   = &Error{"missing '[' after '%f' in pattern"}
	errTooManyCaptures   = &Error{"too many captures"}
	errUnbalanced        = &Error{"unbalanced pattern"}
)

// Capture is one capture of a successful match. Offsets are 0-based byte
// offsets into the subject, End exclusive. A position capture "()" has
// Position set and Start == End == the position (Lua reports Start+1).
type Capture struct {
	Start, End int
	Position   bool
}

const (
	capUnfinished = -1
	capPosition   = -2

	noMatch = -1 // the match failed here; backtrack
	abort   = -2 // an error or the step limit: unwind everything
)

type capture struct {
	init int
	len  int // >= 0, capUnfinished or capPosition
}

// Matcher matches Lua patterns under a step budget. The zero value has no
// budget left; set Steps before use. A Matcher is not safe for concurrent use,
// but it is cheap (no allocation) and may be declared as a local variable.
//
// After a successful Find or MatchAt, NumCaptures and Capture describe the
// captures of that match, until the next call.
type Matcher struct {
	// Steps is the remaining budget. Each primitive step (entering a
	// pattern item, each character tried by a repetition, each character
	// compared by %b or a back-reference) consumes one unit; when it would
	// go negative the match fails with ErrStepLimit. What is left after a
	// call stays here, so several calls can share one budget.
	Steps int64
	// MaxDepth bounds recursion; 0 means DefaultMaxDepth.
	MaxDepth int
	// Done, if not nil, is polled every PollSteps steps; once it is
	// closed, the match stops with ErrCancelled. Pass a context's Done
	// channel to let a deadline interrupt a long match.
	Done <-chan struct{}

	reserve  int64 // budget not yet moved into Steps (when Done is set)
	src      string
	pat      string
	maxDepth int
	level    int
	err      error
	caps     [MaxCaptures]capture
}

// Anchored reports whether pattern starts with the anchor '^' and returns
// the pattern without it. Find handles the anchor itself; use Anchored with
// MatchAt when iterating like string.gsub does.
func Anchored(pattern string) (string, bool) {
	if len(pattern) > 0 && pattern[0] == '^' {
		return pattern[1:], true
	}
	return pattern, false
}

// HasSpecials reports whether pattern contains one of Lua 5.1's special
// characters (^$*+?.([%-). string.find does a plain substring search for a
// pattern without them.
func HasSpecials(pattern string) bool {
	return strings.ContainsAny(pattern, "^$*+?.([%-")
}

// isLiteral reports whether the matcher would treat every byte of pat as
// itself (so a substring search gives the same answer). ')' is not special
// for HasSpecials but is an error for the matcher.
func isLiteral(pat string) bool {
	return !strings.ContainsAny(pat, "^$*+?.([%-)")
}

// reset prepares a match of pat against s. Every reset is followed by a
// disarm when the match is over.
func (m *Matcher) reset(s, pat string) {
	m.src = s
	m.pat = pat
	m.err = nil
	m.level = 0
	m.maxDepth = m.MaxDepth
	if m.maxDepth <= 0 {
		m.maxDepth = DefaultMaxDepth
	}
	if m.Done != nil && m.Steps > PollSteps {
		// Hand out the budget in portions, polling Done in between.
		m.reserve += m.Steps - PollSteps
		m.Steps = PollSteps
	}
}

// disarm gives back the part of the budget that was held in reserve.
func (m *Matcher) disarm() {
	m.Steps += m.reserve
	m.reserve = 0
}

// spend consumes n steps and reports whether the budget allowed them.
func (m *Matcher) spend(n int64) bool {
	m.Steps -= n
	return m.Steps >= 0 || m.refill()
}

// refill is called when Steps went negative: it polls Done and moves the
// next portion of the reserve into Steps. It reports whether Steps is
// non-negative again.
func (m *Matcher) refill() bool {
	if m.Done != nil {
		select {
		case <-m.Done:
			if m.err == nil {
				m.err = ErrCancelled
			}
			return false
		default:
		}
	}
	need := -m.Steps
	if m.reserve < need {
		m.Steps += m.reserve
		m.reserve = 0
		return false
	}
	portion := min(m.reserve, need+PollSteps)
	m.reserve -= portion
	m.Steps += portion
	return true
}

// Find looks for the first match of pattern in s at or after the 0-based
// byte offset init (clamped to [0, len(s)]), like string.find: a leading '^'
// anchors the match at init. It returns the 0-based start and exclusive end
// of the match, or start = -1 if there is none.
func (m *Matcher) Find(s, pattern string, init int) (start, end int, err error) {
	if init < 0 {
		init = 0
	} else if init > len(s) {
		init = len(s)
	}
	pat, anchored := Anchored(pattern)
	start, end, err = m.find(s, pat, init, anchored)
	m.disarm()
	return start, end, err
}

// MatchAt matches pattern against s starting exactly at the 0-based offset
// pos (0 <= pos <= len(s)). A leading '^' is an ordinary character here (as
// in string.gmatch); strip it with Anchored first where it is an anchor. It
// returns the exclusive end of the match, or -1 if the pattern does not
// match at pos.
func (m *Matcher) MatchAt(s, pattern string, pos int) (end int, err error) {
	if pos < 0 || pos > len(s) {
		return -1, nil
	}
	m.reset(s, pattern)
	e := m.match(pos, 0, 1)
	m.disarm()
	if e == abort {
		return -1, m.err
	}
	return e, nil
}

// find tries the matcher at init, init+1, ... len(s) (only init when
// anchored). pat has no anchor handling of its own. The caller disarms.
func (m *Matcher) find(s, pat string, init int, anchored bool) (int, int, error) {
	m.reset(s, pat)
	if isLiteral(pat) {
		// Every byte stands for itself: a substring search is equivalent.
		if anchored {
			if strings.HasPrefix(s[init:], pat) {
				return init, init + len(pat), nil
			}
			return -1, -1, nil
		}
		if i := strings.Index(s[init:], pat); i >= 0 {
			return init + i, init + i + len(pat), nil
		}
		return -1, -1, nil
	}
	var sk skipper
	if !anchored {
		sk = m.newSkipper()
	}
	for st := init; ; st++ {
		var ok bool
		st, ok = m.next(sk, st)
		if st < 0 {
			if !ok {
				return -1, -1, m.err
			}
			return -1, -1, nil
		}
		m.level = 0
		e := m.match(st, 0, 1)
		if e >= 0 {
			return st, e, nil
		}
		if e == abort {
			return -1, -1, m.err
		}
		if anchored || st >= len(s) {
			return -1, -1, nil
		}
	}
}

// firstItem returns the end of pat's first item when that item is a single
// character class that every match must start with (no quantifier, or '+').
// ok is false when there is no such item, or when it is malformed (the
// matcher reports that itself).
func firstItem(pat string) (ep int, ok bool) {
	if len(pat) == 0 {
		return 0, false
	}
	switch pat[0] {
	case '(', ')', '$':
		return 0, false
	case '%':
		if len(pat) < 2 {
			return 0, false
		}
		if c := pat[1]; c == 'b' || c == 'f' || '0' <= c && c <= '9' {
			return 0, false
		}
	}
	ep, err := classEnd(pat, 0)
	if err != nil {
		return 0, false
	}
	if ep < len(pat) {
		switch pat[ep] {
		case '*', '?', '-':
			return 0, false
		}
	}
	return ep, true
}

// skipper finds the positions where a match can start, from the pattern's
// first item.
type skipper struct {
	ep    int    // end of the first item, 0 if there is none
	lit   bool   // the first item is the literal byte pat[0]
	class uint16 // the first item is the class %x with these bits
}

func (m *Matcher) newSkipper() skipper {
	ep, ok := firstItem(m.pat)
	if !ok {
		return skipper{}
	}
	sk := skipper{ep: ep, lit: ep == 1 && m.pat[0] != '.'}
	if m.pat[0] == '%' {
		if b := classBits[m.pat[1]]; b != 0 {
			sk.class = b
		} else {
			sk.lit = true // %. and the like stand for the character
		}
	}
	return sk
}

// next returns the first position >= st where a match can start, or -1 if
// there is none; ok is false if the step budget ran out.
func (m *Matcher) next(sk skipper, st int) (int, bool) {
	if sk.ep == 0 {
		return st, true
	}
	src := m.src
	if sk.lit {
		i := strings.IndexByte(src[st:], m.pat[sk.ep-1])
		if i < 0 {
			return -1, true
		}
		return st + i, true
	}
	n := st
	if sk.class != 0 {
		bits, neg := sk.class&^bNegate, sk.class&bNegate != 0
		for n < len(src) && (ctype[src[n]]&bits != 0) == neg {
			n++
		}
	} else {
		for n < len(src) && !m.singleMatch(src[n], 0, sk.ep) {
			n++
		}
	}
	if !m.spend(int64(n - st)) {
		m.fail(ErrStepLimit)
		return -1, false
	}
	if n == len(src) {
		return -1, true // the first item needs a character
	}
	return n, true
}

// NumCaptures is the number of captures of the last successful match
// (0 when the pattern has none; Lua then uses the whole match).
func (m *Matcher) NumCaptures() int { return m.level }

// Capture returns capture i (0-based) of the last successful match. A
// capture that was opened but never closed is an error ("unfinished
// capture"), as is an index out of range ("invalid capture index").
func (m *Matcher) Capture(i int) (Capture, error) {
	if i < 0 || i >= m.level {
		return Capture{}, errInvalidCaptureIdx
	}
	c := m.caps[i]
	switch c.len {
	case capUnfinished:
		return Capture{}, errUnfinishedCapture
	case capPosition:
		return Capture{Start: c.init, End: c.init, Position: true}, nil
	}
	return Capture{Start: c.init, End: c.init + c.len}, nil
}

func (m *Matcher) fail(err error) int {
	if m.err == nil {
		m.err = err
	}
	return abort
}

// match matches pat[p:] against src[s:] and returns the end of the match,
// noMatch, or abort. depth counts the nested calls.
func (m *Matcher) match(s, p, depth int) int {
	if depth > m.maxDepth {
		return m.fail(ErrTooComplex)
	}
	src, pat := m.src, m.pat
	for {
		m.Steps--
		if m.Steps < 0 && !m.refill() {
			return m.fail(ErrStepLimit)
		}
		if p >= len(pat) {
			return s // end of pattern: success
		}
		switch pat[p] {
		case '(':
			if p+1 < len(pat) && pat[p+1] == ')' {
				return m.startCapture(s, p+2, capPosition, depth)
			}
			return m.startCapture(s, p+1, capUnfinished, depth)
		case ')':
			return m.endCapture(s, p+1, depth)
		case '$':
			if p+1 == len(pat) {
				if s == len(src) {
					return s
				}
				return noMatch
			}
			// otherwise an ordinary character, below
		case '%':
			if p+1 < len(pat) {
				switch c := pat[p+1]; {
				case c == 'b':
					s = m.matchBalance(s, p+2)
					if s < 0 {
						return s
					}
					p += 4
					continue
				case c == 'f':
					p += 2
					if p >= len(pat) || pat[p] != '[' {
						return m.fail(errMissingFrontier)
					}
					ep := m.classEnd(p)
					if ep < 0 {
						return ep
					}
					var prev, cur byte // '\0' outside the subject
					if s > 0 {
						prev = src[s-1]
					}
					if s < len(src) {
						cur = src[s]
					}
					if m.matchSet(prev, p, ep-1) || !m.matchSet(cur, p, ep-1) {
						return noMatch
					}
					p = ep
					continue
				case '0' <= c && c <= '9':
					s = m.matchBackref(s, c)
					if s < 0 {
						return s
					}
					p += 2
					continue
				}
			}
		}
		// A single-character class, maybe followed by a quantifier.
		ep := m.classEnd(p)
		if ep < 0 {
			return ep
		}
		ok := s < len(src) && m.singleMatch(src[s], p, ep)
		if ep < len(pat) {
			switch pat[ep] {
			case '?':
				if ok {
					if r := m.match(s+1, ep+1, depth+1); r != noMatch {
						return r
					}
				}
				p = ep + 1
				continue
			case '*':
				return m.maxExpand(s, p, ep, depth)
			case '+':
				if !ok {
					return noMatch
				}
				return m.maxExpand(s+1, p, ep, depth)
			case '-':
				return m.minExpand(s, p, ep, depth)
			}
		}
		if !ok {
			return noMatch
		}
		s++
		p = ep
	}
}

func (m *Matcher) startCapture(s, p, what, depth int) int {
	if m.level >= MaxCaptures {
		return m.fail(errTooManyCaptures)
	}
	m.caps[m.level] = capture{init: s, len: what}
	m.level++
	r := m.match(s, p, depth+1)
	if r == noMatch {
		m.level--
	}
	return r
}

func (m *Matcher) endCapture(s, p, depth int) int {
	l := m.level - 1
	for ; l >= 0; l-- {
		if m.caps[l].len == capUnfinished {
			break
		}
	}
	if l < 0 {
		return m.fail(errInvalidPatCapture)
	}
	m.caps[l].len = s - m.caps[l].init
	r := m.match(s, p, depth+1)
	if r == noMatch {
		m.caps[l].len = capUnfinished
	}
	return r
}

// maxExpand matches as many repetitions of the class pat[p:ep] as possible
// from s, then backs off one at a time until the rest matches.
func (m *Matcher) maxExpand(s, p, ep, depth int) int {
	src := m.src
	n := 0
	if m.pat[p] == '.' {
		n = len(src) - s
	} else {
		for s+n < len(src) && m.singleMatch(src[s+n], p, ep) {
			n++
		}
	}
	if !m.spend(int64(n)) {
		return m.fail(ErrStepLimit)
	}
	for ; n >= 0; n-- {
		if r := m.match(s+n, ep+1, depth+1); r != noMatch {
			return r
		}
	}
	return noMatch
}

// minExpand tries the rest of the pattern after 0, 1, 2, ... repetitions.
func (m *Matcher) minExpand(s, p, ep, depth int) int {
	src := m.src
	for {
		if r := m.match(s, ep+1, depth+1); r != noMatch {
			return r
		}
		if s < len(src) && m.singleMatch(src[s], p, ep) {
			s++
		} else {
			return noMatch
		}
	}
}

// matchBalance matches %bxy, pat[p] and pat[p+1] being x and y.
func (m *Matcher) matchBalance(s, p int) int {
	pat, src := m.pat, m.src
	if p+1 >= len(pat) {
		return m.fail(errUnbalanced)
	}
	if s >= len(src) || src[s] != pat[p] {
		return noMatch
	}
	open, close := pat[p], pat[p+1]
	depth := 1
	start := s
	for s++; s < len(src); s++ {
		c := src[s]
		if c == close {
			depth--
			if depth == 0 {
				break
			}
		} else if c == open {
			depth++
		}
	}
	if !m.spend(int64(s - start)) {
		return m.fail(ErrStepLimit)
	}
	if s >= len(src) {
		return noMatch
	}
	return s + 1
}

// matchBackref matches %1-%9 (c is the digit; %0 is an error).
func (m *Matcher) matchBackref(s int, c byte) int {
	l := int(c) - '1'
	if l < 0 || l >= m.level || m.caps[l].len == capUnfinished {
		return m.fail(errInvalidCaptureIdx)
	}
	n := m.caps[l].len
	if n < 0 {
		// A position capture: Lua 5.1 compares a huge length, which never
		// fits in the rest of the subject.
		return noMatch
	}
	if !m.spend(int64(n)) {
		return m.fail(ErrStepLimit)
	}
	src := m.src
	init := m.caps[l].init
	if len(src)-s >= n && src[s:s+n] == src[init:init+n] {
		return s + n
	}
	return noMatch
}

// classEnd returns the index just after the single-character class that
// starts at pat[p], or abort for a malformed class.
func (m *Matcher) classEnd(p int) int {
	ep, err := classEnd(m.pat, p)
	if err != nil {
		return m.fail(err)
	}
	return ep
}

func classEnd(pat string, p int) (int, error) {
	c := pat[p]
	p++
	switch c {
	case '%':
		if p >= len(pat) {
			return 0, errEndsWithPercent
		}
		return p + 1, nil
	case '[':
		if p < len(pat) && pat[p] == '^' {
			p++
		}
		// The first character of a set is always a member (so "[]]" and
		// "[^]]" work); then look for the closing ']'.
		for {
			if p >= len(pat) {
				return 0, errMissingBracket
			}
			c := pat[p]
			p++
			if c == '%' && p < len(pat) {
				p++ // skip the escaped character, e.g. %]
			}
			if p < len(pat) && pat[p] == ']' {
				return p + 1, nil
			}
		}
	}
	return p, nil
}

// singleMatch reports whether byte c matches the class pat[p:ep].
func (m *Matcher) singleMatch(c byte, p, ep int) bool {
	switch pc := m.pat[p]; pc {
	case '.':
		return true
	case '%':
		return matchClass(c, m.pat[p+1])
	case '[':
		return m.matchSet(c, p, ep-1)
	default:
		return pc == c
	}
}

// matchSet reports whether c is in the set that starts with '[' at pat[p]
// and ends with the ']' at pat[end].
func (m *Matcher) matchSet(c byte, p, end int) bool {
	pat := m.pat
	in := true
	p++
	if pat[p] == '^' {
		in = false
		p++
	}
	for ; p < end; p++ {
		switch {
		case pat[p] == '%':
			p++
			if matchClass(c, pat[p]) {
				return in
			}
		case pat[p+1] == '-' && p+2 < end:
			if pat[p] <= c && c <= pat[p+2] {
				return in
			}
			p += 2
		case pat[p] == c:
			return in
		}
	}
	return !in
}

// Character classes of the "C" locale, as bits.
const (
	bAlpha = 1 << iota
	bCntrl
	bDigit
	bLower
	bPunct
	bSpace
	bUpper
	bAlnum
	bXdigit
	bZero
	bNegate = 1 << 15
)

var ctype [256]uint16

// classBits maps a class letter (the x of %x) to its bits; 0 means the
// letter is no class and stands for itself.
var classBits [256]uint16

func init() {
	for i := 0; i < 256; i++ {
		c := byte(i)
		var b uint16
		switch {
		case 'a' <= c && c <= 'z':
			b |= bAlpha | bLower | bAlnum
		case 'A' <= c && c <= 'Z':
			b |= bAlpha | bUpper | bAlnum
		case '0' <= c && c <= '9':
			b |= bDigit | bAlnum | bXdigit
		case c < 0x20 || c == 0x7f:
			b |= bCntrl
		case c > 0x20 && c < 0x7f:
			b |= bPunct
		}
		if 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' {
			b |= bXdigit
		}
		switch c {
		case ' ', '\t', '\n', '\v', '\f', '\r':
			b |= bSpace
		case 0:
			b |= bZero
		}
		ctype[i] = b
	}
	for _, e := range []struct {
		c byte
		b uint16
	}{{'a', bAlpha}, {'c', bCntrl}, {'d', bDigit}, {'l', bLower}, {'p', bPunct},
		{'s', bSpace}, {'u', bUpper}, {'w', bAlnum}, {'x', bXdigit}, {'z', bZero}} {
		classBits[e.c] = e.b
		classBits[e.c-'a'+'A'] = e.b | bNegate
	}
}

// matchClass reports whether c matches %cl.
func matchClass(c, cl byte) bool {
	b := classBits[cl]
	if b == 0 {
		return cl == c
	}
	return (ctype[c]&b&^bNegate != 0) != (b&bNegate != 0)
}
