package schema

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/value"
)

// Validate checks v against the schema. It returns nil or an *errs.Error
// with Code errs.SchemaViolation whose Msg is always "<path>: <what is
// wrong>", the path starting with "$" (e.g. `$.rules[2].tool: expected
// string, got number`), so a caller may swap the "$" for its own prefix.
//
// When v has several problems the first in a fixed order is reported:
// object properties by sorted name, list items by index. Numbers must be
// finite whatever the schema, and values must be canonical (package value).
// Validate does not allocate when v is valid: it runs on every state commit.
func (s *Schema) Validate(v any) error {
	if vi := s.check(v); vi != nil {
		return vi.err()
	}
	return nil
}

// violation is built only on failure. Its path grows from the inside out as
// it returns through the recursion, so a valid value never pays for paths.
type violation struct {
	rev []pathSeg // innermost first
	msg string
}

type pathSeg struct {
	name  string
	index int // >= 0: a list index; otherwise name
}

func fail(format string, args ...any) *violation {
	return &violation{msg: fmt.Sprintf(format, args...)}
}

func (vi *violation) at(i int) *violation {
	vi.rev = append(vi.rev, pathSeg{index: i})
	return vi
}

func (vi *violation) in(name string) *violation {
	vi.rev = append(vi.rev, pathSeg{name: name, index: -1})
	return vi
}

// suffix renders the path without the leading "$".
func (vi *violation) suffix() string {
	var b strings.Builder
	for i := len(vi.rev) - 1; i >= 0; i-- {
		seg := vi.rev[i]
		if seg.index >= 0 {
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(seg.index))
			b.WriteByte(']')
		} else {
			b.WriteString(segment(seg.name))
		}
	}
	return b.String()
}

func (vi *violation) path() string { return "$" + vi.suffix() }

func (vi *violation) err() *errs.Error {
	return &errs.Error{Code: errs.SchemaViolation, Msg: vi.path() + ": " + vi.msg}
}

// segment renders one property name of a path: .name for an identifier,
// ["odd name"] otherwise, so the path can be read back unambiguously.
func segment(name string) string {
	if isIdent(name) {
		return "." + name
	}
	return "[" + strconv.Quote(name) + "]"
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '_', 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

func (s *Schema) allows(t typeSet) bool { return s.types == 0 || s.types&t != 0 }

// check is Validate without the error wrapping. Order: type, enum, the
// scalar limits, then the contents of lists and objects.
func (s *Schema) check(v any) *violation {
	if s == nil {
		s = anySchema
	}
	asObj := false // an object, or Lua's {} where an object is expected
	switch x := v.(type) {
	case nil, value.Null:
		if !s.allows(tNull) {
			return s.typeFail(v)
		}
	case bool:
		if !s.allows(tBoolean) {
			return s.typeFail(v)
		}
	case float64:
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fail("%s is not a finite number", value.String(x))
		}
		if s.types != 0 && s.types&tNumber == 0 {
			if s.types&tInteger == 0 {
				return s.typeFail(v)
			}
			if x != math.Trunc(x) {
				return fail("%s is not an integer", value.String(x))
			}
		}
	case string:
		if !s.allows(tString) {
			return s.typeFail(v)
		}
	case []any:
		switch {
		case s.allows(tArray):
		case len(x) == 0 && s.types&tObject != 0:
			asObj = true // Lua's {}
		default:
			return s.typeFail(v)
		}
	case map[string]any:
		switch {
		case s.allows(tObject):
			asObj = true
		case len(x) == 0 && s.types&tArray != 0:
			// Lua's {} where a list is expected: no items to check.
		default:
			return s.typeFail(v)
		}
	default:
		return fail("Go type %T is not a value (use nil, bool, float64, string, []any or map[string]any)", v)
	}

	if s.enum != nil && !s.inEnum(v) {
		return s.enumFail(v)
	}

	switch x := v.(type) {
	case float64:
		if s.has&hasMin != 0 && x < s.min {
			return fail("%s is below minimum %s", value.String(x), value.String(s.min))
		}
		if s.has&hasMax != 0 && x > s.max {
			return fail("%s is above maximum %s", value.String(x), value.String(s.max))
		}
	case string:
		if s.has&(hasMinLen|hasMaxLen) != 0 {
			n := float64(utf8.RuneCountInString(x))
			if s.has&hasMinLen != 0 && n < s.minLen {
				return fail("length %s is below minLength %s", value.String(n), value.String(s.minLen))
			}
			if s.has&hasMaxLen != 0 && n > s.maxLen {
				return fail("length %s is above maxLength %s", value.String(n), value.String(s.maxLen))
			}
		}
	case []any:
		if asObj {
			return s.checkObject(nil)
		}
		for i, e := range x {
			if vi := s.items.check(e); vi != nil {
				return vi.at(i)
			}
		}
	case map[string]any:
		if asObj {
			return s.checkObject(x)
		}
	}
	return nil
}

