package luabridge

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"

	"github.com/awaken-lua/awaken-lua/engine/value"
)

// awaken.json encodes and decodes without building anything first: the
// encoder checks the size of its output before each append, the decoder
// counts what it creates, and both look at the call's deadline as they go,
// so neither can outrun the hook budget or the string limit whatever the
// input. Their output is byte for byte that of encoding/json (sorted keys,
// HTML-safe escapes); fuzz targets hold them to it.

// jsonMaxDepth bounds the nesting of a decoded document: what a value may
// have, which is encoding/json's limit too.
const jsonMaxDepth = value.MaxDepth

// errTooLarge is returned by the encoder when the output would pass its
// limit.
type errTooLarge struct{ max int }

func (e errTooLarge) Error() string {
	return fmt.Sprintf("the result would be over the limit of %d bytes", e.max)
}

// jsonEncoder appends the JSON form of canonical values to buf, never
// letting it grow past max.
type jsonEncoder struct {
	buf  []byte
	max  int
	L    *lua.LState // when set, its deadline is polled every pollEvery bytes
	next int         // len(buf) at which the deadline is polled next
}

func (e *jsonEncoder) room(n int) error {
	if n > e.max-len(e.buf) {
		return errTooLarge{e.max}
	}
	e.buf = grow(e.buf, n, e.max)
	if e.L != nil && len(e.buf)+n >= e.next {
		e.next = len(e.buf) + n + pollEvery
		checkDone(e.L)
	}
	return nil
}

func (e *jsonEncoder) encode(v any) error {
	switch x := v.(type) {
	case nil, value.Null:
		return e.raw("null")
	case bool:
		if x {
			return e.raw("true")
		}
		return e.raw("false")
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("%v is not a finite number", x)
		}
		if err := e.room(32); err != nil {
			return err
		}
		e.buf = appendJSONFloat(e.buf, x)
		return nil
	case string:
		return e.str(x)
	case []any:
		if err := e.raw("["); err != nil {
			return err
		}
		for i, el := range x {
			if i > 0 {
				if err := e.raw(","); err != nil {
					return err
				}
			}
			if err := e.encode(el); err != nil {
				return err
			}
		}
		return e.raw("]")
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if err := e.raw("{"); err != nil {
			return err
		}
		for i, k := range keys {
			if i > 0 {
				if err := e.raw(","); err != nil {
					return err
				}
			}
			if err := e.str(k); err != nil {
				return err
			}
			if err := e.raw(":"); err != nil {
				return err
			}
			if err := e.encode(x[k]); err != nil {
				return err
			}
		}
		return e.raw("}")
	}
	n, err := value.Normalize(v)
	if err != nil {
		return err
	}
	switch n.(type) {
	case nil, value.Null, bool, float64, string, []any, map[string]any:
		return e.encode(n)
	}
	return fmt.Errorf("a %T cannot be encoded", v)
}

func (e *jsonEncoder) raw(s string) error {
	if err := e.room(len(s)); err != nil {
		return err
	}
	e.buf = append(e.buf, s...)
	return nil
}

// appendJSONFloat formats f as encoding/json does (ES6 number formatting).
func appendJSONFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hexDigits = "0123456789abcdef"

// str appends s quoted as encoding/json does with HTML escaping, checking
// the room for each run of bytes before it is copied.
func (e *jsonEncoder) str(s string) error {
	if err := e.raw(`"`); err != nil {
		return err
	}
	start := 0
	flush := func(i int) error {
		if err := e.room(i - start); err != nil {
			return err
		}
		e.buf = append(e.buf, s[start:i]...)
		return nil
	}
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' && b != '<' && b != '>' && b != '&' {
				i++
				if i-start >= pollEvery {
					if err := flush(i); err != nil {
						return err
					}
					start = i
				}
				continue
			}
			if err := flush(i); err != nil {
				return err
			}
			if err := e.room(6); err != nil {
				return err
			}
			switch b {
			case '\\', '"':
				e.buf = append(e.buf, '\\', b)
			case '\b':
				e.buf = append(e.buf, '\\', 'b')
			case '\f':
				e.buf = append(e.buf, '\\', 'f')
			case '\n':
				e.buf = append(e.buf, '\\', 'n')
			case '\r':
				e.buf = append(e.buf, '\\', 'r')
			case '\t':
				e.buf = append(e.buf, '\\', 't')
			default:
				e.buf = append(e.buf, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		if (c == utf8.RuneError && size == 1) || c == '\u2028' || c == '\u2029' {
			if err := flush(i); err != nil {
				return err
			}
			if err := e.room(6); err != nil {
				return err
			}
			if c == utf8.RuneError {
				e.buf = append(e.buf, `\ufffd`...)
			} else {
				e.buf = append(e.buf, '\\', 'u', '2', '0', '2', hexDigits[c&0xF])
			}
			i += size
			start = i
			continue
		}
		i += size
	}
	if err := flush(len(s)); err != nil {
		return err
	}
	return e.raw(`"`)
}

