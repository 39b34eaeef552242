package host_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/awaken-lua/awaken-lua/host"
)

// A plugin_dir moved to a directory whose plugin does not compile fails
// the reload; fixing that plugin (or making a missing directory) is seen,
// although the current generation still loads from the old directory.
func TestWatchFollowsANewPluginDirAfterAFailedReload(t *testing.T) {
	dir := project(t, "plugin_dir = \"scripts\"\n"+agentToml, map[string]string{"stamp.lua": versioned(0)})
	write(t, filepath.Join(dir, "next", "guard.lua"), "this is not Lua\n")
	h := open(t, dir, host.Options{})
	defer watching(t, h)()
	toml := filepath.Join(dir, "awaken.toml")
	eventually(t, "the broken new plugin_dir fails the reload", func() bool { return h.Status().LastResult == "failed" },
		func() { write(t, toml, "plugin_dir = \"next\"\n"+agentToml) })
	write(t, filepath.Join(dir, "next", "guard.lua"), guardLua)
	eventually(t, "the fixed plugin in the new plugin_dir is loaded",
		func() bool { return slices.Contains(h.Current().Lua.PluginIDs(), "guard") }, nil)

	// A plugin_dir that does not exist yet, then is made.
	eventually(t, "the missing plugin_dir fails the reload", func() bool { return h.Status().LastResult == "failed" },
		func() { write(t, toml, "plugin_dir = \"later\"\n"+agentToml) })
	if err := os.Mkdir(filepath.Join(dir, "later"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "later", "stamp.lua"), versioned(1))
	eventually(t, "the plugin_dir made later is loaded", func() bool {
		ids := h.Current().Lua.PluginIDs()
		return slices.Contains(ids, "stamp") && !slices.Contains(ids, "guard")
	}, nil)
}

// A plugin directory that is a symbolic link (plugin_dir = "current",
// a link to a release) is watched: an edit in what it points at is loaded.
func TestWatchSeesEditsInALinkedPluginDir(t *testing.T) {
	dir := project(t, "plugin_dir = \"current\"\n"+agentToml, nil)
	write(t, filepath.Join(dir, "v1", "stamp.lua"), versioned(1))
	if err := os.Symlink("v1", filepath.Join(dir, "current")); err != nil {
		t.Fatal(err)
	}
	h := open(t, dir, host.Options{})
	defer watching(t, h)()
	first := h.Current().ID
	eventually(t, "an edit in the linked plugin directory is loaded", func() bool { return h.Current().ID != first }, func() {
		write(t, filepath.Join(dir, "v1", "stamp.lua"), versioned(2))
	})
}

// A plugin directory link pointed at another release (ln -sfn: a new link
// renamed over the old) is loaded, and so are edits in the directory it
// now points at.
func TestWatchFollowsARetargetedPluginDirLink(t *testing.T) {
	dir := project(t, "plugin_dir = \"current\"\n"+agentToml, nil)
	write(t, filepath.Join(dir, "v1", "stamp.lua"), versioned(1))
	write(t, filepath.Join(dir, "v2", "stamp.lua"), versioned(2))
	link := filepath.Join(dir, "current")
	if err := os.Symlink("v1", link); err != nil {
		t.Fatal(err)
	}
	h := open(t, dir, host.Options{})
	defer watching(t, h)()
	first := h.Current().ID
	eventually(t, "the link pointed at v2 is loaded", func() bool { return h.Current().ID != first }, func() {
		_ = os.Remove(link + ".new")
		if err := os.Symlink("v2", link+".new"); err != nil {
			t.Fatal(err)
		}
		mustRename(t, link+".new", link)
	})
	second := h.Current().ID
	write(t, filepath.Join(dir, "v2", "guard.lua"), guardLua)
	eventually(t, "an edit in v2 is loaded", func() bool { return h.Current().ID != second }, nil)
}

// A plugin_dir nested below another directory is loaded again when that
// directory is removed and a copy of it moved into its place.
func TestWatchSeesANestedPluginDirComeBack(t *testing.T) {
	dir := project(t, "plugin_dir = \"policies/scripts\"\n"+agentToml, nil)
	write(t, filepath.Join(dir, "policies", "scripts", "stamp.lua"), versioned(1))
	h := open(t, dir, host.Options{})
	defer watching(t, h)()
	eventually(t, "the removed tree fails the reload", func() bool { return h.Status().LastResult == "failed" },
		func() {
			if err := os.RemoveAll(filepath.Join(dir, "policies")); err != nil {
				t.Fatal(err)
			}
		})
	copied := filepath.Join(t.TempDir(), "policies")
	write(t, filepath.Join(copied, "scripts", "stamp.lua"), versioned(1))
	write(t, filepath.Join(copied, "scripts", "guard.lua"), guardLua)
	mustRename(t, copied, filepath.Join(dir, "policies"))
	eventually(t, "the tree moved back is loaded", func() bool { return slices.Contains(h.Current().Lua.PluginIDs(), "guard") }, nil)
	before := h.Current().ID
	write(t, filepath.Join(dir, "policies", "scripts", "stamp.lua"), versioned(2))
	eventually(t, "an edit in it is loaded", func() bool { return h.Current().ID != before }, nil)
}

// A configuration file with a hidden name (--config .awaken.toml) is
// watched like awaken.toml: editor temporary files are what the watcher
// skips, not the file it was told to read.
func TestWatchSeesAHiddenConfigFile(t *testing.T) {
	dir := project(t, agentToml, map[string]string{"stamp.lua": versioned(0)})
	toml := filepath.Join(dir, ".awaken.toml")
	mustRename(t, filepath.Join(dir, "awaken.toml"), toml)
	h, err := host.Open(context.Background(), host.Options{ConfigPath: toml})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	defer watching(t, h)()
	eventually(t, "the edited configuration is loaded", func() bool { return h.Current().Config.Runtime.MaxSteps == 3 },
		func() { write(t, toml, agentToml+"[runtime]\nmax_steps = 3\n") })
}
