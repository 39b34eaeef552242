package server

import (
	"os"
	"strings"
	"testing"
)

// modulePolicy requires helpers.util when it loads and helpers.lazy in its
// gate, the first time a call reaches it.
const modulePolicy = `local awaken = require("awaken")
local p = awaken.plugin { id = "mod" }
local u = require("helpers.util")
p:tool_gate(function(ctx, call)
  if u.deny(call.name) then return awaken.block("denied by util") end
  local lz = require("helpers.lazy")
  if lz.deny(call.name) then return awaken.block("denied by lazy") end
end)
return p
`

func moduleProject(t *testing.T) string {
	return project(t, "", map[string]string{
		"mod.lua":          modulePolicy,
		"helpers/util.lua": `return { deny = function(n) return n == "rm" end }`,
		"helpers/lazy.lua": `return { deny = function(n) return false end }`,
	})
}

// gateTool starts a run and gates one call to tool.
func gateTool(sc *sidecar, tool string) reply {
	id := sc.startRun(map[string]any{"tools": []any{map[string]any{"name": tool}}})
	sc.phase(id, "step_start", nil)
	sc.phase(id, "before_inference", map[string]any{"request": map[string]any{}})
	sc.phase(id, "after_inference", map[string]any{"response": map[string]any{"tool_calls": []any{call("c1", tool, nil)}}})
	return sc.phase(id, "tool_gate", map[string]any{"call": call("c1", tool, nil)})
}

// A reload after an edit of a required module loads a new generation, and
// the edited rule decides; a module that does not compile fails the
// reload and the generation before stays.
func TestReloadAfterAModuleEdit(t *testing.T) {
	dir := moduleProject(t)
	sc := newSidecar(t, dir, Options{Log: quietLog()})
	if g := gateTool(sc, "ls"); g.str("decision") != "allow" {
		t.Fatalf("ls before the edit: %s", g.raw)
	}
	writeFile(t, dir+"/scripts/helpers/util.lua", `return { deny = function(n) return n == "rm" or n == "ls" end }`)
	r := sc.must(200, "POST", "/v1/plugins/reload", nil)
	if r.str("last_result") != "loaded" || r.str("generation") != "g2" {
		t.Fatalf("reload after the module edit: %s", r.raw)
	}
	if g := gateTool(sc, "ls"); g.str("decision") != "block" || !strings.Contains(string(g.raw), "denied by util") {
		t.Fatalf("ls after the reload: %s", g.raw)
	}

	writeFile(t, dir+"/scripts/helpers/util.lua", `return { deny = function(n) return`)
	r = sc.must(200, "POST", "/v1/plugins/reload", nil)
	if r.str("last_result") != "failed" || r.str("generation") != "g2" || !strings.Contains(string(r.raw), "scripts/helpers/util.lua:1") {
		t.Fatalf("reload with a broken module: %s", r.raw)
	}
	if g := gateTool(sc, "ls"); g.str("decision") != "block" {
		t.Fatalf("ls on the kept generation: %s", g.raw)
	}
}

// A module first required in a hook, after it was changed, half-written
// or deleted on disk, runs as the generation loaded it.
func TestLazyModuleChangedAfterTheLoad(t *testing.T) {
	for _, tc := range []struct {
		what, src string
	}{
		{"rewritten", `return { deny = function(n) return n == "ls" end }`},
		{"half-written", `return { deny = function(n) return`},
		{"deleted", ""},
	} {
		t.Run(tc.what, func(t *testing.T) {
			dir := moduleProject(t)
			sc := newSidecar(t, dir, Options{Log: quietLog()})
			lazy := dir + "/scripts/helpers/lazy.lua"
			if tc.src == "" {
				if err := os.Remove(lazy); err != nil {
					t.Fatal(err)
				}
			} else {
				writeFile(t, lazy, tc.src)
			}
			if g := gateTool(sc, "ls"); g.str("decision") != "allow" {
				t.Fatalf("ls: %s; want the module as loaded to allow it", g.raw)
			}
			p := sc.must(200, "GET", "/v1/plugins", nil)
			if p.str("generation") != "g1" {
				t.Fatalf("plugins: %s", p.raw)
			}
		})
	}
}
