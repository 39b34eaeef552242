// Package schema is the JSON Schema subset of the README's
// "Schemas", shared by plugin
// config, state key values, action payloads and tool parameters.
//
// A spec is a canonical value (package value) as it arrives from a Lua table,
// TOML or JSON. Compile checks it once and precompiles it, because Validate
// runs on every state commit and must not allocate on a valid value.
//
// Lua's {} is both an empty list and an empty table, so wherever a spec or a
// value holds an empty []any where an object is expected (or an empty map
// where a list is expected) it is taken as the expected kind. Validate
// accepts such a value; Conform turns it into the expected kind.
package schema

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/value"
)

// Schema is a compiled spec. It is immutable, so one Schema may validate from
// many goroutines. A nil *Schema accepts every value, like Any.
type Schema struct {
	types     typeSet  // 0: any type
	typeNames []string // as written, for Types, JSON and messages

	props     []prop // sorted by name: the properties, then names only in required
	hasProps  bool   // the spec had properties, even an empty one (JSON keeps it)
	required  []string
	addl      addlMode
	addlSch   *Schema // when addl is addlSchema
	items     *Schema // nil: any item
	enum      []any
	min, max  float64
	minLen    float64 // counted in runes; compared as float64 so huge limits cannot overflow
	maxLen    float64
	def       any // conformed, so Default and filled properties already fit
	has       hasFlags
	notes     map[string]any // description, title, examples, format: kept for JSON, never checked
	mayChange bool           // Conform may change a value here or below; false lets it return at once
}

// prop is one property name an object schema knows about.
type prop struct {
	name     string
	schema   *Schema // nil: any value
	declared bool    // listed in properties; otherwise only in required
	required bool
}

type hasFlags uint8

const (
	hasMin hasFlags = 1 << iota
	hasMax
	hasMinLen
	hasMaxLen
	hasDefault
)

type addlMode uint8

const (
	addlAllow addlMode = iota // the default: any extra property, any value
	addlDeny
	addlSchema
)

// typeSet is a bitmask of JSON types, so the type check on the hot path is
// one AND.
type typeSet uint8

const (
	tNull typeSet = 1 << iota
	tBoolean
	tInteger
	tNumber
	tString
	tArray
	tObject
)

var typeByName = map[string]typeSet{
	"null": tNull, "boolean": tBoolean, "integer": tInteger, "number": tNumber,
	"string": tString, "array": tArray, "object": tObject,
}

// typeNameOrder lists the type names for suggestions, in a fixed order.
var typeNameOrder = []string{"string", "number", "integer", "boolean", "array", "object", "null"}

// typeAliases catches names that Lua, Go and Python authors reach for.
var typeAliases = map[string]string{
	"int": "integer", "float": "number", "double": "number", "bool": "boolean",
	"str": "string", "list": "array", "table": "object", "map": "object",
	"dict": "object", "nil": "null", "none": "null",
}

// keywords are the keywords of the subset, in the order messages list them.
var keywords = []string{
	"type", "properties", "required", "items", "enum", "minimum", "maximum",
	"minLength", "maxLength", "default", "additionalProperties",
	"description", "title", "examples", "format",
}

// keywordAliases catch short forms that edit distance would miss.
var keywordAliases = map[string]string{
	"min": "minimum", "max": "maximum", "minlen": "minLength", "maxlen": "maxLength",
	"props": "properties", "desc": "description", "item": "items",
}

// unsupported are JSON Schema keywords outside the subset; naming them as
// such is kinder than "unknown keyword".
var unsupported = map[string]string{
	"nullable": `; add "null" to type instead`,
	"const":    "; use enum with one value instead",
}

var unsupportedPlain = []string{
	"$schema", "$id", "$ref", "$defs", "$comment", "definitions", "pattern",
	"minItems", "maxItems", "uniqueItems", "exclusiveMinimum", "exclusiveMaximum",
	"multipleOf", "oneOf", "anyOf", "allOf", "not", "if", "then", "else",
	"patternProperties", "propertyNames", "minProperties", "maxProperties",
	"dependencies", "dependentRequired", "dependentSchemas", "prefixItems",
	"contains", "readOnly", "writeOnly", "deprecated", "contentEncoding",
	"contentMediaType", "unevaluatedProperties", "unevaluatedItems",
}

func init() {
	for _, k := range unsupportedPlain {
		unsupported[k] = ""
	}
}

// Any accepts every value (finite numbers only, like every schema).
var Any = &Schema{}

// anySchema stands in for a nil *Schema inside the validator.
var anySchema = &Schema{}

// compileError names the place in the spec. It carries no errs.Code: what a
// bad schema means (plugin_load_failed, config_invalid, a Go bug) is known
// only by the caller, which wraps it with its own code.
type compileError struct {
	path string
	msg  string
}

