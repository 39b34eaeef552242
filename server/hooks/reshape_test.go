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
