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
