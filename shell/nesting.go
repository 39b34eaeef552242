package shell

import "strings"

// nesting bounds how deep the parser will nest on src, so that Split can
// refuse a command before the parser recurses through it (each level costs
// the parser a few KiB of stack). It lexes just enough of the syntax the
// way the parser does (quotes, escapes, comments, here-documents, extended
// globs, backticks) to count open parentheses, braces, substitutions,
// double quotes and compound commands (if, case, for, while, until,
// select), and closes a level only on the closer that matches it, so a
// closer it cannot place never hides a level. It returns the deepest
// nesting and, when that passes MaxNesting, the offset where it did.
//
// Backticks nested in backticks are not measured (their escaping rules
// differ between shells and parsers): bq is the offset of a backslash
// before a backtick inside backticks, or -1.
func nesting(src string) (depth, at, bq int) {
	n := nester{src: src, bq: -1}
	depth, at = n.run(0)
	return depth, at, n.bq
}

// The levels on a nester's stack.
const (
	lvParen   = '(' // ( subshell or group
	lvSubst   = 'S' // $( command substitution, <( >( process substitution
	lvArith   = 'a' // (( and $(( arithmetic
	lvParam   = '$' // ${ parameter expansion
	lvBracket = '[' // $[ arithmetic
	lvBrace   = '{' // { group
	lvKeyword = 'k' // if case for while until select
	lvTick    = '`' // backticks
	lvQuote   = '"' // double quotes (text)
	lvHeredoc = 'h' // a here-document body (text)
)

type heredoc struct {
	delim string
	tabs  bool // <<-EOF: leading tabs are stripped
}

type nester struct {
	src     string
	off     int // the offset of src in the text nesting was given
	i       int
	stack   []byte
	base    int // levels around src (a here-document body's)
	deepest int
	pending []heredoc // here-documents whose bodies start after this line
	bt      int       // open backticks
	btDbl   bool      // the open backticks began in double quotes
	bq      int
	// word: the last byte read leaves a word open, so a # right after it
	// continues the word instead of starting a comment.
	word bool
	// cmd: the next word is in command position, where } fi done esac
	// close what they close (elsewhere they are plain words).
	cmd bool
}

func (n *nester) run(base int) (int, int) {
	n.base = base
	n.cmd = true
	n.deepest = base + len(n.stack)
	for n.i = 0; n.i < len(n.src); n.i++ {
		if at := n.step(); at >= 0 {
			return max(n.deepest, MaxNesting+1), at
		}
		if d := n.base + len(n.stack); d > n.deepest {
			n.deepest = d
			if d > MaxNesting {
				return d, n.off + n.i
			}
		}
	}
	return n.deepest, -1
}

func (n *nester) top() byte {
	if len(n.stack) == 0 {
		return 0
	}
	return n.stack[len(n.stack)-1]
}

func (n *nester) push(b byte) {
	if b == lvTick {
		n.bt++
	}
	n.stack = append(n.stack, b)
}

// pop closes the innermost level when it is one of bs, and reports whether
// it did.
func (n *nester) pop(bs string) bool {
	if t := n.top(); t != 0 && strings.IndexByte(bs, t) >= 0 {
		n.stack = n.stack[:len(n.stack)-1]
		return true
	}
	return false
}

