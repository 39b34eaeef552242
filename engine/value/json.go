package value

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting a value may have: encoding/json's limit,
// kept so that both accept the same documents. It bounds recursion in
// AppendJSON, the sidecar's check of a body, and the Lua bridge, which
// carries values this deep both ways, so that what a boundary accepts is
// never refused past it.
const MaxDepth = 10000

// Containers collect their first inlineItems entries in a frame-local array
// and spill the rest onto the parser's scratch stacks, so that the final map
// or slice is allocated once at its exact size.
const inlineItems = 8

// Strings up to arenaMaxString bytes are carved out of shared chunks of at
// most arenaChunk bytes (one allocation for many strings); a retained small
// string thus pins at most one chunk.
const (
	arenaMaxString = 256
	arenaChunk     = 4096
)

// member is an object member awaiting the creation of its map.
type member struct {
	key string
	val any
}

// ParseJSON parses exactly one JSON value (RFC 8259), optionally surrounded by
// whitespace, into canonical form: map[string]any, []any, float64, string,
// bool or nil. It accepts and rejects the same inputs as json.Unmarshal into
// an any and yields equal values: the last duplicate key wins, invalid UTF-8
// and invalid surrogate escapes become U+FFFD, numbers out of float64 range
// and nesting deeper than 10000 are errors. Error messages end with the byte
// offset (0-based) of the offending byte, or the input length at its end.
//
// It uses no reflection; short strings of one document share a few backing
// chunks, so the result costs about one allocation per container and per
// boxed string or number.
func ParseJSON(data []byte) (any, error) {
	p := parser{data: data}
	p.skipSpace()
	v, err := p.value()
	if err != nil {
		return nil, err
	}
	p.skipSpace()
	if p.pos < len(p.data) {
		return nil, p.errChar("after top-level value")
	}
	return v, nil
}

type parser struct {
	data    []byte
	pos     int
	depth   int
	members []member        // spilled members of the objects being parsed
	elems   []any           // spilled elements of the arrays being parsed
	buf     []byte          // reused for strings that need unescaping
	arena   strings.Builder // current chunk for small strings
	// unkept: parsing a value nobody keeps, whose numbers are only
	// checked for syntax (see ParseJSONObject).
	unkept bool
}

// makeString returns b as a string. rest bounds the string bytes still to come
// in the input, so chunks for small documents are no bigger than needed.
func (p *parser) makeString(b []byte, rest int) string {
	if len(b) == 0 {
		return ""
	}
	if len(b) > arenaMaxString {
		return string(b)
	}
	if p.arena.Cap()-p.arena.Len() < len(b) {
		// Strings already handed out keep the old chunk; Builder never
		// rewrites bytes it has returned.
		p.arena = strings.Builder{}
		p.arena.Grow(max(len(b), min(rest, arenaChunk)))
	}
	n := p.arena.Len()
	p.arena.Write(b)
	return p.arena.String()[n:]
}

