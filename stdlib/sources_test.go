package stdlib_test

import (
	"embed"
	"io/fs"
	"path"
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/stdlib"
)

// sources is the whole stdlib tree, with the Lua tests and their fixtures
// that the binary does not ship.
//
//go:embed *
var sources embed.FS

// The binary ships every plugin and module and no test: a new module left
// out of stdlib.FS, or a test let in, fails here.
func TestShippedFilesAreTheSourcesLessTests(t *testing.T) {
	shipped := map[string]bool{}
	if err := fs.WalkDir(stdlib.FS, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			shipped[p] = true
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	n := 0
	err := fs.WalkDir(sources, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".lua" {
			return err
		}
		base := path.Base(p)
		test := strings.HasSuffix(base, "_test.lua") || strings.HasPrefix(base, "fixture_")
		switch {
		case test && shipped[p]:
			t.Errorf("%s is a test file, and stdlib.FS ships it", p)
		case !test && !shipped[p]:
			t.Errorf("%s is not in stdlib.FS: add it to the go:embed lines of stdlib.go", p)
		case !test:
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != len(shipped) || n == 0 {
		t.Fatalf("stdlib.FS holds %d files, %d of them Lua sources", len(shipped), n)
	}
}
