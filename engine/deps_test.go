package engine_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The phase engine is the bottom of the import graph: no package under
// engine/ imports Lua, the agent runtime, the stores, the model clients, the
// tools or any driver (see docs/design.md, "Packages").
func TestEngineImportsNoLeaf(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "./...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	const mod = "github.com/awaken-lua/awaken-lua/"
	forbidden := []string{"run", "store", "tools", "model/", "luabridge", "host", "server", "config", "cmd"}
	for _, dep := range strings.Fields(string(out)) {
		if strings.Contains(dep, "gopher-lua") {
			t.Errorf("engine depends on %s", dep)
		}
		rest, ok := strings.CutPrefix(dep, mod)
		if !ok {
			continue
		}
		for _, f := range forbidden {
			if rest == f || strings.HasPrefix(rest, strings.TrimSuffix(f, "/")+"/") {
				t.Errorf("engine depends on %s", dep)
			}
		}
	}
}
