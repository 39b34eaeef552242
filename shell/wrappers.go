package shell

// The commands that run another command given as their arguments (sudo,
// env, timeout, xargs, ...), and how to find the command they run.

import (
	"strings"
)

// wrapSpec describes a wrapper's command line: [options] [operands] command.
type wrapSpec struct {
	via      Via
	argOpts  string          // short options that take a value
	longArgs map[string]bool // long options that take a value when not written --opt=value
	noRun    string          // short options after which no command runs (command -v)
	operands int             // operands before the command (timeout DURATION)
	assigns  bool            // NAME=VALUE words may precede the command
	digits   bool            // -N is an option (nice -10)
	bareOnly bool            // transparent only without options (xargs)
}

func longs(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// wrappers: the commands that run another command given as their
// arguments. The transparent ones are those Claude Code strips before
// matching its Bash rules, plus exec.
var wrappers = map[string]wrapSpec{
	"timeout": {via: Wrapper, argOpts: "sk", longArgs: longs("--signal", "--kill-after"), operands: 1},
	"time":    {via: Wrapper, argOpts: "fo", longArgs: longs("--format", "--output")},
	"nice":    {via: Wrapper, argOpts: "n", longArgs: longs("--adjustment"), digits: true},
	"nohup":   {via: Wrapper},
	"stdbuf":  {via: Wrapper, argOpts: "ioe", longArgs: longs("--input", "--output", "--error")},
	"command": {via: Wrapper, noRun: "vV"},
	"builtin": {via: Wrapper},
	"exec":    {via: Wrapper, argOpts: "a"},
	"noglob":  {via: Wrapper},
	"xargs": {via: Wrapper, bareOnly: true, argOpts: "adEILnPs", longArgs: longs("--arg-file", "--delimiter",
		"--eof", "--replace", "--max-lines", "--max-args", "--max-procs", "--max-chars", "--process-slot-var")},
	"sudo": {via: Runner, argOpts: "CDghpRrTtUu", noRun: "elVvK", assigns: true, longArgs: longs("--close-from",
		"--chdir", "--group", "--host", "--prompt", "--chroot", "--role", "--type", "--command-timeout",
		"--other-user", "--user")},
	"doas":   {via: Runner, argOpts: "uC"},
	"env":    {via: Runner, argOpts: "uC", assigns: true, longArgs: longs("--unset", "--chdir")},
	"setsid": {via: Runner},
}

// unwrap returns the wrapped command's words and how it is run. ok is
// false when no command runs (command -v x). When a word the options depend
// on is not literal, the result is one unknown word.
func (sp wrapSpec) unwrap(words []iword) (rest []iword, via Via, ok bool) {
	via = sp.via
	opts := false
	i := 1
	for ; i < len(words); i++ {
		x := words[i]
		if !x.Literal {
			if sp.assigns && isAssign(x.Source) {
				continue // env FOO=$X cmd
			}
			return []iword{{Word{Value: x.Source, Source: x.Source}, -1, -1}}, via, true
		}
		v := x.Value
		if v == "--" {
			i++
			break
		}
		if v == "-" || !strings.HasPrefix(v, "-") {
			if sp.assigns && isAssign(v) {
				continue
			}
			break
		}
		opts = true
		if strings.HasPrefix(v, "--") {
			if !strings.Contains(v, "=") && sp.longArgs[v] {
				i++
			}
			continue
		}
		if sp.digits && isDigits(v[1:]) {
			continue
		}
		for j := 1; j < len(v); j++ {
			ch := v[j]
			if strings.IndexByte(sp.noRun, ch) >= 0 {
				return nil, via, false
			}
			if strings.IndexByte(sp.argOpts, ch) >= 0 {
				if j == len(v)-1 {
					i++ // the value is the next word
				}
				break
			}
		}
	}
	i += sp.operands
	if i >= len(words) {
		return nil, via, false
	}
	if sp.bareOnly && opts {
		via = Runner
	}
	return words[i:], via, true
}

// isAssign reports whether s looks like NAME=VALUE or NAME+=VALUE.
func isAssign(s string) bool {
	eq := strings.IndexByte(s, '=')
	if eq > 0 && s[eq-1] == '+' {
		eq--
	}
	if eq <= 0 {
		return false
	}
	for i := 0; i < eq; i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
