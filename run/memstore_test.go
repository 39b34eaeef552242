package run

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/value"
	"github.com/awaken-lua/awaken-lua/model"
)

// The memory store keeps a thread's values and messages encoded, so a
// sidecar's thousands of stored threads are bytes the collector does not
// trace; only a thread nested too deep to read back is kept as maps.
func TestMemoryStoreKeepsThreadsEncoded(t *testing.T) {
	m := NewMemoryStore()
	th := Thread{ID: "t", Values: map[string]any{"k": "v"},
		Messages: []model.Message{{Role: "assistant", ToolCalls: []model.ToolCall{{ID: "c", Name: "Bash", Args: map[string]any{"command": "ls"}}}}}}
	if _, err := m.PutThread(context.Background(), th); err != nil {
		t.Fatal(err)
	}
	mt := m.threads["t"]
	if mt.body == nil || mt.t.Values != nil || mt.t.Messages != nil {
		t.Fatalf("kept as maps: %+v", mt)
	}
}

// fill sets every field of v, recursively: a string field to s, a slice to
// one filled element, a map[string]any to {s: s}.
func fill(v reflect.Value, s string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), s)
		}
	case reflect.Slice:
		e := reflect.New(v.Type().Elem()).Elem()
		fill(e, s)
		v.Set(reflect.Append(reflect.MakeSlice(v.Type(), 0, 1), e))
	case reflect.Map:
		v.Set(reflect.ValueOf(map[string]any{s: s}))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int64:
		v.SetInt(1)
	}
}

// checkThreadBody fails unless appendThreadBody writes for th exactly what
// json.Marshal writes for its threadBody, or fails where json.Marshal
// cannot encode it the same way.
func checkThreadBody(t *testing.T, th Thread) {
	t.Helper()
	got, err := appendThreadBody(nil, th)
	want, werr := json.Marshal(threadBody{Values: th.Values, Messages: th.Messages, Aside: th.Aside})
	if err != nil {
		if werr == nil && json.Valid(want) {
			t.Fatalf("appendThreadBody failed (%v) where encoding/json wrote %s", err, want)
		}
		return
	}
	if werr != nil || !bytes.Equal(got, want) {
		t.Fatalf("appendThreadBody wrote\n%s\nencoding/json\n%s (%v)", got, want, werr)
	}
	if n := bodySize(th); n != len(got) || cap(got) != len(got) {
		t.Fatalf("bodySize %d, wrote %d bytes into a buffer of %d", n, len(got), cap(got))
	}
}

// appendThreadBody writes what encoding/json would, for every field of
// model.Message and model.ToolCall (a field added to either and not to the
// encoder fails here), for empty and nil parts, and for strings that need
// escaping.
func TestThreadBodyMatchesEncodingJSON(t *testing.T) {
	var m model.Message
	fill(reflect.ValueOf(&m).Elem(), "x")
	if len(m.ToolCalls) != 1 || len(m.ToolCalls[0].Args) != 1 {
		t.Fatalf("fill did not reach the tool calls: %+v", m)
	}
	for _, th := range []Thread{
		{},
		{Values: map[string]any{}, Messages: []model.Message{}, Aside: map[string]any{}},
		{Values: map[string]any{"n": 1e21, "m": map[string]any{"k": []any{"a", true, nil, math.Copysign(0, -1)}}}, Messages: []model.Message{m, {}},
			Aside: map[string]any{"old": "x"}},
		{Messages: []model.Message{{Role: "user", Content: "<b> & \"q\" \u2028 \\ \x00 ü \xff"},
			{Role: "assistant", ToolCalls: []model.ToolCall{{ID: "c1", Name: "Bash"}, {ID: "c2", Args: map[string]any{}}}},
			{Role: "assistant", ToolCalls: []model.ToolCall{}}}},
	} {
		checkThreadBody(t, th)
	}
}

func FuzzThreadBody(f *testing.F) {
	f.Add("user", "hi <there>", "c1", `{"command":"ls","n":1.5}`, `{"k":[1,null,{"a":"\u00fc"}]}`)
	f.Add("", "\xff\xfe", "", `{}`, `null`)
	f.Fuzz(func(t *testing.T, role, content, id, args, values string) {
		th := Thread{Messages: []model.Message{{Role: role, Content: content, ToolCallID: id}}}
		if v, err := value.ParseJSON([]byte(args)); err == nil {
			a, _ := v.(map[string]any)
			th.Messages = append(th.Messages, model.Message{Role: "assistant", ToolCalls: []model.ToolCall{{ID: id, Name: role, Args: a}}})
		}
		if v, err := value.ParseJSON([]byte(values)); err == nil {
			th.Values, _ = v.(map[string]any)
			th.Aside = map[string]any{content: v}
		}
		checkThreadBody(t, th)
	})
}

// The whole thread's JSON may nest 10000 levels, as encoding/json reads:
// a thread within that is kept encoded, one past it as a copy (either way
// it reads back whole: TestMemoryStoreKeepsACopy).
func TestMemoryStoreEncodesUpToTheDepthLimit(t *testing.T) {
	nest := func(n int) any {
		v := any("leaf")
		for range n {
			v = []any{v}
		}
		return v
	}
	for _, c := range []struct {
		name    string
		th      Thread
		encoded bool
	}{
		// The body object, the values map, then the value's arrays.
		{"values at the limit", Thread{Values: map[string]any{"v": nest(9998)}}, true},
		{"values past it", Thread{Values: map[string]any{"v": nest(9999)}}, false},
		{"aside past it", Thread{Aside: map[string]any{"v": nest(9999)}}, false},
		// The body, messages, the message, tool_calls, the call, the args map.
		{"args at the limit", Thread{Messages: []model.Message{{ToolCalls: []model.ToolCall{{Args: map[string]any{"v": nest(9994)}}}}}}, true},
		{"args past it", Thread{Messages: []model.Message{{ToolCalls: []model.ToolCall{{Args: map[string]any{"v": nest(9995)}}}}}}, false},
	} {
		mt := keepThread(c.th)
		if (mt.body != nil) != c.encoded {
			t.Errorf("%s: encoded %v, want %v", c.name, mt.body != nil, c.encoded)
		}
		if mt.body != nil && !json.Valid(mt.body) {
			t.Errorf("%s: encoding/json cannot read the body back", c.name)
		}
	}
}
