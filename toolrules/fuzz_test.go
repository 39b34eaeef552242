package toolrules

import (
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/shell"
)

// FuzzParseRule checks that any rule either fails with a column-bearing
// message or parses into a rule that matches calls of every kind without
// panicking. Seeds are in testdata/fuzz/FuzzParseRule.
func FuzzParseRule(f *testing.F) {
	calls := []Call{
		bash("npm test && rm -rf / > out"),
		bash("$X 'unclosed"),
		file("Read", project+"/a/.env"),
		file("Write", "rel/p"),
		call("Grep", map[string]any{"pattern": "x"}),
		call("WebFetch", map[string]any{"url": "https://a.example.com/x"}),
		call("WebSearch", map[string]any{"query": 1.0}),
		call("Agent", map[string]any{"subagent_type": "Explore", "model": "opus"}),
		call("mcp__s__t", map[string]any{"a": true}),
		call("run_shell_command", map[string]any{"command": "ls"}),
		{Tool: "Read", Input: map[string]any{"file_path": "~/x"}},
	}
	f.Fuzz(func(t *testing.T, src string) {
		r, err := ParseRule(src)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "config_invalid: permission rule ") {
				t.Fatalf("error without its code and rule: %v", err)
			}
			return
		}
		if r.Source != src || r.Tool == "" || r.HasSpecifier != strings.Contains(src, "(") {
			t.Fatalf("ParseRule(%q) = %+v", src, r)
		}
		for _, c := range calls {
			for _, b := range []Behavior{Allow, Ask, Deny} {
				r.Match(b, c)
			}
		}
		p := Policy{Allow: []Rule{r}, Ask: []Rule{r}, Deny: []Rule{r}}
		for _, c := range calls {
			p.Decide(c)
		}
	})
}

// FuzzMatchBash checks, for any Bash specifier and command line, that a
// rule that would allow a command would also deny it as a deny rule: an
// allow rule never covers more than the same deny rule.
func FuzzMatchBash(f *testing.F) {
	f.Add("rm *", "sudo rm -rf / && echo $(ls)")
	f.Add("npm run test:*", "timeout 5 npm run test; bash -c 'npm run test'")
	f.Add("git * main", "git push origin main | tee log")
	f.Fuzz(func(t *testing.T, spec, cmd string) {
		r, err := ParseRule("Bash(" + spec + ")")
		if err != nil {
			return
		}
		if cs, err := shell.Split(cmd); err != nil || len(cs) == 0 {
			return // nothing runs: allowed and never denied
		}
		c := bash(cmd)
		if r.Match(Allow, c) && !r.Match(Deny, c) {
			t.Fatalf("Bash(%s) allows %q but does not deny it", spec, cmd)
		}
		if r.Match(Ask, c) != r.Match(Deny, c) {
			t.Fatalf("Bash(%s) asks and denies %q differently", spec, cmd)
		}
	})
}
