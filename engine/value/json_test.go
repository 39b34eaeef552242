package value

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
)

const callBody = `{"call":{"id":"c1","name":"fs_read","args":{"path":"src/main.go","line":12}}}`

func TestParseJSON(t *testing.T) {
	tests := []struct {
		in   string
		want any
	}{
		{`null`, nil},
		{` true `, true},
		{"\t\r\nfalse\n", false},
		{`0`, 0.0},
		{`-0.5`, -0.5},
		{`12`, 12.0},
		{`1e3`, 1000.0},
		{`1E+2`, 100.0},
		{`1.5e-3`, 0.0015},
		{`123456789012345`, 123456789012345.0},
		{`12345678901234567890`, 12345678901234567890.0},
		{`9007199254740993`, 9007199254740992.0},
		{`1e-400`, 0.0},
		{`1.7976931348623157e308`, math.MaxFloat64},
		{`4.9e-324`, 5e-324},
		{`""`, ""},
		{`"héllo"`, "héllo"},
		{`"\"\\\/\b\f\n\r\t"`, "\"\\/\b\f\n\r\t"},
		{`"\u0041\u00e9\u20AC"`, "Aé€"},
		{`"\ud83d\ude00"`, "😀"},
		{`"\uD83D\uDE00x"`, "😀x"},
		{`"\ud800"`, "\ufffd"},
		{`"\udc00"`, "\ufffd"},
		{`"\ud800x"`, "\ufffdx"},
		{`"\ud800\u0041"`, "\ufffdA"},
		{`"\ud800\ud800\udc00"`, "\ufffd𐀀"},
		{`"\udc00\ud800\udc00"`, "\ufffd𐀀"},
		{`"\ud800\n"`, "\ufffd\n"},
		{"\"a\xffb\"", "a\ufffdb"},
		{"\"\xe2\x82\"", "\ufffd\ufffd"},
		{"\"\xed\xa0\x80\"", "\ufffd\ufffd\ufffd"},
		{"\"\xc0\xaf\"", "\ufffd\ufffd"},
		{"\"\xff\\n\"", "\ufffd\n"},
		{"\"\x7f\"", "\x7f"},
		{`"<>&` + "\u2028" + `"`, "<>&\u2028"},
		{`[]`, []any{}},
		{`[ ]`, []any{}},
		{`{}`, map[string]any{}},
		{`[1,"a",null,true,[],{}]`, []any{1.0, "a", nil, true, []any{}, map[string]any{}}},
		{`{"a":1,"a":2}`, map[string]any{"a": 2.0}},
		{`{"a":{"x":1},"a":[2]}`, map[string]any{"a": []any{2.0}}},
		{`{"\u0061":1,"a":2}`, map[string]any{"a": 2.0}},
		{"{\"\xff\":1}", map[string]any{"\ufffd": 1.0}},
		{` { "k" : [ 1 , 2 ] } `, map[string]any{"k": []any{1.0, 2.0}}},
		{callBody, map[string]any{"call": map[string]any{"id": "c1", "name": "fs_read",
			"args": map[string]any{"path": "src/main.go", "line": 12.0}}}},
		{strings.Repeat("[", 10000) + strings.Repeat("]", 10000), nest(10000)},
	}
	for _, tc := range tests {
		got, err := ParseJSON([]byte(tc.in))
		if err != nil {
			t.Errorf("ParseJSON(%.40q): %v", tc.in, err)
			continue
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParseJSON(%.40q) = %#v, want %#v", tc.in, got, tc.want)
		}
		checkStdlib(t, []byte(tc.in))
	}

	// Containers beyond the inline size spill onto the scratch stacks while
	// nested ones use them too; strings span several arena chunks and some
	// exceed the arena size.
	var big strings.Builder
	big.WriteString(`{"long":"` + strings.Repeat("x", 300) + `","esc":"` + strings.Repeat(`é`, 100) + `",`)
	for i := range 20 {
		fmt.Fprintf(&big, `"k%d":[`, i)
		for j := range 20 {
			fmt.Fprintf(&big, `{"a%d":"v%d","b":[1,2,3,4,5,6,7,8,9,10,"s%d"],"c":{}},`, j, j, j)
		}
		big.WriteString(`{"x":1,"x":2,"y":3,"z":4,"w":5,"v":6,"u":7,"t":8,"s":9,"x":10}],`)
	}
	big.WriteString(`"end":true}`)
	checkStdlib(t, []byte(big.String()))

	if got, _ := ParseJSON([]byte(`-0`)); !math.Signbit(got.(float64)) {
		t.Errorf("ParseJSON(-0) = %v, want negative zero", got)
	}
	if got, _ := ParseJSON([]byte(`-0.0e1`)); !math.Signbit(got.(float64)) {
		t.Errorf("ParseJSON(-0.0e1) = %v, want negative zero", got)
	}
}