func (e *compileError) Error() string { return "schema " + e.path + ": " + e.msg }

func errAt(path *specPath, format string, args ...any) error {
	return &compileError{path: path.String(), msg: fmt.Sprintf(format, args...)}
}

// specPath is a place in a spec, rendered only for an error: building each
// path as a string would cost quadratic memory in a deeply nested spec.
type specPath struct {
	up  *specPath
	seg string // ".items", `["odd name"]`, "[2]"; "$" at the root
}

func (p *specPath) to(seg string) *specPath { return &specPath{up: p, seg: seg} }

func (p *specPath) at(i int) *specPath { return p.to("[" + strconv.Itoa(i) + "]") }

func (p *specPath) String() string {
	n := 0
	for q := p; q != nil; q = q.up {
		n += len(q.seg)
	}
	b := make([]byte, n)
	for q := p; q != nil; q = q.up {
		n -= len(q.seg)
		copy(b[n:], q.seg)
	}
	return string(b)
}

// Compile builds a schema from its spec. Errors name the path inside the
// spec, e.g. `schema $.properties.rules.items: unknown keyword "requird"
// (did you mean "required"?)`. The spec is normalized first, so specs built
// in Go may use ints and typed slices. Errors carry no errs.Code: the caller
// knows what a bad spec means (plugin_load_failed, config_invalid) and wraps
// it with that code.
func Compile(spec any) (*Schema, error) {
	n, err := value.Normalize(spec)
	if err != nil {
		return nil, errAt(&specPath{seg: "$"}, "%v", err)
	}
	// A private copy: the schema keeps enum, default and annotation values,
	// and must not change if the caller reuses its spec.
	return compile(value.Clone(n), &specPath{seg: "$"})
}

// MustCompile is Compile for specs written in Go code, where a bad spec is a
// programming error; it panics.
func MustCompile(spec any) *Schema {
	s, err := Compile(spec)
	if err != nil {
		panic(err)
	}
	return s
}

// asObject reads a table of keywords; an empty list is Lua's {} and counts
// as an empty table.
func asObject(v any) (map[string]any, bool) {
	switch x := v.(type) {
	case map[string]any:
		return x, true
	case []any:
		if len(x) == 0 {
			return nil, true
		}
	}
	return nil, false
}

// asList reads a list; an empty table is Lua's {} and counts as an empty list.
func asList(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case map[string]any:
		if len(x) == 0 {
			return nil, true
		}
	}
	return nil, false
}

func compile(spec any, path *specPath) (*Schema, error) {
	m, ok := asObject(spec)
	if !ok {
		return nil, errAt(path, "expected a schema (a table of keywords such as type), got %s", describe(spec))
	}
	s := &Schema{}
	var reqPath *specPath
	// Sorted so the first error reported is always the same one.
	for _, k := range value.SortedKeys(m) {
		v := m[k]
		kp := path.to("." + k)
		var err error
		switch k {
		case "type":
			err = s.compileType(v, kp)
		case "properties":
			err = s.compileProperties(v, kp)
		case "required":
			err = s.compileRequired(v, kp)
			reqPath = kp
		case "items":
			if l, ok := v.([]any); ok && len(l) > 0 {
				return nil, errAt(kp, "expected one schema for every item, got a list (tuple validation is not supported)")
			}
			s.items, err = compile(v, kp)
		case "enum":
			l, ok := asList(v)
			switch {
			case !ok:
				err = errAt(kp, "expected a list of allowed values, got %s", describe(v))
			case len(l) == 0:
				err = errAt(kp, "enum lists no values, so nothing could match; list at least one")
			default:
				s.enum = l
			}
		case "minimum":
			s.min, err = number(v, kp)
			s.has |= hasMin
		case "maximum":
			s.max, err = number(v, kp)
			s.has |= hasMax
		case "minLength":
			s.minLen, err = length(v, kp)
			s.has |= hasMinLen
		case "maxLength":
			s.maxLen, err = length(v, kp)
			s.has |= hasMaxLen
		case "default":
			s.def = v
			s.has |= hasDefault
		case "additionalProperties":
			switch x := v.(type) {
			case bool:
				if !x {
					s.addl = addlDeny
				}
			default:
				s.addlSch, err = compile(v, kp)
				s.addl = addlSchema
			}
		case "description", "title", "format":
			if _, ok := v.(string); !ok {
				err = errAt(kp, "expected a string, got %s", describe(v))
			}
			s.note(k, v)
		case "examples":
			l, ok := asList(v)
			if !ok {
				err = errAt(kp, "expected a list of example values, got %s", describe(v))
			}
			if l == nil {
				l = []any{} // Lua's {}: JSON must say []
			}
			s.note(k, l)
		default:
			err = errAt(path, "%s", unknownKeyword(k))
		}
		if err != nil {
			return nil, err
		}
	}
	if err := s.finish(path, reqPath); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *Schema) note(k string, v any) {
	if s.notes == nil {
		s.notes = make(map[string]any, 2)
	}
	s.notes[k] = v
}

