package luabridge

import (
	"fmt"
	"strings"
	"testing"

	lua "github.com/yuin/gopher-lua"
)

// The split cache stays bounded, and answers as a fresh split does.
func TestSplitCacheBounds(t *testing.T) {
	sc := &splitCache{seen: map[string]*splitResult{}}
	for i := range 3 * maxCachedSplits {
		cmd := fmt.Sprintf("rm file%d && ls", i)
		r := sc.split(cmd)
		cmds, err := r.cmds, r.err
		if err != nil || len(cmds) != 2 || cmds[0].Argv[1] != fmt.Sprintf("file%d", i) {
			t.Fatalf("%q: %v %v", cmd, cmds, err)
		}
		if len(sc.seen) > maxCachedSplits || sc.bytes > maxCachedBytes {
			t.Fatalf("the cache holds %d commands of %d bytes, more than %d or %d", len(sc.seen), sc.bytes, maxCachedSplits, maxCachedBytes)
		}
	}
	// Commands as long as may be kept fill the byte budget first.
	sc = &splitCache{seen: map[string]*splitResult{}}
	for i := range 4 * maxCachedBytes / maxCachedCommand {
		cmd := fmt.Sprintf("echo %d %s", i, strings.Repeat("a", maxCachedCommand-20))
		if r := sc.split(cmd); r.err != nil {
			t.Fatal(r.err)
		}
		if sc.bytes > maxCachedBytes {
			t.Fatalf("the cache holds %d bytes of commands, more than %d", sc.bytes, maxCachedBytes)
		}
	}
	long := "echo " + strings.Repeat("a", maxCachedCommand)
	if r := sc.split(long); r.err != nil {
		t.Fatal(r.err)
	}
	if _, ok := sc.seen[long]; ok {
		t.Fatal("a command over maxCachedCommand was kept")
	}
}

// The Lua values kept with the splits stay within maxCachedCells, whatever
// commands a state is sent, and a repeated command gets its kept value.
func TestSplitCacheLuaBound(t *testing.T) {
	L := lua.NewState()
	defer L.Close()
	sc := &splitCache{seen: map[string]*splitResult{}}
	split := L.NewFunction(func(L *lua.LState) int { return shellSplit(L, sc) })
	call := func(cmd string) lua.LValue {
		if err := L.CallByParam(lua.P{Fn: split, NRet: 1, Protect: true}, lua.LString(cmd)); err != nil {
			t.Fatal(err)
		}
		defer L.Pop(1)
		return L.Get(-1)
	}
	words := strings.Repeat(" w", 40)
	for i := range 3 * maxCachedSplits {
		cmd := fmt.Sprintf("a%d%s | b%s && c%s", i, words, words, words)
		first := call(cmd)
		if again := call(cmd); again != first {
			t.Fatalf("%d: a repeated command got a new value", i)
		}
		kept := 0
		for _, r := range sc.seen {
			if r.lv != nil {
				kept += luaCells(r.cmds)
			}
		}
		if kept != sc.cells || sc.cells > maxCachedCells {
			t.Fatalf("%d: the kept values hold %d cells, counted %d, bound %d", i, kept, sc.cells, maxCachedCells)
		}
	}
}
