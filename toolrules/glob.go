package toolrules

import (
	"fmt"
	"net/url"
	"path"
	"strconv"
	"strings"

	"github.com/awaken-lua/awaken-lua/shell"
)

// star is a glob where * matches any run of characters (spaces and
// slashes included) and every other character stands for itself.
type star []string // the literal parts between the stars

func compileStar(p string) star { return strings.Split(p, "*") }

// match reports whether the glob matches all of s. The parts between stars
// are found leftmost first, which is exact for star-only globs, in time
// linear in s for each part.
func (g star) match(s string) bool {
	if len(g) == 1 {
		return s == g[0]
	}
	first, last := g[0], g[len(g)-1]
	if !strings.HasPrefix(s, first) {
		return false
	}
	s = s[len(first):]
	if len(s) < len(last) || !strings.HasSuffix(s, last) {
		return false
	}
	s = s[:len(s)-len(last)]
	for _, part := range g[1 : len(g)-1] {
		i := strings.Index(s, part)
		if i < 0 {
			return false
		}
		s = s[i+len(part):]
	}
	return true
}

// viable reports whether some string that starts with prefix matches the
// glob: whether a command whose first words are prefix and whose rest is
// unknown could match.
func (g star) viable(prefix string) bool {
	if strings.HasPrefix(g[0], prefix) {
		return true
	}
	// Past the first star anything can follow.
	return len(g) > 1 && strings.HasPrefix(prefix, g[0])
}

// command is a Bash specifier: a glob on each simple command, where a
// final " *" (or the legacy ":*") also matches the command without
// arguments (ls * matches ls and ls -la, never lsof).
type command struct {
	all  bool // Bash(*): every command
	alts []star
}

func compileCommand(spec string) command {
	if spec == "*" {
		return command{all: true}
	}
	p := spec
	if base, ok := strings.CutSuffix(p, ":*"); ok {
		p = base + " *"
	}
	c := command{alts: []star{compileStar(p)}}
	if base, ok := strings.CutSuffix(p, " *"); ok {
		c.alts = append(c.alts, compileStar(base))
	}
	return c
}

func (c command) match(s string) bool {
	for _, g := range c.alts {
		if g.match(s) {
			return true
		}
	}
	return false
}

func (c command) viable(prefix string) bool {
	for _, g := range c.alts {
		if g.viable(prefix) {
			return true
		}
	}
	return false
}

// fills reports whether c, whose words not known are each one argument
// (shell.Word.One), may be a command the pattern names: an exact pattern
// when some word in place of each makes c's words, joined by spaces, the
// pattern (rm {} is never rm -rf /: its arguments are one, the pattern's
// two); a pattern with a star when a command that starts with c's known
// words could match.
func (c command) fills(cmd *shell.Command) bool {
	if c.all {
		return true
	}
	known := len(cmd.Words)
	for i, w := range cmd.Words {
		if !w.Literal {
			known = i
			break
		}
	}
	prefix := strings.Join(cmd.Argv[:known], " ") + " "
	for _, g := range c.alts {
		if len(g) > 1 {
			if g.viable(prefix) {
				return true
			}
			continue
		}
		if fillsExact(g[0], cmd.Words) {
			return true
		}
	}
	return false
}

// fillsExact reports whether some word (non-empty, no blank: one of the
// pattern's) for each word not known makes the words, joined by spaces, s.
func fillsExact(s string, words []shell.Word) bool {
	for i, w := range words {
		if i > 0 {
			if !strings.HasPrefix(s, " ") {
				return false
			}
			s = s[1:]
		}
		if w.Literal {
			if !strings.HasPrefix(s, w.Value) {
				return false
			}
			s = s[len(w.Value):]
			continue
		}
		n := strings.IndexByte(s, ' ')
		if n < 0 {
			n = len(s)
		}
		if n == 0 {
			return false
		}
		s = s[n:]
	}
	return s == ""
}

// The directories a path pattern is anchored at.
const (
	anchorWork    = '.' // ./x and bare names: the working directory
	anchorProject = 'p' // /x: the project (the settings file's directory)
	anchorRoot    = '/' // //x: the file system root
	anchorHome    = '~' // ~/x: the home directory
)

// pathPattern is a file-tool specifier, gitignore-style.
type pathPattern struct {
	anchor    byte   // one of the anchor constants
	rest      string // the pattern below the anchor, without a final /
	anyDepth  bool   // a bare name (.env, *.key): at any depth under the anchor
	singleDir bool   // a bare name/**: at any depth for deny and ask rules, at the top for allow rules
}

func compilePath(spec string) (*pathPattern, error) {
	p := &pathPattern{anchor: anchorWork}
	rest := spec
	switch {
	case strings.HasPrefix(spec, "//"):
		p.anchor, rest = anchorRoot, spec[2:]
	case spec == "~" || strings.HasPrefix(spec, "~/"):
		p.anchor, rest = anchorHome, strings.TrimPrefix(strings.TrimPrefix(spec, "~"), "/")
	case strings.HasPrefix(spec, "/"):
		p.anchor, rest = anchorProject, spec[1:]
	case strings.HasPrefix(spec, "./"):
		rest = spec[2:]
	default:
		trimmed := strings.TrimSuffix(spec, "/")
		first, tail, slash := strings.Cut(trimmed, "/")
		p.anyDepth = !slash
		p.singleDir = slash && tail == "**" && !strings.ContainsAny(first, "*?[")
	}
	p.rest = strings.TrimSuffix(rest, "/")
	for _, seg := range strings.Split(p.rest, "/") {
		if seg == "**" {
			continue
		}
		if validGlob(seg) != nil {
			return nil, fmt.Errorf("%q is not a valid path pattern: check its [ ] classes and \\ escapes", seg)
		}
	}
	return p, nil
}

