package tools

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/engine/schema"
	"github.com/awaken-lua/awaken-lua/model"
)

// fixture is a workspace with files, links inside and out, and a secret
// file outside it.
type fixture struct {
	root, outside string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	root, out := t.TempDir(), t.TempDir()
	files := map[string]string{
		"README.md":   "hello\n",
		"sub/a.txt":   "aaa",
		"digits.txt":  "0123456789",
		"binary.bin":  "a\x00b",
		"unicode.txt": "éééé", // 2 bytes each
	}
	for name, content := range files {
		p := filepath.Join(root, name)
		must(t, os.MkdirAll(filepath.Dir(p), 0o755))
		must(t, os.WriteFile(p, []byte(content), 0o644))
	}
	must(t, os.Mkdir(filepath.Join(root, "sub", "b"), 0o755))
	must(t, os.WriteFile(filepath.Join(out, "secret.txt"), []byte("secret"), 0o600))
	must(t, os.Symlink("sub/a.txt", filepath.Join(root, "link-in")))
	must(t, os.Symlink("sub", filepath.Join(root, "link-dir")))
	must(t, os.Symlink(filepath.Join(out, "secret.txt"), filepath.Join(root, "link-out")))
	must(t, os.Symlink(out, filepath.Join(root, "link-outdir")))
	must(t, os.Symlink("../../"+filepath.Base(out)+"/secret.txt", filepath.Join(root, "sub", "link-rel-out")))
	return fixture{root: root, outside: out}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (f fixture) tool(t *testing.T, name string, o Options) plugin.Tool {
	t.Helper()
	o.Root = f.root
	tool, err := New(name, o)
	if err != nil {
		t.Fatal(err)
	}
	return tool
}

func run(t *testing.T, tool plugin.Tool, args map[string]any) model.ToolResult {
	t.Helper()
	res, err := tool.Execute(context.Background(), &plugin.Input{}, args, nil)
	if err != nil {
		t.Fatalf("Go error: %v", err)
	}
	return res
}

// check compares a result with the expected status, data fields and
// message substring.
func check(t *testing.T, res model.ToolResult, status string, data map[string]any, msg string) {
	t.Helper()
	if res.Status != status {
		t.Fatalf("status %s, want %s (message %q, data %v)", res.Status, status, res.Message, res.Data)
	}
	if msg != "" && !strings.Contains(res.Message, msg) {
		t.Errorf("message %q does not contain %q", res.Message, msg)
	}
	if data == nil {
		return
	}
	got, _ := res.Data.(map[string]any)
	for k, want := range data {
		if !reflect.DeepEqual(got[k], want) {
			t.Errorf("data[%q] = %#v, want %#v", k, got[k], want)
		}
	}
}

const outsideMsg = "is outside the workspace"

func TestRead(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	read := f.tool(t, "fs_read", Options{})
	small := f.tool(t, "fs_read", Options{ReadLimit: 4})
	tests := []struct {
		name   string
		tool   plugin.Tool
		args   map[string]any
		status string
		data   map[string]any
		msg    string
	}{
		{"a file", read, map[string]any{"path": "README.md"}, "success",
			map[string]any{"path": "README.md", "content": "hello\n", "truncated": false, "size": 6.0}, ""},
		{"offset and limit", read, map[string]any{"path": "digits.txt", "offset": 2.0, "limit": 3.0}, "success",
			map[string]any{"content": "234", "truncated": true, "next_offset": 5.0}, ""},
		{"the read cap", small, map[string]any{"path": "digits.txt"}, "success",
			map[string]any{"content": "0123", "truncated": true, "next_offset": 4.0, "size": 10.0}, ""},
		{"a limit above the cap is clamped", small, map[string]any{"path": "digits.txt", "limit": 100.0}, "success",
			map[string]any{"content": "0123", "truncated": true}, ""},
		{"the last page", read, map[string]any{"path": "digits.txt", "offset": 8.0}, "success",
			map[string]any{"content": "89", "truncated": false}, ""},
		{"a rune is not cut", small, map[string]any{"path": "unicode.txt", "offset": 1.0}, "success",
			map[string]any{"content": "\uFFFDé", "truncated": true, "next_offset": 4.0}, ""},
		{"an absolute path inside", read, map[string]any{"path": filepath.Join(f.root, "sub", "a.txt")}, "success",
			map[string]any{"content": "aaa"}, ""},
		{"a symlink inside to inside", read, map[string]any{"path": "link-in"}, "success",
			map[string]any{"content": "aaa"}, ""},
		{"a path through a dir symlink", read, map[string]any{"path": "link-dir/a.txt"}, "success",
			map[string]any{"content": "aaa"}, ""},
		{"dot-dot escape", read, map[string]any{"path": "../etc/passwd"}, "error", nil, `path "../etc/passwd" is outside the workspace`},
		{"hidden dot-dot escape", read, map[string]any{"path": "sub/../../x"}, "error", nil, outsideMsg},
		{"absolute path escape", read, map[string]any{"path": "/etc/passwd"}, "error", nil, `path "/etc/passwd" is outside the workspace`},
		{"a symlink inside to outside", read, map[string]any{"path": "link-out"}, "error", nil, `path "link-out" is outside the workspace`},
		{"a relative symlink to outside", read, map[string]any{"path": "sub/link-rel-out"}, "error", nil, outsideMsg},
		{"through a dir symlink to outside", read, map[string]any{"path": "link-outdir/secret.txt"}, "error", nil, outsideMsg},
		{"a missing file", read, map[string]any{"path": "nope.txt"}, "error", nil, `path "nope.txt" does not exist`},
		{"a directory", read, map[string]any{"path": "sub"}, "error", nil, "is a directory; use fs_list"},
		{"a file as a parent", read, map[string]any{"path": "README.md/x"}, "error", nil, "is not a directory"},
		{"a binary file", read, map[string]any{"path": "binary.bin"}, "error", nil, "looks like a binary file"},
		{"offset past the end", read, map[string]any{"path": "digits.txt", "offset": 11.0}, "error", nil, "past the end"},
		{"no path", read, map[string]any{}, "error", nil, `argument "path" is required`},
		{"path not a string", read, map[string]any{"path": 3.0}, "error", nil, `argument "path" must be a string`},
		{"fractional offset", read, map[string]any{"path": "digits.txt", "offset": 1.5}, "error", nil, `argument "offset" must be an integer`},
		{"zero limit", read, map[string]any{"path": "digits.txt", "limit": 0.0}, "error", nil, `argument "limit" must be at least 1`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			check(t, run(t, tc.tool, tc.args), tc.status, tc.data, tc.msg)
		})
	}
}

