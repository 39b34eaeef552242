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
		call("WebFetch", map[string]any{"url": "http://0x7f.1/"}),
		call("WebFetch", map[string]any{"url": "https://ｅｘａｍｐｌｅ。com/"}),
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

// FuzzMatchPath checks, for any path rule, file path and anchoring
// directories, that an allow rule never covers more than the same deny
// rule (the anchors a deny rule tries, the working directory and those
// above it, include the allow rule's), that ask and deny agree, and that
// a rule on Edit covers a shell write to the same path the same way.
func FuzzMatchPath(f *testing.F) {
	f.Add("./.env", ".env", "/srv/shop", "")
	f.Add("/.git/**", "../.git/config", "/srv/shop/api", "")
	f.Add("src/**", "/srv/shop/src/a.go", "/srv/shop", "/srv/shop")
	f.Add("~/.ssh/**", "~/.ssh/id_rsa", "", "/srv/shop")
	f.Add("//etc/**", "/etc/passwd", "/", "")
	f.Add("*.md", "a/b/c.md", "/srv/shop/", "/srv")
	f.Fuzz(func(t *testing.T, spec, p, work, proj string) {
		r, err := ParseRule("Edit(" + spec + ")")
		if err != nil {
			return
		}
		c := Call{Tool: "Edit", Input: map[string]any{"file_path": p}, WorkDir: work, ProjectDir: proj, HomeDir: "/home/u"}
		allow, ask, deny := r.Match(Allow, c), r.Match(Ask, c), r.Match(Deny, c)
		if allow && !deny {
			t.Fatalf("Edit(%s) allows %q (work %q, project %q) but does not deny it", spec, p, work, proj)
		}
		if ask != deny {
			t.Fatalf("Edit(%s) asks and denies %q differently (work %q, project %q)", spec, p, work, proj)
		}
		// The same path written by a shell command, from the working
		// directory and from a workdir of its own.
		if p == "" || strings.ContainsAny(p, "'\x00\n") {
			return
		}
		echo, _ := ParseRule("Bash(echo *)")
		allows, denies := Policy{Allow: []Rule{r, echo}}, Policy{Deny: []Rule{r}}
		for _, in := range []map[string]any{{"command": "echo x > '" + p + "'"}, {"command": "echo x > '" + p + "'", "workdir": work + "/sub"}} {
			sh := Call{Tool: "Bash", Input: in, WorkDir: work, ProjectDir: proj, HomeDir: "/home/u"}
			if allows.Decide(sh).Behavior == Allow && denies.Decide(sh).Behavior != Deny {
				t.Fatalf("Edit(%s) allows the write in %v (work %q, project %q) but does not deny it", spec, in, work, proj)
			}
		}
	})
}
