package luabridge

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// A sealed source holds the .lua files of a source as one load read them.
// A generation compiles its plugins and every module they require from
// these bytes only: a module read from disk when a hook first requires it
// could have been edited, half-written or deleted since the load, and two
// states of one generation could run two versions of it. The digest of the
// files is part of the generation's hash, so editing a module is a new
// generation rather than "unchanged".
type sealed struct {
	files  map[string][]byte     // slash path -> content
	dirs   map[string][]dirEntry // slash path -> entries, sorted
	digest [sha256.Size]byte
}

// sealedFS is a sealed source seen from one of its directories (fs.Sub
// keeps the type, so a sub-tree is known to be sealed).
type sealedFS struct {
	s   *sealed
	dir string
}

// requirable reports whether require could ever load the file at slash
// path p: a .lua file that is not a test, outside hidden directories and
// the LuaLS definitions (types/). Only those are read.
func requirable(p string, isDir bool) bool {
	base := path.Base(p)
	if strings.HasPrefix(base, ".") {
		return false // module names have no segment that starts with "."
	}
	if isDir {
		// types/ holds the LuaLS stubs; node_modules (a plugin directory
		// in a JavaScript project) holds no Lua, and may hold a great
		// many files every load would walk.
		return p != "types" && base != "node_modules"
	}
	return strings.HasSuffix(base, ".lua") && !strings.HasSuffix(base, "_test.lua")
}

// seal reads src's requirable files within lim. A source sealed already,
// or without a file system, is returned as it is.
func seal(src Source, lim Limits) (Source, error) {
	if src.FS == nil {
		return src, nil
	}
	if _, ok := src.FS.(sealedFS); ok {
		return src, nil
	}
	s := &sealed{files: map[string][]byte{}, dirs: map[string][]dirEntry{}}
	total := 0
	// walk reads a directory's files; links is how many links to
	// directories it went through (fs.WalkDir does not follow them, and a
	// loop of them must end).
	var walk func(links int) fs.WalkDirFunc
	walk = func(links int) fs.WalkDirFunc {
		return func(p string, d fs.DirEntry, err error) error {
			return s.visit(src, lim, &total, p, d, err, links, walk)
		}
	}
	err := fs.WalkDir(src.FS, ".", walk(0))
	if err != nil {
		var e *errs.Error
		if !errors.As(err, &e) {
			err = fmt.Errorf("read plugin directory %s: %w", src.Name, err)
		}
		return src, err
	}
	s.index()
	return Source{FS: sealedFS{s: s, dir: "."}, Name: src.Name}, nil
}

// maxDirLinks bounds the links to directories a seal follows in a row.
const maxDirLinks = 8

// visit reads one entry of the walk (see seal).
func (s *sealed) visit(src Source, lim Limits, total *int, p string, d fs.DirEntry, err error, links int, walk func(int) fs.WalkDirFunc) error {
	if err != nil {
		if p == "." {
			return err
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil // gone while the load walked: not part of it
		}
		return &errs.Error{Code: errs.PluginLoadFailed, Pos: errs.Pos{File: path.Join(src.Name, p)}, Msg: err.Error()}
	}
	if p == "." {
		return nil
	}
	if d.Type()&fs.ModeSymlink != 0 {
		// A link to a directory of modules (lib -> ../shared) is read
		// as the directory, as require would have read through it.
		if fi, err := fs.Stat(src.FS, p); err == nil && fi.IsDir() {
			if !requirable(p, true) {
				return nil
			}
			if links >= maxDirLinks {
				return &errs.Error{Code: errs.PluginLoadFailed, Pos: errs.Pos{File: path.Join(src.Name, p)},
					Msg: fmt.Sprintf("more than %d links to directories in a row (a loop?); link the files, or fewer directories", maxDirLinks)}
			}
			return fs.WalkDir(src.FS, p, walk(links+1))
		}
	}
	if !requirable(p, d.IsDir()) {
		if d.IsDir() {
			return fs.SkipDir
		}
		return nil
	}
	if d.IsDir() {
		return nil
	}
	chunk := path.Join(src.Name, p)
	// Stat follows a symbolic link to the file it names.
	fi, err := fs.Stat(src.FS, p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &errs.Error{Code: errs.PluginLoadFailed, Pos: errs.Pos{File: chunk}, Msg: err.Error()}
	}
	if fi.IsDir() {
		return nil
	}
	if err := s.bound(chunk, fi.Size(), *total, lim); err != nil {
		return err
	}
	b, err := fs.ReadFile(src.FS, p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return &errs.Error{Code: errs.PluginLoadFailed, Pos: errs.Pos{File: chunk}, Msg: err.Error()}
	}
	// Again on what was read: the file may have grown since Stat.
	if err := s.bound(chunk, int64(len(b)), *total, lim); err != nil {
		return err
	}
	*total += len(b)
	s.files[p] = b
	return nil
}

// bound checks one more file of size n against the limits.
func (s *sealed) bound(chunk string, n int64, total int, lim Limits) error {
	if n > int64(lim.LuaFileMax) {
		return &errs.Error{Code: errs.PluginLoadFailed, Pos: errs.Pos{File: chunk},
			Msg: fmt.Sprintf("the file is %d bytes; a .lua file of a plugin directory may have at most %d bytes (every load reads each .lua file require could load)", n, lim.LuaFileMax)}
	}
	if int64(total)+n > int64(lim.LuaDirMax) {
		return &errs.Error{Code: errs.PluginLoadFailed, Pos: errs.Pos{File: chunk},
			Msg: fmt.Sprintf("with this file the .lua files of the plugin directory pass %d bytes, the most one load reads (%d files read before it); move what no plugin requires out of the directory", lim.LuaDirMax, len(s.files))}
	}
	return nil
}