func TestList(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	list := f.tool(t, "fs_list", Options{})
	entry := func(name, typ string, size float64) any {
		return map[string]any{"name": name, "type": typ, "size": size}
	}
	top := []any{
		entry("README.md", "file", 6), entry("binary.bin", "file", 3), entry("digits.txt", "file", 10),
		entry("link-dir", "symlink", 0), entry("link-in", "symlink", 0), entry("link-out", "symlink", 0),
		entry("link-outdir", "symlink", 0), entry("sub", "dir", 0), entry("unicode.txt", "file", 8),
	}
	sub := []any{entry("a.txt", "file", 3), entry("b", "dir", 0), entry("link-rel-out", "symlink", 0)}
	tests := []struct {
		name   string
		args   map[string]any
		status string
		data   map[string]any
		msg    string
	}{
		{"the root by default", map[string]any{}, "success", map[string]any{"path": ".", "entries": top, "truncated": false}, ""},
		{"the root", map[string]any{"path": "."}, "success", map[string]any{"entries": top}, ""},
		{"a subdirectory", map[string]any{"path": "sub"}, "success", map[string]any{"path": "sub", "entries": sub}, ""},
		{"a dir symlink inside", map[string]any{"path": "link-dir"}, "success", map[string]any{"entries": sub}, ""},
		{"the root by absolute path", map[string]any{"path": f.root}, "success", map[string]any{"entries": top}, ""},
		{"dot-dot escape", map[string]any{"path": ".."}, "error", nil, `path ".." is outside the workspace`},
		{"absolute path escape", map[string]any{"path": "/"}, "error", nil, outsideMsg},
		{"a dir symlink to outside", map[string]any{"path": "link-outdir"}, "error", nil, outsideMsg},
		{"a file", map[string]any{"path": "README.md"}, "error", nil, "is a file, not a directory; use fs_read"},
		{"missing", map[string]any{"path": "nope"}, "error", nil, "does not exist"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			check(t, run(t, list, tc.args), tc.status, tc.data, tc.msg)
		})
	}
}

