package lpattern

import (
	"testing"

	lua "github.com/yuin/gopher-lua"
)

func TestScratch(t *testing.T) {
	for _, ours := range []bool{true, false} {
		L := lua.NewState()
		if ours {
			Open(L, func() int64 { return 1e6 })
		}
		err := L.DoString(`
print(string.find("hello world", "o w"))
print(string.match("key = value", "(%w+)%s*=%s*(%w+)"))
print(string.gsub("hello world", "(%w+)", "%1 %1"))
print(string.gsub("abc", "%w*", "-"))
print(string.gsub("abc", "b*", "-"))
print(string.find("hello", "()ll()"))
print(("THE (quick) fox"):find("%((%a+)%)"))
print(string.gsub("hello", "()", "%1"))
print(pcall(string.find, ("a"):rep(400), ".-.-.-b"))
`)
		if err != nil {
			t.Fatal(err)
		}
		L.Close()
	}
}
