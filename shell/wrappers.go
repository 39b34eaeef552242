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
	optOpts  string          // short options whose value is optional, so only attached (xargs -i{})
	longArgs map[string]bool // long options that take a value when not written --opt=value
	noRun    string          // short options after which no command runs (command -v)
	shell    string          // short options that, with no command, run a shell reading stdin (sudo -s)
	shellLon map[string]bool // the long forms of shell
	operands int             // operands before the command (timeout DURATION)
	assigns  bool            // NAME=VALUE words may precede the command
	dash     bool            // a lone - is an option (env: - is -i)
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
// matching its Bash rules, plus exec. Long options list those that take a
// value in the next word; GNU's optional values (xargs --replace[=R],
// env --block-signal[=SIG]) are only ever attached with =, so they are
// not listed.
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
	"xargs": {via: Wrapper, bareOnly: true, argOpts: "adEILnPs", optOpts: "eil", longArgs: longs("--arg-file",
		"--delimiter", "--max-args", "--max-procs", "--max-chars", "--process-slot-var")},
	"sudo": {via: Runner, argOpts: "CDghpRrTtUu", noRun: "elVvK", shell: "si", shellLon: longs("--shell", "--login"),
		assigns: true, longArgs: longs("--close-from", "--chdir", "--group", "--host", "--prompt", "--chroot",
			"--role", "--type", "--command-timeout", "--other-user", "--user")},
	"doas":   {via: Runner, argOpts: "uC", shell: "s"},
	"env":    {via: Runner, argOpts: "uCa", assigns: true, dash: true, longArgs: longs("--unset", "--chdir", "--argv0")},
	"setsid": {via: Runner},
	// Programs that run their operands as a command with changed
	// scheduling, root, namespaces or tracing, or as a script (watch).
	// With pid options (ionice -p, chrt -p, taskset -p) they run nothing.
	"ionice":     {via: Runner, argOpts: "cn", noRun: "pPu", longArgs: longs("--class", "--classdata")},
	"chrt":       {via: Runner, argOpts: "TPD", noRun: "pm", operands: 1, longArgs: longs("--sched-runtime", "--sched-period", "--sched-deadline")},
	"taskset":    {via: Runner, noRun: "p", operands: 1},
	"chroot":     {via: Runner, operands: 1, longArgs: longs("--userspec", "--groups")},
	"unshare":    {via: Runner, argOpts: "SGRw", optOpts: "muinpUCT", longArgs: longs("--setuid", "--setgid", "--root", "--wd", "--propagation", "--setgroups", "--map-user", "--map-group", "--map-users", "--map-groups", "--monotonic", "--boottime")},
	"nsenter":    {via: Runner, argOpts: "tSG", optOpts: "muinpUCTrw", longArgs: longs("--target", "--setuid", "--setgid")},
	"strace":     {via: Runner, argOpts: "abeEIOopPsSuXU", longArgs: longs("--output", "--attach", "--trace", "--signal", "--status", "--user", "--env", "--string-limit", "--columns", "--summary-columns", "--summary-sort-by", "--trace-path")},
	"fakeroot":   {via: Runner, argOpts: "lisb", longArgs: longs("--lib", "--faked")},
	"pkexec":     {via: Runner, longArgs: longs("--user")},
	"unbuffer":   {via: Runner},
	"busybox":    {via: Runner},
	"caffeinate": {via: Runner, argOpts: "tw"},
	"firejail":   {via: Runner},
	"flock":      {via: Runner, argOpts: "wE", operands: 1, longArgs: longs("--timeout", "--conflict-exit-code")},
	"watch":      {via: Runner, argOpts: "nq", optOpts: "d", longArgs: longs("--interval", "--equexit")},
}

// outcome is what unwrap found a wrapper to run.
type outcome uint8

const (
	runs       outcome = iota // the command in rest
	runsNone                  // nothing: an option says so (command -v)
	runsEmpty                 // no command is given
	runsShell                 // a shell reading its script from stdin (sudo -s)
	runsUnseen                // something the words do not show: rest is one unknown word
)

// unwrap returns the wrapped command's words and how it is run. When a
// word the options depend on is not literal, or a long option may be an
// abbreviation of one that takes a value (GNU getopt accepts --max-a for
// --max-args), the result is runsUnseen with one unknown word.
func (sp wrapSpec) unwrap(words []iword) (rest []iword, via Via, out outcome) {
	via = sp.via
	opts, shell := false, false
	unseen := func(x iword) ([]iword, Via, outcome) {
		return []iword{{Word{Value: x.Source, Source: x.Source}, -1, -1}}, via, runsUnseen
	}
	i := 1
	for ; i < len(words); i++ {
		x := words[i]
		if !x.Literal {
			if sp.assigns && isAssign(x.Source) {
				continue // env FOO=$X cmd
			}
			return unseen(x)
		}
		v := x.Value
		if v == "--" {
			i++
			break
		}
		if v == "-" && sp.dash {
			opts = true
			continue
		}
		if v == "-" || !strings.HasPrefix(v, "-") {
			if sp.assigns && isAssign(v) {
				continue
			}
			break
		}
		opts = true
		if strings.HasPrefix(v, "--") {
			name, _, valued := strings.Cut(v, "=")
			shell = shell || sp.shellLon[name] || !valued && abbreviates(name, sp.shellLon)
			switch {
			case valued:
			case sp.longArgs[name]:
				i++ // the value is the next word
			case abbreviates(name, sp.longArgs):
				return unseen(x)
			}
			continue
		}
		if sp.digits && isDigits(v[1:]) {
			continue
		}
		for j := 1; j < len(v); j++ {
			ch := v[j]
			if strings.IndexByte(sp.noRun, ch) >= 0 {
				return nil, via, runsNone
			}
			shell = shell || strings.IndexByte(sp.shell, ch) >= 0
			if strings.IndexByte(sp.optOpts, ch) >= 0 {
				break // the rest of the word is its value
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
		if shell {
			return nil, via, runsShell
		}
		return nil, via, runsEmpty
	}
	if sp.bareOnly && opts {
		via = Runner
	}
	return words[i:], via, runs
}

// abbreviates reports whether name is a shortening of one of the long
// options (not one of them itself).
func abbreviates(name string, opts map[string]bool) bool {
	if opts[name] || len(name) < 3 {
		return false
	}
	for o := range opts {
		if shortens(name, o) {
			return true
		}
	}
	return false
}

// shortens reports whether name is the long option full or one GNU getopt
// takes for it: a prefix past "--" (--split-string as --sp).
func shortens(name, full string) bool {
	return len(name) > 2 && strings.HasPrefix(full, name)
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
