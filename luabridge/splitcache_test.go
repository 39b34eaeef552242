package luabridge

import (
	"fmt"
	"strings"
	"testing"
)

// The split cache stays bounded, and answers as a fresh split does.
func TestSplitCacheBounds(t *testing.T) {
	sc := &splitCache{seen: map[string]splitResult{}}
	for i := range 3 * maxCachedSplits {
		cmd := fmt.Sprintf("rm file%d && ls", i)
		cmds, err := sc.split(cmd)
		if err != nil || len(cmds) != 2 || cmds[0].Argv[1] != fmt.Sprintf("file%d", i) {
			t.Fatalf("%q: %v %v", cmd, cmds, err)
		}
		if len(sc.seen) > maxCachedSplits {
			t.Fatalf("the cache holds %d commands, more than %d", len(sc.seen), maxCachedSplits)
		}
	}
	long := "echo " + strings.Repeat("a", maxCachedCommand)
	if _, err := sc.split(long); err != nil {
		t.Fatal(err)
	}
	if _, ok := sc.seen[long]; ok {
		t.Fatal("a command over maxCachedCommand was kept")
	}
}
