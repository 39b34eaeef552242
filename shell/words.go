package shell

import (
	"strings"
	"unicode/utf8"

	"mvdan.cc/sh/v3/syntax"
)

// literal returns a word's value after quote removal, and false when the
// value is only known at run time: an expansion, a substitution, an
// unquoted glob, brace expansion or tilde, a locale ($"...") string.
func literal(w *syntax.Word) (string, bool) {
	var b strings.Builder
	for i, p := range w.Parts {
		switch p := p.(type) {
		case *syntax.Lit:
			if !plain(p.Value, i == 0) {
				return "", false
			}
			b.WriteString(unescape(p.Value))
		case *syntax.SglQuoted:
			v := p.Value
			if p.Dollar {
				var ok bool
				if v, ok = ansiC(v); !ok {
					return "", false
				}
			}
			b.WriteString(v)
		case *syntax.DblQuoted:
			if p.Dollar {
				return "", false
			}
			for _, q := range p.Parts {
				l, ok := q.(*syntax.Lit)
				if !ok {
					return "", false
				}
				b.WriteString(unescapeQuoted(l.Value))
			}
		default:
			return "", false
		}
	}
	return b.String(), true
}

// ansiC decodes the body of a $'...' string; false when it holds a NUL,
// which bash cannot put in a word.
func ansiC(s string) (string, bool) {
	if !strings.Contains(s, `\`) {
		return s, true
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch c := s[i]; c {
		case 'a':
			b.WriteByte(7)
		case 'b':
			b.WriteByte(8)
		case 'e', 'E':
			b.WriteByte(27)
		case 'f':
			b.WriteByte(12)
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte(11)
		case '\\', '\'', '"', '?':
			b.WriteByte(c)
		case 'c':
			if i+1 == len(s) {
				b.WriteString(`\c`)
				continue
			}
			i++
			b.WriteByte(s[i] & 0x1f)
		case 'x', 'u', 'U', '0', '1', '2', '3', '4', '5', '6', '7':
			base, width := 16, map[byte]int{'x': 2, 'u': 4, 'U': 8}[c]
			j := i + 1
			if width == 0 { // octal: this digit and up to two more
				base, width, j = 8, 3, i
			}
			v, k := 0, j
			for ; k < len(s) && k-j < width; k++ {
				d := digit(s[k], base)
				if d < 0 {
					break
				}
				v = v*base + d
			}
			if k == j { // \x with no digits stays as written
				b.WriteByte('\\')
				b.WriteByte(c)
				continue
			}
			i = k - 1
			switch {
			case v == 0:
				return "", false
			case c == 'u' || c == 'U':
				b.WriteRune(rune(v))
			default:
				b.WriteByte(byte(v))
			}
		default:
			b.WriteByte('\\')
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

func digit(c byte, base int) int {
	d := -1
	switch {
	case c >= '0' && c <= '9':
		d = int(c - '0')
	case c >= 'a' && c <= 'f':
		d = int(c-'a') + 10
	case c >= 'A' && c <= 'F':
		d = int(c-'A') + 10
	}
	if d >= base {
		return -1
	}
	return d
}

// plain reports whether unquoted text (with its backslash escapes) expands
// to itself: no glob (* ? [...]), no brace expansion ({a,b} {1..3}), no
// extended glob, no tilde expansion (at the start, or after = or : as in
// assignment-like words).
func plain(s string, first bool) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\\':
			i++
		case '*', '?', '(':
			return false
		case '[':
			if closes(s[i+1:], ']') >= 0 {
				return false
			}
		case '{':
			if end := closes(s[i+1:], '}'); end >= 0 {
				body := s[i+1 : i+1+end]
				if strings.Contains(body, ",") || strings.Contains(body, "..") {
					return false
				}
			}
		case '~':
			if i == 0 && first || i > 0 && (s[i-1] == '=' || s[i-1] == ':') {
				return false
			}
		}
	}
	return true
}

// closes returns the index of the first unescaped c in s, or -1.
func closes(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case c:
			return i
		}
	}
	return -1
}

// unescape removes the backslashes of unquoted text: \x is x, and a
// backslash-newline joins lines.
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			if s[i] == '\n' {
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// unescapeQuoted removes the backslashes that escape inside double quotes:
// before $ ` " \ and newline; any other backslash stays.
func unescapeQuoted(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '$', '`', '"', '\\':
				i++
			case '\n':
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ansiQuote renders a word with control bytes or invalid UTF-8 as $'...'.
func ansiQuote(w Word) string {
	q, err := syntax.Quote(w.Value, syntax.LangBash)
	if err != nil { // a NUL byte: a literal word never holds one
		return w.Source
	}
	return q
}

// quote renders a literal word so that the shell reads it back as one word
// with the same value: as is when nothing in it is special, else in single
// quotes. Characters that only matter in some places (=, {}, ~ inside a
// word, #  inside a word) are left bare, the way people write commands.
func quote(w Word) string {
	v := w.Value
	if v == "" {
		return "''"
	}
	if !utf8.ValidString(v) {
		return ansiQuote(w)
	}
	special := false
	for i := 0; i < len(v); i++ {
		switch c := v[i]; c {
		case ' ', '\t', '\n', '\'', '"', '\\', '$', '`', ';', '&', '|', '<', '>', '(', ')', '*', '?', '[':
			special = true
		case '#', '~':
			special = special || i == 0
		default:
			if c < 0x20 || c == 0x7f { // \r included: the parser drops it before \n
				return ansiQuote(w)
			}
		}
	}
	if !special && plain(v, true) {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}
