package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// test and check load modules from subdirectories of the plugin directory
// (a test file's own helpers too), and a .lua file past the per-file bound
// fails check at its path; files require cannot load are not read.
func TestCommandsLoadModules(t *testing.T) {
	const guard = `local awaken = require("awaken")
local rules = require("lib.rules")
local p = awaken.plugin {}
p:tool_gate(function(ctx, call)
  if rules.denied(call.name) then return awaken.block("no " .. call.name) end
end)
return p
`
	files := map[string]string{
		"scripts/guard.lua":     guard,
		"scripts/lib/rules.lua": `return { denied = function(n) return n == "rm" end }`,
		"scripts/sub/calls.lua": `return { rm = { name = "rm" } }`,
		"scripts/sub/guard_test.lua": `local t = require("awaken.testing")
local calls = require("calls")
t.test("rm is blocked", function()
  local h = t.harness { plugins = { "guard" } }
  t.eq(h:gate(calls.rm).decision, "block")
end)
`,
		// Not .lua, or a test: never read, so not bounded.
		"scripts/data.bin":         strings.Repeat("x", 3<<20),
		"scripts/big_test.lua":     "-- " + strings.Repeat("x", 3<<20),
		"scripts/types/awaken.lua": "-- " + strings.Repeat("x", 3<<20),
	}
	dir := project(t, "", files)
	cfg := filepath.Join(dir, "awaken.toml")
	if code, out, errOut := awaken(t, "", "--config", cfg, "test"); code != exitOK || !strings.Contains(out, "1 passed, 0 failed") {
		t.Fatalf("test: exit %d:\n%s%s", code, out, errOut)
	}
	if code, out, errOut := awaken(t, "", "--config", cfg, "check"); code != exitOK {
		t.Fatalf("check: exit %d:\n%s%s", code, out, errOut)
	}

	files["scripts/lib/generated.lua"] = "return [[" + strings.Repeat("x", 3<<20) + "]]"
	dir = project(t, "", files)
	cfg = filepath.Join(dir, "awaken.toml")
	const want = "scripts/lib/generated.lua: plugin_load_failed: the file is"
	if code, out, errOut := awaken(t, "", "--config", cfg, "check"); code != exitFailed || !strings.Contains(out+errOut, want) {
		t.Fatalf("check with a .lua file past the bound: exit %d, want %q:\n%s%s", code, want, out, errOut)
	}
	if code, out, errOut := awaken(t, "", "--config", cfg, "test"); code != exitFailed || !strings.Contains(out+errOut, want) {
		t.Fatalf("test with a .lua file past the bound: exit %d, want %q:\n%s%s", code, want, out, errOut)
	}
}
