package stdlib_test

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/awaken-lua/awaken-lua/luabridge"
)

// Every stdlib/**/*_test.lua runs here, one Go subtest per Lua test, with
// the same runner as `awaken-lua test`. Nothing to run is a failure: no
// test files, a plugin without a test file, or a file without tests.
func TestLuaTests(t *testing.T) {
	src := luabridge.Source{FS: sources, Name: "stdlib"}
	files, err := testFiles(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(f.Path, func(t *testing.T) {
			t.Parallel()
			sum, err := runFile(src, f)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range sum.Results {
				t.Run(r.Name, func(t *testing.T) {
					if !r.Passed {
						t.Error(r.Message)
					}
				})
			}
		})
	}
}

// testFiles finds the Lua test files of src and checks that every plugin
// (a directory with init.lua) has at least one.
func testFiles(src luabridge.Source) ([]luabridge.TestFile, error) {
	files, err := luabridge.FindTests(src)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no Lua test files (*_test.lua) found in %s", src.Name)
	}
	plugins, err := fs.Glob(src.FS, "*/init.lua")
	if err != nil {
		return nil, err
	}
	if len(plugins) == 0 {
		return nil, fmt.Errorf("no plugins (*/init.lua) found in %s", src.Name)
	}
	for _, p := range plugins {
		dir := path.Dir(p)
		tested := false
		for _, f := range files {
			tested = tested || strings.HasPrefix(f.Path, dir+"/")
		}
		if !tested {
			return nil, fmt.Errorf("plugin %s/%s has no *_test.lua", src.Name, dir)
		}
	}
	return files, nil
}

// runFile runs one test file. A file that runs no test, or whose counts do
// not add up, is an error.
func runFile(src luabridge.Source, f luabridge.TestFile) (luabridge.TestSummary, error) {
	// A generous budget for each test and each hook: the race detector and
	// the files running in parallel slow them down many times (with the
	// default 5s per test, a harness test of permission and one of
	// reminder ran past it on a loaded 2-core machine); the limits have
	// tests of their own.
	sum := luabridge.RunTests(context.Background(), luabridge.TestOptions{Files: []luabridge.TestFile{f}, Stdlib: src, Out: io.Discard,
		Timeout: 60 * time.Second, Limits: luabridge.Limits{HookTimeout: 30 * time.Second}})
	n := sum.Passed + sum.Failed
	switch {
	case n == 0 || len(sum.Results) == 0:
		return sum, fmt.Errorf("%s: no tests ran (%d passed, %d failed)", f.Path, sum.Passed, sum.Failed)
	case n != len(sum.Results):
		return sum, fmt.Errorf("%s: %d passed + %d failed, but %d results", f.Path, sum.Passed, sum.Failed, len(sum.Results))
	}
	return sum, nil
}

// The checks above refuse what would otherwise pass with nothing to run.
func TestNothingToRunFails(t *testing.T) {
	lua := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	plugin := lua("local awaken = require('awaken')\nreturn awaken.plugin {}\n")
	test := lua("local t = require('awaken.testing')\nt.test('ok', function() t.eq(1, 1) end)\n")
	for _, tc := range []struct {
		name string
		fs   fstest.MapFS
		want string
	}{
		{"no files", fstest.MapFS{}, "no Lua test files"},
		{"no tests", fstest.MapFS{"a/init.lua": plugin}, "no Lua test files"},
		{"an untested plugin", fstest.MapFS{"a/init.lua": plugin, "a/a_test.lua": test, "b/init.lua": plugin}, "plugin x/b has no"},
		{"no plugins", fstest.MapFS{"a_test.lua": test}, "no plugins"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := testFiles(luabridge.Source{FS: tc.fs, Name: "x"})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	t.Run("a file without tests", func(t *testing.T) {
		src := luabridge.Source{FS: fstest.MapFS{"a/init.lua": plugin, "a/a_test.lua": lua("-- nothing yet\n")}, Name: "x"}
		files, err := testFiles(src)
		if err != nil || len(files) != 1 {
			t.Fatalf("%v %v", files, err)
		}
		if _, err := runFile(src, files[0]); err == nil || !strings.Contains(err.Error(), "no tests ran") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("a file that does not load", func(t *testing.T) {
		src := luabridge.Source{FS: fstest.MapFS{"a/init.lua": plugin, "a/a_test.lua": lua("error('boom')\n")}, Name: "x"}
		files, _ := testFiles(src)
		sum, err := runFile(src, files[0])
		if err != nil || sum.Failed != 1 {
			t.Fatalf("a broken file must count as a failed test: %+v %v", sum, err)
		}
	})
}
