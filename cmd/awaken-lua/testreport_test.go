package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"path/filepath"
	"strings"
	"testing"
)

// TestTestFormats: --format json and junit report every test, the
// failure with its file:line, and the exit code stays 1 on a failure.
func TestTestFormats(t *testing.T) {
	dir := project(t, "plugin_dir = \"scripts\"\n", map[string]string{
		"scripts/p.lua": "local awaken = require('awaken')\nreturn awaken.plugin {}\n",
		"scripts/p_test.lua": "local t = require('awaken.testing')\n" +
			"t.test('passes', function() t.eq(1, 1) end)\n" +
			"t.test('fails', function() t.eq(1, 2) end)\n",
	})
	run := func(format string) (string, int) {
		var out, errOut bytes.Buffer
		code := cli(context.Background(), []string{"--config", filepath.Join(dir, "awaken.toml"), "test", "--format", format},
			strings.NewReader(""), &out, &errOut)
		return out.String(), code
	}
	out, code := run("json")
	var doc testJSON
	if err := json.Unmarshal([]byte(out), &doc); err != nil || code != 1 {
		t.Fatalf("json: exit %d %v\n%s", code, err, out)
	}
	if doc.Passed != 1 || doc.Failed != 1 || len(doc.Tests) != 2 || doc.Tests[1].Name != "fails" || doc.Tests[1].Passed ||
		!strings.Contains(doc.Tests[1].Message, "p_test.lua:3") {
		t.Fatalf("json: %+v", doc)
	}
	out, code = run("junit")
	var suites junitSuites
	if err := xml.Unmarshal([]byte(out), &suites); err != nil || code != 1 {
		t.Fatalf("junit: exit %d %v\n%s", code, err, out)
	}
	if suites.Tests != 2 || suites.Fails != 1 || len(suites.Suites) != 1 || suites.Suites[0].Cases[1].Failure == nil ||
		!strings.Contains(suites.Suites[0].Cases[1].Failure.Text, "expected 2, got 1") {
		t.Fatalf("junit: %+v\n%s", suites, out)
	}
	if _, code := run("yaml"); code != 2 {
		t.Fatalf("an unknown format: exit %d", code)
	}
}
