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
		if len(sc.seen) > maxCachedSplits || sc.bytes > maxCachedBytes {
			t.Fatalf("the cache holds %d commands of %d bytes, more than %d or %d", len(sc.seen), sc.bytes, maxCachedSplits, maxCachedBytes)
		}
	}
	// Commands as long as may be kept fill the byte budget first.
	sc = &splitCache{seen: map[string]splitResult{}}
	for i := range 4 * maxCachedBytes / maxCachedCommand {
		cmd := fmt.Sprintf("echo %d %s", i, strings.Repeat("a", maxCachedCommand-20))
		if _, err := sc.split(cmd); err != nil {
			t.Fatal(err)
		}
		if sc.bytes > maxCachedBytes {
			t.Fatalf("the cache holds %d bytes of commands, more than %d", sc.bytes, maxCachedBytes)
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
