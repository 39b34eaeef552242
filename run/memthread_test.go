package run

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/value"
	"github.com/awaken-lua/awaken-lua/model"
)

// exact reports whether a and b are the same canonical value: the same
// types (a nil list is not an empty one, Null is not nil), the same
// float64 bits, the same string bytes.
func exact(a, b any) bool {
	switch x := a.(type) {
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	case []any:
		y, ok := b.([]any)
		if !ok || (x == nil) != (y == nil) || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !exact(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || (x == nil) != (y == nil) || len(x) != len(y) {
			return false
		}
		for k, v := range x {
			w, ok := y[k]
			if !ok || !exact(v, w) {
				return false
			}
		}
		return true
	}
	return reflect.TypeOf(a) == reflect.TypeOf(b) && a == b
}

// sameThread fails unless got is want, field by field, values exactly.
func sameThread(t *testing.T, got, want Thread) {
	t.Helper()
	if got.ID != want.ID || got.Waiting != want.Waiting || got.SavedBy != want.SavedBy {
		t.Fatalf("thread %+v, want %+v", got, want)
	}
	if !exact(got.Values, want.Values) || !exact(got.Aside, want.Aside) {
		t.Fatalf("values %#v aside %#v, want %#v and %#v", got.Values, got.Aside, want.Values, want.Aside)
	}
	if (got.Messages == nil) != (want.Messages == nil) || len(got.Messages) != len(want.Messages) {
		t.Fatalf("messages %#v, want %#v", got.Messages, want.Messages)
	}
	for i, w := range want.Messages {
		g := got.Messages[i]
		if g.Role != w.Role || g.Content != w.Content || g.ToolCallID != w.ToolCallID ||
			(g.ToolCalls == nil) != (w.ToolCalls == nil) || len(g.ToolCalls) != len(w.ToolCalls) {
			t.Fatalf("message %d: %#v, want %#v", i, g, w)
		}
		for j, wc := range w.ToolCalls {
			gc := g.ToolCalls[j]
			if gc.ID != wc.ID || gc.Name != wc.Name || !exact(gc.Args, wc.Args) {
				t.Fatalf("message %d call %d: %#v, want %#v", i, j, gc, wc)
			}
		}
	}
}

// roundTrip saves th in a fresh store and reads it back.
func roundTrip(t *testing.T, th Thread) (Thread, *memThread) {
	t.Helper()
	m := NewMemoryStore()
	ctx := context.Background()
	if _, err := m.PutThread(ctx, th); err != nil {
		t.Fatal(err)
	}
	got, ok, err := m.Thread(ctx, th.ID)
	if err != nil || !ok {
		t.Fatalf("read back: %v %v", ok, err)
	}
	return got, m.threads[th.ID]
}

func nest(n int, leaf any) any {
	v := leaf
	for range n {
		v = []any{v}
	}
	return v
}

// The memory store gives back, from its pointer-free body, exactly what
// the deep copy it kept before gave back (cloneThread): what JSON would
// change (invalid UTF-8, Null, nil against empty, -0 and NaN) included.
func TestMemoryStoreGivesBackWhatTheCopyDid(t *testing.T) {
	many := map[string]any{}
	for i := range 300 {
		many[strings.Repeat("k", i)] = float64(i)
	}
	long := strings.Repeat("ü\xff", 200)
	for _, c := range []struct {
		name string
		th   Thread
	}{
		{"empty", Thread{ID: "t"}},
		{"empty, not nil", Thread{ID: "t", Values: map[string]any{}, Aside: map[string]any{}, Messages: []model.Message{}}},
		{"scalars", Thread{ID: "t", Waiting: "run1", SavedBy: "run0", Values: map[string]any{
			"nil": nil, "null": value.Null{}, "t": true, "f": false, "zero": 0.0, "negzero": math.Copysign(0, -1),
			"nan": math.Float64frombits(0x7ff8000000000abc), "inf": math.Inf(-1), "big": 1e300, "tiny": 5e-324,
			"s": "", "long": long}}},
		{"invalid UTF-8 in keys and strings", Thread{ID: "t", Values: map[string]any{"\xff": "\xfe", "\xfe": "x"},
			Messages: []model.Message{{Role: "\xc3", Content: "a\x00b\xed\xa0\x80", ToolCallID: "\xff"}}}},
		{"Null and nil inside containers", Thread{ID: "t", Values: map[string]any{
			"list": []any{value.Null{}, nil, []any(nil), map[string]any(nil), []any{}, map[string]any{}},
			"obj":  map[string]any{"n": value.Null{}, "l": []any(nil), "m": map[string]any(nil)}}}},
		{"many entries", Thread{ID: "t", Aside: many}},
		{"deep", Thread{ID: "t", Values: map[string]any{"d": nest(2000, "leaf")}}},
		{"messages", Thread{ID: "t", Messages: []model.Message{
			{Role: "user", Content: long},
			{Role: "assistant", ToolCalls: []model.ToolCall{}},
			{Role: "assistant", ToolCalls: []model.ToolCall{{ID: "c1", Name: "Bash"}, {ID: "c2", Args: map[string]any{}},
				{ID: "c3", Name: "Edit", Args: map[string]any{"path": "a.go", "n": 2.5, "opts": []any{true, value.Null{}}}}}},
			{Role: "tool", ToolCallID: "c3", Content: "ok"}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, mt := roundTrip(t, c.th)
			if mt.body == nil || mt.t.Values != nil || mt.t.Aside != nil || mt.t.Messages != nil {
				t.Fatalf("not kept as a body: %+v", mt.t)
			}
			sameThread(t, got, cloneThread(c.th))
		})
	}
}

// fill sets every field of v to something not zero, recursively, and
// fails on a kind it does not know: a field added to Thread,
// model.Message or model.ToolCall must be taught to the body (and here).
func fill(t *testing.T, v reflect.Value, s string) {
	switch v.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Uint64:
		v.SetUint(7)
	case reflect.Struct:
		for i := range v.NumField() {
			fill(t, v.Field(i), s+v.Type().Field(i).Name)
		}
	case reflect.Slice:
		e := reflect.New(v.Type().Elem()).Elem()
		fill(t, e, s)
		v.Set(reflect.Append(reflect.MakeSlice(v.Type(), 0, 1), e))
	case reflect.Map:
		if v.Type() != reflect.TypeFor[map[string]any]() {
			t.Fatalf("fill: a %s field; teach the memory store's thread body about it", v.Type())
		}
		v.Set(reflect.ValueOf(map[string]any{s: s}))
	default:
		t.Fatalf("fill: a %s field; teach the memory store's thread body about it", v.Type())
	}
}

// Every field of a thread, its messages and their calls comes back: one
// the body forgot fails here.
func TestMemoryStoreBodyKeepsEveryField(t *testing.T) {
	var th Thread
	fill(t, reflect.ValueOf(&th).Elem(), "x")
	if len(th.Messages) != 1 || len(th.Messages[0].ToolCalls) != 1 || th.Messages[0].ToolCalls[0].Args == nil {
		t.Fatalf("fill did not reach the calls: %+v", th)
	}
	th.Revision = 0 // the store's to set
	got, mt := roundTrip(t, th)
	if mt.body == nil {
		t.Fatal("kept as a copy")
	}
	th.Revision = got.Revision
	if !reflect.DeepEqual(got, th) {
		t.Fatalf("got  %#v\nwant %#v", got, th)
	}
}

// A value outside the canonical forms cannot go in a body: that thread is
// kept as a copy, and reads back as one (its canonical parts copied, so
// changing what was put or what was read does not change what is kept).
func TestMemoryStoreKeepsOtherValuesAsACopy(t *testing.T) {
	ctx := context.Background()
	m := NewMemoryStore()
	th := Thread{ID: "c", Values: map[string]any{"n": 3, "l": []any{"a"}}}
	if _, err := m.PutThread(ctx, th); err != nil {
		t.Fatal(err)
	}
	if m.threads["c"].body != nil {
		t.Fatal("kept as a body")
	}
	th.Values["l"].([]any)[0] = "changed"
	got, _, _ := m.Thread(ctx, "c")
	got.Values["l"].([]any)[0] = "changed too"
	if again, _, _ := m.Thread(ctx, "c"); again.Values["l"].([]any)[0] != "a" || again.Values["n"] != 3 {
		t.Fatalf("the copy changed: %#v", again.Values)
	}

	for _, th := range []Thread{
		{ID: "t", Values: map[string]any{"n": 3}},
		{ID: "t", Aside: map[string]any{"l": []any{[]string{"a"}}}},
		{ID: "t", Messages: []model.Message{{ToolCalls: []model.ToolCall{{Args: map[string]any{"x": float32(1)}}}}}},
	} {
		got, mt := roundTrip(t, th)
		if mt.body != nil {
			t.Fatalf("%+v kept as a body", th)
		}
		th.Revision = got.Revision
		if !reflect.DeepEqual(got, th) {
			t.Fatalf("got %#v, want %#v", got, th)
		}
	}
}

// What the store keeps is its own: changing the thread given to PutThread,
// or one Thread returned, changes nothing stored.
func TestMemoryStoreThreadIsACopy(t *testing.T) {
	ctx := context.Background()
	mk := func() Thread {
		return Thread{ID: "t", Values: map[string]any{"k": []any{"v"}},
			Messages: []model.Message{{Role: "assistant", ToolCalls: []model.ToolCall{{ID: "c", Args: map[string]any{"a": "b"}}}}}}
	}
	m := NewMemoryStore()
	th := mk()
	if _, err := m.PutThread(ctx, th); err != nil {
		t.Fatal(err)
	}
	th.Values["k"].([]any)[0] = "changed"
	th.Messages[0].ToolCalls[0].Args["a"] = "changed"
	got, _, _ := m.Thread(ctx, "t")
	got.Values["k"].([]any)[0] = "changed too"
	got.Messages[0].Role = "changed too"
	again, _, _ := m.Thread(ctx, "t")
	want := mk()
	want.Revision = again.Revision
	sameThread(t, again, want)
}

// The reader of a body never panics, whatever the bytes, and reads back
// every thread the writer wrote as the copy would have.
func FuzzMemoryStoreBody(f *testing.F) {
	body := sampleBody()
	f.Add(body, "", "")
	f.Add(body[:len(body)/2], "", "")
	f.Add([]byte(`{"command":"ls","n":1.5}`), "user", "hi \xff")
	f.Add([]byte(`[1,null,{"a":"\u00fc"},[],{}]`), "", "")
	f.Fuzz(func(t *testing.T, js []byte, role, content string) {
		// Arbitrary bytes as a body: an error, never a panic.
		mt := memThread{t: Thread{ID: "t"}, body: js}
		_, _ = mt.thread()

		v, err := value.ParseJSON(js)
		if err != nil {
			return
		}
		args, _ := v.(map[string]any)
		th := Thread{ID: "t", Values: map[string]any{content: v, "list": []any{v, value.Null{}}}, Aside: args,
			Messages: []model.Message{{Role: role, Content: content, ToolCalls: []model.ToolCall{{ID: role, Name: content, Args: args}}}}}
		kept := keepThread(th)
		if kept.body == nil {
			t.Fatalf("%#v kept as a copy", th)
		}
		got, err := kept.thread()
		if err != nil {
			t.Fatal(err)
		}
		sameThread(t, got, cloneThread(th))
	})
}

// sampleBody is a body of every kind of part, for the reader's tests.
func sampleBody() []byte {
	return keepThread(Thread{ID: "t", Values: map[string]any{"k": []any{1.5, "s", true, nil, value.Null{}, map[string]any{"a": false}}},
		Messages: []model.Message{{Role: "assistant", ToolCalls: []model.ToolCall{{ID: "c", Name: "Bash", Args: map[string]any{"command": "ls"}}}},
			{Role: "tool", ToolCallID: "c", Content: "ok"}, {Role: "user", ToolCalls: []model.ToolCall{}}}}).body
}

// A body cut short, with a byte too many or a bad tag is an error, and a
// body whose lengths claim more than it holds allocates no more than its
// size would: the reader never trusts a length past the bytes left.
func TestMemoryStoreBodyReaderRefuses(t *testing.T) {
	read := func(body []byte) error {
		mt := memThread{t: Thread{ID: "t"}, body: body}
		_, err := mt.thread()
		return err
	}
	body := sampleBody()
	if err := read(body); err != nil {
		t.Fatalf("the sample does not read: %v", err)
	}
	for n := range len(body) {
		if read(body[:n]) == nil {
			t.Fatalf("a body cut at %d of %d bytes reads", n, len(body))
		}
	}
	if read(append(body[:len(body):len(body)], 0)) == nil {
		t.Fatal("a body with a byte after the messages reads")
	}
	if read([]byte{tagNilObject, tagNilObject, 0, 99}) == nil {
		t.Fatal("trailing garbage reads")
	}
	if read(append(append([]byte{tagObject}, bytes.Repeat([]byte{0xff}, 10)...), 1)) == nil {
		t.Fatal("a length past 64 bits reads")
	}
	// Nested lists of 8,000 elements each, every length within the
	// bytes left: read naively, 16 KB would allocate a third of a
	// gigabyte.
	var bomb []byte
	bomb = append(bomb, tagObject, 1, 1, 'k')
	for len(bomb) < 16<<10 {
		bomb = binary.AppendUvarint(append(bomb, tagList), 8000)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if read(bomb) == nil {
		t.Fatal("the bomb reads")
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > 8<<20 {
		t.Fatalf("reading a 16 KB body allocated %d bytes", got)
	}
}
