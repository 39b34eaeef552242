package value

import (
	"fmt"
	"math"
	"unicode/utf8"
)

// EncodedSize returns the length in bytes of v's JSON encoding, the bytes
// AppendJSON would write, without building it. It counts no further than
// limit: once the count passes limit it stops and returns a number above
// limit, so measuring a huge value, or one that shares a table many times
// over, costs O(limit) at most. A value AppendJSON cannot encode (a
// non-canonical type, NaN, infinities, nesting past 10000) is an error.
func EncodedSize(v any, limit int) (int, error) {
	switch x := v.(type) { // the common scalars, without the walk
	case float64:
		return floatSize(x)
	case string:
		return StringSize(x), nil
	case bool:
		if x {
			return 4, nil
		}
		return 5, nil
	}
	s := sizer{limit: limit}
	if err := s.walk(v, 0); err != nil {
		return 0, err
	}
	return s.n, nil
}

type sizer struct {
	n, limit int
}

func (s *sizer) over() bool { return s.n > s.limit }

func (s *sizer) walk(v any, depth int) error {
	switch x := v.(type) {
	case nil, Null:
		s.n += 4
	case bool:
		if x {
			s.n += 4
		} else {
			s.n += 5
		}
	case float64:
		n, err := floatSize(x)
		if err != nil {
			return err
		}
		s.n += n
	case string:
		s.n += StringSize(x)
	case []any:
		if x == nil {
			s.n += 4
			return nil
		}
		if depth++; depth > MaxDepth {
			return fmt.Errorf("value: exceeded max depth %d encoding JSON", MaxDepth)
		}
		s.n += 2 // []
		for i, e := range x {
			if i > 0 {
				s.n++
			}
			if err := s.walk(e, depth); err != nil || s.over() {
				return err
			}
		}
	case map[string]any:
		if x == nil {
			s.n += 4
			return nil
		}
		if depth++; depth > MaxDepth {
			return fmt.Errorf("value: exceeded max depth %d encoding JSON", MaxDepth)
		}
		s.n += 2 // {}
		if len(x) > 0 {
			s.n += len(x) - 1 // commas
		}
		for k, e := range x {
			s.n += StringSize(k) + 1 // "k":
			if err := s.walk(e, depth); err != nil || s.over() {
				return err
			}
		}
	default:
		return fmt.Errorf("value: cannot encode %T as JSON (not a canonical value)", v)
	}
	return nil
}

// floatSize is the length of appendFloat's output.
func floatSize(f float64) (int, error) {
	if i := int64(f); math.Abs(f) < 1e15 && float64(i) == f && (i != 0 || !math.Signbit(f)) {
		n := 1
		if i < 0 {
			n, i = 2, -i
		}
		for ; i >= 10; i /= 10 {
			n++
		}
		return n, nil
	}
	var buf [32]byte
	b, err := appendFloat(buf[:0], f)
	return len(b), err
}

// NumberSize is the length of f as AppendJSON writes it (0 for NaN and
// the infinities, which it refuses).
func NumberSize(f float64) int {
	n, err := floatSize(f)
	if err != nil {
		return 0
	}
	return n
}

// StringSize is the length of s quoted as AppendJSON quotes it (HTML-safe
// escaping, invalid UTF-8 as \ufffd).
func StringSize(s string) int {
	n := 2
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case htmlSafe[c]:
				n++
			case c == '\\' || c == '"' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t':
				n += 2
			default:
				n += 6
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1, r == '\u2028', r == '\u2029':
			n += 6
		default:
			n += size
		}
		i += size
	}
	return n
}
