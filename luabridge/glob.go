package luabridge

import (
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

// Glob reports whether s matches pattern. In a pattern that contains "/",
// "*" matches within one path segment and "**" across segments (a path glob
// such as "src/**/*.go"; "**/" also matches no directory); in a pattern
// without "/", "*" matches any text (a name or command glob such as
// "mcp__github__*" or "npm *"). "?" matches one character (not "/" in a path
// glob), "[...]" a set ("[!...]" its complement), and "\" escapes the next
// character. A pattern with an invalid set ("[z-a]") matches itself
// literally.
//
// Matching simulates the pattern's automaton over s once: its cost is at
// most len(pattern) x len(s) steps, with no backtracking.
func Glob(pattern, s string) bool {
	g, err := compileGlob(pattern)
	if err != nil {
		return false
	}
	return g.match(nil, s)
}

// globMaxPattern bounds the length of a glob pattern.
const globMaxPattern = 64 << 10

type globOp uint8

const (
	globLit     globOp = iota // one character
	globAny                   // ?
	globSet                   // [...]
	globStar                  // * (within a segment in a path glob)
	globStarAll               // ** not followed by /
	globDirs                  // **/: nothing, or anything that ends in /
)

type runeRange struct{ lo, hi rune }

type globToken struct {
	op     globOp
	r      rune // globLit
	raw    bool // globLit: r is an invalid byte of the pattern, matched as such
	neg    bool // globSet
	ranges []runeRange
}

// glob is a compiled pattern.
type glob struct {
	toks []globToken
	path bool
}

// errGlobTooLong is the error of a pattern longer than globMaxPattern.
type errGlobTooLong int

func (e errGlobTooLong) Error() string {
	return "the pattern is " + itoa(int(e)) + " bytes, over the limit of " + itoa(globMaxPattern)
}

func compileGlob(pattern string) (*glob, error) {
	if len(pattern) > globMaxPattern {
		return nil, errGlobTooLong(len(pattern))
	}
	g := &glob{path: strings.Contains(pattern, "/")}
	if !g.parse(pattern) {
		// An invalid set: the whole pattern is literal.
		g.toks = g.toks[:0]
		g.literal(pattern)
	}
	return g, nil
}

// literal appends a token for each character of s.
func (g *glob) literal(s string) {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			g.toks = append(g.toks, globToken{op: globLit, r: rune(s[i]), raw: true})
		} else {
			g.toks = append(g.toks, globToken{op: globLit, r: r})
		}
		i += size
	}
}

// parse translates the pattern into tokens; it reports false for an
// invalid set.
func (g *glob) parse(p string) bool {
	for len(p) > 0 {
		c := p[0]
		switch {
		case c == '*' && len(p) > 1 && p[1] == '*':
			p = p[2:]
			if strings.HasPrefix(p, "/") {
				g.toks = append(g.toks, globToken{op: globDirs})
				p = p[1:]
			} else {
				g.toks = append(g.toks, globToken{op: globStarAll})
			}
			continue
		case c == '*':
			g.toks = append(g.toks, globToken{op: globStar})
		case c == '?':
			g.toks = append(g.toks, globToken{op: globAny})
		case c == '[':
			end := strings.IndexByte(p[1:], ']')
			if end < 0 {
				g.toks = append(g.toks, globToken{op: globLit, r: '['})
				break
			}
			set := p[1 : end+1]
			tok := globToken{op: globSet}
			if strings.HasPrefix(set, "!") || strings.HasPrefix(set, "^") {
				tok.neg = true
				set = set[1:]
			}
			if !tok.parseSet(set) {
				return false
			}
			g.toks = append(g.toks, tok)
			p = p[end+2:]
			continue
		case c == '\\' && len(p) > 1:
			p = p[1:]
			r, size := utf8.DecodeRuneInString(p)
			if r == utf8.RuneError && size == 1 {
				g.toks = append(g.toks, globToken{op: globLit, r: rune(p[0]), raw: true})
			} else {
				g.toks = append(g.toks, globToken{op: globLit, r: r})
			}
			p = p[size:]
			continue
		default:
			r, size := utf8.DecodeRuneInString(p)
			if r == utf8.RuneError && size == 1 {
				g.toks = append(g.toks, globToken{op: globLit, r: rune(c), raw: true})
			} else {
				g.toks = append(g.toks, globToken{op: globLit, r: r})
			}
			p = p[size:]
			continue
		}
		p = p[1:]
	}
	return true
}

