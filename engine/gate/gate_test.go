package gate

import "testing"

func TestResolve(t *testing.T) {
	d := func(k Kind, plugin string) Tagged { return Tagged{Decision: Decision{Kind: k}, Plugin: plugin} }
	win, lost := Resolve([]Tagged{d(Allow, "a"), d(Rewrite, "b"), d(SetResult, "c"), d(SetResult, "d"), d(Allow, "e")})
	if win.Plugin != "c" || len(lost) != 1 || lost[0].Plugin != "d" {
		t.Fatalf("win %v lost %v", win, lost)
	}
	win, lost = Resolve([]Tagged{d(Suspend, "a"), d(Block, "b"), d(Suspend, "c")})
	if win.Plugin != "b" || len(lost) != 0 {
		t.Fatalf("a higher priority must clear earlier ties: %v %v", win, lost)
	}
	if win, _ := Resolve(nil); win.Kind != Allow {
		t.Fatal("no decision is allow")
	}
	for _, k := range []Kind{Allow, Rewrite, SetResult, Suspend, Block} {
		if p, ok := ParseKind(k.String()); !ok || p != k {
			t.Fatalf("round trip %v", k)
		}
	}
	if !ResumeMode("").Valid() || ResumeMode("later").Valid() {
		t.Fatal("resume modes")
	}
}
