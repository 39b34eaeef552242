package luabridge_test

import (
	"strings"
	"testing"
	"time"
)

// A bad pattern raises with the position of the Lua code that passed it,
// and a gate that raises blocks the call (fail closed).
func TestRegexBadPatterns(t *testing.T) {
	g := mustLoad(t, map[string]string{"x.lua": head[:len(head)-3] + `{ config = { p = { type = "string" } } }
p:tool_gate(function(ctx, call)
  awaken.regex.find(ctx.config.p, "x")
end)
return p`})
	for _, pat := range []string{"(", "a**", `(?=x)`, "x{1001}"} {
		cfg, err := g.Set.Configure(map[string]any{"x": map[string]any{"p": pat}})
		if err != nil {
			t.Fatal(err)
		}
		reason, err := gateOnce(t, g, cfg, "any")
		if err != nil || !strings.Contains(reason, "scripts/x.lua:4") || !strings.Contains(reason, "invalid pattern") {
			t.Fatalf("%s: reason %q, err %v", pat, reason, err)
		}
	}
}

// A regex over a long subject stops at the hook's budget.
func TestRegexStopsAtTheBudget(t *testing.T) {
	const budget = 100 * time.Millisecond
	g := mustLoad(t, map[string]string{"x.lua": head + `local big = ("ab"):rep(8 * 1024 * 1024)
p:tool_gate(function(ctx, call)
  awaken.regex.find("(a|b)*c", big)
end)
return p`}, withTimeout(budget))
	w := startWatch()
	reason := within(t, 20*time.Second, func() string {
		reason, err := gateOnce(t, g, nil, "any")
		if err != nil {
			t.Fatal(err)
		}
		return reason
	})
	if elapsed, late := w.late(budget); late {
		t.Fatalf("the call took %s, budget %s", elapsed, budget)
	}
	if !strings.Contains(reason, "hook_timeout") {
		t.Fatalf("reason %q", reason)
	}
}

// Matching costs the subject's length times the pattern's size (times its
// groups, whose positions every thread of the matcher copies), so a short
// subject under a large pattern is as long a call as a long subject: it
// too stops at the hook's budget, or the pattern is refused as too costly.
func TestRegexCostOfThePatternIsBounded(t *testing.T) {
	const budget = 100 * time.Millisecond
	for _, tc := range []struct{ name, pattern, subject string }{
		{"many instructions", `("a*"):rep(20000)`, `("a"):rep(20000)`},
		{"many groups", `("(a*)*"):rep(1000)`, `("a"):rep(2000)`},
		{"instructions and groups", `("(a|b)"):rep(3000)`, `("a"):rep(60000)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := mustLoad(t, map[string]string{"x.lua": head + `local pat, s = ` + tc.pattern + `, ` + tc.subject + `
p:tool_gate(function(ctx, call)
  awaken.regex.find(pat, s)
end)
return p`}, withTimeout(budget))
			w := startWatch()
			reason := within(t, 20*time.Second, func() string {
				reason, err := gateOnce(t, g, nil, "any")
				if err != nil {
					t.Error(err)
				}
				return reason
			})
			if elapsed, late := w.late(budget); late {
				t.Fatalf("the call took %s, budget %s", elapsed, budget)
			}
			if !strings.Contains(reason, "hook_timeout") && !strings.Contains(reason, "too costly") {
				t.Fatalf("reason %q", reason)
			}
		})
	}
}
