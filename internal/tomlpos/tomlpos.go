// Package tomlpos finds the lines of keys in a TOML document.
//
// BurntSushi/toml's MetaData has no public per-key position, yet users need
// file:line on every config error, so awaken.toml (package config) and model
// scripts (model/scripted) look lines up here. Keys are rendered as
// toml.Key.String does ("a.b", quoting parts that are not bare), so a key
// from MetaData or from a decoded map finds its line directly.
//
// The scanner is meant for documents the toml package has already accepted,
// so it can be small; on anything it does not follow it gives up on that
// line, and a missing line only makes an error less precise (0 means
// unknown). It never panics and always terminates, whatever the input.
package tomlpos

import "github.com/BurntSushi/toml"

// Index knows the line of every key definition and array element table in
// a document. A key defined once per element of an array of tables
// ([[turns]] text = ...) has one line per definition, in document order, so
// the n-th occurrence of a key is its n-th definition. A nil *Index knows
// nothing and answers 0.
type Index struct {
	keys  map[string][]int // key -> lines where it is defined, in order
	elems []Elem           // array-of-tables elements, in document order
}

// Elem is one element of an array of tables: a [[key]] header, or an
// inline table { ... } inside an array value of key.
type Elem struct {
	Key  string
	Line int
}

// Line is the line of the n-th (0-based) definition of key, the last one
// when there are fewer, or 0 when the key is unknown.
func (x *Index) Line(key string, n int) int {
	if x == nil {
		return 0
	}
	lines := x.keys[key]
	switch {
	case len(lines) == 0:
		return 0
	case n >= 0 && n < len(lines):
		return lines[n]
	}
	return lines[len(lines)-1]
}

// Lines lists the lines where key is defined, in document order. The slice
// belongs to the index.
func (x *Index) Lines(key string) []int {
	if x == nil {
		return nil
	}
	return x.keys[key]
}

// Elems lists every array element in document order, so a caller can count
// elements of nested arrays (turn i, tool call j). The slice belongs to the
// index.
func (x *Index) Elems() []Elem {
	if x == nil {
		return nil
	}
	return x.elems
}

// ElemLines lists the lines where the elements of the array key start, in
// document order (across all parents when key is nested in another array).
func (x *Index) ElemLines(key string) []int {
	var out []int
	for _, e := range x.Elems() {
		if e.Key == key {
			out = append(out, e.Line)
		}
	}
	return out
}

type keyScanner struct {
	s    string
	i    int
	line int
	x    *Index
}

// Scan indexes src. It never fails: what it cannot follow costs precision,
// not correctness, and it stops at the end of src whatever the input.
func Scan(src string) *Index {
	sc := &keyScanner{s: src, line: 1, x: &Index{keys: map[string][]int{}}}
	if len(src) >= 3 && src[:3] == "\ufeff" {
		sc.i = 3 // a byte order mark, which editors on Windows may write
	}
	sc.document()
	return sc.x
}

func (sc *keyScanner) eof() bool { return sc.i >= len(sc.s) }

func (sc *keyScanner) peek() byte {
	if sc.eof() {
		return 0
	}
	return sc.s[sc.i]
}

func (sc *keyScanner) has(prefix string) bool {
	return len(sc.s)-sc.i >= len(prefix) && sc.s[sc.i:sc.i+len(prefix)] == prefix
}

func (sc *keyScanner) record(path []string, line int) {
	k := toml.Key(path).String()
	sc.x.keys[k] = append(sc.x.keys[k], line)
}

func (sc *keyScanner) skipSpace() {
	for !sc.eof() && (sc.s[sc.i] == ' ' || sc.s[sc.i] == '\t') {
		sc.i++
	}
}

// skipSpaceNL skips blanks, newlines and comments.
func (sc *keyScanner) skipSpaceNL() {
	for !sc.eof() {
		switch sc.s[sc.i] {
		case ' ', '\t', '\r':
			sc.i++
		case '\n':
			sc.i++
			sc.line++
		case '#':
			for !sc.eof() && sc.s[sc.i] != '\n' {
				sc.i++
			}
		default:
			return
		}
	}
}

// skipLine moves past the next newline.
func (sc *keyScanner) skipLine() {
	for !sc.eof() {
		c := sc.s[sc.i]
		sc.i++
		if c == '\n' {
			sc.line++
			return
		}
	}
}

func (sc *keyScanner) document() {
	var table []string
	for {
		sc.skipSpaceNL()
		if sc.eof() {
			return
		}
		line := sc.line
		if sc.peek() == '[' {
			array := sc.has("[[")
			if array {
				sc.i += 2
			} else {
				sc.i++
			}
			key, ok := sc.key()
			if ok {
				table = key
				// Parents a header implies ([a.b] implies a) are defined here
				// unless defined before.
				for n := 1; n < len(key); n++ {
					if _, seen := sc.x.keys[toml.Key(key[:n]).String()]; !seen {
						sc.record(key[:n], line)
					}
				}
				sc.record(key, line)
				if array {
					sc.x.elems = append(sc.x.elems, Elem{toml.Key(key).String(), line})
				}
			}
			sc.skipLine()
			continue
		}
		key, ok := sc.key()
		if !ok {
			sc.skipLine()
			continue
		}
		path := append(append([]string(nil), table...), key...)
		sc.recordDotted(len(table), path, line)
		sc.skipSpace()
		if sc.peek() == '=' {
			sc.i++
			sc.value(path)
		}
		sc.skipLine()
	}
}

