package toolrules

import (
	"strings"
	"testing"
)

func TestDecide(t *testing.T) {
	p, err := ParsePolicy(
		[]string{"Bash(npm test)", "Bash(git status)", "Bash(echo *)", "Edit(./out/**)", "Read", "Bash(rm -i *)"},
		[]string{"Bash(git push *)", "Read(./secrets/**)"},
		[]string{"Bash(rm *)", "Read(./.env)", "Edit(//etc/**)"},
	)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		call Call
		want Behavior
		rule string // the deciding rule
	}{
		{"deny beats a more specific allow", bash("rm -i x"), Deny, "Bash(rm *)"},
		{"deny beats ask", bash("git push && rm x"), Deny, "Bash(rm *)"},
		{"ask beats allow", bash("npm test && git push origin"), Ask, "Bash(git push *)"},
		{"ask beats a bare allow", file("Read", project+"/secrets/k"), Ask, "Read(./secrets/**)"},
		{"a bare allow", file("Read", project+"/README.md"), Allow, "Read"},
		{"deny beats a bare allow", file("Read", project+"/.env"), Deny, "Read(./.env)"},
		{"each command by its own rule", bash("npm test && git status"), Allow, "Bash(npm test)"},
		{"one command uncovered", bash("npm test && ls"), "", ""},
		{"a write needs an Edit rule", bash("echo hi > notes.txt"), "", ""},
		{"a write an Edit rule allows", bash("echo hi > out/notes.txt"), Allow, "Bash(echo *)"},
		{"a write to /dev/null", bash("echo hi > /dev/null"), Allow, "Bash(echo *)"},
		{"a write an Edit deny rule covers", bash("echo x > /etc/passwd"), Deny, "Edit(//etc/**)"},
		{"a write to an unknown target", bash(`echo x > "$F"`), Deny, "Edit(//etc/**)"},
		{"a group's write", bash("{ echo x; } >> /etc/hosts"), Deny, "Edit(//etc/**)"},
		{"unparsable: deny rules match", bash("npm test 'x"), Deny, "Bash(rm *)"},
		{"nothing matches", bash("make"), "", ""},
		{"another tool", call("WebSearch", map[string]any{"query": "x"}), "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := p.Decide(tc.call)
			if d.Behavior != tc.want || d.Rule.Source != tc.rule {
				t.Errorf("Decide = %q by %q (%s), want %q by %q", d.Behavior, d.Rule.Source, d.Reason, tc.want, tc.rule)
			}
			if tc.want != "" && !strings.Contains(d.Reason, tc.rule) {
				t.Errorf("reason %q does not name the rule %q", d.Reason, tc.rule)
			}
		})
	}
	d := p.Decide(bash("echo x > /etc/passwd"))
	if !strings.Contains(d.Reason, "writes to /etc/passwd") {
		t.Errorf("reason %q does not name the target", d.Reason)
	}
	// A command that cannot be checked is denied by the first deny rule,
	// and the reason says why rather than suggest the line holds rm.
	for _, cmd := range []string{"npm test 'x", "echo " + strings.Repeat("a", 70<<10)} {
		d := p.Decide(bash(cmd))
		if d.Behavior != Deny || !strings.Contains(d.Reason, "cannot be checked") || !strings.Contains(d.Reason, "Bash(rm *)") {
			t.Errorf("%.40q: %q by %q", cmd, d.Reason, d.Rule.Source)
		}
	}
	if d := p.Decide(bash("rm -rf x")); strings.Contains(d.Reason, "cannot be checked") {
		t.Errorf("a checked command's reason: %q", d.Reason)
	}
}

