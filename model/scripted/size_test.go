package scripted

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// TestLoadRefusesAHugeFile: --model scripted:FILE naming a huge file (a
// log, /dev/zero) read it whole and crashed out of memory with a stack
// trace. A script past MaxScriptSize is config_invalid, read no further.
func TestLoadRefusesAHugeFile(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "big.toml")
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, MaxScriptSize+1); err != nil { // sparse: no disk used
		t.Fatal(err)
	}
	_, err := Load(path)
	want := path + ": config_invalid: cannot read the model script: it is larger than 64 MiB; check that it names the script of turns"
	if errs.CodeOf(err) != errs.ConfigInvalid || err.Error() != want {
		t.Fatalf("Load: %v\nwant %s", err, want)
	}
}
