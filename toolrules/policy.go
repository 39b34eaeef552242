package toolrules

import (
	"fmt"
	"path"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// Policy is a permissions block: the rules of settings.json's
// permissions.allow, ask and deny.
type Policy struct {
	Allow, Ask, Deny []Rule
}

// ParsePolicy parses the three lists. An error names the list and index
// of each bad rule (permissions.deny[2]: ...), all of them.
func ParsePolicy(allow, ask, deny []string) (Policy, error) {
	var p Policy
	var list errs.List
	parse := func(name string, srcs []string) []Rule {
		out := make([]Rule, 0, len(srcs))
		for i, s := range srcs {
			r, err := ParseRule(s)
			if err != nil {
				e := errs.Wrap(errs.ConfigInvalid, err, "permissions.%s[%d]", name, i)
				list.Add(e)
				continue
			}
			out = append(out, r)
		}
		return out
	}
	p.Allow, p.Ask, p.Deny = parse("allow", allow), parse("ask", ask), parse("deny", deny)
	return p, list.Err()
}

// Decision is what a policy says about a call.
type Decision struct {
	// Behavior is Deny, Ask or Allow, or "" when no rule decides (the
	// agent's default applies).
	Behavior Behavior
	// Rule is the rule that decided (for Allow, the first one used).
	Rule Rule
	// Reason says why, for a message.
	Reason string
}

// Decide applies Claude Code's order: a matching deny rule denies, else a
// matching ask rule asks, else the call is allowed when allow rules cover
// it. For a shell command, allow rules may cover its simple commands
// between them (npm test && git status with Bash(npm test) and Bash(git
// status)). A shell command's output redirections are file writes: a
// target that an Edit deny or ask rule matches denies or asks, and an
// allow needs every target (other than /dev/null) allowed by an Edit rule,
// unless a bare rule allows the whole tool.
func (p Policy) Decide(c Call) Decision {
	base := newMatcher(Deny, c)
	base.split = map[string]splitResult{} // shared: the command is split once
	return p.decide(base)
}

// decide is Decide; a decision that Call.Stop cut short denies.
func (p *Policy) decide(base *matcher) Decision {
	d := p.decideRules(base)
	if base.stopped() {
		return Decision{Behavior: Deny, Reason: base.c.Tool + " denied: the permission rules could not be checked in time"}
	}
	return d
}

func (p *Policy) decideRules(base *matcher) Decision {
	c := base.c
	for _, b := range []Behavior{Deny, Ask} {
		rules := p.Deny
		if b == Ask {
			rules = p.Ask
		}
		m := base.as(b)
		for i := range rules {
			if m.stopped() {
				return Decision{}
			}
			if m.rule(&rules[i], true) {
				return Decision{Behavior: b, Rule: rules[i], Reason: m.ruleReason(b, &rules[i])}
			}
		}
		if r, target, ok := m.writes(rules); ok {
			return Decision{Behavior: b, Rule: *r, Reason: reason(c.Tool, b, r, target)}
		}
	}
	m := base.as(Allow)
	for i := range p.Allow {
		r := &p.Allow[i]
		if !r.HasSpecifier && m.rule(r, true) {
			return Decision{Behavior: Allow, Rule: *r, Reason: reason(c.Tool, Allow, r, "")}
		}
	}
	if s, ok := m.shellArg(); ok {
		return m.allowShell(p.Allow, s)
	}
	for i := range p.Allow {
		if m.rule(&p.Allow[i], true) {
			return Decision{Behavior: Allow, Rule: p.Allow[i], Reason: reason(c.Tool, Allow, &p.Allow[i], "")}
		}
	}
	return Decision{}
}

// DeniesTool reports whether a deny rule without a specifier (Bash,
// mcp__server, mcp__server__*, *) covers every call of the tool, so the
// tool can be withheld from the model. tools is the table (nil: the
// built-in one).
func (p *Policy) DeniesTool(tool string, tools Tools) bool {
	m := newMatcher(Deny, Call{Tool: tool, Tools: tools})
	for i := range p.Deny {
		if !p.Deny[i].HasSpecifier && m.rule(&p.Deny[i], true) {
			return true
		}
	}
	return false
}

// ruleReason is reason for a deny or ask rule that matched the call,
// saying so when it matched a shell command only because the command
// cannot be checked (too long, or not bash): the rule's own words would
// send the reader looking for a command the line may not contain.
func (m *matcher) ruleReason(b Behavior, r *Rule) string {
	if s, ok := m.shellArg(); ok && r.HasSpecifier {
		if _, err := m.shell(s); err != nil {
			return fmt.Sprintf("%s %s: the command cannot be checked (%v), so the permission rule %s is taken to cover it",
				m.c.Tool, verb(b), err, quoteRule(r.Source))
		}
	}
	return reason(m.c.Tool, b, r, "")
}

// verb says what a decision did to a call, in a reason.
func verb(b Behavior) string {
	switch b {
	case Deny:
		return "denied"
	case Ask:
		return "needs approval"
	case Allow:
		return "allowed"
	}
	return ""
}

func reason(tool string, b Behavior, r *Rule, target string) string {
	if target != "" {
		return fmt.Sprintf("%s %s: it writes to %s, which the permission rule %s covers", tool, verb(b), target, quoteRule(r.Source))
	}
	return fmt.Sprintf("%s %s by the permission rule %s", tool, verb(b), quoteRule(r.Source))
}

// shellArg returns the call's command line when its tool is a shell tool
// (a Command tool, or one in the Bash family).
func (m *matcher) shellArg() (string, bool) {
	t, ok := m.tools[m.c.Tool]
	if !ok {
		return "", false
	}
	arg := ""
	switch {
	case t.Kind == Command:
		arg = t.Arg
	case t.Family != "" && m.tools[t.Family].Kind == Command:
		arg = t.FamilyArg
		if arg == "" {
			arg = t.Arg
		}
	default:
		return "", false
	}
	s, ok := m.c.Input[arg].(string)
	return s, ok
}

// writes finds, for a shell call, an output redirection target that an
// Edit rule of these matches. A target not known before the command runs
// matches any Edit rule with a specifier.
func (m *matcher) writes(rules []Rule) (*Rule, string, bool) {
	s, ok := m.shellArg()
	if !ok {
		return nil, "", false
	}
	sr, err := m.shell(s)
	if err != nil {
		return nil, "", false // the command rules already judged it
	}
	for i := range sr.cmds {
		if m.stopped() {
			return nil, "", false
		}
		for _, w := range sr.cmds[i].Writes {
			if w.Literal && w.Value == "/dev/null" {
				continue
			}
			target, known := m.writeTarget(w.Value, w.Literal)
			for j := range rules {
				r := &rules[j]
				if r.Tool != "Edit" || !r.HasSpecifier {
					continue
				}
				if !known || m.path(r, target) {
					return r, w.Source, true
				}
			}
		}
	}
	return nil, "", false
}

// allowShell decides a shell call for the allow rules with a specifier:
// every simple command covered by some rule, every write target by an
// Edit allow rule.
func (m *matcher) allowShell(rules []Rule, s string) Decision {
	sr, err := m.shell(s)
	if err != nil {
		return Decision{}
	}
	var used *Rule
	ok := allowed(sr.cmds, func(c int) bool {
		for i := range rules {
			r := &rules[i]
			if !r.HasSpecifier {
				continue
			}
			if m.shellRule(r) && allows(r.cmd, &sr.cmds[c], &sr.forms[c]) {
				if used == nil {
					used = r
				}
				return true
			}
		}
		return false
	})
	if !ok || used == nil {
		return Decision{}
	}
	for i := range sr.cmds {
		for _, w := range sr.cmds[i].Writes {
			if w.Literal && w.Value == "/dev/null" {
				continue
			}
			if target, known := m.writeTarget(w.Value, w.Literal); !known || !m.editAllowed(rules, target) {
				return Decision{}
			}
		}
	}
	return Decision{Behavior: Allow, Rule: *used, Reason: reason(m.c.Tool, Allow, used, "")}
}

// writeTarget is a shell call's write target as path rules see it: a
// relative one is in the directory the command runs in (the tool's Dirs),
// which is itself relative to the working directory. known is false when
// the target or that directory cannot be told before the command runs.
func (m *matcher) writeTarget(v string, literal bool) (target string, known bool) {
	if !literal {
		return "", false
	}
	if path.IsAbs(v) || v == "~" || strings.HasPrefix(v, "~/") {
		return v, true
	}
	for _, f := range m.tools[m.c.Tool].Dirs {
		raw, ok := m.c.Input[f]
		if !ok {
			continue
		}
		d, ok := raw.(string)
		switch {
		case !ok || d == "" || len(d) > MaxPath:
			return "", false
		case path.IsAbs(d):
			return path.Join(d, v), true
		}
		base := m.workDir()
		if base == "" {
			return "", false
		}
		return path.Join(base, d, v), true
	}
	return v, true // the path rules resolve it at the working directory
}

// shellRule reports whether a rule names the call's shell tool (Bash(x) for
// Bash, and for tools in the Bash family).
func (m *matcher) shellRule(r *Rule) bool {
	if r.Tool == m.c.Tool {
		return true
	}
	t := m.tools[m.c.Tool]
	return t.Family != "" && t.Family == r.Tool
}

func (m *matcher) editAllowed(rules []Rule, target string) bool {
	for i := range rules {
		r := &rules[i]
		if r.Tool == "Edit" && r.HasSpecifier && m.path(r, target) {
			return true
		}
	}
	return false
}