// match reports whether the absolute, cleaned file path p is the pattern
// or under it; dir is the directory of the pattern's anchor. widen widens
// a bare single-directory pattern (deny and ask rules).
func (pp *pathPattern) match(p, dir string, widen bool) bool {
	pat := escapeGlob(dir)
	if pp.anyDepth || pp.singleDir && widen {
		pat = path.Join(pat, "**")
	}
	pat = path.Join(pat, pp.rest)
	return matchSegments(splitPath(pat), splitPath(p))
}

// escapeGlob escapes the glob characters of a literal directory.
func escapeGlob(s string) string {
	if !strings.ContainsAny(s, `*?[\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(`*?[\`, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func splitPath(p string) []string {
	p = strings.Trim(p, "/")
	if p == "" {
		return nil
	}
	return strings.Split(p, "/")
}

// matchSegments matches path segments against pattern segments (a ** is
// any number of segments, others are path.Match globs). The pattern
// matches a path when it matches the path or one of its directories, as a
// gitignore pattern does: a directory's files come with it.
func matchSegments(pat, segs []string) bool {
	// ok[j]: the pattern so far matches segs[:j].
	ok := make([]bool, len(segs)+1)
	ok[0] = true
	for _, p := range pat {
		next := make([]bool, len(segs)+1)
		any := false
		for j := 0; j <= len(segs); j++ {
			if p == "**" {
				// ** takes any number of segments.
				if ok[j] || j > 0 && next[j-1] {
					next[j] = true
				}
			} else if j > 0 && ok[j-1] {
				if m, _ := path.Match(p, segs[j-1]); m {
					next[j] = true
				}
			}
			any = any || next[j]
		}
		if !any {
			return false
		}
		ok = next
	}
	for _, v := range ok {
		if v {
			return true
		}
	}
	return false
}

// matchDomain matches a URL's host against a domain: pattern, as Claude
// Code does: case-insensitive, without a final dot; * matches every host,
// *.example.com every subdomain at any depth (not example.com itself), and
// any other * one label.
func matchDomain(pattern, rawURL string) (matched, ok bool) {
	if pattern == "*" {
		u, err := url.Parse(rawURL)
		return true, err == nil && u.Hostname() != ""
	}
	host, ok := urlHost(rawURL)
	if !ok {
		return false, false
	}
	if strings.HasPrefix(pattern, "*.") {
		suffix := pattern[1:]
		return len(host) > len(suffix) && strings.HasSuffix(host, suffix), true
	}
	pl, hl := strings.Split(pattern, "."), strings.Split(host, ".")
	if len(pl) != len(hl) {
		return false, true
	}
	for i := range pl {
		if !compileStar(pl[i]).match(hl[i]) {
			return false, true
		}
	}
	return true, true
}

// urlHost returns a URL's host as Claude Code reads it (Node's new
// URL(u).hostname, the WHATWG URL standard), lower case and without a
// final dot, or false when it cannot be told. WHATWG maps a host through
// UTS-46 (fullwidth letters, ideographic full stops and soft hyphens
// become ASCII) and reads a host that ends in a number as IPv4 in any of
// its number forms (2130706433, 0x7f.1, 127.1); Go's url.Parse does
// neither. A host that is not ASCII cannot be told here (that would need
// the UTS-46 tables), so it fails closed: deny and ask rules match it and
// allow rules do not; the IPv4 forms are read as WHATWG reads them.
func urlHost(rawURL string) (string, bool) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", false
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return "", false
	}
	for i := 0; i < len(host); i++ {
		if host[i] >= 0x80 {
			return "", false
		}
	}
	if strings.HasPrefix(u.Host, "[") { // IPv6
		return host, true
	}
	if endsInNumber(host) {
		return parseIPv4(host)
	}
	return strings.TrimSuffix(host, "."), true
}

// ipv4Labels splits a host on dots, without the empty label a final dot
// leaves.
func ipv4Labels(host string) []string {
	parts := strings.Split(host, ".")
	if len(parts) > 1 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	return parts
}

// endsInNumber is WHATWG's test for a host to be parsed as IPv4.
func endsInNumber(host string) bool {
	parts := ipv4Labels(host)
	last := parts[len(parts)-1]
	if last != "" && strings.Trim(last, "0123456789") == "" {
		return true
	}
	_, ok := ipv4Number(last)
	return ok
}

// ipv4Number reads one IPv4 part: decimal, 0x hexadecimal or 0 octal.
func ipv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(s) >= 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
	case len(s) >= 2 && s[0] == '0':
		s, base = s[1:], 8
	}
	if s == "" {
		return 0, true
	}
	v, err := strconv.ParseUint(s, base, 64)
	return v, err == nil
}

// parseIPv4 is WHATWG's IPv4 parser: the host as a dotted quad, or false
// where a browser fails the URL.
func parseIPv4(host string) (string, bool) {
	parts := ipv4Labels(host)
	if len(parts) > 4 {
		return "", false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := ipv4Number(p)
		if !ok || i < len(parts)-1 && n > 255 {
			return "", false
		}
		nums[i] = n
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return "", false
	}
	ip := last
	for i, n := range nums[:len(nums)-1] {
		ip += n << (8 * (3 - i))
	}
	return fmt.Sprintf("%d.%d.%d.%d", ip>>24, ip>>16&0xff, ip>>8&0xff, ip&0xff), true
}
