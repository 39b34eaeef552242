package toolrules

import (
	"errors"
	"strings"
	"testing"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

func TestParseRule(t *testing.T) {
	tests := []struct {
		src, tool, spec string
		hasSpec         bool
	}{
		{"Bash", "Bash", "", false},
		{"  Bash  ", "Bash", "", false},
		{"Bash(npm run test:*)", "Bash", "npm run test:*", true},
		{"Bash(git diff *)", "Bash", "git diff *", true},
		{"Bash(echo (hi))", "Bash", "echo (hi)", true},
		{"Read(./.env)", "Read", "./.env", true},
		{"Edit(src/**)", "Edit", "src/**", true},
		{"Read(//abs/path)", "Read", "//abs/path", true},
		{"Read(~/x)", "Read", "~/x", true},
		{"WebFetch(domain:example.com)", "WebFetch", "domain:example.com", true},
		{"WebSearch", "WebSearch", "", false},
		{"mcp__server", "mcp__server", "", false},
		{"mcp__server__tool", "mcp__server__tool", "", false},
		{"mcp__server__*", "mcp__server__*", "", false},
		{"mcp__plugin_my-plugin_db__query", "mcp__plugin_my-plugin_db__query", "", false},
		{"*", "*", "", false},
		{"Agent(model:opus)", "Agent", "model:opus", true},
	}
	for _, tc := range tests {
		r, err := ParseRule(tc.src)
		if err != nil {
			t.Errorf("ParseRule(%q): %v", tc.src, err)
			continue
		}
		if r.Source != tc.src || r.Tool != tc.tool || r.Specifier != tc.spec || r.HasSpecifier != tc.hasSpec {
			t.Errorf("ParseRule(%q) = tool %q spec %q (%v), want %q %q (%v)", tc.src, r.Tool, r.Specifier, r.HasSpecifier, tc.tool, tc.spec, tc.hasSpec)
		}
	}
}

func TestParseRuleErrors(t *testing.T) {
	tests := []struct{ src, want string }{
		{"", `permission rule "": the rule is empty`},
		{"   ", `the rule is empty`},
		{"Bash(npm", `permission rule "Bash(npm" at column 5: the "(" is not closed by a ")" at the end of the rule`},
		{"Bash(npm) x", `at column 5: the "(" is not closed`},
		{"Bash)", `at column 5: a ")" without a "("`},
		{"Bash()", `at column 5: empty parentheses; write Bash alone`},
		{"(x)", `at column 1: no tool name`},
		{"Ba sh", `at column 3: ' ' cannot be part of a tool name`},
		{"  Bäsh", `at column 4:`},
		{"mcp__*(x)", `a tool-name pattern (mcp__*) takes no specifier`},
		{"Read([)", `at column 6: "[" is not a valid path pattern`},
		{"Edit(src/[a-)", `"[a-" is not a valid path pattern`},
		{"WebFetch(domain:)", `at column 10: domain: names no host`},
		{"Bash(" + strings.Repeat("x", MaxRule) + ")", `more than 4096`},
	}
	for _, tc := range tests {
		_, err := ParseRule(tc.src)
		if err == nil {
			t.Errorf("ParseRule(%q) succeeded, want an error saying %q", tc.src, tc.want)
			continue
		}
		if !errors.Is(err, errs.ConfigInvalid) {
			t.Errorf("ParseRule(%q): %v has code %q, want config_invalid", tc.src, err, errs.CodeOf(err))
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseRule(%q) = %q, want it to say %q", tc.src, err, tc.want)
		}
	}
	// A glob a path rule would reject is fine in a rule that is not one.
	if _, err := ParseRule("Bash(ls [)"); err != nil {
		t.Errorf("Bash(ls [): %v", err)
	}
}

func TestParsePolicy(t *testing.T) {
	p, err := ParsePolicy([]string{"Read", "Bash(npm *)"}, nil, []string{"Bash(rm *)"})
	if err != nil || len(p.Allow) != 2 || len(p.Deny) != 1 {
		t.Fatalf("ParsePolicy = %+v, %v", p, err)
	}
	_, err = ParsePolicy([]string{"Read", "Bash("}, []string{"ok"}, []string{"", "Edit(x)"})
	if err == nil {
		t.Fatal("ParsePolicy accepted bad rules")
	}
	msg := err.Error()
	for _, want := range []string{"permissions.allow[1]: ", "permissions.deny[0]: "} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q does not name %q", msg, want)
		}
	}
	if !errors.Is(err, errs.ConfigInvalid) {
		t.Errorf("error %v is not config_invalid", err)
	}
}
