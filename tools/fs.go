package tools

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/command"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/model"
)

// maxEntries caps fs_list, so one huge directory cannot flood the context.
const maxEntries = 1000

var (
	_ plugin.Tool = (*readTool)(nil)
	_ plugin.Tool = (*listTool)(nil)
	_ plugin.Tool = (*writeTool)(nil)
)

// readTool is fs_read.
type readTool struct {
	w     workspace
	limit int
	spec  model.ToolSpec
}

func newRead(w workspace, limit int) *readTool {
	return &readTool{w: w, limit: limit, spec: model.ToolSpec{
		Name: "fs_read",
		Description: fmt.Sprintf("Read a text file in the workspace. Returns {path, content, truncated, size} and, when truncated, next_offset to continue from. "+
			"At most %d bytes are returned per call; use offset and limit to page through larger files.", limit),
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"path":   map[string]any{"type": "string", "description": "File path relative to the workspace root."},
				"offset": map[string]any{"type": "integer", "minimum": 0.0, "description": "Byte offset to start reading at (default 0)."},
				"limit":  map[string]any{"type": "integer", "minimum": 1.0, "description": fmt.Sprintf("Most bytes to return (default and maximum %d).", limit)},
			},
			"required":             []any{"path"},
			"additionalProperties": false,
		},
	}}
}

func (t *readTool) Spec() model.ToolSpec { return t.spec }

func (t *readTool) Execute(_ context.Context, _ *plugin.Input, args map[string]any, _ *command.Command) (model.ToolResult, error) {
	p, bad := stringArg(args, "path", true)
	if bad != nil {
		return *bad, nil
	}
	offset, bad := intArg(args, "offset", 0, 0)
	if bad != nil {
		return *bad, nil
	}
	limit, bad := intArg(args, "limit", t.limit, 1)
	if bad != nil {
		return *bad, nil
	}
	limit = min(limit, t.limit)
	f, st, res, err := t.w.openPath(p)
	if res != nil || err != nil {
		return deref(res), err
	}
	defer f.Close()
	switch {
	case st.IsDir():
		return model.Error(fmt.Sprintf("path %q is a directory; use fs_list to see its entries", p)), nil
	case !st.Mode().IsRegular():
		return model.Error(fmt.Sprintf("path %q is not a regular file", p)), nil
	case int64(offset) > st.Size():
		return model.Error(fmt.Sprintf("offset %d is past the end of %q (%d bytes)", offset, p, st.Size())), nil
	}
	// Read one byte more than asked, to know whether more follows.
	buf, err := io.ReadAll(io.NewSectionReader(f, int64(offset), int64(limit)+1))
	if err != nil {
		return pathResult(p, err), nil
	}
	truncated := len(buf) > limit
	if truncated {
		buf = buf[:limit]
	}
	if bytes.IndexByte(buf, 0) >= 0 {
		return model.Error(fmt.Sprintf("path %q looks like a binary file (it contains NUL bytes); fs_read returns text only", p)), nil
	}
	content, used := text(buf, truncated)
	data := map[string]any{
		"path":      p,
		"content":   content,
		"truncated": truncated,
		"size":      float64(st.Size()),
	}
	if truncated {
		data["next_offset"] = float64(offset + used)
	}
	return model.Success(data), nil
}

// openPath opens p inside the workspace. What the model got wrong (a path
// outside, a missing file) comes back as a result it reads; an error means
// the workspace itself could not be opened. The file outlives the root.
func (w workspace) openPath(p string) (*os.File, fs.FileInfo, *model.ToolResult, error) {
	rel, ok := w.rel(p)
	if !ok {
		r := outside(p)
		return nil, nil, &r, nil
	}
	root, err := w.open()
	if err != nil {
		return nil, nil, nil, err
	}
	defer root.Close()
	f, err := root.Open(rel)
	if err != nil {
		r := pathResult(p, err)
		return nil, nil, &r, nil
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		r := pathResult(p, err)
		return nil, nil, &r, nil
	}
	return f, st, nil, nil
}

func deref(r *model.ToolResult) model.ToolResult {
	if r == nil {
		return model.ToolResult{}
	}
	return *r
}

// listTool is fs_list.
type listTool struct {
	w    workspace
	spec model.ToolSpec
}

func newList(w workspace) *listTool {
	return &listTool{w: w, spec: model.ToolSpec{
		Name: "fs_list",
		Description: fmt.Sprintf("List a directory in the workspace. Returns {path, entries, truncated} with entries "+
			"[{name, type (file, dir, symlink or other), size}] sorted by name, at most %d of them.", maxEntries),
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"path": map[string]any{"type": "string", "description": `Directory path relative to the workspace root (default ".").`},
			},
			"additionalProperties": false,
		},
	}}
}

func (t *listTool) Spec() model.ToolSpec { return t.spec }

