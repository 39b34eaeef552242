package main

import (
	"os"
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
