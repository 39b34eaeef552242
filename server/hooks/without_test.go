package hooks

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// ReadWithout leaves out the named top-level members, wherever they come
// and whatever they hold, and keeps everything else as JSON with the same
// meaning; what is not an object comes through for the decoder to refuse.
func TestReadWithout(t *testing.T) {
	big := strings.Repeat("x", 3<<20)
	for _, tc := range []struct{ name, in, want string }{
		{"first", `{"content":"abc","file_path":"/a"}`, `{"file_path":"/a"}`},
		{"last", `{"file_path":"/a","content":"abc"}`, `{"file_path":"/a"}`},
		{"middle, spaced", "{ \"a\" : 1 ,\n \"content\" : \"x\\\"y\\\\\" , \"b\" : [1, {\"content\": 2}] }", `{"a":1,"b":[1, {"content": 2}]}`},
		{"escaped name", `{"con\u0074ent":"x","a":true}`, `{"a":true}`},
		{"any value", `{"content":{"x":["}",{"y":"]"}]},"content":[1,2],"content":null,"content":-1.5e3,"a":"b"}`, `{"a":"b"}`},
		{"only it", `{"content":"x"}`, `{}`},
		{"large", `{"hook_event_name":"beforeReadFile","content":"` + big + `","file_path":"/big"}`, `{"hook_event_name":"beforeReadFile","file_path":"/big"}`},
		{"a backslash run before the quote", `{"content":"a\\\\","b":1}`, `{"b":1}`},
		{"not an object", `[1,2]`, `[1,2]`},
		{"cut", `{"a":1,"content":"xx`, `{"a":1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ReadWithout(strings.NewReader(tc.in), 1<<20, MaxUnread, "content")
			if err != nil || string(got) != tc.want {
				t.Fatalf("got %.200q, %v; want %q", got, err, tc.want)
			}
		})
	}
	// An object whose members are not separated as JSON separates them is
	// an error, not made valid by leaving a member out.
	for _, in := range []string{`{"content":"x" "a":1}`, `{"a":1,"content":"x",}`, `{"content":"x",,"a":1}`, `{"content" "x","a":1}`, `{"a":1 "content":"x"}`} {
		if got, err := ReadWithout(strings.NewReader(in), 1<<20, MaxUnread, "content"); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
			t.Errorf("%s: %q, %v; want an error", in, got, err)
		}
	}
	// White space counts against what may be left unread: endless blanks end.
	if _, err := ReadWithout(strings.NewReader(`{"a":`+strings.Repeat(" ", 5000)+`1}`), 1<<10, 999, "content"); err == nil || !strings.Contains(err.Error(), "does not read") {
		t.Fatalf("a body of blanks: %v", err)
	}
	// The limit holds for what is kept, not for what is left out.
	got, _ := ReadWithout(strings.NewReader(`{"a":"`+big+`"}`), 100, MaxUnread, "content")
	if len(got) != 100 {
		t.Fatalf("kept %d bytes past a limit of 100", len(got))
	}
	// What is left out is bounded too.
	for _, v := range []string{`"` + strings.Repeat("y", 1000) + `"`, `[` + strings.Repeat(`1,`, 500) + `1]`} {
		if _, err := ReadWithout(strings.NewReader(`{"content":`+v+`}`), 1<<20, 999, "content"); err == nil || !strings.Contains(err.Error(), "does not read") {
			t.Fatalf("past its bound: %v", err)
		}
	}
}

// FuzzReadWithout: on any input ReadWithout ends, keeps within its limit,
// and on a JSON object gives the object without "content".
func FuzzReadWithout(f *testing.F) {
	for _, s := range []string{`{"content":"a","b":1}`, `{"a":{"content":1},"content":[{"x":"\""}]}`, `{"\u0063ontent":2}`, `[]`, `{"a":"\\"}`, `{`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ReadWithout(bytes.NewReader(data), 1<<16, MaxUnread, "content")
		if len(got) > 1<<16 {
			t.Fatalf("%d bytes past the limit", len(got))
		}
		var in map[string]any
		if err != nil || len(data) >= 1<<16 || json.Unmarshal(data, &in) != nil || in == nil {
			return
		}
		delete(in, "content")
		var out map[string]any
		if err := json.Unmarshal(got, &out); err != nil {
			t.Fatalf("%q became %q, not JSON: %v", data, got, err)
		}
		if !reflect.DeepEqual(in, out) {
			t.Fatalf("%q became %q: %v, want %v", data, got, out, in)
		}
	})
}
