package lpattern

import (
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/pm"
)

var benchText = strings.Repeat("The quick brown fox\tjumps over  the lazy dog.\n", 24) + "id=12345"

type benchCase struct {
	name string
	body string // the body of function(s) ... end
	s    string
}

// benchLua runs each case as a Lua function on s, with these pattern
// functions ("lpattern") and with unmodified gopher-lua's ("gopher").
func benchLua(b *testing.B, cases []benchCase) {
	for _, c := range cases {
		for _, impl := range []string{"lpattern", "gopher"} {
			b.Run(c.name+"/"+impl, func(b *testing.B) {
				L := lua.NewState()
				defer L.Close()
				if impl == "lpattern" {
					Open(L, func() int64 { return DefaultBudget })
				}
				if err := L.DoString("return function(s) " + c.body + " end"); err != nil {
					b.Fatal(err)
				}
				fn := L.Get(-1)
				L.Pop(1)
				arg := lua.LString(c.s)
				b.ReportAllocs()
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if err := L.CallByParam(lua.P{Fn: fn, NRet: 1, Protect: true}, arg); err != nil {
						b.Fatal(err)
					}
					L.Pop(1)
				}
			})
		}
	}
}

func BenchmarkFind(b *testing.B) {
	benchLua(b, []benchCase{
		{"prefix", `return s:find("^mcp__github__")`, "mcp__github__create_issue"},
		{"prefix_miss", `return s:find("^mcp__github__")`, "mcp__slack__post_message"},
		{"tool_name", `return s:match("^mcp__(%w+)__(.+)$")`, "mcp__github__create_issue"},
		{"key_value", `return s:match("(%w+)%s*=%s*(%w+)")`, "  key = value"},
		{"plain", `return s:find("lazy dog", 1, true)`, benchText},
		{"digits_1k", `return s:match("id=(%d+)")`, benchText},
		{"class_1k", `return s:find("%d+")`, benchText},
		{"rm_guard", `return s:find("%f[%w]rm%s+%-rf")`, "ls -la && rm -rf /tmp/x"},
	})
}

func BenchmarkGsub(b *testing.B) {
	benchLua(b, []benchCase{
		{"spaces_1k", `return (s:gsub("%s+", " "))`, benchText},
		{"trim", `return (s:gsub("^%s+", ""):gsub("%s+$", ""))`, "   some text with spaces   "},
		{"template", `return (s:gsub("%$(%w+)", {name = "bob", tool = "shell"}))`, "hello $name, $tool is allowed"},
		{"upper_fn", `return (s:gsub("%a+", string.upper))`, "the quick brown fox"},
		{"split_gmatch_1k", `local n = 0 for w in s:gmatch("%S+") do n = n + 1 end return n`, benchText},
		{"escape", `return (s:gsub("[%^%$%(%)%%%.%[%]%*%+%-%?]", "%%%0"))`, "a.b*c (d) [e] 100%"},
	})
}

// BenchmarkMatcher compares the bare matchers, without the Lua call.
func BenchmarkMatcher(b *testing.B) {
	for _, c := range []struct{ name, s, p string }{
		{"prefix", "mcp__github__create_issue", "^mcp__(%w+)__(.+)$"},
		{"class_1k", benchText, "%d+"},
		{"lazy_1k", benchText, "quick(.-)dog"},
	} {
		b.Run(c.name+"/lpattern", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				m := Matcher{Steps: DefaultBudget}
				if s, _, err := m.Find(c.s, c.p, 0); s < 0 || err != nil {
					b.Fatal(s, err)
				}
			}
		})
		b.Run(c.name+"/gopher", func(b *testing.B) {
			b.ReportAllocs()
			src := []byte(c.s)
			for i := 0; i < b.N; i++ {
				if mds, err := pm.Find(c.p, src, 0, 1); len(mds) == 0 || err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