func TestListCap(t *testing.T) {
	t.Parallel()
	root := t.TempDir()
	for i := range maxEntries + 5 {
		must(t, os.WriteFile(filepath.Join(root, "f"+strconv.Itoa(10000+i)), nil, 0o644))
	}
	list, err := New("fs_list", Options{Root: root})
	must(t, err)
	res := run(t, list, map[string]any{})
	check(t, res, "success", map[string]any{"truncated": true}, "")
	if n := len(res.Data.(map[string]any)["entries"].([]any)); n != maxEntries {
		t.Fatalf("%d entries", n)
	}
}

func TestWrite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		args   map[string]any
		status string
		msg    string
		file   string // relative to the root, checked for content when set
		want   string
	}{
		{"a new file in new directories", map[string]any{"path": "new/deep/f.txt", "content": "hi"}, "success", "", "new/deep/f.txt", "hi"},
		{"replacing a file", map[string]any{"path": "README.md", "content": "new"}, "success", "", "README.md", "new"},
		{"an empty file", map[string]any{"path": "empty", "content": ""}, "success", "", "empty", ""},
		{"through a symlink inside", map[string]any{"path": "link-in", "content": "via link"}, "success", "", "sub/a.txt", "via link"},
		{"an absolute path inside", map[string]any{"path": "/ROOT/abs.txt", "content": "x"}, "success", "", "abs.txt", "x"},
		{"dot-dot escape", map[string]any{"path": "../escape.txt", "content": "x"}, "error", outsideMsg, "", ""},
		{"hidden dot-dot escape", map[string]any{"path": "new/../../escape.txt", "content": "x"}, "error", outsideMsg, "", ""},
		{"absolute path escape", map[string]any{"path": "/OUT/escape.txt", "content": "x"}, "error", outsideMsg, "", ""},
		{"a symlink to outside", map[string]any{"path": "link-out", "content": "pwned"}, "error", outsideMsg, "", ""},
		{"into a dir symlink to outside", map[string]any{"path": "link-outdir/new.txt", "content": "x"}, "error", outsideMsg, "", ""},
		{"a new dir under a dir symlink to outside", map[string]any{"path": "link-outdir/d/new.txt", "content": "x"}, "error", outsideMsg, "", ""},
		{"a directory", map[string]any{"path": "sub", "content": "x"}, "error", "is a directory", "", ""},
		{"the root", map[string]any{"path": ".", "content": "x"}, "error", "names a directory", "", ""},
		{"a file as a parent", map[string]any{"path": "README.md/x", "content": "x"}, "error", "is not a directory", "", ""},
		{"no content", map[string]any{"path": "a"}, "error", `argument "content" is required`, "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			write := f.tool(t, "fs_write", Options{})
			args := map[string]any{}
			for k, v := range tc.args {
				if s, ok := v.(string); ok {
					s = strings.Replace(s, "/ROOT", f.root, 1)
					v = strings.Replace(s, "/OUT", f.outside, 1)
				}
				args[k] = v
			}
			res := run(t, write, args)
			check(t, res, tc.status, nil, tc.msg)
			if tc.status == "success" {
				check(t, res, "success", map[string]any{"path": args["path"], "bytes": float64(len(tc.want))}, "")
			}
			if tc.file != "" {
				got, err := os.ReadFile(filepath.Join(f.root, tc.file))
				if err != nil || string(got) != tc.want {
					t.Errorf("%s holds %q (%v), want %q", tc.file, got, err, tc.want)
				}
			}
			// Nothing outside changed, and no temp file is left anywhere.
			if b, _ := os.ReadFile(filepath.Join(f.outside, "secret.txt")); string(b) != "secret" {
				t.Errorf("the outside file changed: %q", b)
			}
			for _, dir := range []string{f.root, f.outside} {
				_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
					if name := filepath.Base(p); strings.Contains(name, ".tmp-") || strings.Contains(name, "escape") || name == "new.txt" {
						t.Errorf("left behind: %s", p)
					}
					return nil
				})
			}
			if fi, err := os.Lstat(filepath.Join(f.root, "link-in")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
				t.Errorf("link-in is no longer a symlink")
			}
		})
	}
}