// recordDotted records a key and the tables its dots imply (a.b = 1 defines
// a and a.b), from index from of path on.
func (sc *keyScanner) recordDotted(from int, path []string, line int) {
	for n := from + 1; n <= len(path); n++ {
		sc.record(path[:n], line)
	}
}

// key reads a possibly dotted key of bare and quoted parts.
func (sc *keyScanner) key() ([]string, bool) {
	var parts []string
	for {
		sc.skipSpace()
		start := sc.i
		switch sc.peek() {
		case '"':
			sc.i++
			for !sc.eof() && sc.s[sc.i] != '"' && sc.s[sc.i] != '\n' {
				if sc.s[sc.i] == '\\' {
					sc.i++
				}
				sc.i++
			}
			if sc.eof() || sc.s[sc.i] != '"' {
				return nil, false
			}
			parts = append(parts, unquoteKey(sc.s[start+1:sc.i]))
			sc.i++
		case '\'':
			sc.i++
			for !sc.eof() && sc.s[sc.i] != '\'' && sc.s[sc.i] != '\n' {
				sc.i++
			}
			if sc.eof() || sc.s[sc.i] != '\'' {
				return nil, false
			}
			parts = append(parts, sc.s[start+1:sc.i])
			sc.i++
		default:
			for !sc.eof() && isBare(sc.s[sc.i]) {
				sc.i++
			}
			if sc.i == start {
				return nil, false
			}
			parts = append(parts, sc.s[start:sc.i])
		}
		sc.skipSpace()
		if sc.peek() != '.' {
			return parts, true
		}
		sc.i++
	}
}

// unquoteKey handles the common escapes; a rare one only costs precision.
func unquoteKey(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			i++
			switch s[i] {
			case 'n':
				out = append(out, '\n')
			case 't':
				out = append(out, '\t')
			default:
				out = append(out, s[i])
			}
			continue
		}
		out = append(out, s[i])
	}
	return string(out)
}

func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// value skips one value, recording the keys of inline tables inside it.
func (sc *keyScanner) value(path []string) {
	sc.skipSpace()
	switch {
	case sc.has(`"""`):
		sc.multiline(`"""`, true)
	case sc.has(`'''`):
		sc.multiline(`'''`, false)
	case sc.peek() == '"':
		sc.i++
		for !sc.eof() && sc.s[sc.i] != '"' && sc.s[sc.i] != '\n' {
			if sc.s[sc.i] == '\\' {
				sc.i++
			}
			sc.i++
		}
		if !sc.eof() && sc.s[sc.i] == '"' {
			sc.i++
		}
	case sc.peek() == '\'':
		sc.i++
		for !sc.eof() && sc.s[sc.i] != '\'' && sc.s[sc.i] != '\n' {
			sc.i++
		}
		if !sc.eof() && sc.s[sc.i] == '\'' {
			sc.i++
		}
	case sc.peek() == '{':
		sc.inlineTable(path)
	case sc.peek() == '[':
		sc.array(path)
	default:
		for !sc.eof() {
			switch sc.s[sc.i] {
			case ',', ']', '}', '\n', '#':
				return
			}
			sc.i++
		}
	}
}

func (sc *keyScanner) multiline(delim string, escapes bool) {
	sc.i += len(delim)
	for !sc.eof() {
		switch {
		case escapes && sc.s[sc.i] == '\\':
			sc.i++
			if !sc.eof() && sc.s[sc.i] == '\n' {
				sc.line++
			}
			sc.i++
		case sc.has(delim):
			sc.i += len(delim)
			// Up to two more quotes may close the string ("""a"""").
			for n := 0; n < 2 && sc.has(delim[:1]); n++ {
				sc.i++
			}
			return
		default:
			if sc.s[sc.i] == '\n' {
				sc.line++
			}
			sc.i++
		}
	}
}

func (sc *keyScanner) inlineTable(path []string) {
	sc.i++ // {
	for {
		sc.skipSpaceNL()
		if sc.eof() {
			return
		}
		if sc.peek() == '}' {
			sc.i++
			return
		}
		start, line := sc.i, sc.line
		key, ok := sc.key()
		if !ok {
			return
		}
		full := append(append([]string(nil), path...), key...)
		sc.recordDotted(len(path), full, line)
		sc.skipSpace()
		if sc.peek() != '=' {
			return
		}
		sc.i++
		sc.value(full)
		sc.skipSpaceNL()
		if sc.peek() == ',' {
			sc.i++
		}
		if sc.i == start {
			return
		}
	}
}

func (sc *keyScanner) array(path []string) {
	sc.i++ // [
	for {
		sc.skipSpaceNL()
		if sc.eof() {
			return
		}
		if sc.peek() == ']' {
			sc.i++
			return
		}
		start := sc.i
		if sc.peek() == '{' {
			sc.x.elems = append(sc.x.elems, Elem{toml.Key(path).String(), sc.line})
		}
		sc.value(path)
		sc.skipSpaceNL()
		if sc.peek() == ',' {
			sc.i++
		}
		if sc.i == start {
			return // not a value this scanner follows
		}
	}
}
