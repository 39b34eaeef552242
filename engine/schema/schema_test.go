package schema

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/value"
)

// j decodes JSON for test tables, which read far better than Go literals.
func j(t testing.TB, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatalf("bad test JSON %s: %v", s, err)
	}
	return v
}

func compileJSON(t testing.TB, spec string) *Schema {
	t.Helper()
	s, err := Compile(j(t, spec))
	if err != nil {
		t.Fatalf("Compile(%s): %v", spec, err)
	}
	return s
}

// violationMsg returns the Msg of a schema_violation error, failing the test
// when err is anything else.
func violationMsg(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	if !errors.Is(err, errs.SchemaViolation) {
		t.Fatalf("error %v is not a schema_violation", err)
	}
	var e *errs.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %T is not an *errs.Error", err)
	}
	if !strings.Contains(err.Error(), e.Msg) {
		t.Fatalf("Error() %q does not contain Msg %q", err.Error(), e.Msg)
	}
	return e.Msg
}

func TestValidate(t *testing.T) {
	t.Parallel()
	const rules = `{"type":"object","properties":{"rules":{"type":"array","items":{
		"type":"object","required":["tool"],"properties":{"tool":{"type":"string"},"allow":{"type":"boolean"}}}}}}`
	tests := []struct {
		name, spec, value string
		want              string // the violation's Msg; "" means valid
	}{
		{"empty schema accepts anything", `{}`, `{"a":[1,"x",null,true]}`, ""},

		{"type string ok", `{"type":"string"}`, `"x"`, ""},
		{"type string fails", `{"type":"string"}`, `3`, `$: expected string, got number`},
		{"type number ok", `{"type":"number"}`, `3.5`, ""},
		{"type number fails", `{"type":"number"}`, `"3"`, `$: expected number, got string`},
		{"type integer ok", `{"type":"integer"}`, `-7`, ""},
		{"type integer big ok", `{"type":"integer"}`, `1e300`, ""},
		{"type integer fraction", `{"type":"integer"}`, `3.5`, `$: 3.5 is not an integer`},
		{"type integer string", `{"type":"integer"}`, `"3"`, `$: expected integer, got string`},
		{"type boolean ok", `{"type":"boolean"}`, `false`, ""},
		{"type boolean fails", `{"type":"boolean"}`, `0`, `$: expected boolean, got number`},
		{"type array ok", `{"type":"array"}`, `[1,2]`, ""},
		{"type array fails", `{"type":"array"}`, `{"a":1}`, `$: expected array, got object`},
		{"type object ok", `{"type":"object"}`, `{"a":1}`, ""},
		{"type object fails", `{"type":"object"}`, `[1]`, `$: expected object, got array`},
		{"type null ok", `{"type":"null"}`, `null`, ""},
		{"type null fails", `{"type":"null"}`, `""`, `$: expected null, got string`},
		{"type list ok first", `{"type":["string","null"]}`, `"x"`, ""},
		{"type list ok second", `{"type":["string","null"]}`, `null`, ""},
		{"type list fails", `{"type":["string","null"]}`, `1`, `$: expected string or null, got number`},
		{"type list of three fails", `{"type":["string","boolean","null"]}`, `1`, `$: expected string, boolean or null, got number`},
		{"type list integer fraction", `{"type":["integer","string"]}`, `0.5`, `$: 0.5 is not an integer`},
		{"type list number and integer", `{"type":["integer","number"]}`, `0.5`, ""},
		{"null where string expected", `{"type":"string"}`, `null`, `$: expected string, got null`},

		{"enum ok", `{"enum":["eager","deferred"]}`, `"eager"`, ""},
		{"enum fails", `{"enum":["eager","deferred"]}`, `"fast"`, `$: "fast" is not one of "eager", "deferred"`},
		{"enum fails nested", `{"properties":{"mode":{"enum":["eager","deferred"]}}}`, `{"mode":"fast"}`,
			`$.mode: "fast" is not one of "eager", "deferred"`},
		{"enum of one fails", `{"enum":[1]}`, `2`, `$: 2 is not 1`},
		{"enum deep equal ok", `{"enum":[{"a":[1,2]}]}`, `{"a":[1,2]}`, ""},
		{"enum deep equal fails", `{"enum":[{"a":[1,2]}]}`, `{"a":[2,1]}`, `$: {"a":[2,1]} is not {"a":[1,2]}`},
		{"enum type mismatch", `{"enum":[1,2]}`, `"1"`, `$: "1" is not one of 1, 2`},

		{"minimum ok", `{"minimum":1}`, `1`, ""},
		{"minimum fails", `{"minimum":1}`, `0.5`, `$: 0.5 is below minimum 1`},
		{"maximum ok", `{"maximum":10}`, `10`, ""},
		{"maximum fails", `{"maximum":10}`, `11`, `$: 11 is above maximum 10`},
		{"minimum ignores strings", `{"minimum":1}`, `"a"`, ""},
		{"minLength ok", `{"minLength":1}`, `"é"`, ""},
		{"minLength fails", `{"type":"string","minLength":1}`, `""`, `$: length 0 is below minLength 1`},
		{"maxLength counts runes", `{"maxLength":2}`, `"éé"`, ""},
		{"maxLength fails", `{"maxLength":2}`, `"abc"`, `$: length 3 is above maxLength 2`},
		{"minLength ignores numbers", `{"minLength":3}`, `1`, ""},

		{"required ok", `{"required":["tool"]}`, `{"tool":"x"}`, ""},
		{"required missing", `{"required":["tool"]}`, `{"x":1}`, `$: missing required property "tool"`},
		{"required null not allowed", `{"required":["tool"],"properties":{"tool":{"type":"string"}}}`, `{"tool":null}`, `$.tool: expected string, got null`},
		{"required null allowed", `{"required":["tool"],"properties":{"tool":{"type":["string","null"]}}}`, `{"tool":null}`, ""},
		{"required ignores non-objects", `{"required":["tool"]}`, `"x"`, ""},
		{"properties ok", `{"properties":{"n":{"type":"number"}}}`, `{"n":1,"other":"x"}`, ""},
		{"properties absent ok", `{"properties":{"n":{"type":"number"}}}`, `{}`, ""},
		{"properties fails", `{"properties":{"n":{"type":"number"}}}`, `{"n":"1"}`, `$.n: expected number, got string`},
		{"odd property name", `{"properties":{"odd name":{"type":"number"}}}`, `{"odd name":"1"}`, `$["odd name"]: expected number, got string`},
		{"property starting with digit", `{"properties":{"1st":{"type":"number"}}}`, `{"1st":"1"}`, `$["1st"]: expected number, got string`},
		{"property with quote", `{"properties":{"a\"b":{"type":"number"}}}`, `{"a\"b":"1"}`, `$["a\"b"]: expected number, got string`},
		{"additionalProperties false ok", `{"properties":{"x":{}},"additionalProperties":false}`, `{"x":1}`, ""},
		{"additionalProperties false fails", `{"properties":{"color":{}},"additionalProperties":false}`, `{"colour":1}`,
			`$: unknown property "colour" (additionalProperties is false; did you mean "color"?)`},
		{"additionalProperties false no suggestion", `{"properties":{"x":{}},"additionalProperties":false}`, `{"verylong":1}`,
			`$: unknown property "verylong" (additionalProperties is false)`},
		{"additionalProperties schema ok", `{"additionalProperties":{"type":"number"}}`, `{"a":1,"b":2}`, ""},
		{"additionalProperties schema fails", `{"properties":{"s":{"type":"string"}},"additionalProperties":{"type":"number"}}`,
			`{"s":"x","b":"2"}`, `$.b: expected number, got string`},
		{"additionalProperties schema does not apply to declared", `{"properties":{"s":{"type":"string"}},"additionalProperties":{"type":"number"}}`,
			`{"s":"x"}`, ""},
		{"additionalProperties true", `{"properties":{"x":{}},"additionalProperties":true}`, `{"y":1}`, ""},
		{"required only name takes additionalProperties", `{"required":["b"],"additionalProperties":{"type":"number"}}`,
			`{"b":"x"}`, `$.b: expected number, got string`},
		{"items ok", `{"items":{"type":"number"}}`, `[1,2,3]`, ""},
		{"items fails", `{"items":{"type":"number"}}`, `[1,"2",3]`, `$[1]: expected number, got string`},
		{"items ignores objects", `{"items":{"type":"number"}}`, `{"a":"x"}`, ""},

		{"nested path", rules, `{"rules":[{"tool":"a"},{"tool":"b"},{"tool":3}]}`, `$.rules[2].tool: expected string, got number`},
		{"nested missing", rules, `{"rules":[{"tool":"a"},{}]}`, `$.rules[1]: missing required property "tool"`},
		{"nested ok", rules, `{"rules":[{"tool":"a","allow":true}]}`, ""},
		{"first violation by sorted key", `{"properties":{"a":{"type":"string"},"m":{"type":"string"},"z":{"type":"string"}},"required":["b"]}`,
			`{"a":"ok","m":1,"z":2}`, `$: missing required property "b"`},
		{"extra below declared failure", `{"properties":{"m":{"type":"string"}},"additionalProperties":false}`,
			`{"m":1,"a":1,"z":1}`, `$: unknown property "a" (additionalProperties is false)`},
		{"declared below extra failure", `{"properties":{"b":{"type":"string"}},"additionalProperties":false}`,
			`{"b":1,"c":1}`, `$.b: expected string, got number`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := compileJSON(t, tc.spec)
			v := j(t, tc.value)
			got := violationMsg(t, s.Validate(v))
			want := tc.want
			if got != want {
				t.Errorf("Validate(%s) against %s\n got: %q\nwant: %q", tc.value, tc.spec, got, want)
			}
			// Conform agrees with Validate on what is valid.
			_, cerr := s.Conform(v)
			if (cerr == nil) != (want == "") {
				t.Errorf("Conform error %v, Validate error %q", cerr, got)
			}
		})
	}
}