// index lists the directories and makes the digest: every path and its
// content, in path order.
func (s *sealed) index() {
	paths := make([]string, 0, len(s.files))
	for p := range s.files {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	h := sha256.New()
	seen := map[string]bool{}
	for _, p := range paths {
		fmt.Fprintf(h, "%s\x00%d\x00", p, len(s.files[p]))
		h.Write(s.files[p])
		// The file, then each directory above it not listed yet.
		e := dirEntry{name: path.Base(p), size: int64(len(s.files[p]))}
		for child := p; child != "." && !seen[child]; child = path.Dir(child) {
			seen[child] = true
			s.dirs[path.Dir(child)] = append(s.dirs[path.Dir(child)], e)
			e = dirEntry{name: path.Base(path.Dir(child)), dir: true}
		}
	}
	for _, es := range s.dirs {
		sort.Slice(es, func(i, j int) bool { return es[i].name < es[j].name })
	}
	copy(s.digest[:], h.Sum(nil))
}

// sameSource reports whether a and b are one source. File systems of a
// type that cannot be compared (a map) are never the same.
func sameSource(a, b Source) bool {
	if a.Name != b.Name || a.FS == nil || b.FS == nil {
		return false
	}
	ta, tb := reflect.TypeOf(a.FS), reflect.TypeOf(b.FS)
	if ta != tb || !ta.Comparable() {
		return false
	}
	return a.FS == b.FS
}

// digestOf is what a generation's hash covers of a source: its name and
// the sealed files. An unsealed source adds nothing.
func digestOf(src Source) []byte {
	f, ok := src.FS.(sealedFS)
	if !ok {
		return nil
	}
	return fmt.Appendf(nil, "%s\x00%s\x00%x\x00", src.Name, f.dir, f.s.digest)
}

func (f sealedFS) full(op, name string) (string, error) {
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	return path.Join(f.dir, name), nil
}

// ReadFile returns a copy, as fs.ReadFileFS asks: the sealed bytes stay as
// they were read.
func (f sealedFS) ReadFile(name string) ([]byte, error) {
	p, err := f.full("read", name)
	if err != nil {
		return nil, err
	}
	b, ok := f.s.files[p]
	if !ok {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
	}
	return slices.Clone(b), nil
}

func (f sealedFS) Stat(name string) (fs.FileInfo, error) {
	p, err := f.full("stat", name)
	if err != nil {
		return nil, err
	}
	if b, ok := f.s.files[p]; ok {
		return dirEntry{name: path.Base(p), size: int64(len(b))}, nil
	}
	if _, ok := f.s.dirs[p]; ok || p == "." {
		return dirEntry{name: path.Base(p), dir: true}, nil
	}
	return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
}

func (f sealedFS) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := f.full("readdir", name)
	if err != nil {
		return nil, err
	}
	es, ok := f.s.dirs[p]
	if !ok && p != "." {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	out := make([]fs.DirEntry, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out, nil
}

func (f sealedFS) Sub(dir string) (fs.FS, error) {
	p, err := f.full("sub", dir)
	if err != nil {
		return nil, err
	}
	return sealedFS{s: f.s, dir: p}, nil
}

func (f sealedFS) Open(name string) (fs.File, error) {
	fi, err := f.Stat(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: errors.Unwrap(err)}
	}
	if fi.IsDir() {
		es, _ := f.ReadDir(name)
		return &sealedDir{info: fi, entries: es}, nil
	}
	b, _ := f.ReadFile(name)
	return &sealedFile{info: fi, r: bytes.NewReader(b)}, nil
}

// dirEntry is both the fs.DirEntry and the fs.FileInfo of a sealed file
// or directory.
type dirEntry struct {
	name string
	dir  bool
	size int64
}

func (e dirEntry) Name() string               { return e.name }
func (e dirEntry) IsDir() bool                { return e.dir }
func (e dirEntry) Type() fs.FileMode          { return e.Mode().Type() }
func (e dirEntry) Info() (fs.FileInfo, error) { return e, nil }
func (e dirEntry) Size() int64                { return e.size }
func (e dirEntry) ModTime() time.Time         { return time.Time{} }
func (e dirEntry) Sys() any                   { return nil }
func (e dirEntry) Mode() fs.FileMode {
	if e.dir {
		return fs.ModeDir | 0o555
	}
	return 0o444
}

type sealedFile struct {
	info fs.FileInfo
	r    *bytes.Reader
}

func (f *sealedFile) Stat() (fs.FileInfo, error) { return f.info, nil }
func (f *sealedFile) Read(b []byte) (int, error) { return f.r.Read(b) }
func (f *sealedFile) Close() error               { return nil }

type sealedDir struct {
	info    fs.FileInfo
	entries []fs.DirEntry
}

func (d *sealedDir) Stat() (fs.FileInfo, error) { return d.info, nil }
func (d *sealedDir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.info.Name(), Err: errors.New("is a directory")}
}
func (d *sealedDir) Close() error { return nil }

// ReadDir returns the next n entries (all that are left for n <= 0).
func (d *sealedDir) ReadDir(n int) ([]fs.DirEntry, error) {
	if n <= 0 || n >= len(d.entries) {
		out := d.entries
		d.entries = nil
		if n > 0 && len(out) == 0 {
			return nil, io.EOF
		}
		return out, nil
	}
	out := d.entries[:n]
	d.entries = d.entries[n:]
	return out, nil
}
