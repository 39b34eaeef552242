package hooks

import (
	"encoding/json"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/value"
)

// reshape puts back what a Lua copy of a tool output loses (an empty
// list, a null member) and nothing else.
func TestReshape(t *testing.T) {
	for _, tc := range []struct {
		name, orig, out, want string
	}{
		{"an empty list read back as an empty table", `{"filenames":[],"n":0}`, `{"filenames":{},"n":0}`, `{"filenames":[],"n":0}`},
		{"a null member dropped", `{"appliedLimit":null,"n":1}`, `{"n":1}`, `{"appliedLimit":null,"n":1}`},
		{"nested, in a list", `{"todos":[{"tags":[],"x":null}]}`, `{"todos":[{"tags":{}}]}`, `{"todos":[{"tags":[],"x":null}]}`},
		{"a real change kept", `{"stdout":"ghp_1","stderr":"","tags":[]}`, `{"stdout":"[REDACTED]","stderr":"","tags":{}}`, `{"stderr":"","stdout":"[REDACTED]","tags":[]}`},
		{"a member the plugin removed on purpose", `{"a":"x","b":"y"}`, `{"a":"x"}`, `{"a":"x"}`},
		{"a non-empty object for a list stays", `{"l":[]}`, `{"l":{"k":1}}`, `{"l":{"k":1}}`},
		{"another kind stays", `{"stdout":"x"}`, `"redacted"`, `"redacted"`},
		{"a list that grew", `[[]]`, `[{},{}]`, `[[],{}]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			orig, out := parse(t, tc.orig), parse(t, tc.out)
			before, _ := json.Marshal(out)
			got, _ := json.Marshal(reshape(orig, out))
			if string(got) != tc.want {
				t.Errorf("reshape = %s, want %s", got, tc.want)
			}
			if after, _ := json.Marshal(out); string(after) != string(before) {
				t.Errorf("reshape modified its argument: %s, was %s", after, before)
			}
		})
	}
	// A nil object (no Lua conversion makes one, a Go plugin might).
	if got := reshape(map[string]any{"a": nil}, map[string]any(nil)); !value.Equal(got, map[string]any{"a": nil}) {
		t.Errorf("reshape into a nil object: %#v", got)
	}
	// What only reshape tells apart: unchanged after the round trip.
	orig := parse(t, `{"filenames":[],"appliedLimit":null,"truncated":false}`)
	if !value.Equal(reshape(orig, parse(t, `{"filenames":{},"truncated":false}`)), orig) {
		t.Error("a Lua copy of an unchanged output should be no change")
	}
}

func parse(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	v, err := value.Normalize(v)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// lossy is what a Lua copy makes of a value: an empty list comes back an
// empty object, and a null member is dropped (a null in a list stays,
// as awaken.null).
func lossy(v any) any {
	switch x := v.(type) {
	case []any:
		if len(x) == 0 {
			return map[string]any{}
		}
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = lossy(e)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if e != nil {
				out[k] = lossy(e)
			}
		}
		return out
	}
	return v
}

// FuzzReshape: whatever the tool output, reshape undoes what a Lua copy
// loses, and modifies neither of its arguments.
func FuzzReshape(f *testing.F) {
	for _, s := range []string{`{"filenames":[],"appliedLimit":null}`, `[[],{},null,[null,[]]]`, `{"a":{"b":[{"c":null,"d":[]}]}}`, `"x"`, `{}`, `[]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var raw any
		if json.Unmarshal(b, &raw) != nil {
			return
		}
		v, err := value.Normalize(raw)
		if err != nil {
			return
		}
		out := lossy(v)
		before, _ := json.Marshal(out)
		orig, _ := json.Marshal(v)
		got := reshape(v, out)
		if !value.Equal(got, v) {
			g, _ := json.Marshal(got)
			t.Fatalf("reshape(%s, its Lua copy) = %s", orig, g)
		}
		if a, _ := json.Marshal(out); string(a) != string(before) {
			t.Fatalf("reshape modified the copy: %s, was %s", a, before)
		}
		if a, _ := json.Marshal(v); string(a) != string(orig) {
			t.Fatalf("reshape modified the original: %s, was %s", a, orig)
		}
	})
}