// jsonDecoder parses a JSON document straight into Lua values: objects and
// arrays become tables, null becomes nil in an object (the field is absent),
// awaken.null in an array (so the list does not end) and nil at the top.
type jsonDecoder struct {
	L       *lua.LState
	null    lua.LValue
	s       string
	i       int
	values  int // values created so far
	max     int // bound on values
	nextPol int // the offset at which the deadline is polled next
}

// jsonSyntaxError is a decoding error at a byte offset.
type jsonSyntaxError struct {
	msg    string
	offset int
}

func (e *jsonSyntaxError) Error() string { return fmt.Sprintf("%s (at byte %d)", e.msg, e.offset) }

func (d *jsonDecoder) fail(format string, args ...any) error {
	return &jsonSyntaxError{msg: fmt.Sprintf(format, args...), offset: d.i}
}

func (d *jsonDecoder) decode() (lua.LValue, error) {
	d.space()
	v, err := d.value(0, false)
	if err != nil {
		return nil, err
	}
	d.space()
	if d.i < len(d.s) {
		return nil, d.fail("invalid character %s after top-level value", quoteChar(d.s[d.i]))
	}
	return v, nil
}

func (d *jsonDecoder) space() {
	for d.i < len(d.s) {
		if d.i >= d.nextPol {
			d.nextPol = d.i + pollEvery
			checkDone(d.L)
		}
		switch d.s[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

func quoteChar(c byte) string {
	if c == '\'' {
		return `'\''`
	}
	if c == '"' {
		return `'"'`
	}
	s := strconv.Quote(string(rune(c)))
	if c >= utf8.RuneSelf {
		s = fmt.Sprintf(`"\x%02x"`, c)
	}
	return "'" + s[1:len(s)-1] + "'"
}

func (d *jsonDecoder) count() error {
	d.values++
	if d.values > d.max {
		return d.fail("more than %d values", d.max)
	}
	if d.i >= d.nextPol {
		d.nextPol = d.i + pollEvery
		checkDone(d.L)
	}
	return nil
}

// value parses one value; inArray says a null becomes awaken.null.
func (d *jsonDecoder) value(depth int, inArray bool) (lua.LValue, error) {
	if d.i >= len(d.s) {
		return nil, d.fail("unexpected end of JSON input")
	}
	if err := d.count(); err != nil {
		return nil, err
	}
	switch c := d.s[d.i]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		s, err := d.str()
		if err != nil {
			return nil, err
		}
		return lua.LString(s), nil
	case c == '-' || (c >= '0' && c <= '9'):
		return d.number()
	case c == 't':
		return lua.LTrue, d.literal("true")
	case c == 'f':
		return lua.LFalse, d.literal("false")
	case c == 'n':
		if err := d.literal("null"); err != nil {
			return nil, err
		}
		if inArray {
			return d.null, nil
		}
		return lua.LNil, nil
	default:
		return nil, d.fail("invalid character %s looking for beginning of value", quoteChar(c))
	}
}

func (d *jsonDecoder) literal(word string) error {
	for j := 0; j < len(word); j++ {
		if d.i >= len(d.s) {
			return d.fail("unexpected end of JSON input")
		}
		if d.s[d.i] != word[j] {
			return d.fail("invalid character %s in literal %s (expecting %s)", quoteChar(d.s[d.i]), word, quoteChar(word[j]))
		}
		d.i++
	}
	return nil
}

func (d *jsonDecoder) object(depth int) (lua.LValue, error) {
	if depth > jsonMaxDepth {
		return nil, d.fail("exceeded max depth of %d", jsonMaxDepth)
	}
	d.i++ // {
	t := d.L.CreateTable(0, 0)
	d.space()
	if d.i < len(d.s) && d.s[d.i] == '}' {
		d.i++
		return t, nil
	}
	for {
		d.space()
		if d.i >= len(d.s) {
			return nil, d.fail("unexpected end of JSON input")
		}
		if d.s[d.i] != '"' {
			return nil, d.fail("invalid character %s looking for beginning of object key string", quoteChar(d.s[d.i]))
		}
		k, err := d.str()
		if err != nil {
			return nil, err
		}
		d.space()
		if d.i >= len(d.s) {
			return nil, d.fail("unexpected end of JSON input")
		}
		if d.s[d.i] != ':' {
			return nil, d.fail("invalid character %s after object key", quoteChar(d.s[d.i]))
		}
		d.i++
		d.space()
		v, err := d.value(depth, false)
		if err != nil {
			return nil, err
		}
		t.RawSetString(k, v)
		d.space()
		if d.i >= len(d.s) {
			return nil, d.fail("unexpected end of JSON input")
		}
		switch d.s[d.i] {
		case ',':
			d.i++
		case '}':
			d.i++
			return t, nil
		default:
			return nil, d.fail("invalid character %s after object key:value pair", quoteChar(d.s[d.i]))
		}
	}
}

func (d *jsonDecoder) array(depth int) (lua.LValue, error) {
	if depth > jsonMaxDepth {
		return nil, d.fail("exceeded max depth of %d", jsonMaxDepth)
	}
	d.i++ // [
	t := d.L.CreateTable(0, 0)
	d.space()
	if d.i < len(d.s) && d.s[d.i] == ']' {
		d.i++
		return t, nil
	}
	for {
		d.space()
		v, err := d.value(depth, true)
		if err != nil {
			return nil, err
		}
		t.Append(v)
		d.space()
		if d.i >= len(d.s) {
			return nil, d.fail("unexpected end of JSON input")
		}
		switch d.s[d.i] {
		case ',':
			d.i++
		case ']':
			d.i++
			return t, nil
		default:
			return nil, d.fail("invalid character %s after array element", quoteChar(d.s[d.i]))
		}
	}
}

func (d *jsonDecoder) number() (lua.LValue, error) {
	start := d.i
	s := d.s
	if s[d.i] == '-' {
		d.i++
	}
	digits := func() int {
		n := 0
		for d.i < len(s) && s[d.i] >= '0' && s[d.i] <= '9' {
			d.i++
			n++
		}
		return n
	}
	if d.i >= len(s) {
		return nil, d.fail("unexpected end of JSON input")
	}
	switch {
	case s[d.i] == '0':
		d.i++
	case s[d.i] >= '1' && s[d.i] <= '9':
		digits()
	default:
		return nil, d.fail("invalid character %s in numeric literal", quoteChar(s[d.i]))
	}
	if d.i < len(s) && s[d.i] == '.' {
		d.i++
		if d.i >= len(s) {
			return nil, d.fail("unexpected end of JSON input")
		}
		if digits() == 0 {
			return nil, d.fail("invalid character %s after decimal point in numeric literal", quoteChar(s[d.i]))
		}
	}
	if d.i < len(s) && (s[d.i] == 'e' || s[d.i] == 'E') {
		d.i++
		if d.i < len(s) && (s[d.i] == '+' || s[d.i] == '-') {
			d.i++
		}
		if d.i >= len(s) {
			return nil, d.fail("unexpected end of JSON input")
		}
		if digits() == 0 {
			return nil, d.fail("invalid character %s in exponent of numeric literal", quoteChar(s[d.i]))
		}
	}
	f, err := strconv.ParseFloat(s[start:d.i], 64)
	if err != nil {
		num := s[start:d.i]
		d.i = start
		return nil, d.fail("the number %s does not fit a float64", truncate(num, 40))
	}
	return lua.LNumber(f), nil
}

// str parses a string literal as encoding/json does: escapes, surrogate
// pairs (a lone surrogate becomes U+FFFD), and invalid UTF-8 replaced by
// U+FFFD.
func (d *jsonDecoder) str() (string, error) {
	d.i++ // "
	s := d.s
	start := d.i
	// The fast path: no escapes, valid UTF-8, no control characters.
	for d.i < len(s) {
		if d.i >= d.nextPol {
			d.nextPol = d.i + pollEvery
			checkDone(d.L)
		}
		c := s[d.i]
		if c == '"' {
			out := s[start:d.i]
			d.i++
			return out, nil
		}
		if c == '\\' || c < 0x20 {
			break
		}
		if c < utf8.RuneSelf {
			d.i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[d.i:])
		if r == utf8.RuneError && size == 1 {
			break
		}
		d.i += size
	}
	buf := make([]byte, 0, d.i-start+16)
	buf = append(buf, s[start:d.i]...)
	for {
		if d.i >= len(s) {
			return "", d.fail("unexpected end of JSON input")
		}
		if d.i >= d.nextPol {
			d.nextPol = d.i + pollEvery
			checkDone(d.L)
		}
		c := s[d.i]
		switch {
		case c == '"':
			d.i++
			return string(buf), nil
		case c < 0x20:
			return "", d.fail("invalid character %s in string literal", quoteChar(c))
		case c == '\\':
			d.i++
			if d.i >= len(s) {
				return "", d.fail("unexpected end of JSON input")
			}
			e := s[d.i]
			d.i++
			switch e {
			case '"', '\\', '/':
				buf = append(buf, e)
			case 'b':
				buf = append(buf, '\b')
			case 'f':
				buf = append(buf, '\f')
			case 'n':
				buf = append(buf, '\n')
			case 'r':
				buf = append(buf, '\r')
			case 't':
				buf = append(buf, '\t')
			case 'u':
				r, ok := d.hex4()
				if !ok {
					return "", d.fail("invalid character in \\u hexadecimal character escape")
				}
				if utf16.IsSurrogate(r) {
					// A pair: a high surrogate followed by \uDC00-\uDFFF.
					if d.i+1 < len(s) && s[d.i] == '\\' && s[d.i+1] == 'u' {
						save := d.i
						d.i += 2
						r2, ok := d.hex4()
						if ok {
							if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
								buf = utf8.AppendRune(buf, dec)
								continue
							}
						}
						d.i = save
					}
					r = utf8.RuneError
				}
				buf = utf8.AppendRune(buf, r)
			default:
				return "", d.fail("invalid character %s in string escape code", quoteChar(e))
			}
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			d.i++
		default:
			r, size := utf8.DecodeRuneInString(s[d.i:])
			d.i += size
			buf = utf8.AppendRune(buf, r)
		}
	}
}

func (d *jsonDecoder) hex4() (rune, bool) {
	if d.i+4 > len(d.s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(d.s[d.i : d.i+4]) {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r*16 + rune(c)
	}
	d.i += 4
	return r, true
}

func (inst *instance) jsonEncode(L *lua.LState) int {
	v, err := fromLuaIn(L, L.CheckAny(1), inst.null)
	if err != nil {
		L.Push(lua.LNil)
		L.Push(lua.LString("json: " + err.Error()))
		return 2
	}
	e := jsonEncoder{max: inst.p.gen.limits.StringMax, L: L}
	if err := e.encode(v); err != nil {
		L.Push(lua.LNil)
		L.Push(lua.LString("json: " + err.Error()))
		return 2
	}
	L.Push(lua.LString(e.buf))
	return 1
}

func (inst *instance) jsonDecode(L *lua.LState) int {
	d := jsonDecoder{L: L, null: inst.null, s: L.CheckString(1), max: maxEntries}
	v, err := d.decode()
	if err != nil {
		L.Push(lua.LNil)
		L.Push(lua.LString("json: " + err.Error()))
		return 2
	}
	L.Push(v)
	return 1
}
