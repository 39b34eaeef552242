// Package tools holds the built-in Go tools an embedding program or
// awaken.toml can offer to the model: fs_read, fs_list, fs_write and shell.
//
// There is no global registry: a program asks New for the tools it wants,
// so nothing runs commands or touches files unless it was asked to. The
// file tools are confined to a workspace root with os.Root, which refuses
// "..", absolute paths and symlinks that lead outside. What the model gets
// wrong (a path outside the workspace, a missing file, a bad argument) is an
// error result the model reads and recovers from; a Go error means the
// runtime itself failed.
package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/model"
)

// Defaults for Options fields left zero.
const (
	DefaultReadLimit    = 256 << 10
	DefaultShellTimeout = 10 * time.Second
	DefaultOutputLimit  = 64 << 10
)

// Options configure the built-in tools.
type Options struct {
	Root         string        // the workspace directory; "" is the current directory
	ReadLimit    int           // most bytes fs_read returns per call; 0: DefaultReadLimit
	ShellEnabled bool          // shell is off unless this is set
	ShellTimeout time.Duration // longest a shell call may run (timeout_ms is clamped to it); 0: DefaultShellTimeout
	OutputLimit  int           // most bytes of shell output returned; 0: DefaultOutputLimit
}

var names = []string{"fs_list", "fs_read", "fs_write", "shell"}

// Names lists the built-in tools, sorted.
func Names() []string { return append([]string(nil), names...) }

// New makes the built-in tool name with o. An unknown name, a workspace
// that is not a directory, or shell while ShellEnabled is false is a
// config_invalid error.
func New(name string, o Options) (plugin.Tool, error) {
	switch name {
	case "fs_read", "fs_list", "fs_write", "shell":
	default:
		return nil, errs.New(errs.ConfigInvalid, "unknown built-in tool %q%s; the built-in tools are %s",
			name, errs.DidYouMean(name, names), strings.Join(names, ", "))
	}
	if name == "shell" && !o.ShellEnabled {
		return nil, errs.New(errs.ConfigInvalid,
			"the shell tool is off because it runs any command the model writes; enable it with [tools] shell = true in awaken.toml (Options.ShellEnabled when embedding)")
	}
	if o.ReadLimit < 0 || o.OutputLimit < 0 || o.ShellTimeout < 0 {
		return nil, errs.New(errs.ConfigInvalid, "tool limits must not be negative")
	}
	w, err := newWorkspace(o.Root)
	if err != nil {
		return nil, err
	}
	switch name {
	case "fs_read":
		return newRead(w, orDefault(o.ReadLimit, DefaultReadLimit)), nil
	case "fs_list":
		return newList(w), nil
	case "fs_write":
		return newWrite(w), nil
	}
	return newShell(w, orDefault(o.ShellTimeout, DefaultShellTimeout), orDefault(o.OutputLimit, DefaultOutputLimit)), nil
}

// orDefault returns v, or def when v is zero.
func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// workspace is the directory the tools work in: absolute, with symlinks
// resolved, so that absolute paths the model copies from `pwd` compare
// correctly.
type workspace struct{ dir string }

func newWorkspace(root string) (workspace, error) {
	if root == "" {
		root = "."
	}
	abs, err := filepath.Abs(root)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return workspace{}, errs.Wrap(errs.ConfigInvalid, err, "the tools' workspace root %q cannot be used", root)
	}
	st, err := os.Stat(abs)
	if err != nil || !st.IsDir() {
		return workspace{}, errs.New(errs.ConfigInvalid, "the tools' workspace root %q is not a directory", root)
	}
	return workspace{dir: abs}, nil
}

// open opens the root for one call. Opening per call (one syscall) keeps
// tools free of file descriptors to close and follows a recreated workspace.
func (w workspace) open() (*os.Root, error) {
	r, err := os.OpenRoot(w.dir)
	if err != nil {
		return nil, fmt.Errorf("open the workspace %s: %w", w.dir, err)
	}
	return r, nil
}