func (s *Schema) inEnum(v any) bool {
	for _, e := range s.enum {
		if equal(e, v) {
			return true
		}
	}
	return false
}

// equal is value.Equal except that an empty list equals an empty table at
// any depth: both are Lua's {}, and Conform may turn one into the other.
func equal(a, b any) bool {
	switch x := a.(type) {
	case []any:
		if len(x) == 0 {
			return isEmptyContainer(b)
		}
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		if len(x) == 0 {
			return isEmptyContainer(b)
		}
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, e := range x {
			f, ok := y[k]
			if !ok || !equal(e, f) {
				return false
			}
		}
		return true
	}
	return value.Equal(a, b)
}

func isEmptyContainer(v any) bool {
	switch x := v.(type) {
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// checkObject reports the violation at the smallest property name, counting
// a missing required property at its own name, so the report does not
// depend on map order.
func (s *Schema) checkObject(m map[string]any) *violation {
	var best *violation
	bestKey := ""
	found := 0
	for i := range s.props {
		p := &s.props[i]
		x, ok := m[p.name]
		if !ok {
			if p.required {
				best, bestKey = fail("missing required property %q", p.name), p.name
				break
			}
			continue
		}
		found++
		if vi := p.schema.check(x); vi != nil {
			best, bestKey = vi.in(p.name), p.name
			break
		}
	}
	if best == nil && found == len(m) {
		return nil // no extra properties
	}
	// Extra properties: look for the smallest failing one, but only below
	// the failure already found.
	for k, x := range m {
		if best != nil && k >= bestKey || s.find(k) >= 0 {
			continue
		}
		var vi *violation
		switch s.addl {
		case addlDeny:
			vi = s.unknownFail(k)
		case addlSchema:
			if vi = s.addlSch.check(x); vi != nil {
				vi.in(k)
			}
		default:
			if vi = anySchema.check(x); vi != nil {
				vi.in(k)
			}
		}
		if vi != nil {
			best, bestKey = vi, k
		}
	}
	return best
}

func (s *Schema) unknownFail(k string) *violation {
	var names []string
	for _, p := range s.props {
		names = append(names, p.name)
	}
	if sug := suggest(k, names); sug != "" {
		return fail("unknown property %q (additionalProperties is false; did you mean %q?)", k, sug)
	}
	return fail("unknown property %q (additionalProperties is false)", k)
}

func (s *Schema) typeFail(v any) *violation {
	return fail("expected %s, got %s", orList(s.typeNames), typeOf(v))
}

func (s *Schema) enumFail(v any) *violation {
	const maxShown = 10
	var b strings.Builder
	for i, e := range s.enum {
		if i == maxShown {
			fmt.Fprintf(&b, ", … (%d more)", len(s.enum)-maxShown)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(show(e))
	}
	if len(s.enum) == 1 {
		return fail("%s is not %s", show(v), b.String())
	}
	return fail("%s is not one of %s", show(v), b.String())
}

// typeOf names the JSON type of v for messages. Unlike value.TypeName it
// says "number" for every number: "integer" would read as a type mismatch.
func typeOf(v any) string {
	switch v.(type) {
	case nil, value.Null:
		return "null"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("Go type %T", v)
}

// describe is typeOf plus the value for scalars, for compile errors.
func describe(v any) string {
	switch v.(type) {
	case bool, float64, string:
		return typeOf(v) + " " + show(v)
	}
	return typeOf(v)
}

// show renders a value for a message, cut short so one huge value cannot
// flood a log line.
func show(v any) string {
	const max = 80
	s := value.String(v)
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

// orList renders "a", "a or b", "a, b or c".
func orList(names []string) string {
	switch len(names) {
	case 0:
		return "any value"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