// ParseJSONObject is ParseJSON for a document that should hold an object
// whose members the caller takes one by one (decoding into a struct):
// member gets each member whose key want accepts (nil: every key), in
// input order, a duplicate key each time, and no map of them is built;
// member is called for a key before want is asked about the next one.
// The value of a member want refuses is checked for syntax only, as
// encoding/json does for a struct's unknown fields: a number out of
// float64 range there is no error. Any other document is parsed as
// ParseJSON does and returned as v with object false. An error from member
// stops the parse and is returned.
func ParseJSONObject(data []byte, want func(key string) bool, member func(key string, val any) error) (v any, object bool, err error) {
	p := parser{data: data}
	p.skipSpace()
	if p.pos >= len(p.data) || p.data[p.pos] != '{' {
		v, err := ParseJSON(data)
		return v, false, err
	}
	if err := p.eachMember(want, member); err != nil {
		return nil, true, err
	}
	p.skipSpace()
	if p.pos < len(p.data) {
		return nil, true, p.errChar("after top-level value")
	}
	return nil, true, nil
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

func (p *parser) errEOF() error {
	return fmt.Errorf("unexpected end of JSON input at offset %d", len(p.data))
}

// errChar reports the byte at p.pos, or the end of input.
func (p *parser) errChar(context string) error {
	if p.pos >= len(p.data) {
		return p.errEOF()
	}
	return fmt.Errorf("invalid character %s %s at offset %d", quoteChar(p.data[p.pos]), context, p.pos)
}

// quoteChar formats c as encoding/json does in its syntax errors.
func quoteChar(c byte) string {
	switch c {
	case '\'':
		return `'\''`
	case '"':
		return `'"'`
	}
	s := strconv.Quote(string(rune(c)))
	return "'" + s[1:len(s)-1] + "'"
}

func (p *parser) value() (any, error) {
	if p.pos >= len(p.data) {
		return nil, p.errEOF()
	}
	switch c := p.data[p.pos]; c {
	case '{':
		return p.object()
	case '[':
		return p.array()
	case '"':
		s, err := p.str()
		if err != nil {
			return nil, err
		}
		return s, nil
	case 't':
		return true, p.literal("true")
	case 'f':
		return false, p.literal("false")
	case 'n':
		return nil, p.literal("null")
	default:
		if c == '-' || '0' <= c && c <= '9' {
			return p.number()
		}
		return nil, p.errChar("looking for beginning of value")
	}
}

func (p *parser) literal(lit string) error {
	for i := 1; i < len(lit); i++ {
		p.pos++
		if p.pos >= len(p.data) {
			return p.errEOF()
		}
		if p.data[p.pos] != lit[i] {
			return p.errChar(fmt.Sprintf("in literal %s (expecting %s)", lit, quoteChar(lit[i])))
		}
	}
	p.pos++
	return nil
}

func (p *parser) object() (any, error) {
	var inline [inlineItems]member
	n := 0
	mark := len(p.members)
	err := p.eachMember(nil, func(k string, v any) error {
		if n < inlineItems {
			inline[n] = member{k, v}
		} else {
			p.members = append(p.members, member{k, v})
		}
		n++
		return nil
	})
	if err != nil {
		return nil, err
	}
	m := make(map[string]any, n)
	// In input order, so the last duplicate wins.
	for _, kv := range inline[:min(n, inlineItems)] {
		m[kv.key] = kv.val
	}
	if n > inlineItems {
		spilled := p.members[mark:]
		for _, kv := range spilled {
			m[kv.key] = kv.val
		}
		clear(spilled) // drop references held by the scratch stack
		p.members = p.members[:mark]
	}
	return m, nil
}

// eachMember parses the object at p.pos, passing each member whose key want
// accepts (nil: every member) to fn in input order.
func (p *parser) eachMember(want func(key string) bool, fn func(key string, val any) error) error {
	p.depth++
	if p.depth > MaxDepth {
		return fmt.Errorf("exceeded max depth at offset %d", p.pos)
	}
	p.pos++ // '{'
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		p.depth--
		return nil
	}
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return p.errChar("looking for beginning of object key string")
		}
		k, err := p.str()
		if err != nil {
			return err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return p.errChar("after object key")
		}
		p.pos++
		p.skipSpace()
		keep := want == nil || want(k)
		unkept := p.unkept
		p.unkept = unkept || !keep
		v, err := p.value()
		p.unkept = unkept
		if err != nil {
			return err
		}
		if keep && !unkept { // inside a value nobody keeps, nothing is passed on
			if err := fn(k, v); err != nil {
				return err
			}
		}
		p.skipSpace()
		if p.pos >= len(p.data) {
			return p.errEOF()
		}
		c := p.data[p.pos]
		if c == '}' {
			p.pos++
			break
		}
		if c != ',' {
			return p.errChar("after object key:value pair")
		}
		p.pos++
		p.skipSpace()
	}
	p.depth--
	return nil
}