// rel turns the model's path into one relative to the root. An absolute
// path inside the workspace is accepted (the model may have copied it from
// the shell); anything lexically outside is refused here, and os.Root
// refuses symlinks that lead outside later.
func (w workspace) rel(p string) (string, bool) {
	if filepath.IsAbs(p) {
		r, err := filepath.Rel(w.dir, filepath.Clean(p))
		if err != nil || !filepath.IsLocal(r) {
			return "", false
		}
		return r, true
	}
	c := filepath.Clean(p)
	return c, filepath.IsLocal(c)
}

func outside(p string) model.ToolResult {
	return model.Error(fmt.Sprintf("path %q is outside the workspace; use a path relative to the workspace root", p))
}

// pathResult turns a filesystem error about the model's path p into an
// error result saying what is wrong.
func pathResult(p string, err error) model.ToolResult {
	if escapes(err) {
		return outside(p)
	}
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return model.Error(fmt.Sprintf("path %q does not exist", p))
	case errors.Is(err, syscall.ENOTDIR):
		return model.Error(fmt.Sprintf("a parent of path %q is not a directory", p))
	case errors.Is(err, syscall.EISDIR):
		return model.Error(fmt.Sprintf("path %q is a directory", p))
	case errors.Is(err, syscall.ELOOP):
		return model.Error(fmt.Sprintf("path %q has too many levels of symbolic links", p))
	case errors.Is(err, fs.ErrPermission):
		return model.Error(fmt.Sprintf("permission denied for path %q", p))
	}
	msg := err.Error()
	if errors.As(err, &pe) {
		msg = pe.Err.Error()
	}
	return model.Error(fmt.Sprintf("path %q: %s", p, msg))
}

// escapes reports os.Root's refusal of a path that leads outside. The
// error value is not exported, so its text is matched, anywhere in the
// chain (MkdirAll wraps the error of the step that failed).
func escapes(err error) bool {
	for ; err != nil; err = errors.Unwrap(err) {
		if err.Error() == "path escapes from parent" {
			return true
		}
	}
	return false
}

// Argument readers: a wrong argument is an error result for the model.

func stringArg(args map[string]any, name string, required bool) (string, *model.ToolResult) {
	v, ok := args[name]
	if !ok || v == nil {
		if required {
			r := model.Error(fmt.Sprintf("argument %q is required", name))
			return "", &r
		}
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		r := model.Error(fmt.Sprintf("argument %q must be a string", name))
		return "", &r
	}
	return s, nil
}

func intArg(args map[string]any, name string, def, lo int) (int, *model.ToolResult) {
	v, ok := args[name]
	if !ok || v == nil {
		return def, nil
	}
	f, ok := v.(float64)
	if !ok || f != math.Trunc(f) || math.IsInf(f, 0) {
		r := model.Error(fmt.Sprintf("argument %q must be an integer", name))
		return 0, &r
	}
	if f < float64(lo) {
		r := model.Error(fmt.Sprintf("argument %q must be at least %d", name, lo))
		return 0, &r
	}
	if f > math.MaxInt32 {
		f = math.MaxInt32 // larger values are clamped by every caller anyway
	}
	return int(f), nil
}

// text makes a byte slice safe to show: a rune cut at the end is dropped and
// invalid UTF-8 is replaced, so results always encode as JSON strings. It
// also returns how many bytes of b it used.
func text(b []byte, cutEnd bool) (string, int) {
	if cutEnd {
		b = b[:cutRune(b)]
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), len(b)
}

// cutRune returns the length of b without a rune cut short at its end.
func cutRune(b []byte) int {
	i := len(b) - 1
	for i > 0 && len(b)-i < utf8.UTFMax && !utf8.RuneStart(b[i]) {
		i--
	}
	if i >= 0 && !utf8.FullRune(b[i:]) {
		return i
	}
	return len(b)
}