func TestWriteKeepsMode(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	p := filepath.Join(f.root, "README.md")
	must(t, os.Chmod(p, 0o600))
	check(t, run(t, f.tool(t, "fs_write", Options{}), map[string]any{"path": "README.md", "content": "x"}), "success", nil, "")
	fi, err := os.Stat(p)
	must(t, err)
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v", fi.Mode().Perm())
	}
}

func TestShell(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	sh := f.tool(t, "shell", Options{ShellEnabled: true})
	capped := f.tool(t, "shell", Options{ShellEnabled: true, OutputLimit: 40})
	short := f.tool(t, "shell", Options{ShellEnabled: true, ShellTimeout: 200 * time.Millisecond})
	tests := []struct {
		name   string
		tool   plugin.Tool
		args   map[string]any
		status string
		data   map[string]any
		msg    string
	}{
		{"success", sh, map[string]any{"cmd": "echo hi"}, "success",
			map[string]any{"exit_code": 0.0, "output": "hi\n", "truncated": false, "timed_out": false}, ""},
		{"a non-zero exit is a result", sh, map[string]any{"cmd": "echo no >&2; exit 3"}, "success",
			map[string]any{"exit_code": 3.0, "output": "no\n"}, ""},
		{"stdout and stderr together", sh, map[string]any{"cmd": "echo out; echo err >&2; echo out2"}, "success",
			map[string]any{"output": "out\nerr\nout2\n"}, ""},
		{"runs in the workspace", sh, map[string]any{"cmd": "cat README.md"}, "success",
			map[string]any{"output": "hello\n"}, ""},
		{"the output cap keeps both ends", capped, map[string]any{"cmd": "i=0; while [ $i -lt 100 ]; do echo line$i; i=$((i+1)); done"}, "success",
			map[string]any{"exit_code": 0.0, "truncated": true, "output": "line0\nline1\nline2\nli\n[... 650 bytes omitted ...]\nine97\nline98\nline99\n"}, ""},
		{"a timeout kills the command", sh, map[string]any{"cmd": "sleep 5", "timeout_ms": 200.0}, "error",
			map[string]any{"timed_out": true, "exit_code": -1.0}, "timed out after 200ms and was killed"},
		{"output before a timeout is kept", sh, map[string]any{"cmd": "echo started; sleep 5", "timeout_ms": 200.0}, "error",
			map[string]any{"timed_out": true, "output": "started\n"}, ""},
		{"timeout_ms is clamped to the maximum", short, map[string]any{"cmd": "sleep 5", "timeout_ms": 60000.0}, "error",
			map[string]any{"timed_out": true}, "at most 200"},
		{"a background child does not hold the call", sh, map[string]any{"cmd": "sleep 3 & echo started"}, "success",
			map[string]any{"output": "started\n", "timed_out": false}, ""},
		{"no cmd", sh, map[string]any{}, "error", nil, `argument "cmd" is required`},
		{"an empty cmd", sh, map[string]any{"cmd": ""}, "error", nil, "must not be empty"},
		{"a bad timeout", sh, map[string]any{"cmd": "true", "timeout_ms": "soon"}, "error", nil, `argument "timeout_ms" must be an integer`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			check(t, run(t, tc.tool, tc.args), tc.status, tc.data, tc.msg)
		})
	}
}