func nest(n int) any {
	var v any = []any{}
	for i := 1; i < n; i++ {
		v = []any{v}
	}
	return v
}

func TestParseJSONErrors(t *testing.T) {
	tests := []struct {
		in, err string
	}{
		{``, "unexpected end of JSON input at offset 0"},
		{`   `, "unexpected end of JSON input at offset 3"},
		{`x`, "invalid character 'x' looking for beginning of value at offset 0"},
		{`nul`, "unexpected end of JSON input"},
		{`nulL`, "invalid character 'L' in literal null (expecting 'l') at offset 3"},
		{`truex`, "invalid character 'x' after top-level value at offset 4"},
		{`True`, "invalid character 'T' looking for beginning of value"},
		{`1 2`, "invalid character '2' after top-level value at offset 2"},
		{`{} {}`, "after top-level value"},
		{`+1`, "invalid character '+' looking for beginning of value"},
		{`01`, "invalid character '1' after top-level value at offset 1"},
		{`-01`, "invalid character '1' after top-level value"},
		{`[01]`, "invalid character '1' after array element at offset 2"},
		{`1.`, "unexpected end of JSON input"},
		{`1.e5`, "invalid character 'e' after decimal point in numeric literal at offset 2"},
		{`.5`, "invalid character '.' looking for beginning of value"},
		{`-`, "unexpected end of JSON input"},
		{`-a`, "invalid character 'a' in numeric literal at offset 1"},
		{`- 1`, "invalid character ' ' in numeric literal"},
		{`1e`, "unexpected end of JSON input"},
		{`1e+`, "unexpected end of JSON input"},
		{`1ex`, "invalid character 'x' in exponent of numeric literal at offset 2"},
		{`0x10`, "invalid character 'x' after top-level value"},
		{`NaN`, "invalid character 'N' looking for beginning of value"},
		{`Infinity`, "invalid character 'I' looking for beginning of value"},
		{`-Infinity`, "invalid character 'I' in numeric literal"},
		{`1e400`, "number 1e400 out of float64 range at offset 0"},
		{`[-1e309]`, "number -1e309 out of float64 range at offset 1"},
		{`"abc`, "unexpected end of JSON input at offset 4"},
		{`"a\`, "unexpected end of JSON input"},
		{"\"a\nb\"", `invalid character '\n' in string literal at offset 2`},
		{"\"\x00\"", `invalid character '\x00' in string literal at offset 1`},
		{"\"\x1f\"", `invalid character '\x1f' in string literal`},
		{`"\x"`, "invalid character 'x' in string escape code at offset 2"},
		{`"\'"`, `invalid character '\'' in string escape code`},
		{`"\u12"`, `invalid character '"' in \u hexadecimal character escape at offset 5`},
		{`"\u12g4"`, `invalid character 'g' in \u hexadecimal character escape`},
		{`"\ud800\u12"`, `invalid character '"' in \u hexadecimal character escape`},
		{`"\ud800\uzzzz"`, `invalid character 'z' in \u hexadecimal character escape`},
		{`[`, "unexpected end of JSON input"},
		{`[1`, "unexpected end of JSON input"},
		{`[1,`, "unexpected end of JSON input"},
		{`[1,]`, "invalid character ']' looking for beginning of value at offset 3"},
		{`[1 2]`, "invalid character '2' after array element"},
		{`{`, "unexpected end of JSON input"},
		{`{"a"`, "unexpected end of JSON input"},
		{`{"a" 1}`, "invalid character '1' after object key at offset 5"},
		{`{"a":}`, "invalid character '}' looking for beginning of value"},
		{`{"a":1,}`, "invalid character '}' looking for beginning of object key string at offset 7"},
		{`{"a":1 "b":2}`, "invalid character '\"' after object key:value pair"},
		{`{1:2}`, "invalid character '1' looking for beginning of object key string"},
		{`{,}`, "looking for beginning of object key string"},
		{`]`, "invalid character ']' looking for beginning of value"},
		{"\xef\xbb\xbf1", "invalid character 'ï' looking for beginning of value"},
		{"\u00a01", "looking for beginning of value"},
		{strings.Repeat("[", 10001) + strings.Repeat("]", 10001), "exceeded max depth at offset 10000"},
		{strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001), "exceeded max depth"},
		{strings.Repeat("[", 10001), "exceeded max depth"},
	}
	for _, tc := range tests {
		got, err := ParseJSON([]byte(tc.in))
		if err == nil {
			t.Errorf("ParseJSON(%.40q) = %#v, want error %q", tc.in, got, tc.err)
			continue
		}
		if !strings.Contains(err.Error(), tc.err) {
			t.Errorf("ParseJSON(%.40q) error %q, want %q", tc.in, err, tc.err)
		}
		checkStdlib(t, []byte(tc.in))
	}
}

// checkStdlib fails unless ParseJSON and json.Unmarshal agree on data, and
// AppendJSON then matches json.Marshal.
func checkStdlib(t *testing.T, data []byte) {
	t.Helper()
	got, err := ParseJSON(data)
	var want any
	werr := json.Unmarshal(data, &want)
	if (err == nil) != (werr == nil) {
		t.Fatalf("input %q: ParseJSON error %v, json.Unmarshal error %v", data, err, werr)
	}
	if err != nil {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("input %q: ParseJSON = %#v, json.Unmarshal = %#v", data, got, want)
	}
	checkObject(t, data, got)
	// Marshal the stdlib result so that differences DeepEqual misses (such
	// as -0 against 0) show up too.
	wantJSON, werr := json.Marshal(want)
	if werr != nil {
		t.Fatalf("input %q: json.Marshal: %v", data, werr)
	}
	gotJSON, err := AppendJSON(nil, got)
	if err != nil {
		t.Fatalf("input %q: AppendJSON: %v", data, err)
	}
	if !bytes.Equal(gotJSON, wantJSON) {
		t.Fatalf("input %q: AppendJSON = %s, json.Marshal = %s", data, gotJSON, wantJSON)
	}
}

// checkObject checks ParseJSONObject against ParseJSON's result for data
// (nil and no error expected when ParseJSON refused it).
func checkObject(t *testing.T, data []byte, want any) {
	t.Helper()
	members := map[string]any{}
	v, obj, err := ParseJSONObject(data, nil, func(k string, v any) error {
		members[k] = v
		return nil
	})
	if err != nil {
		t.Fatalf("input %q: ParseJSONObject error %v, ParseJSON none", data, err)
	}
	if _, isMap := want.(map[string]any); obj != isMap {
		t.Fatalf("input %q: ParseJSONObject object = %v for %T", data, obj, want)
	}
	if obj {
		v = members
	}
	if !reflect.DeepEqual(v, want) {
		t.Fatalf("input %q: ParseJSONObject = %#v, ParseJSON = %#v", data, v, want)
	}
}

// ParseJSONObject passes every member in input order, duplicates
// included, refuses what ParseJSON refuses, and stops at its caller's
// error.
func TestParseJSONObject(t *testing.T) {
	var got []string
	_, obj, err := ParseJSONObject([]byte(` {"b":1, "a":{"x":[2]}, "b":"3"} `), nil, func(k string, v any) error {
		b, _ := json.Marshal(v)
		got = append(got, k+"="+string(b))
		return nil
	})
	if want := []string{`b=1`, `a={"x":[2]}`, `b="3"`}; err != nil || !obj || !reflect.DeepEqual(got, want) {
		t.Fatalf("members %q, object %v, error %v; want %q", got, obj, err, want)
	}
	for _, bad := range []string{`{"a":1`, `{"a":1} x`, `{"a":1,}`, `{"a" 1}`, `{"a":[}`, `[1}`, ``} {
		if _, err := ParseJSON([]byte(bad)); err == nil {
			t.Fatalf("ParseJSON accepts %q", bad)
		}
		if _, _, err := ParseJSONObject([]byte(bad), nil, func(string, any) error { return nil }); err == nil {
			t.Errorf("ParseJSONObject accepts %q", bad)
		}
	}
	stop := errors.New("stop")
	calls := 0
	_, _, err = ParseJSONObject([]byte(`{"a":1,"b":2}`), nil, func(string, any) error { calls++; return stop })
	if err != stop || calls != 1 {
		t.Fatalf("error %v after %d calls, want the member's error after 1", err, calls)
	}
	// A member nobody wants is checked for syntax only: a number out of
	// float64 range in it is no error (encoding/json ignores it in a
	// struct's unknown field), but bad syntax still is.
	onlyK := func(k string) bool { return k == "k" }
	got = nil
	doc := []byte(`{"a":1e400,"b":{"c":[-1e309,{"k":1}]},"k":"v","k2":1e999}`)
	_, _, err = ParseJSONObject(doc, onlyK, func(k string, v any) error {
		got = append(got, k+"="+v.(string))
		return nil
	})
	if err != nil || !reflect.DeepEqual(got, []string{"k=v"}) {
		t.Fatalf("members %q, error %v; want only k=v", got, err)
	}
	if _, _, err := ParseJSONObject(doc, nil, func(string, any) error { return nil }); err == nil {
		t.Fatal("a wanted number out of range is no error")
	}
	for _, bad := range []string{`{"a":[1,}`, `{"a":{"b" 1}}`, `{"a":"\x"}`, `{"a":01}`, `{"a":1e}`} {
		if _, _, err := ParseJSONObject([]byte(bad), onlyK, func(string, any) error { return nil }); err == nil {
			t.Errorf("ParseJSONObject accepts %q in a member nobody wants", bad)
		}
	}
}

func TestParseJSONAllocs(t *testing.T) {
	plain := []byte(`"plain string, no escapes: héllo"`)
	var s any
	// One for the bytes, one for boxing the string header into an any.
	if n := testing.AllocsPerRun(100, func() { s, _ = ParseJSON(plain) }); n != 2 {
		t.Errorf("ParseJSON(plain string) allocs = %v, want 2", n)
	}
	_ = s
	body := []byte(callBody)
	if n := testing.AllocsPerRun(100, func() { s, _ = ParseJSON(body) }); n > 11 {
		// 3 maps of 2, 1 string chunk, 3 boxed strings, 1 boxed number.
		t.Errorf("ParseJSON(call body) allocs = %v, want <= 11", n)
	}
}

func TestAppendJSON(t *testing.T) {
	var nilSlice []any
	var nilMap map[string]any
	tests := []struct {
		in   any
		want string
	}{
		{nil, `null`},
		{Null{}, `null`},
		{true, `true`},
		{false, `false`},
		{0.0, `0`},
		{math.Copysign(0, -1), `-0`},
		{1.0, `1`},
		{-12.5, `-12.5`},
		{1e20, `100000000000000000000`},
		{1e21, `1e+21`},
		{123456789e15, `1.23456789e+23`},
		{999999999999999900000.0, `999999999999999900000`},
		{1e-6, `0.000001`},
		{1e-7, `1e-7`},
		{1.5e-7, `1.5e-7`},
		{-2e-9, `-2e-9`},
		{1e-10, `1e-10`},
		{1e100, `1e+100`},
		{math.MaxFloat64, `1.7976931348623157e+308`},
		{5e-324, `5e-324`},
		{0.1, `0.1`},
		{"", `""`},
		{"plain", `"plain"`},
		{`<a href="x">&amp;</a>`, `"\u003ca href=\"x\"\u003e\u0026amp;\u003c/a\u003e"`},
		{"\\ \b\f\n\r\t\x00\x01\x1f\x7f", `"\\ \b\f\n\r\t\u0000\u0001\u001f` + "\x7f\""},
		{"\u2028\u2029\u2027", `"\u2028\u2029` + "\u2027\""},
		{"a\xffb\xe2\x82", `"a\ufffdb\ufffd\ufffd"`},
		{"\xed\xa0\x80", `"\ufffd\ufffd\ufffd"`},
		{"é😀\ufffd", `"é😀` + "\ufffd\""},
		{nilSlice, `null`},
		{nilMap, `null`},
		{[]any{}, `[]`},
		{map[string]any{}, `{}`},
		{[]any{nilSlice, nilMap, Null{}}, `[null,null,null]`},
		{map[string]any{"b": 1.0, "a": []any{"x", true}, "<": nil, "": Null{}, "é": 2.0, "B": false},
			`{"":null,"\u003c":null,"B":false,"a":["x",true],"b":1,"é":2}`},
		{map[string]any{"\xff": 1.0, "\xfe": 2.0}, `{"\ufffd":2,"\ufffd":1}`},
	}
	for _, tc := range tests {
		got, err := AppendJSON([]byte("prefix:"), tc.in)
		if err != nil {
			t.Errorf("AppendJSON(%#v): %v", tc.in, err)
			continue
		}
		if string(got) != "prefix:"+tc.want {
			t.Errorf("AppendJSON(%#v) = %s, want prefix:%s", tc.in, got, tc.want)
		}
		std, err := json.Marshal(tc.in)
		if err != nil || string(std) != tc.want {
			t.Errorf("json.Marshal(%#v) = %s, %v; test wants %s", tc.in, std, err, tc.want)
		}
	}

	deep := nest(MaxDepth)
	if _, err := AppendJSON(nil, deep); err != nil {
		t.Errorf("AppendJSON(depth %d): %v", MaxDepth, err)
	}
	cyclic := []any{nil}
	cyclic[0] = cyclic

	for _, in := range []any{
		math.NaN(), math.Inf(1), math.Inf(-1),
		[]any{1.0, math.NaN()},
		map[string]any{"a": math.Inf(1)},
		1, int64(2), float32(1), []string{"a"}, map[string]string{}, &struct{}{}, json.Number("1"),
		[]any{map[string]any{"x": 3}},
		[]any{deep},
		cyclic,
	} {
		got, err := AppendJSON([]byte("keep"), in)
		if err == nil {
			t.Errorf("AppendJSON(%T) = %s, want error", in, got)
		} else if string(got) != "keep" {
			t.Errorf("AppendJSON(%T) error returned %q, want dst unchanged", in, got)
		}
	}
	if _, err := AppendJSON(nil, 3); err == nil || !strings.Contains(err.Error(), "int") {
		t.Errorf("AppendJSON(int) error %v, want one naming int", err)
	}
	if _, err := AppendJSON(nil, math.NaN()); err == nil || !strings.Contains(err.Error(), "NaN") {
		t.Errorf("AppendJSON(NaN) error %v, want one naming NaN", err)
	}
}

func FuzzParseJSON(f *testing.F) {
	for _, s := range []string{
		``, ` `, `null`, `true`, `false`, `nul`, `tru`, `[]`, `{}`, `[ ]`, `{ }`,
		`0`, `-0`, `-0.0`, `1`, `-1`, `12`, `01`, `-01`, `+1`, `.5`, `1.`, `1.e1`, `1e`, `1e+`, `1E-2`,
		`0.1`, `1.5e300`, `1e308`, `1e309`, `1e400`, `-1e400`, `1e-400`, `4.9e-324`, `2.5e-324`,
		`1.7976931348623157e308`, `1.7976931348623159e308`, `123456789012345`, `1234567890123456`,
		`9007199254740993`, `99999999999999999999`, `0x1F`, `NaN`, `Infinity`, `-Infinity`,
		`""`, `"a"`, `"héllo"`, `"\"\\\/\b\f\n\r\t"`, `"\'"`, `"\x"`, `"\u0041"`, `"\u00E9"`,
		`"\ud83d\ude00"`, `"\ud800"`, `"\udc00"`, `"\ud800\u0041"`, `"\ud800\ud800\udc00"`,
		`"\udc00\ud800"`, `"\ud800\uzzzz"`, `"\ud800\u12"`, `"\u12"`, `"\ud800\`, `"\ud800\u`,
		"\"\xff\"", "\"a\xc3\"", "\"\xe2\x82\"", "\"\xed\xa0\x80\"", "\"\xf4\x90\x80\x80\"", "\"\xc0\xaf\"",
		"\"\x00\"", "\"\x1f\"", "\"\x7f\"", "\"\n\"", "\"\u2028\u2029<>&\"",
		`[1,2,3]`, `[1,]`, `[,1]`, `[1 2]`, `{"a":1}`, `{"a":1,"a":2}`, `{"a" 1}`, `{"a":1,}`, `{a:1}`,
		`{"a":{"b":[1,{"c":null}]}}`, "{\"\xff\":1,\"\\ufffd\":2}", `{"a":1}x`, `1 2`, ` 1 `, "\t\n\r1\r\n",
		"\xef\xbb\xbf{}", "\u00a0{}", callBody,
		strings.Repeat("[", 10000) + strings.Repeat("]", 10000),
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001),
		strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100),
	} {
		f.Add([]byte(s))
	}
	f.Add([]byte(`{"a":1e400,"b":[{"c":-1e309}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		checkStdlib(t, data)
		// An object whose members nobody wants: accepted exactly when
		// encoding/json accepts it into a struct without those fields.
		none := func(string) bool { return false }
		_, obj, err := ParseJSONObject(data, none, func(string, any) error { return nil })
		if obj {
			var st struct{}
			if serr := json.Unmarshal(data, &st); (serr == nil) != (err == nil) {
				t.Fatalf("input %q: ParseJSONObject error %v, json.Unmarshal into a struct error %v", data, err, serr)
			}
		}
	})
}

func FuzzAppendJSON(f *testing.F) {
	f.Add("", 0.0)
	f.Add("a\xffb<>&\u2028\x00\x7f", 1e21)
	f.Add("\xed\xa0\x80\xe2\x82", 1e-7)
	f.Add("😀\\\"\b\f", -123.456)
	f.Fuzz(func(t *testing.T, s string, x float64) {
		v := map[string]any{s: []any{s, x, map[string]any{"k": s, s + "2": x}}}
		want, werr := json.Marshal(v)
		got, err := AppendJSON(nil, v)
		if (err == nil) != (werr == nil) {
			t.Fatalf("AppendJSON error %v, json.Marshal error %v", err, werr)
		}
		if err == nil && !bytes.Equal(got, want) {
			t.Fatalf("AppendJSON = %s, json.Marshal = %s", got, want)
		}
	})
}

func BenchmarkParseJSON(b *testing.B) {
	body := []byte(callBody)
	b.Run("value", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ParseJSON(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var v any
			if err := json.Unmarshal(body, &v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkAppendJSON(b *testing.B) {
	v, err := ParseJSON([]byte(callBody))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("value", func(b *testing.B) {
		b.ReportAllocs()
		buf := make([]byte, 0, 256)
		for b.Loop() {
			if buf, err = AppendJSON(buf[:0], v); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encoding-json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(v); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// member is called for a key before want is asked about the next one, so
// a caller may look a key up once, in want, and use it in member.
func TestParseJSONObjectAsksThenPasses(t *testing.T) {
	var asked string
	var got []string
	_, _, err := ParseJSONObject([]byte(`{"a":{"x":1,"y":{"z":2}},"skip":{"q":3},"b":[{"r":4}],"a":5}`),
		func(k string) bool { asked = k; return k != "skip" },
		func(k string, _ any) error {
			if k != asked {
				t.Errorf("member %q after want was asked about %q", k, asked)
			}
			got = append(got, k)
			return nil
		})
	if err != nil || !slices.Equal(got, []string{"a", "b", "a"}) {
		t.Fatalf("got %v, %v", got, err)
	}
}
