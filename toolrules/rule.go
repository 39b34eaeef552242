// Package toolrules implements Claude Code's permission rules as users
// write them in settings.json (permissions.allow, ask and deny), so a
// policy can take a pasted permissions block and reach the same decisions,
// or stricter ones.
//
// A rule is Tool or Tool(specifier). The specifier is matched against the
// tool's primary argument, which a table (Tools) gives per tool: a glob on
// each simple command of a Bash command (npm run *, the legacy npm run
// test:*), a gitignore-style path for the file tools (./.env, src/**,
// //abs/path, ~/home/path), domain:HOST for WebFetch, a glob for the rest.
// mcp__server matches every tool of that MCP server; tool names may be
// globs (mcp__server__*, and for deny and ask rules * or mcp__*). Deny and
// ask rules may also name a scalar input field: Agent(model:opus).
//
// Shell commands are split by package shell: a deny or ask rule matches a
// command line when any of its simple commands matches, an allow rule only
// when every one does, and a command that cannot be split matches deny and
// ask rules and never allow rules. README.md in this directory lists where
// these rules follow Claude Code and where they are stricter.
package toolrules

import (
	"fmt"
	"path"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// MaxRule is the longest rule ParseRule reads, in bytes.
const MaxRule = 4096

// Behavior is the list a rule sits in.
type Behavior string

const (
	Allow Behavior = "allow"
	Ask   Behavior = "ask"
	Deny  Behavior = "deny"
)

// Rule is one parsed permission rule.
type Rule struct {
	// Source is the rule as written.
	Source string
	// Tool is the tool name, a tool-name glob (mcp__github__*, *) or an MCP
	// server (mcp__github).
	Tool string
	// Specifier is the text between the parentheses; HasSpecifier is false
	// for a bare Tool (and for Tool(*) on a command tool, which means the
	// same).
	Specifier    string
	HasSpecifier bool

	nameGlob bool    // Tool has a *
	server   bool    // Tool is mcp__server: every tool of the server
	param    string  // Specifier reads as param:value (only some tools take it)
	value    string  // the value of param:value
	cmd      command // Specifier as a command pattern
	path     *pathPattern
	pathErr  error
	domain   string // Specifier after domain:, lower case, without a final dot
	isDomain bool
}

// ParseRule parses a rule as Claude Code's settings write it. Errors have
// the code config_invalid and name the column (1-based, in bytes).
func ParseRule(src string) (Rule, error) {
	r := Rule{Source: src}
	if len(src) > MaxRule {
		return r, ruleErr(src, 0, "the rule is %d bytes, more than %d", len(src), MaxRule)
	}
	s := strings.TrimSpace(src)
	lead := strings.Index(src, s)
	if s == "" {
		return r, ruleErr(src, 0, "the rule is empty; write a tool name, like Bash or Bash(npm run *)")
	}
	name, spec, hasSpec := s, "", false
	if open := strings.IndexByte(s, '('); open >= 0 {
		if s[len(s)-1] != ')' {
			return r, ruleErr(src, lead+open+1, `the "(" is not closed by a ")" at the end of the rule`)
		}
		name, spec, hasSpec = strings.TrimSpace(s[:open]), s[open+1:len(s)-1], true
		if strings.TrimSpace(spec) == "" {
			return r, ruleErr(src, lead+open+1, "empty parentheses; write %s alone to match every call", name)
		}
	} else if close := strings.IndexByte(s, ')'); close >= 0 {
		return r, ruleErr(src, lead+close+1, `a ")" without a "("`)
	}
	if name == "" {
		return r, ruleErr(src, lead+1, "no tool name before the parentheses")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c == '-' || c == '.' || c == '*' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return r, ruleErr(src, lead+i+1, "%q cannot be part of a tool name (letters, digits, _ - . and * only)", c)
		}
	}
	r.Tool = name
	r.nameGlob = strings.Contains(name, "*")
	r.server = !r.nameGlob && strings.HasPrefix(name, "mcp__") && !strings.Contains(name[len("mcp__"):], "__")
	if r.nameGlob && hasSpec {
		return r, ruleErr(src, lead+1, "a tool-name pattern (%s) takes no specifier", name)
	}
	if !hasSpec {
		return r, nil
	}
	r.Specifier, r.HasSpecifier = spec, true
	t := strings.TrimSpace(spec)
	r.cmd = compileCommand(t)
	if name, value, ok := paramForm(t); ok {
		r.param, r.value = name, value
	}
	if d, ok := strings.CutPrefix(t, "domain:"); ok {
		r.isDomain = true
		r.domain = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(d)), ".")
		if r.domain == "" {
			return r, ruleErr(src, lead+len(name)+2, "domain: names no host; write domain:example.com or domain:*.example.com")
		}
	}
	r.path, r.pathErr = compilePath(t)
	if r.pathErr != nil {
		if k, ok := ruleKind(name); ok && (k == Path || k == Patch) {
			return r, ruleErr(src, lead+len(name)+2, "%v", r.pathErr)
		}
	}
	return r, nil
}

// Param is the input field the specifier names when it reads as
// param:value (Agent(model:opus)), else "": with the tool's Arg,
// FamilyArg and Params, the fields a match may read.
func (r *Rule) Param() string { return r.param }

// ruleKind is the kind of the built-in tool a rule is named after.
func ruleKind(name string) (Kind, bool) {
	t, ok := defaultTools[name]
	return t.Kind, ok
}

// paramForm reads NAME:VALUE, with spaces allowed around the colon.
func paramForm(s string) (string, string, bool) {
	colon := strings.IndexByte(s, ':')
	if colon <= 0 {
		return "", "", false
	}
	name := strings.TrimSpace(s[:colon])
	if name == "" {
		return "", "", false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && (c >= '0' && c <= '9' || c == '-')) {
			return "", "", false
		}
	}
	return name, strings.TrimSpace(s[colon+1:]), true
}

func ruleErr(src string, col int, format string, args ...any) error {
	where := ""
	if col > 0 {
		where = fmt.Sprintf(" at column %d", col)
	}
	return errs.New(errs.ConfigInvalid, "permission rule %s%s: %s", quoteRule(src), where, fmt.Sprintf(format, args...))
}

// quoteRule renders a rule for a message, shortened when long.
func quoteRule(s string) string {
	if len(s) > 120 {
		s = s[:117] + "..."
	}
	return fmt.Sprintf("%q", s)
}

// validGlob reports whether path.Match accepts p.
func validGlob(p string) error {
	_, err := path.Match(p, "")
	return err
}
