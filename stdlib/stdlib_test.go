package stdlib_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/luabridge"
	"github.com/awaken-lua/awaken-lua/stdlib"
)

// Every stdlib/**/*_test.lua runs here, one Go subtest per Lua test, with
// the same runner as `awaken-lua test`.
func TestLuaTests(t *testing.T) {
	src := luabridge.Source{FS: stdlib.FS, Name: "stdlib"}
	files, err := luabridge.FindTests(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		t.Run(f.Path, func(t *testing.T) {
			t.Parallel()
			// A generous hook budget: the race detector and parallel tests
			// slow hooks down many times; the limits have tests of their own.
			sum := luabridge.RunTests(context.Background(), luabridge.TestOptions{Files: []luabridge.TestFile{f}, Stdlib: src, Out: io.Discard,
				Limits: luabridge.Limits{HookTimeout: 5 * time.Second}})
			if len(sum.Results) == 0 {
				t.Fatal("no tests in the file")
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
