package luabridge

import (
	"regexp"
	"strings"
	"sync"
)

// Glob reports whether s matches pattern. In a pattern that contains "/",
// "*" matches within one path segment and "**" across segments (a path glob
// such as "src/**/*.go"; "**/" also matches no directory); in a pattern
// without "/", "*" matches any text (a name or command glob such as
// "mcp__github__*" or "npm *"). "?" matches one character (not "/" in a path
// glob), "[...]" a set ("[!...]" its complement), and "\" escapes the next
// character. Matching runs in linear time.
func Glob(pattern, s string) bool {
	return globRegexp(pattern).MatchString(s)
}

// globRegexp translates a glob into an anchored regular expression.
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
		// A set such as "[z-a]" is invalid: match the pattern literally.
		if re, err = regexp.Compile(`\A` + regexp.QuoteMeta(pattern) + `\z`); err != nil {
			// Not even that (invalid UTF-8): nothing matches.
			return regexp.MustCompile(`[^\x00-\x{10FFFF}]`)
		}
	}
	return re
}

// globCache keeps compiled globs of one generation, bounded in size.
type globCache struct {
	mu sync.Mutex
	m  map[string]*regexp.Regexp
}

const globCacheMax = 4096

func (c *globCache) match(pattern, s string) bool {
	c.mu.Lock()
	re, ok := c.m[pattern]
	c.mu.Unlock()
	if !ok {
		re = globRegexp(pattern)
		c.mu.Lock()
		if c.m == nil || len(c.m) >= globCacheMax {
			c.m = map[string]*regexp.Regexp{}
		}
		c.m[pattern] = re
		c.mu.Unlock()
	}
	return re.MatchString(s)
}
