package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	defaultproject "github.com/awaken-lua/awaken-lua"
	"github.com/awaken-lua/awaken-lua/config"
	"github.com/awaken-lua/awaken-lua/host"
)

// useDefault makes a command that found no awaken.toml (and was given no
// --config) run the built-in default project: it is written to a temporary
// directory, which cleanup removes, so nothing is left behind where the
// command ran. Elsewhere it does nothing.
func (e *env) useDefault(command string) (cleanup func(), err error) {
	if e.config != "" {
		return func() {}, nil
	}
	if config.Here(host.DefaultConfig) {
		return func() {}, nil
	}
	dir, err := os.MkdirTemp("", "awaken-default-")
	if err != nil {
		return nil, err
	}
	cleanup = func() { os.RemoveAll(dir) }
	err = fs.WalkDir(defaultproject.Default, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(defaultproject.Default, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("writing the built-in default project: %w", err)
	}
	e.config = filepath.Join(dir, host.DefaultConfig)
	fmt.Fprintf(e.stderr, "awaken-lua %s: no awaken.toml here, so this is the built-in demo (scripted model, example plugin); awaken-lua init makes a project of your own\n", command)
	return cleanup, nil
}