// A builtin runs only by its bare name: ./alias and /tmp/x/trap are
// programs on disk, whose arguments are theirs; and trap's action or
// alias's value runs as the builtin's effect, so the builtin must be
// allowed as well as what it runs.
func TestDecideBuiltinsNeedAllowing(t *testing.T) {
	for _, tc := range []struct {
		allow []string
		cmd   string
		want  Behavior
	}{
		{[]string{"Bash(ls)", "Bash(ls *)"}, "./alias a=ls", ""},
		{[]string{"Bash(ls)", "Bash(ls *)"}, "/tmp/x/trap ls EXIT", ""},
		{[]string{"Bash(ls)", "Bash(ls *)"}, "./eval ls", ""},
		{[]string{"Bash(ls)", "Bash(ls *)"}, "./exec ls", ""},
		{[]string{"Bash(ls)", "Bash(ls *)"}, "/usr/bin/command ls", ""},
		{[]string{"Bash(ls)", "Bash(ls *)"}, "alias a='ls -la'", ""},
		{[]string{"Bash(ls)", "Bash(ls *)"}, "trap 'ls' EXIT", ""},
		{[]string{"Bash(alias *)", "Bash(ls *)"}, "alias a='ls -la'", Allow},
		{[]string{"Bash(trap *)", "Bash(ls *)"}, "trap 'ls' EXIT", Allow},
		{[]string{"Bash(alias *)"}, "alias a='ls -la'", ""},
		{[]string{"Bash(./alias *)"}, "./alias a=ls", Allow},
		{[]string{"Bash(ls)", "Bash(ls *)"}, "eval ls", Allow},
		{[]string{"Bash(ls)", "Bash(ls *)"}, "command ls", Allow},
		{[]string{"Bash(ls)", "Bash(ls *)"}, "bash -c ls", Allow},
	} {
		p, err := ParsePolicy(tc.allow, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := p.Decide(bash(tc.cmd)); d.Behavior != tc.want {
			t.Errorf("%v on %q: %q (%s), want %q", tc.allow, tc.cmd, d.Behavior, d.Reason, tc.want)
		}
	}
	p, err := ParsePolicy(nil, nil, []string{"Bash(ls *)"})
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"/usr/bin/command ls x", "trap 'ls x' EXIT", "alias a='ls x'"} {
		if d := p.Decide(bash(cmd)); d.Behavior != Deny {
			t.Errorf("deny Bash(ls *) on %q: %q, want deny", cmd, d.Behavior)
		}
	}
}