func (t *listTool) Execute(_ context.Context, _ *plugin.Input, args map[string]any, _ *command.Command) (model.ToolResult, error) {
	p, bad := stringArg(args, "path", false)
	if bad != nil {
		return *bad, nil
	}
	if p == "" {
		p = "."
	}
	f, st, res, err := t.w.openPath(p)
	if res != nil || err != nil {
		return deref(res), err
	}
	defer f.Close()
	if !st.IsDir() {
		return model.Error(fmt.Sprintf("path %q is a file, not a directory; use fs_read to read it", p)), nil
	}
	des, err := f.ReadDir(-1)
	if err != nil {
		return pathResult(p, err), nil
	}
	sort.Slice(des, func(i, j int) bool { return des[i].Name() < des[j].Name() })
	truncated := len(des) > maxEntries
	if truncated {
		des = des[:maxEntries]
	}
	entries := make([]any, 0, len(des))
	for _, de := range des {
		typ, size := "other", 0.0
		switch m := de.Type(); {
		case m.IsDir():
			typ = "dir"
		case m&fs.ModeSymlink != 0:
			typ = "symlink"
		case m.IsRegular():
			typ = "file"
			info, err := de.Info()
			if err != nil {
				continue // removed while listing
			}
			size = float64(info.Size())
		}
		entries = append(entries, map[string]any{"name": de.Name(), "type": typ, "size": size})
	}
	return model.Success(map[string]any{"path": p, "entries": entries, "truncated": truncated}), nil
}

// writeTool is fs_write.
type writeTool struct {
	w    workspace
	spec model.ToolSpec
}

func newWrite(w workspace) *writeTool {
	return &writeTool{w: w, spec: model.ToolSpec{
		Name: "fs_write",
		Description: "Write a text file in the workspace, replacing it if it exists and creating missing parent directories. " +
			"The write is atomic: readers see the old or the new content, never a mix. Returns {path, bytes}.",
		Parameters: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"path":    map[string]any{"type": "string", "description": "File path relative to the workspace root."},
				"content": map[string]any{"type": "string", "description": "The whole new content of the file."},
			},
			"required":             []any{"path", "content"},
			"additionalProperties": false,
		},
	}}
}

func (t *writeTool) Spec() model.ToolSpec { return t.spec }

func (t *writeTool) Execute(_ context.Context, _ *plugin.Input, args map[string]any, _ *command.Command) (model.ToolResult, error) {
	p, bad := stringArg(args, "path", true)
	if bad != nil {
		return *bad, nil
	}
	content, bad := stringArg(args, "content", true)
	if bad != nil {
		return *bad, nil
	}
	rel, ok := t.w.rel(p)
	if !ok {
		return outside(p), nil
	}
	if rel == "." || strings.HasSuffix(p, "/") {
		return model.Error(fmt.Sprintf("path %q names a directory; give a file path", p)), nil
	}
	root, err := t.w.open()
	if err != nil {
		return model.ToolResult{}, err
	}
	defer root.Close()

	rel, res := t.target(root, p, rel)
	if res != nil {
		return *res, nil
	}
	perm := fs.FileMode(0o644)
	if st, err := root.Stat(rel); err == nil {
		if st.IsDir() {
			return model.Error(fmt.Sprintf("path %q is a directory", p)), nil
		}
		perm = st.Mode().Perm() // keep an existing file's mode
	}
	dir := filepath.Dir(rel)
	if dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			if errors.Is(err, fs.ErrExist) { // a file where a directory should be
				return model.Error(fmt.Sprintf("a parent of path %q is not a directory", p)), nil
			}
			return pathResult(p, err), nil
		}
	}
	if err := writeAtomic(root, dir, rel, []byte(content), perm); err != nil {
		return pathResult(p, err), nil
	}
	return model.Success(map[string]any{"path": p, "bytes": float64(len(content))}), nil
}

// target follows symlinks at rel (within the workspace), so writing to a
// link updates the file it points to rather than replacing the link.
func (t *writeTool) target(root *os.Root, p, rel string) (string, *model.ToolResult) {
	for range 16 {
		st, err := root.Lstat(rel)
		if err != nil || st.Mode()&fs.ModeSymlink == 0 {
			return rel, nil // a missing file or a parent problem shows up when writing
		}
		dest, err := root.Readlink(rel)
		if err != nil {
			r := pathResult(p, err)
			return "", &r
		}
		if !filepath.IsAbs(dest) {
			dest = filepath.Join(filepath.Dir(rel), dest)
		}
		next, ok := t.w.rel(dest)
		if !ok {
			r := outside(p)
			return "", &r
		}
		rel = next
	}
	r := model.Error(fmt.Sprintf("path %q has too many levels of symbolic links", p))
	return "", &r
}

// writeAtomic writes a temp file in the target's directory, syncs it and
// renames it over the target, then syncs the directory: a crash leaves the
// old file or the new one, never a torn write.
func writeAtomic(root *os.Root, dir, rel string, data []byte, perm fs.FileMode) error {
	var (
		tmp string
		f   *os.File
		err error
	)
	for range 4 {
		tmp = filepath.Join(dir, "."+filepath.Base(rel)+".tmp-"+rand.Text()[:10])
		f, err = root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, rel)
	}
	if err != nil {
		_ = root.Remove(tmp)
		return err
	}
	if d, err := root.Open(dir); err == nil {
		_ = d.Sync() // best effort: some filesystems refuse to sync a directory
		_ = d.Close()
	}
	return nil
}