func (p *parser) array() (any, error) {
	p.depth++
	if p.depth > MaxDepth {
		return nil, fmt.Errorf("exceeded max depth at offset %d", p.pos)
	}
	p.pos++ // '['
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		p.depth--
		return []any{}, nil // not nil: encoding/json yields an empty slice
	}
	var inline [inlineItems]any
	n := 0
	mark := len(p.elems)
	for {
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		if n < inlineItems {
			inline[n] = v
		} else {
			p.elems = append(p.elems, v)
		}
		n++
		p.skipSpace()
		if p.pos >= len(p.data) {
			return nil, p.errEOF()
		}
		c := p.data[p.pos]
		if c == ']' {
			p.pos++
			break
		}
		if c != ',' {
			return nil, p.errChar("after array element")
		}
		p.pos++
		p.skipSpace()
	}
	a := make([]any, n)
	copy(a, inline[:min(n, inlineItems)])
	if n > inlineItems {
		spilled := p.elems[mark:]
		copy(a[inlineItems:], spilled)
		clear(spilled)
		p.elems = p.elems[:mark]
	}
	p.depth--
	return a, nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func (p *parser) number() (any, error) {
	d := p.data
	start := p.pos
	i := start
	neg := d[i] == '-'
	if neg {
		i++
	}
	if i >= len(d) {
		return nil, p.errEOF()
	}
	switch c := d[i]; {
	case c == '0':
		i++
	case '1' <= c && c <= '9':
		for i++; i < len(d) && isDigit(d[i]); i++ {
		}
	default:
		p.pos = i
		return nil, p.errChar("in numeric literal")
	}
	intEnd := i
	if i < len(d) && d[i] == '.' {
		i++
		if i >= len(d) || !isDigit(d[i]) {
			p.pos = i
			return nil, p.errChar("after decimal point in numeric literal")
		}
		for i++; i < len(d) && isDigit(d[i]); i++ {
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if i >= len(d) || !isDigit(d[i]) {
			p.pos = i
			return nil, p.errChar("in exponent of numeric literal")
		}
		for i++; i < len(d) && isDigit(d[i]); i++ {
		}
	}
	p.pos = i
	if p.unkept {
		return nil, nil // its syntax is all that counts
	}
	digits := d[start:intEnd]
	if neg {
		digits = digits[1:]
	}
	// Integers of up to 15 digits are below 2^53, so exact in float64: the
	// same result as ParseFloat, without its cost.
	if intEnd == i && len(digits) <= 15 {
		var n int64
		for _, c := range digits {
			n = n*10 + int64(c-'0')
		}
		f := float64(n)
		if neg {
			f = -f // -0 stays -0, as ParseFloat gives
		}
		return f, nil
	}
	f, err := strconv.ParseFloat(string(d[start:i]), 64)
	if err != nil {
		// Only a range error is possible after the grammar check above.
		return nil, fmt.Errorf("number %s out of float64 range at offset %d", d[start:i], start)
	}
	return f, nil
}

// strPlain marks the ASCII bytes that stand for themselves inside a JSON
// string. Read-only.
var strPlain = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// str parses the string starting at the quote at p.pos. Strings without
// escapes and with valid UTF-8 are copied once; the rest go through unquote.
func (p *parser) str() (string, error) {
	d := p.data
	start := p.pos + 1
	i := start
	for i < len(d) {
		c := d[i]
		if c < utf8.RuneSelf {
			if strPlain[c] {
				i++
				continue
			}
			if c == '"' {
				p.pos = i + 1
				return p.makeString(d[start:i], len(d)-start), nil
			}
			break
		}
		r, size := utf8.DecodeRune(d[i:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		i += size
	}
	return p.unquote(start, i)
}

// unquote finishes a string whose content starts at start, of which
// d[start:i] is known to be plain, decoding it exactly as encoding/json does.
func (p *parser) unquote(start, i int) (string, error) {
	d := p.data
	b := append(p.buf[:0], d[start:i]...)
	for {
		if i >= len(d) {
			return "", p.errEOF()
		}
		c := d[i]
		switch {
		case c == '"':
			p.pos = i + 1
			p.buf = b
			return p.makeString(b, len(d)-start), nil
		case c == '\\':
			i++
			if i >= len(d) {
				return "", p.errEOF()
			}
			switch e := d[i]; e {
			case '"', '\\', '/':
				b = append(b, e)
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r, err := p.hex4(i + 1)
				if err != nil {
					return "", err
				}
				i += 4
				if utf16.IsSurrogate(r) {
					// A valid pair is consumed whole; anything else makes
					// this escape U+FFFD and leaves what follows alone.
					r1 := r
					r = utf8.RuneError
					if i+6 < len(d) && d[i+1] == '\\' && d[i+2] == 'u' {
						if r2, err := p.hex4(i + 3); err == nil {
							if dec := utf16.DecodeRune(r1, r2); dec != utf8.RuneError {
								r = dec
								i += 6
							}
						}
					}
				}
				b = utf8.AppendRune(b, r)
			default:
				p.pos = i
				return "", p.errChar("in string escape code")
			}
			i++
		case c < 0x20:
			p.pos = i
			return "", p.errChar("in string literal")
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			// DecodeRune cannot run past the closing quote: '"' is never a
			// continuation byte. Each invalid byte becomes one U+FFFD.
			r, size := utf8.DecodeRune(d[i:])
			b = utf8.AppendRune(b, r)
			i += size
		}
	}
}

// hex4 decodes the four hex digits at d[i:i+4].
func (p *parser) hex4(i int) (rune, error) {
	var r rune
	for k := i; k < i+4; k++ {
		if k >= len(p.data) {
			return 0, p.errEOF()
		}
		c := p.data[k]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			p.pos = k
			return 0, p.errChar(`in \u hexadecimal character escape`)
		}
		r = r<<4 | rune(c)
	}
	return r, nil
}

// AppendJSON appends the JSON encoding of the canonical value v (Null and nil
// encode as null) to dst, producing exactly the bytes json.Marshal produces:
// sorted keys, HTML-safe string escaping, encoding/json's number format, null
// for nil slices and maps. NaN, infinities and non-canonical types are
// errors, as they are for json.Marshal; so is nesting deeper than 10000,
// which json.Marshal would encode but neither decoder reads back (and
// which stops a value that contains itself). On error dst is returned
// unextended.
func AppendJSON(dst []byte, v any) ([]byte, error) {
	n := len(dst)
	out, err := appendJSON(dst, v, 0)
	if err != nil {
		return dst[:n], err
	}
	return out, nil
}

func appendJSON(dst []byte, v any, depth int) ([]byte, error) {
	switch x := v.(type) {
	case nil, Null:
		return append(dst, "null"...), nil
	case bool:
		return strconv.AppendBool(dst, x), nil
	case float64:
		return appendFloat(dst, x)
	case string:
		return appendString(dst, x), nil
	case []any:
		if x == nil {
			return append(dst, "null"...), nil
		}
		if depth++; depth > MaxDepth {
			return dst, fmt.Errorf("value: exceeded max depth %d encoding JSON", MaxDepth)
		}
		dst = append(dst, '[')
		for i, e := range x {
			if i > 0 {
				dst = append(dst, ',')
			}
			var err error
			if dst, err = appendJSON(dst, e, depth); err != nil {
				return dst, err
			}
		}
		return append(dst, ']'), nil
	case map[string]any:
		if x == nil {
			return append(dst, "null"...), nil
		}
		if depth++; depth > MaxDepth {
			return dst, fmt.Errorf("value: exceeded max depth %d encoding JSON", MaxDepth)
		}
		var buf [inlineItems]member
		ms := buf[:0]
		for k, e := range x {
			ms = append(ms, member{k, e})
		}
		slices.SortFunc(ms, func(a, b member) int { return strings.Compare(a.key, b.key) })
		dst = append(dst, '{')
		for i, m := range ms {
			if i > 0 {
				dst = append(dst, ',')
			}
			dst = appendString(dst, m.key)
			dst = append(dst, ':')
			var err error
			if dst, err = appendJSON(dst, m.val, depth); err != nil {
				return dst, err
			}
		}
		return append(dst, '}'), nil
	}
	return dst, fmt.Errorf("value: cannot encode %T as JSON (not a canonical value)", v)
}

// appendFloat formats like encoding/json (ES6 number to string): 'f' unless
// the magnitude is below 1e-6 or at least 1e21, exponents without padding.
func appendFloat(dst []byte, f float64) ([]byte, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return dst, fmt.Errorf("value: unsupported value %s encoding JSON", strconv.FormatFloat(f, 'g', -1, 64))
	}
	abs := math.Abs(f)
	// Integers below 1e15 are exact and print as their digits; -0 is left to
	// AppendFloat.
	if i := int64(f); abs < 1e15 && float64(i) == f && (i != 0 || !math.Signbit(f)) {
		return strconv.AppendInt(dst, i, 10), nil
	}
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	dst = strconv.AppendFloat(dst, f, format, -1, 64)
	if format == 'e' {
		// e-07 -> e-7
		n := len(dst)
		if dst[n-4] == 'e' && dst[n-3] == '-' && dst[n-2] == '0' {
			dst[n-2] = dst[n-1]
			dst = dst[:n-1]
		}
	}
	return dst, nil
}

// htmlSafe marks the ASCII bytes json.Marshal writes unescaped. Read-only.
var htmlSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// appendString quotes s following encoding/json's appendString with HTML
// escaping on.
func appendString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if htmlSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '\\', '"':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		// U+2028 and U+2029 break JSONP; encoding/json always escapes them.
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