// TestValidateGoValues covers values JSON cannot carry.
func TestValidateGoValues(t *testing.T) {
	t.Parallel()
	obj := MustCompile(map[string]any{"type": "object", "required": []any{"a"}})
	nullable := MustCompile(map[string]any{"type": "null"})
	str := MustCompile(map[string]any{"type": "string"})
	arr := MustCompile(map[string]any{"type": "array", "items": map[string]any{"type": "number"}})
	tests := []struct {
		name   string
		schema *Schema
		value  any
		want   string
	}{
		{"NaN against nil schema", nil, math.NaN(), `$: NaN is not a finite number`},
		{"+Inf against Any", Any, math.Inf(1), `$: +Inf is not a finite number`},
		{"-Inf deep", nil, map[string]any{"a": []any{1.0, math.Inf(-1)}}, `$.a[1]: -Inf is not a finite number`},
		{"NaN against number", MustCompile(map[string]any{"type": "number"}), math.NaN(), `$: NaN is not a finite number`},
		{"NaN in extra property", obj, map[string]any{"a": 1.0, "b": math.NaN()}, `$.b: NaN is not a finite number`},
		{"NaN in untyped items", MustCompile(map[string]any{"type": "array"}), []any{math.NaN()}, `$[0]: NaN is not a finite number`},
		{"value.Null is null", nullable, value.Null{}, ""},
		{"value.Null is not a string", str, value.Null{}, `$: expected string, got null`},
		{"non-canonical int", nil, 3, `$: Go type int is not a value (use nil, bool, float64, string, []any or map[string]any)`},
		{"non-canonical nested", nil, []any{[]string{"x"}}, `$[0]: Go type []string is not a value (use nil, bool, float64, string, []any or map[string]any)`},
		{"empty list as object", obj, []any{}, `$: missing required property "a"`},
		{"empty list as empty object", MustCompile(map[string]any{"type": "object"}), []any{}, ""},
		{"empty map as list", arr, map[string]any{}, ""},
		{"non-empty list is not an object", obj, []any{1.0}, `$: expected object, got array`},
		{"empty list with no type is a list", MustCompile(map[string]any{"required": []any{"a"}}), []any{}, ""},
		{"long value is cut", MustCompile(map[string]any{"enum": []any{"a"}}), strings.Repeat("é", 100),
			`$: "` + strings.Repeat("é", 39) + `… is not "a"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := violationMsg(t, tc.schema.Validate(tc.value))
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

// TestDeterministic runs a value with many violations through fresh maps:
// map order must not change which one is reported.
func TestDeterministic(t *testing.T) {
	t.Parallel()
	s := compileJSON(t, `{"properties":{"k10":{"type":"string"},"k20":{"type":"string"}},"additionalProperties":{"type":"boolean"}}`)
	for range 50 {
		v := map[string]any{}
		for _, k := range []string{"k30", "k05", "k20", "k10", "k15", "k01x"} {
			v[k] = 1.0
		}
		if got := violationMsg(t, s.Validate(v)); got != `$.k01x: expected boolean, got number` {
			t.Fatalf("got %q", got)
		}
	}
}

func TestCompileErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		spec any
		want string
	}{
		{"non-object spec", "string", `schema $: expected a schema (a table of keywords such as type), got string "string"`},
		{"nil spec", nil, `schema $: expected a schema (a table of keywords such as type), got null`},
		{"list spec", []any{"type"}, `schema $: expected a schema (a table of keywords such as type), got array`},
		{"unknown keyword", j(t, `{"properties":{"rules":{"items":{"requird":["x"]}}}}`),
			`schema $.properties.rules.items: unknown keyword "requird" (did you mean "required"?)`},
		{"keyword case", j(t, `{"minlength":1}`), `schema $: unknown keyword "minlength" (did you mean "minLength"?)`},
		{"keyword snake case", j(t, `{"additional_properties":false}`),
			`schema $: unknown keyword "additional_properties" (did you mean "additionalProperties"?)`},
		{"keyword transposed", j(t, `{"defualt":1}`), `schema $: unknown keyword "defualt" (did you mean "default"?)`},
		{"keyword alias", j(t, `{"min":1}`), `schema $: unknown keyword "min" (did you mean "minimum"?)`},
		{"keyword far off", j(t, `{"zzz":1}`), `schema $: unknown keyword "zzz" (supported: type, properties, required, items, enum, minimum, maximum, minLength, maxLength, default, additionalProperties, description, title, examples, format)`},
		{"unsupported keyword", j(t, `{"pattern":"x"}`), `schema $: keyword "pattern" is not supported (supported: `},
		{"nullable", j(t, `{"nullable":true}`), `schema $: keyword "nullable" is not supported; add "null" to type instead`},
		{"bad type name", j(t, `{"type":"strng"}`), `schema $.type: unknown type "strng" (did you mean "string"?); use one of string, number, integer, boolean, array, object, null`},
		{"type alias", j(t, `{"type":"int"}`), `schema $.type: unknown type "int" (did you mean "integer"?)`},
		{"bad type in list", j(t, `{"type":["string","nul"]}`), `schema $.type[1]: unknown type "nul" (did you mean "null"?)`},
		{"type not a string", j(t, `{"type":3}`), `schema $.type: expected a type name or a list of them, got number 3`},
		{"type list empty", j(t, `{"type":[]}`), `schema $.type: the type list is empty`},
		{"type list duplicate", j(t, `{"type":["string","string"]}`), `schema $.type[1]: type "string" is listed twice`},
		{"type list non-string", j(t, `{"type":["string",true]}`), `schema $.type[1]: expected a type name, got boolean true`},
		{"required not a list", j(t, `{"required":"x"}`), `schema $.required: expected a list of property names, got string "x"`},
		{"required not strings", j(t, `{"required":["a",1]}`), `schema $.required[1]: expected a property name, got number 1`},
		{"required duplicate", j(t, `{"required":["a","a"]}`), `schema $.required[1]: property "a" is listed twice`},
		{"required undeclared with additionalProperties false", j(t, `{"required":["a"],"additionalProperties":false}`),
			`schema $.required[0]: "a" is required but not in properties and additionalProperties is false`},
		{"properties not an object", j(t, `{"properties":["a"]}`), `schema $.properties: expected a table from property names to schemas, got array`},
		{"property not a schema", j(t, `{"properties":{"a":"string"}}`), `schema $.properties.a: expected a schema (a table of keywords such as type), got string "string"`},
		{"odd property path", j(t, `{"properties":{"a b":{"type":"x"}}}`), `schema $.properties["a b"].type: unknown type "x"`},
		{"items not a schema", j(t, `{"items":"string"}`), `schema $.items: expected a schema`},
		{"items tuple", j(t, `{"items":[{},{}]}`), `schema $.items: expected one schema for every item, got a list (tuple validation is not supported)`},
		{"enum not a list", j(t, `{"enum":"a"}`), `schema $.enum: expected a list of allowed values, got string "a"`},
		{"enum empty", j(t, `{"enum":[]}`), `schema $.enum: enum lists no values`},
		{"enum value wrong type", j(t, `{"type":"string","enum":["a",1]}`), `schema $.enum[1]: enum value does not fit the schema: expected string, got number`},
		{"enum value lacks default", j(t, `{"properties":{"a":{"default":1}},"enum":[{"b":1}]}`),
			`schema $.enum[0]: enum value lacks properties that have a default, so a conformed value would not match it; write them out: {"a":1,"b":1}`},
		{"minimum not a number", j(t, `{"minimum":"1"}`), `schema $.minimum: expected a number, got string "1"`},
		{"maximum NaN", map[string]any{"maximum": math.NaN()}, `schema $.maximum: expected a finite number, got NaN`},
		{"minimum above maximum", j(t, `{"minimum":2,"maximum":1}`), `schema $: minimum 2 is above maximum 1, so no number could match`},
		{"minLength negative", j(t, `{"minLength":-1}`), `schema $.minLength: expected a whole number of characters (0 or more), got -1`},
		{"maxLength fraction", j(t, `{"maxLength":1.5}`), `schema $.maxLength: expected a whole number of characters (0 or more), got 1.5`},
		{"minLength above maxLength", j(t, `{"minLength":3,"maxLength":2}`), `schema $: minLength 3 is above maxLength 2`},
		{"additionalProperties not a schema", j(t, `{"additionalProperties":"no"}`), `schema $.additionalProperties: expected a schema`},
		{"default does not fit", j(t, `{"properties":{"n":{"type":"integer","default":3.5}}}`),
			`schema $.properties.n.default: default does not fit the schema: 3.5 is not an integer`},
		{"default does not fit deep", j(t, `{"type":"object","properties":{"a":{"type":"string"}},"default":{"a":1}}`),
			`schema $.default.a: default does not fit the schema: expected string, got number`},
		{"default not in enum", j(t, `{"enum":["a"],"default":"b"}`), `schema $.default: default does not fit the schema: "b" is not "a"`},
		{"description not a string", j(t, `{"description":1}`), `schema $.description: expected a string, got number 1`},
		{"examples not a list", j(t, `{"examples":"x"}`), `schema $.examples: expected a list of example values, got string "x"`},
		{"not a value", map[string]any{"type": func() {}}, `schema $: `},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s, err := Compile(tc.spec)
			if err == nil {
				t.Fatalf("Compile succeeded, want error %q", tc.want)
			}
			if s != nil {
				t.Errorf("Compile returned a schema with its error")
			}
			if !strings.HasPrefix(err.Error(), tc.want) {
				t.Errorf("got  %q\nwant %q...", err.Error(), tc.want)
			}
			if errors.Is(err, errs.SchemaViolation) {
				t.Errorf("a compile error must not be a schema_violation: the caller knows its code")
			}
		})
	}
}

func TestCompileLuaShapes(t *testing.T) {
	t.Parallel()
	// Lua's {} may arrive as either empty container for any keyword.
	s, err := Compile(map[string]any{
		"type":       "object",
		"properties": []any{},
		"required":   map[string]any{},
		"examples":   map[string]any{},
		"additionalProperties": map[string]any{
			"items": []any{},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(map[string]any{"x": map[string]any{}}); err != nil {
		t.Error(err)
	}
	if _, err := Compile([]any{}); err != nil {
		t.Errorf("Compile({}) as a list: %v", err)
	}
	// Go specs may use ints: Compile normalizes.
	s = MustCompile(map[string]any{"type": "string", "minLength": 2, "enum": []string{"ab", "cd"}})
	if err := s.Validate("ab"); err != nil {
		t.Error(err)
	}
}

func TestMustCompilePanics(t *testing.T) {
	t.Parallel()
	defer func() {
		if recover() == nil {
			t.Error("MustCompile of a bad spec did not panic")
		}
	}()
	MustCompile(map[string]any{"type": "nope"})
}

func TestConform(t *testing.T) {
	t.Parallel()
	const deep = `{"type":"object","properties":{
		"mode":{"type":"string","default":"eager"},
		"limits":{"type":"object","default":{},"properties":{"calls":{"type":"integer","default":10},"tokens":{"type":"integer"}}},
		"rules":{"type":"array","items":{"type":"object","properties":{"allow":{"type":"boolean","default":false},"tags":{"type":"array"}}}},
		"extra":{"type":"object","additionalProperties":{"type":"object","properties":{"on":{"default":true}}}}}}`
	tests := []struct {
		name, spec string
		in         any
		want       string // JSON of the result
	}{
		{"fills top-level defaults", deep, map[string]any{}, `{"mode":"eager","limits":{"calls":10}}`},
		{"keeps given values", deep, j(t, `{"mode":"deferred","limits":{"calls":3}}`), `{"mode":"deferred","limits":{"calls":3}}`},
		{"fills at depth", deep, j(t, `{"limits":{"tokens":5}}`), `{"mode":"eager","limits":{"calls":10,"tokens":5}}`},
		{"fills inside arrays", deep, j(t, `{"rules":[{"allow":true},{}]}`),
			`{"mode":"eager","limits":{"calls":10},"rules":[{"allow":true},{"allow":false}]}`},
		{"fills in additionalProperties", deep, j(t, `{"extra":{"x":{},"y":{"on":false}}}`),
			`{"mode":"eager","limits":{"calls":10},"extra":{"x":{"on":true},"y":{"on":false}}}`},
		{"empty list becomes object", deep, []any{}, `{"mode":"eager","limits":{"calls":10}}`},
		{"empty list becomes object at depth", deep, map[string]any{"limits": []any{}, "rules": []any{[]any{}}},
			`{"mode":"eager","limits":{"calls":10},"rules":[{"allow":false}]}`},
		{"empty map becomes list", deep, map[string]any{"rules": map[string]any{}}, `{"mode":"eager","limits":{"calls":10},"rules":[]}`},
		{"empty map becomes list inside items", deep, j(t, `{"rules":[{"tags":{}}]}`),
			`{"mode":"eager","limits":{"calls":10},"rules":[{"allow":false,"tags":[]}]}`},
		{"untyped empty list stays", `{"properties":{"a":{}}}`, map[string]any{"a": []any{}}, `{"a":[]}`},
		{"object or array stays", `{"type":["object","array"]}`, []any{}, `[]`},
		{"object or null converts", `{"type":["object","null"]}`, []any{}, `{}`},
		{"null stays null", `{"type":["object","null"],"properties":{"a":{"default":1}}}`, nil, `null`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := compileJSON(t, tc.spec)
			before := value.Clone(tc.in)
			got, err := s.Conform(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(tc.in, before) {
				t.Errorf("Conform mutated its input: %v, was %v", tc.in, before)
			}
			want := j(t, tc.want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %s\nwant %s", value.String(got), tc.want)
			}
			if err := s.Validate(got); err != nil {
				t.Errorf("conformed value does not validate: %v", err)
			}
			again, err := s.Conform(got)
			if err != nil || !reflect.DeepEqual(again, got) {
				t.Errorf("Conform is not idempotent: %s, %v", value.String(again), err)
			}
		})
	}
}

func TestConformUnchanged(t *testing.T) {
	t.Parallel()
	s := compileJSON(t, `{"type":"object","properties":{"a":{"type":"object","properties":{"b":{"default":1}}},
		"l":{"type":"array","items":{"type":"object","properties":{"c":{"default":2}}}}}}`)
	in := j(t, `{"a":{"b":5},"l":[{"c":3},{"c":4}]}`).(map[string]any)
	out, err := s.Conform(in)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.ValueOf(out).UnsafePointer() != reflect.ValueOf(in).UnsafePointer() {
		t.Error("Conform copied a value that needed no change")
	}
	// Only the changed branch is copied; the rest is shared.
	in["a"] = map[string]any{}
	out, err = s.Conform(in)
	if err != nil {
		t.Fatal(err)
	}
	om := out.(map[string]any)
	if reflect.ValueOf(om["l"]).UnsafePointer() != reflect.ValueOf(in["l"]).UnsafePointer() {
		t.Error("Conform copied an unchanged branch")
	}
	if len(in["a"].(map[string]any)) != 0 {
		t.Error("Conform mutated its input")
	}
}

func TestConformError(t *testing.T) {
	t.Parallel()
	s := compileJSON(t, `{"type":"string"}`)
	out, err := s.Conform(1.0)
	if out != nil || violationMsg(t, err) != `$: expected string, got number` {
		t.Errorf("Conform(1) = %v, %v", out, err)
	}
}

func TestNoAllocs(t *testing.T) {
	s := benchSchema(t)
	v := benchValue(t)
	if n := testing.AllocsPerRun(100, func() {
		if s.Validate(v) != nil {
			t.Fatal("bench value does not validate")
		}
	}); n != 0 {
		t.Errorf("Validate allocates %v times on a valid value", n)
	}
	if n := testing.AllocsPerRun(100, func() {
		if _, err := s.Conform(v); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Conform allocates %v times on a value that needs no change", n)
	}
	var nilSchema *Schema
	if n := testing.AllocsPerRun(100, func() { _ = nilSchema.Validate(v) }); n != 0 {
		t.Errorf("nil schema Validate allocates %v times", n)
	}
	strict := compileJSON(t, `{"properties":{"a":{}},"additionalProperties":false}`)
	sv := map[string]any{"a": 1.0}
	if n := testing.AllocsPerRun(100, func() { _ = strict.Validate(sv) }); n != 0 {
		t.Errorf("additionalProperties false allocates %v times", n)
	}
}

func TestDefault(t *testing.T) {
	t.Parallel()
	s := compileJSON(t, `{"type":"object","default":[],"properties":{"a":{"default":1}}}`)
	d, ok := s.Default()
	if !ok || !reflect.DeepEqual(d, map[string]any{"a": 1.0}) {
		t.Errorf("Default() = %v, %v; want the conformed default", d, ok)
	}
	d.(map[string]any)["a"] = 2.0
	if d2, _ := s.Default(); d2.(map[string]any)["a"] != 1.0 {
		t.Error("Default returned shared state")
	}
	if _, ok := compileJSON(t, `{"type":"string"}`).Default(); ok {
		t.Error("Default reported a default that was never given")
	}
	if d, ok := compileJSON(t, `{"type":["null","string"],"default":null}`).Default(); !ok || d != nil {
		t.Errorf("null default = %v, %v", d, ok)
	}
}

func TestTypes(t *testing.T) {
	t.Parallel()
	if got := compileJSON(t, `{"type":["string","null"]}`).Types(); !reflect.DeepEqual(got, []string{"string", "null"}) {
		t.Errorf("Types() = %v", got)
	}
	if got := compileJSON(t, `{"type":"integer"}`).Types(); !reflect.DeepEqual(got, []string{"integer"}) {
		t.Errorf("Types() = %v", got)
	}
	if got := compileJSON(t, `{}`).Types(); got != nil {
		t.Errorf("Types() of any = %v, want nil", got)
	}
	s := compileJSON(t, `{"type":"string"}`)
	s.Types()[0] = "number"
	if s.Types()[0] != "string" {
		t.Error("Types returned shared state")
	}
}

// TestNilSchema checks that a nil *Schema behaves like Any in every method.
func TestNilSchema(t *testing.T) {
	t.Parallel()
	var s *Schema
	for _, v := range []any{nil, 1.0, "x", []any{1.0}, map[string]any{"a": []any{}}, value.Null{}} {
		if err := s.Validate(v); err != nil {
			t.Errorf("nil.Validate(%v) = %v", v, err)
		}
		if err := Any.Validate(v); err != nil {
			t.Errorf("Any.Validate(%v) = %v", v, err)
		}
		out, err := s.Conform(v)
		if err != nil || !reflect.DeepEqual(out, v) {
			t.Errorf("nil.Conform(%v) = %v, %v", v, out, err)
		}
	}
	if d, ok := s.Default(); ok || d != nil {
		t.Error("nil.Default reports a default")
	}
	if s.Types() != nil || Any.Types() != nil {
		t.Error("Types of any is not nil")
	}
	if len(s.JSON()) != 0 || len(Any.JSON()) != 0 {
		t.Error("JSON of any is not {}")
	}
}

func TestJSON(t *testing.T) {
	t.Parallel()
	tests := []struct{ name, spec, want string }{
		{"empty", `{}`, `{}`},
		{"full", `{"type":["object","null"],"title":"T","description":"D","examples":[{}],
			"properties":{"a":{"type":"string","minLength":1,"maxLength":3,"format":"uri"},"n":{"type":"number","minimum":0,"maximum":1,"default":0.5}},
			"required":["a"],"additionalProperties":false}`, ""},
		{"type list of one becomes a name", `{"type":["string"]}`, `{"type":"string"}`},
		{"items and enum", `{"type":"array","items":{"enum":[1,"a",null]}}`, ""},
		{"additionalProperties schema", `{"additionalProperties":{"type":"integer"}}`, ""},
		{"additionalProperties true is the default", `{"additionalProperties":true}`, `{}`},
		{"default is conformed", `{"type":"object","properties":{"a":{"default":1}},"default":{}}`,
			`{"type":"object","properties":{"a":{"default":1}},"default":{"a":1}}`},
		{"empty properties kept", `{"type":"object","properties":{}}`, ""},
		{"required-only names", `{"required":["x"]}`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spec := j(t, tc.spec)
			s := MustCompile(spec)
			got := s.JSON()
			want := spec
			if tc.want != "" {
				want = j(t, tc.want)
			}
			if !reflect.DeepEqual(any(got), want) {
				t.Errorf("JSON()\n got %s\nwant %s", value.String(got), value.String(want))
			}
			// It must survive encoding/json as a JSON Schema would.
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			again := compileJSON(t, string(b)).JSON()
			if !reflect.DeepEqual(again, got) {
				t.Errorf("round trip changed the schema\n got %s\nwant %s", value.String(again), value.String(got))
			}
			// A fresh copy each call.
			got["type"] = "mutated"
			if value.Equal(s.JSON(), got) {
				t.Error("JSON returned shared state")
			}
		})
	}
}

func benchSchema(t testing.TB) *Schema {
	return compileJSON(t, `{"type":"object","required":["tool","count"],"additionalProperties":false,"properties":{
		"tool":{"type":"string","minLength":1},
		"count":{"type":"integer","minimum":0},
		"mode":{"enum":["eager","deferred"]},
		"args":{"type":"array","items":{"type":"string"}},
		"allow":{"type":["boolean","null"],"default":true}}}`)
}

func benchValue(t testing.TB) any {
	return j(t, `{"tool":"shell","count":3,"mode":"deferred","args":["ls","-la"],"allow":false}`)
}

func BenchmarkValidate(b *testing.B) {
	s := benchSchema(b)
	v := benchValue(b)
	b.ReportAllocs()
	for b.Loop() {
		if err := s.Validate(v); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDeepNesting checks that nesting as deep as encoding/json allows costs
// linear work, in specs and in values.
func TestDeepNesting(t *testing.T) {
	t.Parallel()
	const depth = 5000
	spec := map[string]any{"type": "string"}
	var val any = 1.0
	for range depth {
		spec = map[string]any{"type": "array", "items": spec}
		val = []any{val}
	}
	s, err := Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	got := violationMsg(t, s.Validate(val))
	want := "$" + strings.Repeat("[0]", depth) + ": expected string, got number"
	if got != want {
		t.Errorf("got %.40q…, want %.40q…", got, want)
	}
	bad := map[string]any{"typ": "string"}
	for range depth {
		bad = map[string]any{"items": bad}
	}
	_, err = Compile(bad)
	want = "schema $" + strings.Repeat(".items", depth) + `: unknown keyword "typ" (did you mean "type"?)`
	if err == nil || err.Error() != want {
		t.Errorf("got %.40v…, want %.40q…", err, want)
	}
}
