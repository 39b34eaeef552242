package luabridge_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/luabridge"
)

// modPlugin requires one module when it loads and another, lazily, in its
// gate; a third, helpers.late, is tried on every call.
const modPlugin = `local awaken = require("awaken")
local p = awaken.plugin { id = "mod" }
local u = require("helpers.util")
p:tool_gate(function(ctx, call)
  if u.deny(call.name) then return awaken.block("util denies " .. call.name) end
  local lz = require("helpers.lazy")
  if lz.deny(call.name) then return awaken.block("lazy denies " .. call.name) end
  if call.name == "late" then
    local ok, err = pcall(require, "helpers.late")
    if ok then return awaken.block("late found") end
    return awaken.block(tostring(err))
  end
end)
return p
`

func modFS(util, lazy string) fstest.MapFS {
	return fstest.MapFS{
		"mod.lua":          {Data: []byte(modPlugin)},
		"helpers/util.lua": {Data: []byte(util)},
		"helpers/lazy.lua": {Data: []byte(lazy)},
	}
}

func denies(name string) string {
	return `return { deny = function(n) return n == "` + name + `" end }`
}

// A module's bytes are part of the generation's hash: an edit of a module
// a plugin requires is a new generation, not "unchanged".
func TestModuleEditChangesTheHash(t *testing.T) {
	fsys := modFS(denies("rm"), denies("none"))
	g1, err := loadFS(t, fsys)
	if err != nil {
		t.Fatal(err)
	}
	same, err := loadFS(t, fsys)
	if err != nil {
		t.Fatal(err)
	}
	if same.Hash != g1.Hash {
		t.Fatalf("the same files loaded twice give two hashes: %s %s", g1.Hash, same.Hash)
	}
	for _, tc := range []struct {
		what, file, src string
	}{
		{"a module required at load", "helpers/util.lua", denies("ls")},
		{"a module required in a hook", "helpers/lazy.lua", denies("ls")},
		{"a module nobody requires yet", "helpers/late.lua", "return {}"},
	} {
		edited := modFS(denies("rm"), denies("none"))
		edited[tc.file] = &fstest.MapFile{Data: []byte(tc.src)}
		g2, err := loadFS(t, edited)
		if err != nil {
			t.Fatal(err)
		}
		if g2.Hash == g1.Hash {
			t.Errorf("%s: editing %s leaves the hash %s", tc.what, tc.file, g1.Hash)
		}
	}
	// What require can never load is not part of it.
	for _, file := range []string{"helpers/notes.md", "mod_test.lua", "types/awaken.lua", ".hidden/x.lua", "node_modules/x/index.lua"} {
		edited := modFS(denies("rm"), denies("none"))
		edited[file] = &fstest.MapFile{Data: []byte("return {}")}
		g2, err := loadFS(t, edited)
		if err != nil {
			t.Fatal(err)
		}
		if g2.Hash != g1.Hash {
			t.Errorf("adding %s changed the hash", file)
		}
	}
}

// A generation runs the module bytes it loaded: a module changed,
// half-written or deleted after the load, and first required afterwards in
// a hook, runs as it was at the load; one that appears after the load is
// not there for this generation.
func TestGenerationRunsTheModulesItLoaded(t *testing.T) {
	for _, tc := range []struct {
		what   string
		change func(fstest.MapFS)
	}{
		{"rewritten", func(f fstest.MapFS) { f["helpers/lazy.lua"] = &fstest.MapFile{Data: []byte(denies("ls"))} }},
		{"half-written", func(f fstest.MapFS) {
			f["helpers/lazy.lua"] = &fstest.MapFile{Data: []byte(`return { deny = function(n) return`)}
		}},
		{"deleted", func(f fstest.MapFS) { delete(f, "helpers/lazy.lua") }},
	} {
		t.Run(tc.what, func(t *testing.T) {
			fsys := modFS(denies("rm"), denies("cat"))
			g, err := loadFS(t, fsys)
			if err != nil {
				t.Fatal(err)
			}
			tc.change(fsys)
			if r, err := gateOnce(t, g, nil, "cat"); err != nil || r != "lazy denies cat" {
				t.Fatalf("cat: %q %v; want the module as loaded to deny it", r, err)
			}
			if r, err := gateOnce(t, g, nil, "ls"); err != nil || r != "" {
				t.Fatalf("ls: %q %v; want the module as loaded to allow it", r, err)
			}
		})
	}
	t.Run("added", func(t *testing.T) {
		fsys := modFS(denies("rm"), denies("cat"))
		g, err := loadFS(t, fsys)
		if err != nil {
			t.Fatal(err)
		}
		fsys["helpers/late.lua"] = &fstest.MapFile{Data: []byte("return {}")}
		r, err := gateOnce(t, g, nil, "late")
		if err != nil || !strings.Contains(r, `require "helpers.late": no helpers/late.lua`) {
			t.Fatalf("late: %q %v; want the module that appeared after the load not found", r, err)
		}
	})
}

// A syntax error in a module a plugin requires fails the load at the
// module's line.
func TestModuleSyntaxErrorFailsTheLoad(t *testing.T) {
	_, err := loadFS(t, modFS("return { deny = function(n)\n  return n ==\nend }", denies("cat")))
	if !errors.Is(err, errs.PluginLoadFailed) || !strings.Contains(err.Error(), "scripts/helpers/util.lua:3") {
		t.Fatalf("err = %v", err)
	}
}

