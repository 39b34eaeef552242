package host_test

import (
	"context"
	"fmt"
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

// A plugin file that is a symbolic link to a file elsewhere (a shared
// policy linked into each project), a directory of modules linked in, and
// a configuration file that is a link (a dotfiles manager's) are watched
// where they point: an edit there is loaded, also an editor's save that
// renames a new file over the old, and so is an edit in what a retargeted
// link points at next, or in a directory of the link's removed and made
// again.
func TestWatchSeesEditsInLinkedFiles(t *testing.T) {
	dir := project(t, agentToml, nil)
	shared := t.TempDir()
	write(t, filepath.Join(shared, "stamp.lua"), versioned(1))
	write(t, filepath.Join(shared, "other.lua"), guardLua)
	if err := os.MkdirAll(filepath.Join(dir, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "scripts", "stamp.lua")
	if err := os.Symlink(filepath.Join(shared, "stamp.lua"), link); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(t.TempDir(), "awaken.toml")
	write(t, conf, agentToml)
	toml := filepath.Join(dir, "awaken.toml")
	if err := os.Remove(toml); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(conf, toml); err != nil {
		t.Fatal(err)
	}
	// A directory of modules linked in (lib -> a shared library), with a
	// link to another directory in it.
	lib, more := t.TempDir(), t.TempDir()
	write(t, filepath.Join(lib, "rules", "init.lua"), "return {}\n")
	write(t, filepath.Join(more, "extra.lua"), "return {}\n")
	if err := os.Symlink(more, filepath.Join(lib, "more")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(lib, filepath.Join(dir, "scripts", "lib")); err != nil {
		t.Fatal(err)
	}
	h := open(t, dir, host.Options{})
	defer watching(t, h)()
	first := h.Current().ID
	eventually(t, "an edit of the linked plugin file is loaded", func() bool { return h.Current().ID != first }, func() {
		write(t, filepath.Join(shared, "stamp.lua"), versioned(2))
	})
	second := h.Current().ID
	eventually(t, "a save renamed over the linked plugin file is loaded", func() bool { return h.Current().ID != second }, func() {
		write(t, filepath.Join(shared, "stamp.lua.new"), versioned(3))
		mustRename(t, filepath.Join(shared, "stamp.lua.new"), filepath.Join(shared, "stamp.lua"))
	})
	eventually(t, "an edit of the linked configuration file is loaded", func() bool { return h.Current().Config.Runtime.MaxSteps == 3 },
		func() { write(t, conf, agentToml+"[runtime]\nmax_steps = 3\n") })
	// The link pointed at another file: that one is watched from then on.
	eventually(t, "the retargeted link is loaded", func() bool { return slices.Contains(h.Current().Lua.PluginIDs(), "guard") }, func() {
		relink(t, filepath.Join(shared, "other.lua"), link)
	})
	third := h.Current().ID
	eventually(t, "an edit of the file the link points at now is loaded", func() bool { return h.Current().ID != third }, func() {
		write(t, filepath.Join(shared, "other.lua"), guardLua+"-- edited\n")
	})
	// The directory of the linked files removed and made again (a fresh
	// checkout of the shared policies): watched again once a reload ran.
	if err := os.RemoveAll(shared); err != nil {
		t.Fatal(err)
	}
	fourth := h.Current().ID
	write(t, filepath.Join(shared, "other.lua"), guardLua+"-- made again\n")
	eventually(t, "the file made again is loaded", func() bool { return h.Current().ID != fourth }, func() {
		relink(t, filepath.Join(shared, "other.lua"), link) // a change in the plugin directory
	})
	fifth := h.Current().ID
	eventually(t, "an edit of the file made again is loaded", func() bool { return h.Current().ID != fifth }, func() {
		write(t, filepath.Join(shared, "other.lua"), guardLua+"-- edited again\n")
	})

	// The directory of modules linked in (lib), and the one linked in it.
	for i, f := range []string{filepath.Join(lib, "rules", "init.lua"), filepath.Join(more, "extra.lua"), filepath.Join(lib, "rules", "new.lua")} {
		before := h.Current().ID
		eventually(t, "an edit in the linked library is loaded: "+f, func() bool { return h.Current().ID != before }, func() {
			write(t, f, fmt.Sprintf("return { edit = %d }\n", i))
		})
	}
}

// relink points link at target as ln -sfn does: a new link renamed over
// the old.
func relink(t *testing.T, target, link string) {
	t.Helper()
	_ = os.Remove(link + ".new")
	if err := os.Symlink(target, link+".new"); err != nil {
		t.Fatal(err)
	}
	mustRename(t, link+".new", link)
}