func (s *Schema) compileType(v any, path *specPath) error {
	if name, ok := v.(string); ok {
		t, err := typeBit(name, path)
		s.types, s.typeNames = t, []string{name}
		return err
	}
	l, ok := asList(v)
	if !ok {
		return errAt(path, "expected a type name or a list of them, got %s", describe(v))
	}
	if len(l) == 0 {
		return errAt(path, "the type list is empty, so nothing could match; name at least one type or leave type out to allow any")
	}
	for i, e := range l {
		ip := path.at(i)
		name, ok := e.(string)
		if !ok {
			return errAt(ip, "expected a type name, got %s", describe(e))
		}
		t, err := typeBit(name, ip)
		if err != nil {
			return err
		}
		if s.types&t != 0 {
			return errAt(ip, "type %q is listed twice", name)
		}
		s.types |= t
		s.typeNames = append(s.typeNames, name)
	}
	return nil
}

func typeBit(name string, path *specPath) (typeSet, error) {
	if t, ok := typeByName[name]; ok {
		return t, nil
	}
	hint := ""
	if a, ok := typeAliases[strings.ToLower(name)]; ok {
		hint = fmt.Sprintf(" (did you mean %q?)", a)
	} else if sug := suggest(name, typeNameOrder); sug != "" {
		hint = fmt.Sprintf(" (did you mean %q?)", sug)
	}
	return 0, errAt(path, "unknown type %q%s; use one of %s", name, hint, strings.Join(typeNameOrder, ", "))
}

func (s *Schema) compileProperties(v any, path *specPath) error {
	m, ok := asObject(v)
	if !ok {
		return errAt(path, "expected a table from property names to schemas, got %s", describe(v))
	}
	s.hasProps = true
	for _, name := range value.SortedKeys(m) {
		c, err := compile(m[name], path.to(segment(name)))
		if err != nil {
			return err
		}
		s.props = append(s.props, prop{name: name, schema: c, declared: true})
	}
	return nil
}

func (s *Schema) compileRequired(v any, path *specPath) error {
	l, ok := asList(v)
	if !ok {
		return errAt(path, "expected a list of property names, got %s", describe(v))
	}
	seen := make(map[string]bool, len(l))
	for i, e := range l {
		name, ok := e.(string)
		if !ok {
			return errAt(path.at(i), "expected a property name, got %s", describe(e))
		}
		if seen[name] {
			return errAt(path.at(i), "property %q is listed twice", name)
		}
		seen[name] = true
		s.required = append(s.required, name)
	}
	return nil
}

func number(v any, path *specPath) (float64, error) {
	f, ok := v.(float64)
	if !ok {
		return 0, errAt(path, "expected a number, got %s", describe(v))
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, errAt(path, "expected a finite number, got %s", value.String(f))
	}
	return f, nil
}

func length(v any, path *specPath) (float64, error) {
	f, err := number(v, path)
	if err != nil {
		return 0, err
	}
	if f < 0 || f != math.Trunc(f) {
		return 0, errAt(path, "expected a whole number of characters (0 or more), got %s", value.String(f))
	}
	return f, nil
}

// finish does the checks that span keywords, once every keyword is read.
func (s *Schema) finish(path, reqPath *specPath) error {
	if s.has&(hasMin|hasMax) == hasMin|hasMax && s.min > s.max {
		return errAt(path, "minimum %s is above maximum %s, so no number could match",
			value.String(s.min), value.String(s.max))
	}
	if s.has&(hasMinLen|hasMaxLen) == hasMinLen|hasMaxLen && s.minLen > s.maxLen {
		return errAt(path, "minLength %s is above maxLength %s, so no string could match",
			value.String(s.minLen), value.String(s.maxLen))
	}
	var extra []prop
	for i, name := range s.required {
		if j := s.find(name); j >= 0 { // s.props holds only properties yet, sorted
			s.props[j].required = true
			continue
		}
		if s.addl == addlDeny {
			return errAt(reqPath.at(i),
				"%q is required but not in properties and additionalProperties is false, so no value could match; declare it in properties",
				name)
		}
		// A required name without a schema of its own takes additionalProperties'.
		extra = append(extra, prop{name: name, schema: s.addlSch, required: true})
	}
	s.props = append(s.props, extra...)
	sort.Slice(s.props, func(i, j int) bool { return s.props[i].name < s.props[j].name })

	s.mayChange = s.types != 0 && (s.types&tArray == 0) != (s.types&tObject == 0)
	for _, p := range s.props {
		if p.declared && (p.schema.has&hasDefault != 0 || p.schema.mayChange) {
			s.mayChange = true
		}
	}
	if s.items != nil && s.items.mayChange || s.addlSch != nil && s.addlSch.mayChange {
		s.mayChange = true
	}

	if s.enum != nil {
		// Check each enum value against the rest of the schema: one that cannot
		// pass is surely a typo.
		enum := s.enum
		s.enum = nil
		for i, e := range enum {
			if vi := s.check(e); vi != nil {
				s.enum = enum
				return errAt(path.to(".enum["+strconv.Itoa(i)+"]"+vi.suffix()),
					"enum value does not fit the schema: %s", vi.msg)
			}
			// Conform must not turn an allowed value into one the enum
			// refuses, so an enum value may not lack a defaulted property.
			if c, changed := s.conform(e); changed && !equal(c, e) {
				s.enum = enum
				return errAt(path.to(".enum["+strconv.Itoa(i)+"]"),
					"enum value lacks properties that have a default, so a conformed value would not match it; write them out: %s", show(c))
			}
		}
		s.enum = enum
	}
	if s.has&hasDefault != 0 {
		if vi := s.check(s.def); vi != nil {
			return errAt(path.to(".default"+vi.suffix()), "default does not fit the schema: %s", vi.msg)
		}
		s.def, _ = s.conform(s.def)
	}
	return nil
}

