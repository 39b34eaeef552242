package host_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/host"
)

// moduleGuard decides with a module in a subdirectory of the plugin
// directory, required when the plugin loads.
const moduleGuard = `local awaken = require("awaken")
local rules = require("rules.list")
local p = awaken.plugin { id = "guard" }
p:tool_gate(function(ctx, call)
  if rules.deny[call.name] then return awaken.block("listing is not allowed") end
end)
return p
`

func denyList(names string) string { return "return { deny = { " + names + " } }\n" }

// Editing a module a plugin requires is a new generation: the reload says
// loaded and the edited rule decides. A module that does not compile fails
// the reload, and the generation before it stays current.
func TestReloadPicksUpAModuleEdit(t *testing.T) {
	dir := project(t, agentToml, map[string]string{"guard.lua": moduleGuard, "rules/list.lua": denyList("")})
	write(t, filepath.Join(dir, "script.toml"), listScript)
	h := open(t, dir, host.Options{})
	if got := runList(t, h); got != "natural" {
		t.Fatalf("before the edit: %s", got)
	}
	module := filepath.Join(dir, "scripts", "rules", "list.lua")
	write(t, module, denyList("fs_list = true"))
	first := h.Current().ID
	if st := h.Reload(context.Background()); st.LastResult != "loaded" || h.Current().ID == first {
		t.Fatalf("reload after the module edit: %+v", st)
	}
	if got := runList(t, h); got != blocked {
		t.Fatalf("after the reload: %s, want the edited module to block", got)
	}

	kept := h.Current().ID
	write(t, module, "return { deny = { fs_list = true }\n")
	st := h.Reload(context.Background())
	if st.LastResult != "failed" || h.Current().ID != kept ||
		!strings.Contains(strings.Join(st.Errors, "\n"), "scripts/rules/list.lua:") {
		t.Fatalf("reload with a broken module: %+v, current %s", st, h.Current().ID)
	}
	stillOpen(t, h)
	if got := runList(t, h); got != blocked {
		t.Fatalf("the kept generation: %s", got)
	}
}

// The watcher sees an edit of a module in a subdirectory of the plugin
// directory, and one in a subdirectory made while it watches.
func TestWatchPicksUpAModuleEdit(t *testing.T) {
	dir := project(t, agentToml, map[string]string{"guard.lua": moduleGuard, "rules/list.lua": denyList("")})
	write(t, filepath.Join(dir, "script.toml"), listScript)
	h := open(t, dir, host.Options{})
	defer watching(t, h)()
	first := h.Current().ID
	eventually(t, "the module edit is loaded", func() bool { return h.Current().ID != first }, func() {
		write(t, filepath.Join(dir, "scripts", "rules", "list.lua"), denyList("fs_list = true"))
	})
	if got := runList(t, h); got != blocked {
		t.Fatalf("after the module edit: %s", got)
	}
	// A module in a new directory, required by an edited plugin.
	second := h.Current().ID
	write(t, filepath.Join(dir, "scripts", "guard.lua"), strings.Replace(moduleGuard, "rules.list", "more.rules.list", 1))
	write(t, filepath.Join(dir, "scripts", "more", "rules", "list.lua"), denyList(""))
	eventually(t, "the plugin on the new module is loaded", func() bool { return h.Current().ID != second }, nil)
	third := h.Current().ID
	if got := runList(t, h); got != "natural" {
		t.Fatalf("on the new module: %s", got)
	}
	eventually(t, "an edit in the new directory is loaded", func() bool { return h.Current().ID != third }, func() {
		write(t, filepath.Join(dir, "scripts", "more", "rules", "list.lua"), denyList("fs_list = true"))
	})
	if got := runList(t, h); got != blocked {
		t.Fatalf("after the edit in the new directory: %s", got)
	}
}
