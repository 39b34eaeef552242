package luabridge

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/schema"
	"github.com/awaken-lua/awaken-lua/engine/value"
)

func evalLua(t testing.TB, L *lua.LState, src string) (lua.LValue, error) {
	t.Helper()
	fn, err := L.LoadString("return " + src)
	if err != nil {
		return nil, err
	}
	L.Push(fn)
	if err := L.PCall(0, 1, nil); err != nil {
		return nil, err
	}
	v := L.Get(-1)
	L.Pop(1)
	return v, nil
}

func TestFromLua(t *testing.T) {
	L := newState(Limits{}.withDefaults())
	defer L.Close()
	null := L.NewUserData()
	L.SetGlobal("null", null)
	tests := []struct {
		src     string
		want    any
		wantErr string
	}{
		{`nil`, nil, ""},
		{`true`, true, ""},
		{`1.5`, 1.5, ""},
		{`"s"`, "s", ""},
		{`{}`, map[string]any{}, ""},
		{`{1, "a", true}`, []any{1.0, "a", true}, ""},
		{`{a = 1, b = {c = "d"}}`, map[string]any{"a": 1.0, "b": map[string]any{"c": "d"}}, ""},
		{`{a = null}`, map[string]any{"a": value.Null{}}, ""},
		{`{[1] = "a", [3] = "c"}`, nil, "holes"},
		{`{1, x = 2}`, nil, "mixes"},
		{`{[0] = 1, [2] = 0}`, nil, "holes"},
		{`{1, [1.5] = 2}`, nil, "holes"},
		{`{[true] = 1}`, nil, "boolean"},
		{`function() end`, nil, "function cannot be stored"},
		{`0/0`, nil, "finite"},
		{`{list = {1, {2, {3, function() end}}}}`, nil, "$.list[1][1][1]"},
		// Bytes that are not UTF-8 become U+FFFD one by one, as JSON
		// writes them, so every store keeps what memory holds.
		{`"\255\254"`, "\uFFFD\uFFFD", ""},
		{`("héllo"):sub(1, 2)`, "h\uFFFD", ""},
		{`{["k\255"] = ("é"):sub(1, 1)}`, map[string]any{"k\uFFFD": "\uFFFD"}, ""},
		{`{["\255"] = 1, ["\254"] = 2}`, nil, "once their bytes that are not UTF-8 are replaced"},
		{`"añb✓"`, "añb✓", ""},
	}
	for _, tc := range tests {
		t.Run(tc.src, func(t *testing.T) {
			lv, err := evalLua(t, L, tc.src)
			if err != nil {
				t.Fatal(err)
			}
			got, err := fromLua(lv, null)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !value.Equal(got, tc.want) {
				t.Fatalf("got %#v (%v), want %#v", got, err, tc.want)
			}
		})
	}
	// Nesting deeper than a value may be is refused, not followed, and
	// named by the ends of its path.
	deep, _ := evalLua(t, L, `(function() local t = {} local c = t for i = 1, 10001 do c.x = {} c = c.x end return t end)()`)
	_, err := fromLua(deep, null)
	if err == nil || !strings.Contains(err.Error(), "nested more than 10000 deep") || len(err.Error()) > 300 {
		t.Fatalf("deep: %v", err)
	}
}

// A value as deep as a body may be goes into Lua and back whole (a result
// transform returning the result it was given), and a cycle is still
// found deep in a table, while a table met twice but not inside itself
// is no cycle.
func TestConvertDeepValues(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	null := L.NewUserData()
	var v any = "leaf"
	for i := 0; i < value.MaxDepth; i++ {
		if i%2 == 0 {
			v = []any{v}
		} else {
			v = map[string]any{"x": v}
		}
	}
	back, err := fromLua(toLua(L, null, v), null)
	if err != nil || !value.Equal(back, v) {
		t.Fatalf("a value %d deep came back as %v", value.MaxDepth, err)
	}
	cyclic, _ := evalLua(t, L, `(function()
		local t = {} local c = t
		for i = 1, 50 do c.x = {} c = c.x if i == 40 then mark = c end end
		c.back = mark
		return t end)()`)
	if _, err := fromLua(cyclic, null); err == nil || !strings.Contains(err.Error(), "contains itself") {
		t.Errorf("a cycle 50 deep: %v", err)
	}
	shared, _ := evalLua(t, L, `(function()
		local t = {} local c = t
		for i = 1, 50 do c.x = {} c = c.x end
		local s = {1} c.a = s c.b = s
		return t end)()`)
	if _, err := fromLua(shared, null); err != nil {
		t.Errorf("a table met twice, 50 deep: %v", err)
	}
}

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern, s string
		want       bool
	}{
		{"mcp__github__*", "mcp__github__create_issue", true},
		{"mcp__github__*", "mcp__gitlab__x", false},
		{"npm *", "npm install ./a/b", true},
		{"npm *", "npx x", false},
		// The README's rule: without "/" in the pattern, * and ? match "/"
		// and newlines too; in a path glob they stop at "/".
		{"a*b", "a\nx/y\nb", true},
		{"a?c", "a/c", true},
		{"x/a?c", "x/a/c", false},
		{"x/*", "x/a/b", false},
		{"src/**", "src/a/b/c.go", true},
		{"src/*.go", "src/a.go", true},
		{"src/*.go", "src/a/b.go", false},
		{"src/**/*.go", "src/a.go", true},
		{"src/**/*.go", "src/a/b/c.go", true},
		{"?at", "cat", true},
		{"[bc]at", "bat", true},
		{"[!bc]at", "bat", false},
		{`a\*b`, "a*b", true},
		{`a\*b`, "axb", false},
		{"*", "", true},
		{"Bash", "Bash", true},
		{"a.b", "axb", false},
		{strings.Repeat("*a", 30) + "b", strings.Repeat("a", 200), false},
	}
	for _, tc := range tests {
		if got := Glob(tc.pattern, tc.s); got != tc.want {
			t.Errorf("Glob(%q, %q) = %v, want %v", tc.pattern, tc.s, got, tc.want)
		}
	}
}