// find returns the index of the property name in s.props, or -1. Binary
// search over the sorted list, so the validator never allocates to look.
// It only works once finish has sorted the list.
func (s *Schema) find(name string) int {
	lo, hi := 0, len(s.props)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if s.props[m].name < name {
			lo = m + 1
		} else {
			hi = m
		}
	}
	if lo < len(s.props) && s.props[lo].name == name {
		return lo
	}
	return -1
}

func unknownKeyword(k string) string {
	if hint, ok := unsupported[k]; ok {
		return fmt.Sprintf("keyword %q is not supported%s (supported: %s)", k, hint, strings.Join(keywords, ", "))
	}
	if a, ok := keywordAliases[strings.ToLower(k)]; ok {
		return fmt.Sprintf("unknown keyword %q (did you mean %q?)", k, a)
	}
	if sug := suggest(k, keywords); sug != "" {
		return fmt.Sprintf("unknown keyword %q (did you mean %q?)", k, sug)
	}
	return fmt.Sprintf("unknown keyword %q (supported: %s)", k, strings.Join(keywords, ", "))
}

// Default returns the top-level default, already conformed (so Lua's {} for
// an object default comes back as a table with its properties' defaults).
// The result is a copy the caller may keep.
func (s *Schema) Default() (any, bool) {
	if s == nil || s.has&hasDefault == 0 {
		return nil, false
	}
	return value.Clone(s.def), true
}

// Types returns the allowed type names as written in the spec, or nil when
// any type is allowed. The slice is a copy.
func (s *Schema) Types() []string {
	if s == nil || len(s.typeNames) == 0 {
		return nil
	}
	return append([]string(nil), s.typeNames...)
}

// JSON returns the schema as a JSON Schema object, as an LLM expects tool
// parameters. It is a fresh copy each call, so callers may add to it.
// Compile(s.JSON()) gives the same schema back.
func (s *Schema) JSON() map[string]any {
	m := map[string]any{}
	if s == nil {
		return m
	}
	switch len(s.typeNames) {
	case 0:
	case 1:
		m["type"] = s.typeNames[0]
	default:
		l := make([]any, len(s.typeNames))
		for i, n := range s.typeNames {
			l[i] = n
		}
		m["type"] = l
	}
	if s.hasProps {
		ps := map[string]any{}
		for _, p := range s.props {
			if p.declared {
				ps[p.name] = p.schema.JSON()
			}
		}
		m["properties"] = ps
	}
	if len(s.required) > 0 {
		l := make([]any, len(s.required))
		for i, n := range s.required {
			l[i] = n
		}
		m["required"] = l
	}
	if s.items != nil {
		m["items"] = s.items.JSON()
	}
	if s.enum != nil {
		m["enum"] = value.Clone(s.enum)
	}
	if s.has&hasMin != 0 {
		m["minimum"] = s.min
	}
	if s.has&hasMax != 0 {
		m["maximum"] = s.max
	}
	if s.has&hasMinLen != 0 {
		m["minLength"] = s.minLen
	}
	if s.has&hasMaxLen != 0 {
		m["maxLength"] = s.maxLen
	}
	if s.has&hasDefault != 0 {
		m["default"] = value.Clone(s.def)
	}
	switch s.addl {
	case addlDeny:
		m["additionalProperties"] = false
	case addlSchema:
		m["additionalProperties"] = s.addlSch.JSON()
	}
	for k, v := range s.notes {
		m[k] = value.Clone(v)
	}
	return m
}
