package main

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/awaken-lua/awaken-lua/stdlib"
)

// initProject is what init writes: a configuration, an example plugin with
// its test, a scenario for the scripted model and the editor settings; the
// LuaLS definitions (stdlib/types) are added as types/.
//
//go:embed all:initproject
var initProject embed.FS

// cmdInit scaffolds a project in DIR (default: the current directory). It
// never overwrites: when a file it would write exists, it writes nothing.
func cmdInit(e *env) int {
	fs0 := e.flags("init")
	args, err := parse(fs0, e.args)
	if err != nil {
		return exitUsage
	}
	if len(args) > 1 {
		fmt.Fprintln(e.stderr, "usage: awaken-lua init [DIR]")
		return exitUsage
	}
	dir := "."
	if len(args) == 1 {
		dir = args[0]
	}
	if dir == "" {
		// An unset variable in a script, `init "$DIR"`: writing into the
		// current directory instead would surprise.
		fmt.Fprintln(e.stderr, `awaken-lua init: DIR is empty; name the directory to make the project in, such as awaken-lua init myproject (or "." for this one)`)
		return exitUsage
	}
	files := map[string][]byte{}
	err = fs.WalkDir(initProject, "initproject", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(initProject, p)
		files[strings.TrimPrefix(p, "initproject/")] = b
		return err
	})
	if err == nil {
		err = fs.WalkDir(stdlib.FS, "types", func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := fs.ReadFile(stdlib.FS, p)
			files[path.Join("types", path.Base(p))] = b
			return err
		})
	}
	if err != nil {
		fmt.Fprintf(e.stderr, "awaken-lua init: %v\n", err)
		return exitFailed
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		fmt.Fprintf(e.stderr, "awaken-lua init: %s is a file, not a directory; name a new directory, such as awaken-lua init myproject\n", dir)
		return exitUsage
	}
	var exist []string
	for name := range files {
		// A file where init makes a directory (scripts, types) is in the
		// way as much as a file init writes.
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			if st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(d))); err == nil && !st.IsDir() {
				if e := d + " (a file, where init makes a directory)"; !slices.Contains(exist, e) {
					exist = append(exist, e)
				}
			}
		}
		if _, err := os.Stat(filepath.Join(dir, filepath.FromSlash(name))); err == nil {
			exist = append(exist, name)
		} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			fmt.Fprintf(e.stderr, "awaken-lua init: %v\n", err)
			return exitFailed
		}
	}
	if len(exist) > 0 {
		fmt.Fprintf(e.stderr, "awaken-lua init: %s already has %s; nothing was written (init a new directory, or move them away)\n",
			dir, strings.Join(slices.Sorted(slices.Values(exist)), ", "))
		return exitFailed
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		dst := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			fmt.Fprintf(e.stderr, "awaken-lua init: %v\n", err)
			return exitFailed
		}
		if err := os.WriteFile(dst, files[name], 0o644); err != nil {
			fmt.Fprintf(e.stderr, "awaken-lua init: %v\n", err)
			return exitFailed
		}
		fmt.Fprintf(e.stdout, "  %s\n", filepath.ToSlash(filepath.Join(dir, filepath.FromSlash(name))))
	}
	cd := ""
	if dir != "." {
		cd = "cd " + shellQuote(dir) + " && "
	}
	fmt.Fprintf(e.stdout, "\nnext: %sawaken-lua test && awaken-lua run \"tidy up\"  (then edit scripts/policy.lua under awaken-lua dev)\n", cd)
	return exitOK
}

// shellQuote quotes s as a POSIX shell reads it, unless it needs no
// quoting: the "next:" line is pasted into a shell.
func shellQuote(s string) string {
	plain := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_./@%+=:,-", r)) {
			plain = false
			break
		}
	}
	if plain {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
