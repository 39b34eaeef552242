package value

import (
	"encoding/json"
	"testing"
)

func TestNormalize(t *testing.T) {
	type tagged struct {
		Name string `json:"name"`
		N    int    `json:"n"`
	}
	tests := []struct {
		in   any
		want any
	}{
		{nil, nil},
		{3, 3.0},
		{int64(4), 4.0},
		{float32(1.5), 1.5},
		{json.Number("2.5"), 2.5},
		{[]string{"a"}, []any{"a"}},
		{map[string]string{"k": "v"}, map[string]any{"k": "v"}},
		{[]any{1, map[string]any{"x": uint8(2)}}, []any{1.0, map[string]any{"x": 2.0}}},
		{tagged{"a", 1}, map[string]any{"name": "a", "n": 1.0}},
		{&tagged{"b", 2}, map[string]any{"name": "b", "n": 2.0}},
		{[]int{1, 2}, []any{1.0, 2.0}},
	}
	for _, tc := range tests {
		got, err := Normalize(tc.in)
		if err != nil || !Equal(got, tc.want) {
			t.Errorf("Normalize(%#v) = %#v, %v; want %#v", tc.in, got, err, tc.want)
		}
	}
	if _, err := Normalize(map[int]string{1: "x"}); err == nil {
		t.Error("int keys must fail")
	}
	if _, err := Normalize([]any{make(chan int)}); err == nil {
		t.Error("a channel must fail")
	}
	// A canonical value comes back as is, not copied.
	in := map[string]any{"a": []any{"b"}}
	out, _ := Normalize(in)
	out.(map[string]any)["z"] = 1.0
	if _, ok := in["z"]; !ok {
		t.Error("a canonical map was copied")
	}
}

func TestEqualAndClone(t *testing.T) {
	a := map[string]any{"x": []any{1.0, "s", true, nil, map[string]any{}}}
	b := Clone(a).(map[string]any)
	if !Equal(a, b) {
		t.Fatal("clone differs")
	}
	b["x"].([]any)[0] = 2.0
	if Equal(a, b) || a["x"].([]any)[0] != 1.0 {
		t.Fatal("clone shares memory")
	}
	if !Equal(nil, Null{}) || Equal(1.0, "1") || Equal([]any{1.0}, []any{1.0, 2.0}) {
		t.Fatal("equality")
	}
	if TypeName(3.0) != "integer" || TypeName(3.5) != "number" || TypeName(Null{}) != "null" || TypeName([]any{}) != "array" {
		t.Fatal("type names")
	}
	if String("a") != `"a"` || String(2.0) != "2" || String(map[string]any{"k": 1.0}) != `{"k":1}` {
		t.Fatal("rendering")
	}
}
