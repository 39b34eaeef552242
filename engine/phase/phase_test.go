package phase

import "testing"

func TestNames(t *testing.T) {
	for i, p := range All {
		if int(p) != i+1 || !p.Valid() {
			t.Fatalf("%v at %d", p, i)
		}
		got, ok := Parse(p.String())
		if !ok || got != p {
			t.Fatalf("Parse(%q)", p.String())
		}
		b, err := p.MarshalText()
		var back Phase
		if err != nil || back.UnmarshalText(b) != nil || back != p {
			t.Fatalf("text round trip of %v", p)
		}
	}
	if _, ok := Parse("tool_gat"); ok {
		t.Fatal("typo parsed")
	}
	if Phase(0).Valid() || Phase(10).Valid() || !ToolGate.PerCall() || StepEnd.PerCall() {
		t.Fatal("validity")
	}
	var p Phase
	if err := p.UnmarshalText([]byte("nope")); err == nil {
		t.Fatal("unknown phase accepted")
	}
}