// su -c and runuser -c run their script as another user and ssh its
// remote command on another machine: like sudo, the program must be
// allowed as well as what it runs, which alone does not cover it.
func TestDecideSuAndSshNeedAllowing(t *testing.T) {
	for _, tc := range []struct {
		allow []string
		cmd   string
		want  Behavior
	}{
		{[]string{"Bash(git *)"}, "su -c 'git status' root", ""},
		{[]string{"Bash(git *)"}, "su - deploy -c 'git pull'", ""},
		{[]string{"Bash(git *)"}, "runuser -c 'git status' app", ""},
		{[]string{"Bash(git *)"}, "runuser -u app -- git status", ""},
		{[]string{"Bash(ls *)"}, "ssh host ls", ""},
		{[]string{"Bash(ls *)"}, "ssh -o RemoteCommand=ls host", ""},
		{[]string{"Bash(su *)"}, "su -c 'git status' root", ""},
		{[]string{"Bash(ssh *)"}, "ssh host ls", ""},
		{[]string{"Bash(su *)", "Bash(git *)"}, "su -c 'git status' root", Allow},
		{[]string{"Bash(runuser *)", "Bash(git *)"}, "runuser -c 'git status' app", Allow},
		{[]string{"Bash(ssh *)", "Bash(ls *)"}, "ssh host ls", Allow},
		{[]string{"Bash(ssh *)", "Bash(ls *)"}, "ssh -o RemoteCommand=ls host", Allow},
		{[]string{"Bash(ssh *)", "Bash(ls *)"}, "ssh host 'bash -c ls'", Allow},
		{[]string{"Bash(git *)"}, "bash -c 'git status'", Allow},
	} {
		p, err := ParsePolicy(tc.allow, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if d := p.Decide(bash(tc.cmd)); d.Behavior != tc.want {
			t.Errorf("%v on %q: %q (%s), want %q", tc.allow, tc.cmd, d.Behavior, d.Reason, tc.want)
		}
	}
}

// Bash runs the command substitution held in x in each of these: a deny
// rule for rm must deny.
func TestDecideHiddenArithmetic(t *testing.T) {
	p, err := ParsePolicy([]string{"Bash(echo *)", "Bash(declare *)", "Bash(printf *)", "Bash(x=*)", "Bash(a*)", "Bash(n=*)"}, nil, []string{"Bash(rm *)"})
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{
		`x='a[$(rm -rf ~)]'; declare -i n=x`,
		`x='a[$(rm -rf ~)]'; declare -i n; n=x`,
		`x='a[$(rm -rf ~)]'; a[x]=1`,
		`printf -v x 'a[\x24(rm -rf ~)]'; echo $((x))`,
		`x='a[$(rm -rf ~)]'; echo $((x))`,
	} {
		if d := p.Decide(bash(cmd)); d.Behavior != Deny {
			t.Errorf("%s: %q (%s), want deny", cmd, d.Behavior, d.Reason)
		}
	}
}

// Quoted $ in an argument (awk's $1, grep's $) is not a value arithmetic
// reads: these are allowed, and an unrelated deny rule stays out.
func TestDecideArithmeticBesideQuotedDollar(t *testing.T) {
	p, err := ParsePolicy([]string{"Bash(awk *)", "Bash(echo *)", "Bash(grep *)", "Bash(sed -n *)"}, nil, []string{"Bash(git push *)"})
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{
		`for ((i=0; i<3; i++)); do awk '{print $1}' f; done`,
		`echo $((n+1)) && grep -n '\$HOME' README.md`,
		`[[ $count -eq 0 ]] && awk '{print $1}' f`,
		`grep -c '$' f; [[ $n -eq 1 ]]`,
		`[[ $# -gt 0 ]] && sed -n 's/$/;/p' f`,
		`echo $((n*2)); awk '{print $2}' f`,
	} {
		if d := p.Decide(bash(cmd)); d.Behavior != Allow {
			t.Errorf("%s: %q (%s), want allow", cmd, d.Behavior, d.Reason)
		}
	}
}

func TestDecideUnparsableIsNeverAllowed(t *testing.T) {
	p, err := ParsePolicy([]string{"Bash(npm *)", "Bash(echo *)"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"npm test 'unclosed", "echo $(", "npm test; (", "npm " + strings.Repeat("x ", 40000)} {
		if d := p.Decide(bash(cmd)); d.Behavior != "" {
			t.Errorf("%.30q: %+v, want no decision", cmd, d)
		}
	}
}

func TestDecideBareBashAllowsWrites(t *testing.T) {
	p, err := ParsePolicy([]string{"Bash"}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if d := p.Decide(bash("echo x > f; rm y")); d.Behavior != Allow {
		t.Errorf("a bare Bash allow rule: %+v", d)
	}
	if d := p.Decide(bash("unclosed '")); d.Behavior != Allow {
		t.Errorf("a bare Bash allow rule on an unparsable command: %+v", d)
	}
}

func BenchmarkDecide(b *testing.B) {
	p, err := ParsePolicy(
		[]string{"Bash(npm run *)", "Bash(git status)", "Bash(git diff *)", "Read", "Edit(src/**)"},
		[]string{"Bash(git push *)"},
		[]string{"Bash(rm *)", "Read(./.env)", "Read(./secrets/**)", "WebFetch(domain:evil.com)"},
	)
	if err != nil {
		b.Fatal(err)
	}
	calls := []Call{
		bash("npm run test -- --watch=false && git status"),
		file("Edit", project+"/src/app/main.go"),
		bash("rm -rf build"),
	}
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range calls {
			p.Decide(c)
		}
	}
}

func TestMatcherDecideIsDecide(t *testing.T) {
	p, err := ParsePolicy([]string{"Bash(npm *)"}, []string{"Bash(git push *)"}, []string{"Bash(rm *)"})
	if err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"npm test", "npm test && rm x", "git push", "make", "npm 'x"} {
		if got, want := NewMatcher(bash(cmd)).Decide(&p), p.Decide(bash(cmd)); got.Behavior != want.Behavior || got.Rule.Source != want.Rule.Source {
			t.Errorf("%q: Matcher.Decide = %q by %q, Decide = %q by %q", cmd, got.Behavior, got.Rule.Source, want.Behavior, want.Rule.Source)
		}
	}
}

func TestDeniesTool(t *testing.T) {
	p, err := ParsePolicy([]string{"Read"}, []string{"WebFetch"}, []string{"Bash(rm *)", "Edit", "mcp__github", "mcp__db__*"})
	if err != nil {
		t.Fatal(err)
	}
	for tool, want := range map[string]bool{
		"Bash":              false, // only some commands
		"Edit":              true,
		"Write":             true, // Edit rules cover Write
		"Read":              false,
		"WebFetch":          false, // ask, not deny
		"mcp__github__x":    true,
		"mcp__db__query":    true,
		"mcp__dbx__query":   false,
		"run_shell_command": false,
	} {
		if got := p.DeniesTool(tool, nil); got != want {
			t.Errorf("DeniesTool(%q) = %v, want %v", tool, got, want)
		}
	}
}

func TestStopFailsClosed(t *testing.T) {
	p, err := ParsePolicy([]string{"Bash(npm *)"}, nil, []string{"Bash(rm *)"})
	if err != nil {
		t.Fatal(err)
	}
	c := bash("npm test")
	c.Stop = func() bool { return true }
	if d := p.Decide(c); d.Behavior != Deny || !strings.Contains(d.Reason, "in time") {
		t.Errorf("a stopped decision = %+v, want a deny", d)
	}
	npm, rm := p.Allow[0], p.Deny[0]
	if npm.Match(Allow, c) || !rm.Match(Deny, c) {
		t.Error("a stopped match does not fail closed")
	}

	// Stop is asked per rule and per command, and once it trips the
	// decision ends within a few more looks.
	var deny []string
	for i := range 50 {
		deny = append(deny, "Bash(tool"+strings.Repeat("x", i)+" *)")
	}
	p, err = ParsePolicy(nil, nil, deny)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	c = bash(strings.Repeat("ls; ", 4000) + "ls")
	c.Stop = func() bool { calls++; return false }
	if d := p.Decide(c); d.Behavior != "" {
		t.Fatalf("Decide = %+v, want no decision", d)
	}
	if calls < 50*4001 {
		t.Errorf("Stop was asked %d times, want at least once per deny rule and simple command (%d)", calls, 50*4001)
	}
	calls = 0
	c.Stop = func() bool { calls++; return calls > 1000 }
	if d := p.Decide(c); d.Behavior != Deny {
		t.Errorf("a decision stopped halfway = %+v, want a deny", d)
	}
	if calls < 1001 || calls > 1010 {
		t.Errorf("Stop was asked %d times, want 1001 to 1010 (once per rule and command, and no more once it tripped)", calls)
	}
}

// Command lines that bash reads differently from a naive split: each is
// decided as Claude Code would, or stricter (deny rules see the command,
// allow rules do not cover it).
func TestDecideShellBypasses(t *testing.T) {
	tests := []struct {
		name  string
		allow string // one allow rule, or ""
		deny  string // one deny rule, or ""
		cmd   string
		want  Behavior
	}{
		{"backslash crlf hides rm", "", "Bash(rm *)", "echo hi \\\r\nrm -rf /", Deny},
		{"backslash crlf is one echo to the parser", "Bash(echo *)", "", "echo hi \\\r\nrm -rf ~", ""},
		{"lone cr starts a comment to the parser", "", "Bash(rm *)", "echo x\r#c; rm -rf /", Deny},
		{"xargs --replace takes no next word", "", "Bash(rm *)", "echo x | xargs --replace rm -rf /", Deny},
		{"xargs -eP: P is -e's value", "", "Bash(rm *)", "echo x | xargs -eP rm -rf /", Deny},
		{"abbreviated long option", "", "Bash(rm *)", "echo x | xargs --max-a 1 rm -rf /", Deny},
		{"env - is env -i", "", "Bash(rm *)", "env - rm -rf /", Deny},
		{"env -iS", "", "Bash(rm *)", "env -iS 'nice rm -rf /tmp/x'", Deny},
		{"env -vS attached", "", "Bash(rm *)", "env -vS'nice rm -rf /tmp/x'", Deny},
		{"sudo -s reads stdin", "", "Bash(rm *)", "sudo -s <<< 'rm -rf /'", Deny},
		{"sudo -i reads stdin", "Bash(sudo -i)", "", "echo 'rm -rf /' | sudo -i", ""},
		{"xargs sh -c takes its script from input", "", "Bash(rm *)", "printf 'rm -rf /' | xargs -0 sh -c", Deny},
		{"xargs -I fills in the script", "", "Bash(rm *)", "echo 'rm -rf /' | xargs -I{} sh -c '{}'", Deny},
		{"find -exec {}", "", "Bash(rm *)", "find /bin -name rm -exec {} -rf /tmp/x \\;", Deny},
		{"find with a word not known", "", "Bash(rm *)", "X='-exec rm -rf {} ;'; find /tmp/x $X", Deny},
		{"find -exec$E", "", "Bash(rm *)", "find /tmp/x -exec$E rm -rf {} \\;", Deny},
		{"trap runs its action", "", "Bash(rm *)", "trap 'rm -rf /' EXIT", Deny},
		{"trap action needs allowing", "Bash(trap *)", "", "trap 'rm -rf /' EXIT", ""},
		{"source /dev/stdin", "", "Bash(rm *)", "source /dev/stdin <<< 'rm -rf /'", Deny},
		{"source a process substitution", "", "Bash(rm *)", "source <(echo rm -rf /)", Deny},
		{"bash /dev/stdin", "", "Bash(rm *)", "bash /dev/stdin <<< 'rm -rf /'", Deny},
		{"an alias's value is code", "", "Bash(rm *)", "shopt -s expand_aliases\nalias e=rm\ne -rf /", Deny},
		{"a bare assignment is a command", "Bash(git status)", "", "PATH=./bin; git status", ""},
		{"HOME too", "Bash(git status)", "", "HOME=./evil; git status", ""},
		{"assignments past a wrapper", "Bash(git status)", "", "PATH=./bin nice git status", ""},
		{"assignments past timeout", "Bash(git status)", "", "PATH=./bin timeout 5 git status", ""},
		{"assignments past eval", "Bash(git status)", "", "PATH=./bin eval 'git status'", ""},
		{"BASH_ENV past a shell", "Bash(echo *)", "", "BASH_ENV=./evil.sh bash -c 'echo hi'", ""},
		{"rcfile", "Bash(echo *)", "", "bash --rcfile ./evil.sh -ic 'echo hi'", ""},
		{"an assignment allowed itself", "Bash(FOO=1)", "", "FOO=1", Allow},
		{"prompt expansion runs a value", "", "Bash(rm *)", "x='$(rm -rf /)'; echo \"${x@P}\"", Deny},
		{"prompt expansion is not an echo", "Bash(echo *)", "", "x='$(rm -rf ~)'; echo \"${x@P}\"", ""},
		{"arithmetic on a subscript in a value", "", "Bash(rm *)", "x='a[$(rm -rf /)]'; echo $((x))", Deny},
		{"let is a command", "Bash(echo *)", "", "echo hi; let 'a[$(rm -rf ~)]'", ""},
		{"let with code", "", "Bash(rm *)", "let 'a[$(rm -rf /)]'", Deny},
		{"printf -v names a subscript", "", "Bash(rm *)", "printf -v 'a[$(rm -rf /)]' x", Deny},
		{"declare -a evaluates a value", "", "Bash(rm *)", "declare -a a='($(rm -rf /))'", Deny},
		{"[[ -eq ]] evaluates", "", "Bash(rm *)", "[[ 'a[$(rm -rf /)]' -eq 1 ]]", Deny},
		{"plain let", "Bash(let *)", "", "let i=1", Allow},
		{"arithmetic alone", "Bash(echo *)", "", "for i in 1 2; do echo $((i+1)); done", Allow},
		{"quoted $ alone", "Bash(awk *)", "", "awk '{print $1}' f", Allow},
		// unchanged
		{"a wrapper alone", "Bash(git status)", "", "nice git status", Allow},
		{"a shell's script", "Bash(echo *)", "", "bash -c 'echo hi'", Allow},
		{"bare xargs", "Bash(rm *)", "", "ls | xargs rm", ""},
		{"find -exec with a file", "", "Bash(rm *)", "find . -name '*.o' -exec rm {} +", Deny},
		{"find without exec", "Bash(find *)", "", "find src -name '*.go'", Allow},
		{"a script file", "Bash(bash *)", "", "bash ./scripts/build.sh", Allow},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var allow, deny []string
			if tc.allow != "" {
				allow = []string{tc.allow}
			}
			if tc.deny != "" {
				deny = []string{tc.deny}
			}
			p, err := ParsePolicy(allow, nil, deny)
			if err != nil {
				t.Fatal(err)
			}
			if d := p.Decide(bash(tc.cmd)); d.Behavior != tc.want {
				t.Errorf("allow %q deny %q on %q: got %q, want %q", tc.allow, tc.deny, tc.cmd, d.Behavior, tc.want)
			}
		})
	}
}

