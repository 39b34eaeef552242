package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInitEmptyDir: `awaken-lua init ""` (an unset variable in a script)
// is bad usage and writes nothing; it wrote the project into the current
// directory and said "next: cd  && ...".
func TestInitEmptyDir(t *testing.T) {
	wd := t.TempDir()
	out, errOut, code := runChild(t, wd, nil, nil, "init", "")
	if code != exitUsage || out != "" || !strings.Contains(errOut, `awaken-lua init: DIR is empty; name the directory to make the project in, such as awaken-lua init myproject (or "." for this one)`) {
		t.Fatalf("init \"\": exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if left, _ := os.ReadDir(wd); len(left) != 0 {
		t.Fatalf("init \"\" wrote %v", left)
	}
}

// TestInitNextLineQuotesTheDir: the "next:" line is a command to paste, so
// a directory with a space (or a quote) is quoted as a shell reads it;
// "cd my project && ..." changed into the wrong directory.
func TestInitNextLineQuotesTheDir(t *testing.T) {
	wd := t.TempDir()
	for _, tc := range []struct{ dir, cd string }{
		{"my project", `cd 'my project' && awaken-lua test`},
		{"it's", `cd 'it'\''s' && awaken-lua test`},
		{"plain-dir_1.x", `cd plain-dir_1.x && awaken-lua test`},
	} {
		out, errOut, code := runChild(t, wd, nil, nil, "init", tc.dir)
		if code != exitOK || !strings.Contains(out, "\nnext: "+tc.cd) {
			t.Errorf("init %q: exit %d, stdout %q, stderr %q (want %q)", tc.dir, code, out, errOut, tc.cd)
		}
	}
}

// TestInitFileInTheWay: a file where init makes a directory (scripts, a
// file) is named as in the way, as an existing file is, and nothing is
// written; it said "stat DIR/scripts/policy.lua: not a directory".
func TestInitFileInTheWay(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "scripts"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := runChild(t, "", nil, nil, "init", dir)
	want := "awaken-lua init: " + dir + " already has scripts (a file, where init makes a directory); nothing was written (init a new directory, or move them away)\n"
	if code != exitFailed || out != "" || errOut != want {
		t.Fatalf("init: exit %d, stdout %q, stderr %q (want %q)", code, out, errOut, want)
	}
	if left, _ := os.ReadDir(dir); len(left) != 1 {
		t.Fatalf("init wrote beside the file: %v", left)
	}
}