// TestShellKillsTheGroup checks that a timeout kills the command's children
// too, not just sh.
func TestShellKillsTheGroup(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
	f := newFixture(t)
	sh := f.tool(t, "shell", Options{ShellEnabled: true})
	// The child outlives any deadline below unless the group is killed.
	res := run(t, sh, map[string]any{"cmd": "sleep 600 & echo $! > bg.pid; wait", "timeout_ms": 300.0})
	check(t, res, "error", map[string]any{"timed_out": true}, "")
	b, err := os.ReadFile(filepath.Join(f.root, "bg.pid"))
	must(t, err)
	pid := strings.TrimSpace(string(b))
	n, err := strconv.Atoi(pid)
	must(t, err)
	// The kill is asynchronous; wait (without asserting any time) until the
	// child is gone or a zombie, with a deadline far above a kill's few
	// milliseconds, so a child that was not killed fails the test instead of
	// hanging it.
	deadline := time.Now().Add(20 * time.Second)
	for {
		stat, err := os.ReadFile("/proc/" + pid + "/stat")
		if err != nil {
			return
		}
		if fields := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:])); len(fields) > 0 && fields[0] == "Z" {
			return
		}
		if time.Now().After(deadline) {
			if p, err := os.FindProcess(n); err == nil {
				_ = p.Kill()
			}
			t.Fatalf("the background child %s still runs after the timeout: the command's process group was not killed", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestShellEnvironment runs alone: t.Setenv forbids t.Parallel.
func TestShellEnvironment(t *testing.T) {
	t.Setenv("AWAKEN_TEST_SECRET", "sk-do-not-leak")
	f := newFixture(t)
	sh := f.tool(t, "shell", Options{ShellEnabled: true})
	check(t, run(t, sh, map[string]any{"cmd": `echo "[$AWAKEN_TEST_SECRET]"; echo "$PWD"`}), "success",
		map[string]any{"output": "[]\n" + f.root + "\n"}, "")
}

func TestShellCancelled(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	sh := f.tool(t, "shell", Options{ShellEnabled: true})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := sh.Execute(ctx, &plugin.Input{}, map[string]any{"cmd": "sleep 5"}, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
}

func TestCapWriter(t *testing.T) {
	t.Parallel()
	stream := []byte("abcdefghijklmnopqrstuvwxyz")
	tests := []struct {
		name  string
		limit int
		n     int // bytes of stream written
		want  string
		trunc bool
	}{
		{"under the limit", 10, 7, "abcdefg", false},
		{"at the limit", 10, 10, "abcdefghij", false},
		{"just over", 10, 12, "abcde\n[... 2 bytes omitted ...]\nhijkl", true},
		{"far over", 10, 26, "abcde\n[... 16 bytes omitted ...]\nvwxyz", true},
		{"odd limit", 5, 26, "ab\n[... 22 bytes omitted ...]\nyz", true},
	}
	for _, tc := range tests {
		for _, chunk := range []int{1, 2, 3, 7, 100} {
			t.Run(tc.name+"/chunk "+strconv.Itoa(chunk), func(t *testing.T) {
				w := newCapWriter(tc.limit)
				for i := 0; i < tc.n; i += chunk {
					_, _ = w.Write(stream[i:min(i+chunk, tc.n)])
				}
				got, trunc := w.result()
				if got != tc.want || trunc != tc.trunc {
					t.Errorf("got %q, %v; want %q, %v", got, trunc, tc.want, tc.trunc)
				}
			})
		}
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	must(t, os.WriteFile(file, nil, 0o644))
	tests := []struct {
		name string
		tool string
		o    Options
		want string
	}{
		{"unknown tool", "fs_raed", Options{Root: dir}, `unknown built-in tool "fs_raed" (did you mean "fs_read"?); the built-in tools are fs_list, fs_read, fs_write, shell`},
		{"shell is off by default", "shell", Options{Root: dir}, "enable it with [tools] shell = true in awaken.toml"},
		{"missing root", "fs_read", Options{Root: filepath.Join(dir, "nope")}, "cannot be used"},
		{"root is a file", "fs_list", Options{Root: file}, "is not a directory"},
		{"negative limit", "fs_read", Options{Root: dir, ReadLimit: -1}, "must not be negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := New(tc.tool, tc.o)
			if errs.CodeOf(err) != errs.ConfigInvalid || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want config_invalid containing %q", err, tc.want)
			}
		})
	}
}

func TestSpecs(t *testing.T) {
	t.Parallel()
	if got := Names(); !reflect.DeepEqual(got, []string{"fs_list", "fs_read", "fs_write", "shell"}) {
		t.Fatalf("Names() = %v", got)
	}
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			tool, err := New(name, Options{Root: t.TempDir(), ShellEnabled: true})
			must(t, err)
			spec := tool.Spec()
			if spec.Name != name || spec.Description == "" {
				t.Errorf("spec %+v", spec)
			}
			if _, err := schema.Compile(spec.Parameters); err != nil {
				t.Errorf("parameters do not compile: %v", err)
			}
		})
	}
}
