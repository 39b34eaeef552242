package hooks

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// A session that uses ever more tools outside the built-in set offers at
// most MaxSeenTools of them, the most recently used: a tool it keeps using
// stays offered, the new one is offered at once, and the offer is made
// again when the set changes at the bound (where seen's length does not).
func TestSeenToolsBounded(t *testing.T) {
	c := newClaudeCode(Options{})
	cs := &ccSession{}
	const kept = "mcp__kept__tool"
	for i := range 4 * MaxSeenTools {
		cs.see(kept, c.builtin.names)
		cs.see("Read", c.builtin.names) // built in: never in seen
		name := fmt.Sprint("mcp__srv__tool", i)
		cs.see(name, c.builtin.names)
		if len(cs.seen) > MaxSeenTools {
			t.Fatalf("after %d tools the session keeps %d, past the bound of %d", i+1, len(cs.seen), MaxSeenTools)
		}
		o := c.offerOf(cs, "")
		if !o.names[name] || !o.names[kept] || !o.names["Read"] {
			t.Fatalf("after %d tools the offer lacks %s, %s or Read", i+1, name, kept)
		}
		if len(o.specs) > len(ccBuiltinTools)+MaxSeenTools {
			t.Fatalf("after %d tools the offer has %d", i+1, len(o.specs))
		}
	}
	if slices.Contains(cs.seen, "mcp__srv__tool0") {
		t.Fatal("the least recently used tool is still offered")
	}
	// What hook --local carries is bounded too, however it was written.
	long := make([]string, 2*MaxSeenTools)
	for i := range long {
		long[i] = fmt.Sprint("mcp__x__t", i)
	}
	a := &Adapters{cc: c}
	a.Restore(map[string]SessionFacts{"s": {Seen: long}}, time.Hour)
	if got := a.Facts()["s"].Seen; len(got) != MaxSeenTools || got[len(got)-1] != long[len(long)-1] {
		t.Fatalf("restored %d tools (last %q), want the latest %d", len(got), got[len(got)-1], MaxSeenTools)
	}
}