// find -exec and xargs -I fill {} with one argument: rm {} may be rm x but
// never rm -rf / (a word short), so an exact multi-word deny rule stays
// out, while rm * and a command the filled word completes still match.
func TestDecideFilledWordIsOneArgument(t *testing.T) {
	for _, tc := range []struct {
		deny, cmd string
		denied    bool
	}{
		{"Bash(rm -rf /)", `find . -name '*.o' -exec rm {} \;`, false},
		{"Bash(rm -rf /)", `find . -name '*.o' -exec rm -rf {} \;`, true},
		{"Bash(rm -rf /)", `ls | xargs -I{} rm {}`, false},
		{"Bash(rm -rf /)", `ls | xargs -I{} rm x{}y z`, false},
		{"Bash(rm *)", `find . -name '*.o' -exec rm {} \;`, true},
		{"Bash(rm -rf *)", `find . -exec rm {} \;`, true}, // {} may be -rf
		{"Bash(rm -rf /tmp/*)", `find /tmp -exec rm -rf {} \;`, true},
		{"Bash(chmod 777 x)", `find . -exec chmod 777 {} \;`, true},
		{"Bash(chmod 777 x)", `find . -exec chmod {} \;`, false},
	} {
		p, err := ParsePolicy(nil, nil, []string{tc.deny})
		if err != nil {
			t.Fatal(err)
		}
		if d := p.Decide(bash(tc.cmd)); (d.Behavior == Deny) != tc.denied {
			t.Errorf("%s on %s: %q (%s), want denied=%v", tc.deny, tc.cmd, d.Behavior, d.Reason, tc.denied)
		}
	}
}
