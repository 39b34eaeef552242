package config

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// TestLoadRefusesAHugeFile: --config naming a multi-gigabyte file (a log,
// /dev/zero) read it whole and crashed out of memory with a stack trace.
// A file past MaxFileSize is config_invalid, read no further.
func TestLoadRefusesAHugeFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.toml")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, int64(MaxFileSize)+1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	_, err := Load(path)
	want := path + ": config_invalid: cannot read the configuration file: it is larger than 16MiB, which no awaken.toml needs; " +
		"check that --config names the project's awaken.toml"
	if errs.CodeOf(err) != errs.ConfigInvalid || err.Error() != want {
		t.Fatalf("Load: %v\nwant %s", err, want)
	}
	if err := os.Truncate(path, int64(MaxFileSize)); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); errs.CodeOf(err) != errs.ConfigInvalid || err.Error() == want {
		t.Fatalf("a file of exactly MaxFileSize is read (and refused as TOML): %v", err)
	}
}