// FuzzLuaToCommand feeds arbitrary Lua expressions through the conversion
// a hook's writes take into a command: nothing panics, errors render, and a
// converted value survives the trip back to Lua and again to Go unchanged.
func FuzzLuaToCommand(f *testing.F) {
	for _, s := range []string{`nil`, `{1, 2, 3}`, `{a = {b = {c = "d"}}}`, `{[1] = 1, [2] = 2, n = 3}`, `0/0`, `1/0`,
		`("x"):rep(10)`, `{{}, {{}}, {x = {}}}`, `{[1.5] = 1}`, `(function() local t = {} t[1] = t return t end)()`,
		`{true, false, -0, 1e308}`, `string.char(0, 255)`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		L := newState(Limits{}.withDefaults())
		defer L.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		L.SetContext(ctx)
		null := L.NewUserData()
		L.SetGlobal("null", null)
		lv, err := evalLua(t, L, src)
		if err != nil {
			return
		}
		v, err := fromLua(lv, null)
		if err != nil {
			_ = err.Error()
			return
		}
		cmd := command.Command{Plugin: "fuzz"}
		cmd.UpdateValue("k", v)
		if n, err := value.Normalize(v); err != nil || !value.Equal(n, v) {
			t.Fatalf("fromLua produced a non-canonical value %#v", v)
		}
		_ = schema.Any.Validate(v)
		back, err := fromLua(toLua(L, null, v), null)
		if err != nil || !value.Equal(back, v) {
			t.Fatalf("round trip: %#v -> %#v (%v)", v, back, err)
		}
	})
}

func TestGlobNeverPanics(t *testing.T) {
	for _, p := range []string{"0(\x80)", "[z-a]", "\xff*", "[", "\\"} {
		_ = Glob(p, "anything")
		_ = Glob(p, p)
	}
}

// A null in a list reaches Lua as awaken.null in its place, not as a hole
// that shifts the elements after it, and comes back the same.
func TestToLuaKeepsNullsInLists(t *testing.T) {
	L := newState(Limits{}.withDefaults())
	defer L.Close()
	null := L.NewUserData()
	in := map[string]any{"rows": []any{"a", nil, "b", value.Null{}}}
	lv := toLua(L, null, in)
	rows, _ := lv.(*lua.LTable).RawGetString("rows").(*lua.LTable)
	if rows == nil || rows.Len() != 4 || rows.RawGetInt(2) != null || rows.RawGetInt(3) != lua.LString("b") {
		t.Fatalf("rows in Lua: %v", rows)
	}
	back, err := fromLua(lv, null)
	if err != nil || !value.Equal(back, in) {
		t.Fatalf("round trip: %#v (%v)", back, err)
	}
}

// A long path in an error names pathEnds segments at each end and counts
// the ones between: together they are the whole path.
func TestLongPathNamesItsEnds(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	null := L.NewUserData()
	for _, n := range []int{2*pathEnds + 1, 2*pathEnds + 2, 100} {
		v, err := evalLua(t, L, fmt.Sprintf(`(function() local t = {} local c = t for i = 1, %d do c.x = {} c = c.x end c.f = print return t end)()`, n-1))
		if err != nil {
			t.Fatal(err)
		}
		_, err = fromLua(v, null)
		if err == nil {
			t.Fatalf("%d segments: no error", n)
		}
		msg := err.Error()
		var more int
		if k := strings.Index(msg, "...("); k < 0 || func() bool { _, e := fmt.Sscanf(msg[k:], "...(%d more)", &more); return e != nil }() {
			t.Fatalf("%d segments: %s", n, msg)
		}
		shown := strings.Count(msg, ".x") + strings.Count(msg, ".f")
		if shown != 2*pathEnds || shown+more != n {
			t.Errorf("%d segments: %d named and %d more in %s", n, shown, more, msg)
		}
	}
}
