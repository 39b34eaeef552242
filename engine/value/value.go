// Package value is the data model shared by state, commands, schemas and the
// Lua bridge: JSON-like values in one canonical Go form.
//
// A canonical value is nil, bool, float64, string, []any, map[string]any (of
// canonical values), or Null. Values held by the store are never mutated:
// reducers and writers build new ones.
package value

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
)

// Null is the sentinel that removes a field in a merge update (awaken.null in
// Lua). Everywhere else it encodes as JSON null.
type Null struct{}

// MarshalJSON encodes Null as null.
func (Null) MarshalJSON() ([]byte, error) { return []byte("null"), nil }

// Normalize returns v in canonical form. Go integers and float32 become
// float64, typed slices and string-keyed maps become []any and map[string]any,
// json.Number becomes float64. It copies only what it must convert.
func Normalize(v any) (any, error) {
	switch x := v.(type) {
	case nil, bool, float64, string, Null:
		return v, nil
	case int:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case int32:
		return float64(x), nil
	case uint:
		return float64(x), nil
	case uint64:
		return float64(x), nil
	case uint32:
		return float64(x), nil
	case int8:
		return float64(x), nil
	case int16:
		return float64(x), nil
	case uint8:
		return float64(x), nil
	case uint16:
		return float64(x), nil
	case float32:
		return float64(x), nil
	case json.Number:
		f, err := x.Float64()
		if err != nil {
			return nil, fmt.Errorf("number %q: %w", string(x), err)
		}
		return f, nil
	case []any:
		var out []any
		for i, e := range x {
			n, err := Normalize(e)
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			if out == nil && !Same(n, e) {
				out = make([]any, len(x))
				copy(out, x[:i])
			}
			if out != nil {
				out[i] = n
			}
		}
		if out == nil {
			return x, nil
		}
		return out, nil
	case map[string]any:
		var out map[string]any
		for k, e := range x {
			n, err := Normalize(e)
			if err != nil {
				return nil, fmt.Errorf(".%s: %w", k, err)
			}
			if out == nil && !Same(n, e) {
				out = make(map[string]any, len(x))
				for k2, e2 := range x {
					out[k2] = e2
				}
			}
			if out != nil {
				out[k] = n
			}
		}
		if out == nil {
			return x, nil
		}
		return out, nil
	case []string:
		out := make([]any, len(x))
		for i, s := range x {
			out[i] = s
		}
		return out, nil
	case map[string]string:
		out := make(map[string]any, len(x))
		for k, s := range x {
			out[k] = s
		}
		return out, nil
	}
	return normalizeReflect(v)
}

// Same reports whether b is a, unchanged by a function that copies only
// what it changes (Normalize, a reshaping): the same list or map, or an
// equal scalar; containers are not compared deeply.
func Same(a, b any) bool {
	switch x := a.(type) {
	case []any:
		y, ok := b.([]any)
		return ok && len(x) == len(y) && (len(x) == 0 || &x[0] == &y[0])
	case map[string]any:
		y, ok := b.(map[string]any)
		return ok && reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer()
	case float64:
		y, ok := b.(float64)
		return ok && (x == y || (math.IsNaN(x) && math.IsNaN(y)))
	}
	return a == b
}

func normalizeReflect(v any) (any, error) {
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer:
		if rv.IsNil() {
			return nil, nil
		}
		return Normalize(rv.Elem().Interface())
	case reflect.Slice, reflect.Array:
		if rv.Kind() == reflect.Slice && rv.IsNil() {
			return []any{}, nil
		}
		out := make([]any, rv.Len())
		for i := range out {
			n, err := Normalize(rv.Index(i).Interface())
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			out[i] = n
		}
		return out, nil
	case reflect.Map:
		if rv.Type().Key().Kind() != reflect.String {
			return nil, fmt.Errorf("map with %s keys is not a value (keys must be strings)", rv.Type().Key())
		}
		out := make(map[string]any, rv.Len())
		it := rv.MapRange()
		for it.Next() {
			n, err := Normalize(it.Value().Interface())
			if err != nil {
				return nil, fmt.Errorf(".%s: %w", it.Key().String(), err)
			}
			out[it.Key().String()] = n
		}
		return out, nil
	case reflect.String:
		return rv.String(), nil
	case reflect.Bool:
		return rv.Bool(), nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return float64(rv.Int()), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return float64(rv.Uint()), nil
	case reflect.Float32, reflect.Float64:
		return rv.Float(), nil
	case reflect.Struct:
		// Structs go through JSON so their tags decide the field names.
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		var out any
		if err := json.Unmarshal(b, &out); err != nil {
			return nil, err
		}
		return out, nil
	}
	return nil, fmt.Errorf("%T is not a value (use nil, bool, number, string, list or string-keyed map)", v)
}

// TypeName names the JSON type of a canonical value: "null", "boolean",
// "number", "string", "array" or "object".
func TypeName(v any) string {
	switch x := v.(type) {
	case nil, Null:
		return "null"
	case bool:
		return "boolean"
	case float64:
		if x == math.Trunc(x) && !math.IsInf(x, 0) {
			return "integer"
		}
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

// Equal reports deep equality of canonical values.
func Equal(a, b any) bool {
	switch x := a.(type) {
	case nil, Null:
		switch b.(type) {
		case nil, Null:
			return true
		}
		return false
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !Equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !Equal(v, w) {
				return false
			}
		}
		return true
	case float64:
		y, ok := b.(float64)
		return ok && x == y
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	}
	return false
}

// Clone returns a deep copy of a canonical value, for handing a stored value
// to code that may mutate it.
func Clone(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = Clone(e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = Clone(e)
		}
		return out
	}
	return v
}

// SortedKeys returns the keys of m in order, for deterministic output.
func SortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// String renders a value compactly for messages: strings quoted, numbers
// without a needless fraction, containers as JSON.
func String(v any) string {
	switch x := v.(type) {
	case nil, Null:
		return "null"
	case string:
		return strconv.Quote(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	return string(b)
}