// parseSet reads the inside of [...]: characters and ranges a-z; a "-"
// first or last is literal. It reports false for an empty set, a reversed
// range or invalid UTF-8.
func (t *globToken) parseSet(set string) bool {
	if set == "" {
		return false
	}
	var rs []rune
	for i := 0; i < len(set); {
		r, size := utf8.DecodeRuneInString(set[i:])
		if r == utf8.RuneError && size == 1 {
			return false
		}
		rs = append(rs, r)
		i += size
	}
	for i := 0; i < len(rs); i++ {
		if i+2 < len(rs) && rs[i+1] == '-' {
			if rs[i] > rs[i+2] {
				return false
			}
			t.ranges = append(t.ranges, runeRange{rs[i], rs[i+2]})
			i += 2
			continue
		}
		t.ranges = append(t.ranges, runeRange{rs[i], rs[i]})
	}
	sort.Slice(t.ranges, func(i, j int) bool { return t.ranges[i].lo < t.ranges[j].lo })
	return true
}

func (t *globToken) inSet(r rune) bool {
	in := false
	for _, rg := range t.ranges {
		if r >= rg.lo && r <= rg.hi {
			in = true
			break
		}
	}
	return in != t.neg
}

// globRun is the state of one match: the active states (token indexes; the
// last is the accepting one) as a sparse set.
type globRun struct {
	g         *glob
	cur, next []int
	mark      []int // mark[k] == gen: k is in next
	gen       int
}

// add puts state k and what it reaches without consuming into next.
func (m *globRun) add(k int) {
	toks := m.g.toks
	for {
		if k < len(toks) && toks[k].op == globDirs {
			// **/ may match nothing, however k was reached before.
			m.add(k + 1)
		}
		if m.mark[k] == m.gen {
			return
		}
		m.mark[k] = m.gen
		m.next = append(m.next, k)
		if k < len(toks) && (toks[k].op == globStar || toks[k].op == globStarAll) {
			k++
			continue
		}
		return
	}
}

// stay puts state k into next without what it reaches (a **/ that has
// consumed a character must still end in "/").
func (m *globRun) stay(k int) {
	if m.mark[k] != m.gen {
		m.mark[k] = m.gen
		m.next = append(m.next, k)
	}
}

// match runs the automaton over s. With L set, the call's deadline is
// polled every pollEvery steps (and raises once it has fired).
func (g *glob) match(L *lua.LState, s string) bool {
	n := len(g.toks)
	m := &globRun{g: g, mark: make([]int, n+1), cur: make([]int, 0, 8), next: make([]int, 0, 8)}
	m.gen = 1
	m.add(0)
	steps := 0
	for i := 0; i < len(s); {
		if len(m.next) == 0 {
			return false
		}
		m.cur, m.next = m.next, m.cur[:0]
		m.gen++
		r, size := utf8.DecodeRuneInString(s[i:])
		invalid := r == utf8.RuneError && size == 1
		if invalid {
			r = rune(s[i])
		}
		i += size
		for _, k := range m.cur {
			if k == n {
				continue
			}
			t := &g.toks[k]
			switch t.op {
			case globLit:
				if t.r == r && t.raw == invalid {
					m.add(k + 1)
				}
			case globAny:
				if !(g.path && r == '/') {
					m.add(k + 1)
				}
			case globSet:
				if !invalid && t.inSet(r) || invalid && t.neg {
					m.add(k + 1)
				}
			case globStar:
				if !(g.path && r == '/') {
					m.add(k)
				}
			case globStarAll:
				m.add(k)
			case globDirs:
				m.stay(k)
				if r == '/' {
					m.add(k + 1)
				}
			}
		}
		if L != nil {
			steps += len(m.cur) + 1
			if steps >= pollEvery {
				steps = 0
				checkDone(L)
			}
		}
	}
	for _, k := range m.next {
		if k == n {
			return true
		}
	}
	return false
}

// globCache keeps compiled globs of one generation, bounded in count and
// in the size of the patterns it keeps.
type globCache struct {
	mu sync.Mutex
	m  map[string]*glob
}

const (
	globCacheMax     = 4096
	globCacheMaxSize = 1 << 10 // longer patterns are compiled per call
)

func (c *globCache) compile(pattern string) (*glob, error) {
	if len(pattern) > globCacheMaxSize {
		return compileGlob(pattern)
	}
	c.mu.Lock()
	g, ok := c.m[pattern]
	c.mu.Unlock()
	if ok {
		return g, nil
	}
	g, err := compileGlob(pattern)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= globCacheMax {
		c.m = map[string]*glob{}
	}
	c.m[pattern] = g
	c.mu.Unlock()
	return g, nil
}

func (inst *instance) glob(L *lua.LState) int {
	g, err := inst.p.gen.globs.compile(L.CheckString(1))
	if err != nil {
		L.RaiseError("awaken.glob: %v", err)
	}
	L.Push(lua.LBool(g.match(L, L.CheckString(2))))
	return 1
}