// step reads the byte at n.i and what belongs to it. It returns the offset
// where a here-document body nested past MaxNesting, or -1.
func (n *nester) step() int {
	s, i := n.src, n.i
	c := s[i]
	top := n.top()
	switch {
	case c == '\\':
		n.escape()
		n.word, n.cmd = true, false
		return -1
	case c == '`':
		n.word = n.backtick()
		n.cmd = !n.word
		return -1
	case c == '$' && i+1 < len(s) && strings.IndexByte("({[", s[i+1]) >= 0:
		switch {
		case s[i+1] == '{':
			n.push(lvParam)
		case s[i+1] == '[':
			n.push(lvBracket)
		case i+2 < len(s) && s[i+2] == '(':
			n.push(lvArith)
			n.push(lvArith)
			n.i++
		default:
			n.push(lvSubst)
		}
		n.i++
		n.word, n.cmd = false, true
		return -1
	case c == '$' && i+1 < len(s) && s[i+1] == '\'' && top != lvQuote && top != lvHeredoc:
		// $'...': backslashes escape inside.
		j := i + 2
		for j < len(s) && s[j] != '\'' {
			if s[j] == '\\' {
				j++
			}
			j++
		}
		n.i = min(j, len(s))
		n.word, n.cmd = true, false
		return -1
	case (c == '<' || c == '>') && i+1 < len(s) && s[i+1] == '(' && top != lvQuote && top != lvHeredoc:
		n.push(lvSubst) // <(...) >(...): process substitution
		n.i++
		n.word, n.cmd = false, true
		return -1
	case top == lvQuote || top == lvHeredoc:
		if c == '"' && top == lvQuote {
			n.pop(`"`)
			n.word = true
		}
		return -1
	}
	arith := top == lvArith || top == lvBracket || top == lvParam
	start := n.cmd
	word, cmd := true, false
	switch c {
	case '\'':
		if j := strings.IndexByte(s[i+1:], '\''); j >= 0 {
			n.i += j + 1
		} else {
			n.i = len(s)
		}
	case '"':
		n.push(lvQuote)
	case '#':
		if !arith && !n.word {
			n.comment()
		}
	case '?', '*', '+', '@', '!':
		if !arith && i+2 < len(s) && s[i+1] == '(' && s[i+2] != ')' {
			n.extglob()
		}
	case '(':
		if !arith && i+1 < len(s) && s[i+1] == '(' {
			n.push(lvArith) // ((: arithmetic, or two subshells
		} else if arith {
			n.push(lvArith)
		} else {
			n.push(lvParen)
		}
		word, cmd = false, true
	case ')':
		switch n.top() {
		case lvParen:
			n.pop("(")
			word = false // a subshell ends: a # after it starts a comment
		case lvKeyword:
			word, cmd = false, true // a case pattern ends
		default:
			n.pop("Sa")
		}
	case '{':
		n.push(lvBrace)
		cmd = start && (i+1 == len(s) || strings.IndexByte(" \t\n", s[i+1]) >= 0)
	case '}':
		// A group ends only at a } that is a word of its own in command
		// position.
		if !n.pop("$") && start && (i+1 == len(s) || strings.IndexByte(" \t\n;&|)", s[i+1]) >= 0) {
			n.pop("{")
		}
	case ']':
		n.pop("[")
	case '<':
		switch {
		case strings.HasPrefix(s[i:], "<<<"):
			n.i += 2
		case strings.HasPrefix(s[i:], "<<"):
			n.heredoc()
		}
		word = false
	case '\n':
		n.word, n.cmd = false, true
		return n.bodies()
	case ' ', '\t':
		word, cmd = false, start
	case ';', '&', '|':
		word, cmd = false, true
	case '>':
		word = false
	default:
		cmd = n.keyword(start)
	}
	n.word, n.cmd = word, cmd
	return -1
}

// comment skips a comment: up to the end of the line, or of the backticks
// it is in.
func (n *nester) comment() {
	s := n.src
	j := n.i
	for j < len(s) && s[j] != '\n' && !(n.bt > 0 && s[j] == '`') {
		j++
	}
	n.i = j - 1
}

// extglob skips an extended glob ?(...) *(...) +(...) @(...) !(...), which
// the parser reads as one literal, counting parentheses only.
func (n *nester) extglob() {
	s := n.src
	depth := 0
	j := n.i + 1
	for ; j < len(s); j++ {
		if s[j] == '(' {
			depth++
		} else if s[j] == ')' {
			if depth--; depth == 0 {
				break
			}
		}
	}
	n.i = j
}

// backtick opens backticks, or closes the open ones (with whatever is
// still open inside them); it reports whether it closed them.
func (n *nester) backtick() bool {
	if n.bt == 0 {
		n.btDbl = n.top() == lvQuote
		n.push(lvTick)
		return false
	}
	for len(n.stack) > 0 {
		top := n.top()
		n.stack = n.stack[:len(n.stack)-1]
		if top == lvTick {
			n.bt--
			break
		}
	}
	return true
}

