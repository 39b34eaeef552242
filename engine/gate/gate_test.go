package gate

import (
	"encoding/json"
	"strings"
	"testing"
)

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

// A Kind is its name in JSON both ways; an unknown name is refused, so a
// saved decision never loads as a kind it is not.
func TestKindJSON(t *testing.T) {
	for k := Allow; k <= Block; k++ {
		b, err := json.Marshal(struct{ D Kind }{k})
		if err != nil {
			t.Fatal(err)
		}
		var back struct{ D Kind }
		if err := json.Unmarshal(b, &back); err != nil || back.D != k {
			t.Fatalf("%s: %s -> %v %v", k, b, back.D, err)
		}
	}
	var k struct{ D Kind }
	if err := json.Unmarshal([]byte(`{"D":"deny"}`), &k); err == nil || !strings.Contains(err.Error(), "not a gate decision") {
		t.Fatalf("an unknown decision: %v", err)
	}
}
