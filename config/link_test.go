package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// TestLoadDanglingLink: a configuration file that is a link to a file
// that is not there says so, with where the link points; "no such file"
// about a name ls shows would puzzle. Here counts the link as there.
func TestLoadDanglingLink(t *testing.T) {
	dir := t.TempDir()
	link, target := filepath.Join(dir, "awaken.toml"), filepath.Join(dir, "gone.toml")
	if err := os.Symlink(target, link); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	_, err := Load(link)
	want := link + ": config_invalid: cannot read the configuration file: " + link + " is a link to " + target +
		", which does not exist; fix the link, or replace it with the file"
	if errs.CodeOf(err) != errs.ConfigInvalid || err.Error() != want {
		t.Fatalf("Load: %v\nwant %s", err, want)
	}
	if !Here(link) || Here(target) {
		t.Fatalf("Here(link) = %v, Here(target) = %v", Here(link), Here(target))
	}
	if _, err := Load(target); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Fatalf("Load of a missing file: %v", err)
	}
}