// escape reads a run of backslashes and the byte after it. Inside
// backticks the parser takes backslashes off before it reads the text
// again (as it turns backticks into $(...)), so whether the byte after a
// run of r backslashes is escaped depends on r modulo 4 (measured on
// mvdan.cc/sh v3.14): for $, and for " when the backticks are in double
// quotes, it is when r%4 is 2 or 3; for any other byte when r%4 is 1 or 2.
// A backslash before a backtick inside backticks nests backticks, which is
// refused (n.bq).
func (n *nester) escape() {
	s, i := n.src, n.i
	if n.bt == 0 {
		n.i++
		return
	}
	j := i
	for j < len(s) && s[j] == '\\' {
		j++
	}
	if j == len(s) {
		n.i = j - 1
		return
	}
	if s[j] == '`' {
		if n.bq < 0 {
			n.bq = n.off + i
		}
		n.i = j
		return
	}
	m := (j - i) % 4
	escaped := m == 1 || m == 2
	if s[j] == '$' || s[j] == '"' && n.btDbl {
		escaped = m == 2 || m == 3
	}
	if escaped {
		n.i = j // the byte after the run is escaped
		return
	}
	n.i = j - 1 // the byte after the run is read as it is
}

// keyword reads a word that may open or close a compound command, and
// reports whether a command may follow it. Openers count anywhere (an
// extra level is harmless); closers only in command position.
func (n *nester) keyword(start bool) bool {
	s, i := n.src, n.i
	if i > 0 && wordByte(s[i-1]) || !lower(s[i]) {
		return false
	}
	j := i
	for j < len(s) && wordByte(s[j]) {
		j++
	}
	n.i = j - 1
	w := s[i:j]
	switch w {
	case "if", "case", "for", "while", "until", "select":
		n.push(lvKeyword)
	case "fi", "esac", "done":
		if start {
			n.pop("k")
		}
	}
	switch w {
	case "if", "then", "else", "elif", "do", "while", "until", "time":
		return start
	}
	return false
}

// heredoc notes the here-document whose delimiter follows << or <<-.
func (n *nester) heredoc() {
	s := n.src
	j := n.i + 2
	h := heredoc{}
	if j < len(s) && s[j] == '-' {
		h.tabs = true
		j++
	}
	for j < len(s) && (s[j] == ' ' || s[j] == '\t') {
		j++
	}
	var d strings.Builder
	for ; j < len(s) && strings.IndexByte(" \t\n;&|()<>", s[j]) < 0; j++ {
		switch c := s[j]; c {
		case '\'', '"':
			k := strings.IndexByte(s[j+1:], c)
			if k < 0 {
				k = len(s) - j - 1
			}
			d.WriteString(s[j+1 : j+1+k])
			j += k + 1
		case '\\':
			if j+1 < len(s) {
				j++
				d.WriteByte(s[j])
			}
		default:
			d.WriteByte(c)
		}
	}
	h.delim = d.String()
	n.pending = append(n.pending, h)
	n.i++ // the delimiter word is read as any other word
}

// bodies skips the bodies of the here-documents of the line that just
// ended (n.i is its newline), counting the substitutions in them (in a
// quoted one too: the parser may still look into it).
func (n *nester) bodies() int {
	pos := n.i + 1
	for _, h := range n.pending {
		body, next := bodyEnd(n.src, pos, h)
		inner := nester{src: n.src[pos:body], off: n.off + pos, stack: []byte{lvHeredoc}, bq: -1}
		d, at := inner.run(n.base + len(n.stack))
		n.deepest = max(n.deepest, d)
		if inner.bq >= 0 && n.bq < 0 {
			n.bq = inner.bq
		}
		if at >= 0 {
			return at
		}
		pos = next
	}
	n.pending = n.pending[:0]
	n.i = pos - 1
	return -1
}

// bodyEnd finds where a here-document's body that starts at pos ends (the
// start of its delimiter line) and where the text after it starts.
func bodyEnd(s string, pos int, h heredoc) (body, next int) {
	for start := pos; start < len(s); {
		end := strings.IndexByte(s[start:], '\n')
		line, after := s[start:], len(s)
		if end >= 0 {
			line, after = s[start:start+end], start+end+1
		}
		if h.tabs {
			line = strings.TrimLeft(line, "\t")
		}
		if line == h.delim {
			return start, after
		}
		start = after
	}
	return len(s), len(s)
}

func lower(c byte) bool { return c >= 'a' && c <= 'z' }

func wordByte(c byte) bool {
	return c == '_' || c == '-' || c == '.' || c == '/' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
