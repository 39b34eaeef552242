package engine_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The engine knows nothing of Lua (SPEC §1): no package under engine/
// imports gopher-lua or luabridge.
func TestEngineHasNoLua(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "gopher-lua") || strings.Contains(dep, "luabridge") {
			t.Fatalf("engine depends on %s", dep)
		}
	}
}