// Each load reads the .lua files require could load, and no more than
// LuaFileMax each and LuaDirMax together: a plugin directory that passes
// them fails the load at the file, rather than making every load slow.
func TestModuleFilesAreBounded(t *testing.T) {
	bounded := func(l *luabridge.Loader) { l.Limits.LuaFileMax, l.Limits.LuaDirMax = 1000, 3000 }
	big := "return { s = [[" + strings.Repeat("x", 1000) + "]] }"
	fsys := modFS(denies("rm"), denies("cat"))
	fsys["helpers/big.lua"] = &fstest.MapFile{Data: []byte(big)}
	_, err := loadFS(t, fsys, bounded)
	if !errors.Is(err, errs.PluginLoadFailed) || !strings.Contains(err.Error(), "scripts/helpers/big.lua") ||
		!strings.Contains(err.Error(), "1000 bytes") {
		t.Fatalf("a file past LuaFileMax: %v", err)
	}

	fsys = modFS(denies("rm"), denies("cat"))
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		fsys["lib/"+name+".lua"] = &fstest.MapFile{Data: []byte("return { s = [[" + strings.Repeat("x", 700) + "]] }")}
	}
	_, err = loadFS(t, fsys, bounded)
	if !errors.Is(err, errs.PluginLoadFailed) || !strings.Contains(err.Error(), "scripts/lib/") ||
		!strings.Contains(err.Error(), "3000 bytes") {
		t.Fatalf("files past LuaDirMax: %v", err)
	}

	// Files require cannot load are not read, whatever their size.
	fsys = modFS(denies("rm"), denies("cat"))
	for _, name := range []string{"data.json", "mod_test.lua", "types/awaken.lua", ".git/big.lua", "node_modules/fengari/big.lua"} {
		fsys[name] = &fstest.MapFile{Data: []byte(big + big + big + big)}
	}
	if _, err := loadFS(t, fsys, bounded); err != nil {
		t.Fatalf("files require cannot load count: %v", err)
	}
}

// readCounter counts the reads of each file of a file system.
type readCounter struct {
	fstest.MapFS
	reads map[string]int
}

func (c *readCounter) Open(name string) (fs.File, error) {
	c.reads[name]++
	return c.MapFS.Open(name)
}

func (c *readCounter) ReadFile(name string) ([]byte, error) {
	c.reads[name]++
	return c.MapFS.ReadFile(name)
}

// A test run reads each module once, however many harnesses load it, and
// the test file's own require reads the same bytes.
func TestTestRunReadsModulesOnce(t *testing.T) {
	fsys := &readCounter{MapFS: modFS(denies("rm"), denies("cat")), reads: map[string]int{}}
	fsys.MapFS["calls.lua"] = &fstest.MapFile{Data: []byte(`return { "rm", "cat", "ls" }`)}
	fsys.MapFS["mod_test.lua"] = &fstest.MapFile{Data: []byte(`local t = require("awaken.testing")
local calls = require("calls")
for i = 1, 5 do
  t.test("harness " .. i, function()
    local h = t.harness { plugins = { "mod" } }
    t.eq(h:gate { name = calls[1] }.decision, "block")
    t.eq(h:gate { name = calls[2] }.decision, "block")
    t.eq(h:gate { name = calls[3] }.decision, "allow")
  end)
end
`)}
	src := luabridge.Source{FS: fsys, Name: "scripts"}
	files, err := luabridge.FindTests(src)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	if sum := luabridge.RunTests(context.Background(), luabridge.TestOptions{Files: files, Plugins: src, Out: &out}); sum.Passed != 5 {
		t.Fatalf("%s", out.String())
	}
	for _, name := range []string{"mod.lua", "helpers/util.lua", "helpers/lazy.lua", "calls.lua"} {
		if n := fsys.reads[name]; n != 1 {
			t.Errorf("%s read %d times, want once", name, n)
		}
	}
}

// A directory of modules linked into the plugin directory (lib ->
// ../shared) is read through the link, as require read it before loads
// were sealed; a loop of links fails the load with its path.
func TestSealFollowsLinksToDirectories(t *testing.T) {
	root := t.TempDir()
	shared, plugins := filepath.Join(root, "shared"), filepath.Join(root, "plugins")
	for _, d := range []string{shared, plugins} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(shared, "util.lua"), []byte(`return { deny = "rm" }`), 0o644); err != nil {
		t.Fatal(err)
	}
	plugin := "local awaken = require(\"awaken\")\nlocal u = require(\"lib.util\")\nreturn awaken.plugin { id = \"p\", description = u.deny }\n"
	if err := os.WriteFile(filepath.Join(plugins, "p.lua"), []byte(plugin), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(shared, filepath.Join(plugins, "lib")); err != nil {
		t.Fatal(err)
	}
	if _, err := loadFS(t, os.DirFS(plugins)); err != nil {
		t.Fatalf("require through a linked directory: %v", err)
	}
	if err := os.Symlink(".", filepath.Join(shared, "again")); err != nil {
		t.Fatal(err)
	}
	if _, err := loadFS(t, os.DirFS(plugins)); err == nil || !strings.Contains(err.Error(), "links to directories in a row") {
		t.Fatalf("a loop of links: %v", err)
	}
}
