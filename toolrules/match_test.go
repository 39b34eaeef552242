package toolrules

import (
	"strings"
	"testing"
)

const (
	project = "/home/u/proj"
	home    = "/home/u"
)

func call(tool string, input map[string]any) Call {
	return Call{Tool: tool, Input: input, ProjectDir: project, HomeDir: home}
}

func bash(cmd string) Call { return call("Bash", map[string]any{"command": cmd, "description": "d"}) }

func file(tool, p string) Call { return call(tool, map[string]any{"file_path": p}) }

type matchCase struct {
	rule string
	b    Behavior
	call Call
	want bool
}

func runMatches(t *testing.T, tests []matchCase) {
	t.Helper()
	for _, tc := range tests {
		r, err := ParseRule(tc.rule)
		if err != nil {
			t.Fatalf("ParseRule(%q): %v", tc.rule, err)
		}
		if got := r.Match(tc.b, tc.call); got != tc.want {
			t.Errorf("%s rule %q on %s %v: got %v, want %v", tc.b, tc.rule, tc.call.Tool, tc.call.Input, got, tc.want)
		}
	}
}

func TestMatchBashDeny(t *testing.T) {
	var tests []matchCase
	for cmd, want := range map[string]bool{
		"rm -rf /":                        true, // with a description beside it
		"echo ok && rm -rf /":             true,
		"ls; rm x":                        true,
		"ls || rm x":                      true,
		"ls | rm x":                       true,
		"ls & rm x":                       true,
		"$(rm -rf /)":                     true,
		"echo $(rm -rf /)":                true,
		"echo `rm -rf /`":                 true,
		"(cd /; rm -rf x)":                true,
		"{ rm x; }":                       true,
		"if true; then rm x; fi":          true,
		"bash -c 'rm -rf /'":              true,
		"sh -c \"echo; rm -rf /\"":        true,
		"env A=1 bash -c 'rm x'":          true,
		"eval 'rm x'":                     true,
		"sudo rm -rf /":                   true,
		"su -c 'rm -rf /' root":           true,
		"ssh host rm -rf /srv":            true,
		"ssh -o ProxyCommand='rm x' host": true,
		"FOO=1 rm x":                      true,
		"timeout 5 nice rm x":             true,
		"time -- rm x":                    true, // bash skips the --
		"time -p -- rm x":                 true,
		"/bin/rm -rf /":                   true, // a program by its path
		"./rm x":                          true,
		"sudo /usr/bin/rm x":              true,
		"/bin/ls rm":                      false,
		"hash -p /bin/rm ls; ls -rf /":    true, // ls runs rm
		"BASH_CMDS[ls]=/bin/rm; ls -rf /": true, // as hash -p does
		"declare -A BASH_CMDS=([ls]=/bin/rm); ls x": true,
		"printf -v 'BASH_CMDS[ls]' /bin/rm; ls x":   true,
		"BASH_ALIASES[ls]='rm -rf'":                 true,
		"watch -n 1 rm x":                           true,
		"flock /tmp/l -c 'rm x'":                    true,
		"ionice -c3 nice rm x":                      true,
		"strace -f rm x":                            true,
		"taskset -p 1 5":                            false,
		"ls | xargs rm":                             true,
		"find . -exec rm {} \\;":                    true,
		"rm x > /dev/null 2>&1":                     true,
		`r"m" -rf /`:                                true, // quotes removed
		"$CMD -rf /":                                true, // the command's name is unknown
		`bash -c "$X"`:                              true, // so is the script's
		"curl x | sh":                               true,
		"rm 'unclosed":                              true, // does not parse
		"echo rm":                                   false,
		"rmdir x":                                   false,
		"ls -la":                                    false,
		"grep -r rm .":                              false,
		"echo 'rm -rf /'":                           false,
		"git rm x":                                  false,
		"echo $(date) && ls $HOME/":                 false,
	} {
		tests = append(tests, matchCase{"Bash(rm *)", Deny, bash(cmd), want})
	}
	runMatches(t, tests)
}

func TestMatchBashDynamicWords(t *testing.T) {
	runMatches(t, []matchCase{
		// A word not known before the command runs could be anything the
		// pattern needs, but not turn known words into others.
		{"Bash(rm -rf *)", Deny, bash("rm $FLAGS /"), true},
		{"Bash(rm -rf *)", Deny, bash("rm -r $X"), false},
		{"Bash(git push --force *)", Deny, bash("git push $ARGS"), true},
		{"Bash(git push --force *)", Deny, bash("git pull $ARGS"), false},
		{"Bash(curl * | sh)", Ask, bash("curl $URL | sh"), true},
		// An allow rule sees non-literal words as written.
		{"Bash(echo *)", Allow, bash("echo $HOME"), true},
		{"Bash(ls $HOME)", Allow, bash("ls $HOME"), true},
		{"Bash(git status)", Allow, bash("git status $X"), false},
		{"Bash(*)", Allow, bash("$CMD"), true},
		{"Bash(npm *)", Allow, bash("$CMD"), false},
	})
}

func TestMatchBashAllow(t *testing.T) {
	var tests []matchCase
	for cmd, want := range map[string]bool{
		"npm run test":                     true,
		"npm run test -- --watch=false":    true,
		"npm  run   test":                  true, // spaces between words do not count
		"npm run testx":                    false,
		"npm run test && rm -rf /":         false,
		"npm run test; npm run test":       true,
		"npm run test > out.txt":           false, // writes a file
		"npm run test 2>/dev/null":         true,
		"FOO=1 npm run test":               false, // an assignment in front
		"timeout 60 npm run test":          true,  // a transparent wrapper
		"nohup nice npm run test &":        true,
		"sudo npm run test":                false, // a runner must match itself
		"bash -c 'npm run test'":           true,  // the script is judged
		"bash -c 'npm run test; rm x'":     false,
		`bash -c "$X"`:                     false,
		"timeout 5 bash -c 'npm run test'": true,
		"echo $(npm run test)":             false, // echo is not allowed
		"npm run test 'unclosed":           false,
		"ls | xargs npm run test":          false, // ls is not allowed
	} {
		tests = append(tests, matchCase{"Bash(npm run test:*)", Allow, bash(cmd), want})
	}
	runMatches(t, tests)
	// A transparent wrapper's own line allows nothing: what it runs must be
	// allowed, as Claude Code strips such wrappers before it matches.
	runMatches(t, []matchCase{
		{"Bash(nohup *)", Allow, bash("nohup rm -rf /"), false},
		{"Bash(timeout *)", Allow, bash("timeout 5 rm -rf /"), false},
		{"Bash(nice *)", Allow, bash("nice -n 5 rm x"), false},
		{"Bash(command *)", Allow, bash("command rm x"), false},
		{"Bash(xargs *)", Allow, bash("ls | xargs rm"), false},
		{"Bash(time *)", Allow, bash("time nohup rm x"), false},
		{"Bash(nohup npm start)", Allow, bash("nohup npm start"), false},
		{"Bash(npm start)", Allow, bash("nohup npm start"), true},
		{"Bash(npm start)", Allow, bash("time -p nice npm start"), true},
		{"Bash(command *)", Allow, bash("command -v rm"), true}, // runs nothing
	})
	runMatches(t, []matchCase{
		{"Bash(git diff *)", Allow, bash("git diff HEAD~1 -- a.go"), true},
		{"Bash(git diff *)", Allow, bash("git diff"), true},
		{"Bash(git diff *)", Allow, bash("git diff | less"), false},
		{"Bash(ls *)", Allow, bash("lsof"), false},
		{"Bash(ls*)", Allow, bash("lsof"), true},
		{"Bash(git * main)", Allow, bash("git push origin main"), true},
		{"Bash(* --version)", Allow, bash("node --version"), true},
		{"Bash(npm run build)", Allow, bash("npm run build"), true},
		{"Bash(npm run build)", Allow, bash("npm run build --prod"), false},
		{"Bash(xargs *)", Allow, bash("xargs -n1 rm"), false}, // rm runs, and is not allowed
		{"Bash(sudo *)", Allow, bash("sudo bash -c 'rm x'"), false},
		{"Bash(ssh *)", Allow, bash("ssh host rm x"), false},
		{"Bash(ssh *)", Allow, bash("ssh -i key host"), true},
		{"Bash(watch *)", Allow, bash("watch -n 1 rm x"), false}, // rm runs, and is not allowed
		{"Bash(flock *)", Allow, bash("flock /tmp/l rm x"), false},
		{"Bash(git commit *)", Allow, bash(`git commit -m "it's done"`), true},
		// Bash and Bash(*) match every call, even one that does not parse.
		{"Bash", Allow, bash("rm 'x"), true},
		{"Bash(*)", Allow, bash("rm 'x"), true},
		{"Bash", Deny, bash("ls"), true},
	})
}

func TestMatchBashAsk(t *testing.T) {
	runMatches(t, []matchCase{
		{"Bash(git push *)", Ask, bash("git push origin main"), true},
		{"Bash(git push *)", Ask, bash("git commit -am x && git push"), true},
		{"Bash(git push *)", Ask, bash("git status"), false},
		// git's global options come before the subcommand.
		{"Bash(git push *)", Ask, bash("git -C ../other push origin main"), true},
		{"Bash(git push *)", Ask, bash("git -c push.default=current push"), true},
		{"Bash(git push *)", Ask, bash("git --git-dir=x --work-tree y push"), true},
		{"Bash(git push *)", Ask, bash("git --no-pager -P push --force"), true},
		{"Bash(git push *)", Ask, bash(`/usr/bin/git -C "$D" push`), true},
		{"Bash(git push *)", Ask, bash("git -C x $SUB"), true}, // may be push
		{"Bash(git push)", Ask, bash("git -C x push"), true},
		{"Bash(git push *)", Ask, bash("git -C push status"), false},
		{"Bash(git push *)", Ask, bash("git --no-pager log"), false},
		// Allow rules name the command exactly.
		{"Bash(git push *)", Allow, bash("git -C x push"), false},
		{"Bash(rm *)", Allow, bash("/bin/rm x"), false},
	})
}

func TestMatchParams(t *testing.T) {
	bg := func(v any) Call {
		return call("Bash", map[string]any{"command": "sleep 9", "run_in_background": v})
	}
	runMatches(t, []matchCase{
		{"Bash(run_in_background:true)", Deny, bg(true), true},
		{"Bash(run_in_background : true)", Deny, bg(true), true},
		{"Bash(run_in_background:true)", Deny, bg(false), false},
		{"Bash(run_in_background:true)", Allow, bg(true), false}, // allow rules never match a field
		{"Agent(model:opus)", Deny, call("Agent", map[string]any{"model": "opus", "subagent_type": "Explore"}), true},
		{"Agent(model:*)", Ask, call("Agent", map[string]any{"subagent_type": "Explore"}), false},
		{"Agent(isolation:*)", Ask, call("Agent", map[string]any{"isolation": "worktree"}), true},
		// The legacy :* stays a command prefix, also for a word that is a field.
		{"Bash(timeout:*)", Deny, bash("timeout 5 ls"), true},
		// A tool outside the table takes field rules only.
		{"mcp__db__query(database:prod)", Deny, call("mcp__db__query", map[string]any{"database": "prod"}), true},
		{"mcp__db__query(database:prod)", Deny, call("mcp__db__query", map[string]any{"database": "dev"}), false},
		{"mcp__db__query(database:prod*)", Deny, call("mcp__db__query", map[string]any{"database": "prod-eu"}), true},
		{"mcp__db__query(limit:10)", Deny, call("mcp__db__query", map[string]any{"limit": 10.0}), true},
		{"mcp__db__query(anything)", Deny, call("mcp__db__query", map[string]any{"x": 1}), true}, // cannot judge: fail closed
		{"mcp__db__query(anything)", Allow, call("mcp__db__query", map[string]any{"x": 1}), false},
		// A colon need not mean a field: without the field, fail closed.
		{"mcp__web__fetch(https://evil.com/*)", Deny, call("mcp__web__fetch", map[string]any{"url": "https://evil.com/x"}), true},
		{"mcp__web__fetch(https://evil.com/*)", Ask, call("mcp__web__fetch", map[string]any{"url": "https://ok.org/"}), true},
		{"mcp__web__fetch(https://evil.com/*)", Allow, call("mcp__web__fetch", map[string]any{"url": "https://evil.com/x"}), false},
		{"mcp__web(https://evil.com/*)", Deny, call("mcp__web__fetch", map[string]any{"url": "https://evil.com/x"}), true},
	})
}

func TestMatchPaths(t *testing.T) {
	runMatches(t, []matchCase{
		{"Read(./.env)", Deny, file("Read", project+"/.env"), true},
		{"Read(./.env)", Deny, file("Read", project+"/sub/.env"), false},
		{"Read(./.env)", Deny, file("Read", home+"/.env"), false},
		{"Read(./.env)", Deny, file("Read", project+"/src/../.env"), true}, // cleaned
		{"Read(./.env)", Deny, file("Read", ".env"), true},                 // relative to the project
		{"Read(.env)", Deny, file("Read", project+"/a/b/.env"), true},      // a bare name: any depth
		{"Read(.env)", Deny, file("Read", home+"/.env"), false},            // but under the project
		{"Read(*.key)", Deny, file("Read", project+"/a/x.key"), true},
		{"Read(**/.env)", Deny, file("Read", project+"/a/.env"), true},
		{"Edit(src/**)", Allow, file("Edit", project+"/src/a/b.go"), true},
		{"Edit(src/**)", Allow, file("Edit", project+"/vendor/pkg/src/lib.js"), false},
		{"Edit(src/**)", Deny, file("Edit", project+"/vendor/pkg/src/lib.js"), true},
		{"Edit(/src/**)", Deny, file("Edit", project+"/vendor/pkg/src/lib.js"), false},
		{"Edit(/src/**)", Allow, file("Edit", project+"/src/app.ts"), true},
		{"Edit(**/src/**)", Allow, file("Edit", project+"/vendor/pkg/src/lib.js"), true},
		{"Edit(src/*.go)", Allow, file("Edit", project+"/src/a/b.go"), false},
		{"Edit(src)", Allow, file("Edit", project+"/src/a.go"), true}, // a directory covers its files
		{"Read(//etc/**)", Deny, file("Read", "/etc/passwd"), true},
		{"Read(//etc/**)", Deny, file("Read", project+"/etc/x"), false},
		{"Read(//**/.env)", Deny, file("Read", "/srv/app/.env"), true},
		{"Read(~/.ssh/**)", Deny, file("Read", home+"/.ssh/id_rsa"), true},
		{"Read(~/.ssh/**)", Deny, file("Read", "~/.ssh/id_rsa"), true},
		{"Read(~/.zshrc)", Deny, file("Read", home+"/.zshrc"), true},
		{"Read(~/.zshrc)", Deny, file("Read", home+"/x/.zshrc"), false},
		{"Read(~)", Deny, file("Read", home+"/anything"), true},
		// Claude Code escapes [ ] * in approved paths; a literal [ is a class.
		{`Edit(./a\[1\].txt)`, Allow, file("Edit", project+"/a[1].txt"), true},
		// The file tools share the rules (Write and NotebookEdit by Edit's,
		// Grep and Glob by Read's on their path).
		{"Edit(src/**)", Allow, file("Write", project+"/src/a"), true},
		{"Edit(src/**)", Allow, file("MultiEdit", project+"/src/a"), true},
		{"Edit(nb/**)", Deny, call("NotebookEdit", map[string]any{"notebook_path": project + "/nb/a.ipynb"}), true},
		{"Write(src/**)", Deny, file("Write", project+"/src/a"), true},
		{"Read(./.env)", Deny, file("Edit", project+"/.env"), true},   // a Read deny covers edits
		{"Read(./.env)", Ask, file("Write", project+"/.env"), true},   // and writes
		{"Read(./.env)", Allow, file("Edit", project+"/.env"), false}, // a Read allow does not
		{"Read(nb/**)", Deny, call("NotebookEdit", map[string]any{"notebook_path": project + "/nb/a.ipynb"}), false},
		{"Edit(src/**)", Allow, file("Read", project+"/src/a"), true}, // an Edit allow grants reading
		{"Edit(src/**)", Deny, file("Read", project+"/src/a"), false},
		{"Read", Deny, file("Edit", project+"/a"), false}, // a bare rule names its tool only
		{"Edit", Deny, file("Write", project+"/a"), true},
		{"Read(./secrets/**)", Deny, call("Grep", map[string]any{"pattern": "x", "path": project + "/secrets"}), true},
		{"Read(./secrets/**)", Deny, call("Glob", map[string]any{"pattern": "**", "path": "secrets/a"}), true},
		{"Read(./secrets/**)", Deny, call("Grep", map[string]any{"pattern": "x"}), false}, // searches the project
		{"Read(./**)", Deny, call("Grep", map[string]any{"pattern": "x"}), true},
		{"Glob(*.go)", Deny, call("Glob", map[string]any{"pattern": "*.go"}), true},
		{"Grep(TODO*)", Ask, call("Grep", map[string]any{"pattern": "TODO.*fix"}), true},
		// What cannot be judged matches deny and ask rules only.
		{"Read(./x)", Deny, call("Read", map[string]any{}), true},
		{"Read(./x)", Allow, call("Read", map[string]any{}), false},
		{"Read(./x)", Deny, call("Read", map[string]any{"file_path": 3.0}), true},
		{"Read(./x)", Deny, file("Read", "/"+strings.Repeat("a", MaxPath)), true},
		{"Read(./x)", Deny, Call{Tool: "Read", Input: map[string]any{"file_path": "/a/x"}}, true}, // no project
		// Other agents' file tools.
		{"Read(./.env)", Deny, file("read_file", project+"/.env"), true},
		{"Edit(src/**)", Allow, file("replace", project+"/src/a"), true},
		{"Read(./.env)", Deny, file("write_file", project+"/.env"), true},
	})
}

// Claude Code anchors ./x and bare names at the current directory, /x at
// the settings file's directory (the project root for project settings),
// ~/x at home and //x at the root: WorkDir and ProjectDir are those two,
// and each stands in for the other when only one is known.
func TestMatchAnchors(t *testing.T) {
	const work = project + "/pkg/api" // Claude Code started in a subdirectory
	both := func(tool, p string) Call {
		return Call{Tool: tool, Input: map[string]any{"file_path": p}, WorkDir: work, ProjectDir: project, HomeDir: home}
	}
	workOnly := func(tool, p string) Call {
		return Call{Tool: tool, Input: map[string]any{"file_path": p}, WorkDir: work, HomeDir: home}
	}
	none := func(tool, p string) Call {
		return Call{Tool: tool, Input: map[string]any{"file_path": p}, HomeDir: home}
	}
	tests := []struct {
		name string
		matchCase
	}{
		{"./x at the working directory", matchCase{"Read(./.env)", Deny, both("Read", work+"/.env"), true}},
		{"./x not at the project root", matchCase{"Read(./.env)", Deny, both("Read", project+"/.env"), false}},
		{"a bare name at any depth under the working directory", matchCase{"Read(.env)", Deny, both("Read", work+"/a/.env"), true}},
		{"a bare name not above the working directory", matchCase{"Read(.env)", Deny, both("Read", project+"/.env"), false}},
		{"dir/** allowed under the working directory", matchCase{"Edit(src/**)", Allow, both("Edit", work+"/src/a.go"), true}},
		{"dir/** not allowed under the project root", matchCase{"Edit(src/**)", Allow, both("Edit", project+"/src/a.go"), false}},
		{"/x at the project root", matchCase{"Edit(/src/**)", Allow, both("Edit", project+"/src/a.go"), true}},
		{"/x not at the working directory", matchCase{"Edit(/src/**)", Allow, both("Edit", work+"/src/a.go"), false}},
		{"//x at the root", matchCase{"Read(//etc/**)", Deny, both("Read", "/etc/hosts"), true}},
		{"~/x at home", matchCase{"Read(~/.ssh/**)", Deny, both("Read", home+"/.ssh/id"), true}},
		{"a relative input path is the working directory's", matchCase{"Read(./.env)", Deny, both("Read", ".env"), true}},
		{"a relative input path is not the project's", matchCase{"Edit(/src/**)", Allow, both("Edit", "src/a.go"), false}},
		{"a search's relative path is the working directory's", matchCase{"Read(./secrets/**)", Deny,
			Call{Tool: "Grep", Input: map[string]any{"pattern": "x", "path": "secrets"}, WorkDir: work, ProjectDir: project}, true}},
		{"a search without a path searches the working directory", matchCase{"Read(/pkg/**)", Deny,
			Call{Tool: "Grep", Input: map[string]any{"pattern": "x"}, WorkDir: work, ProjectDir: project}, true}},
		{"a search without a path at the project root", matchCase{"Read(/pkg/**)", Deny,
			Call{Tool: "Grep", Input: map[string]any{"pattern": "x"}, WorkDir: project, ProjectDir: project}, false}},
		// Without a project, /x is anchored at the working directory.
		{"/x at the working directory without a project", matchCase{"Edit(/src/**)", Allow, workOnly("Edit", work+"/src/a.go"), true}},
		{"./x without a project", matchCase{"Read(./.env)", Deny, workOnly("Read", work+"/.env"), true}},
		{"./x without a project, elsewhere", matchCase{"Read(./.env)", Deny, workOnly("Read", work+"/src/a.go"), false}},
		{"./x allowed without a project", matchCase{"Read(./src/**)", Allow, workOnly("Read", work+"/src/a.go"), true}},
		// The project root is the working directory or above it (the agent
		// changed directory): a deny or ask /x rule is tried at each, so it
		// is never weaker than Claude Code's at the root.
		{"/x deny at the project root from a subdirectory", matchCase{"Edit(/.git/**)", Deny, workOnly("Edit", project+"/.git/config"), true}},
		{"/x ask at the root from a subdirectory", matchCase{"Edit(/.git/**)", Ask, workOnly("Edit", project+"/.git/config"), true}},
		{"/x deny not beside the working directory", matchCase{"Edit(/.git/**)", Deny, workOnly("Edit", project+"/pkg/web/.git/config"), false}},
		{"/x deny not below it elsewhere", matchCase{"Edit(/.git/**)", Deny, workOnly("Edit", work+"/src/.git/config"), false}},
		{"/x allow only at the working directory", matchCase{"Edit(/src/**)", Allow, workOnly("Edit", project+"/pkg/src/a.go"), false}},
		// A relative working directory anchors nothing: such rules cannot
		// be judged (deny and ask match, allow does not).
		{"/x deny with a relative working directory", matchCase{"Edit(/.git/**)", Deny,
			Call{Tool: "Edit", Input: map[string]any{"file_path": "/x/.git/config"}, WorkDir: "a/b"}, true}},
		{"/x allow with a relative working directory", matchCase{"Edit(/0)", Allow,
			Call{Tool: "Edit", Input: map[string]any{"file_path": "0"}, WorkDir: "."}, false}},
		{"./x deny with a relative project", matchCase{"Read(./.env)", Deny,
			Call{Tool: "Read", Input: map[string]any{"file_path": "/srv/a.go"}, ProjectDir: "srv"}, true}},
		// Without a working directory, both are anchored at the project
		// (Call{ProjectDir} as before WorkDir).
		{"./x at the project without a working directory", matchCase{"Read(./.env)", Deny, file("Read", project+"/.env"), true}},
		// Neither: cannot be judged, so deny and ask rules match and allow
		// rules do not.
		{"./x without either: deny", matchCase{"Read(./.env)", Deny, none("Read", "/srv/a.go"), true}},
		{"/x without either: ask", matchCase{"Edit(/src/**)", Ask, none("Edit", "/srv/a.go"), true}},
		{"a bare name without either: allow", matchCase{"Read(*.md)", Allow, none("Read", "/srv/a.md"), false}},
		{"//x without either", matchCase{"Read(//etc/**)", Deny, none("Read", "/srv/a.go"), false}},
		{"~/x without either", matchCase{"Read(~/.ssh/**)", Deny, none("Read", "/srv/a.go"), false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { runMatches(t, []matchCase{tc.matchCase}) })
	}
}

func TestDecideAnchors(t *testing.T) {
	// A pasted block without project_dir, on calls that carry the
	// working directory: decided as Claude Code does in that directory.
	p, err := ParsePolicy([]string{"Read", "Edit(src/**)", "Bash(echo *)"}, nil, []string{"Read(./.env)", "Edit(/.git/**)"})
	if err != nil {
		t.Fatal(err)
	}
	const work = "/srv/shop"
	at := func(tool string, in map[string]any) Call { return Call{Tool: tool, Input: in, WorkDir: work} }
	tests := []struct {
		name string
		call Call
		want Behavior
	}{
		{"the working directory's .env", at("Read", map[string]any{"file_path": work + "/.env"}), Deny},
		{"another file there", at("Read", map[string]any{"file_path": work + "/src/a.go"}), Allow},
		{"an edit under src", at("Edit", map[string]any{"file_path": work + "/src/a.go"}), Allow},
		{"an edit elsewhere", at("Edit", map[string]any{"file_path": work + "/README.md"}), ""},
		{"an edit of .git", at("Edit", map[string]any{"file_path": work + "/.git/config"}), Deny},
		{"a relative write target", at("Bash", map[string]any{"command": "echo x > src/out.txt"}), Allow},
		{"a write into .git", at("Bash", map[string]any{"command": "echo x > .git/HEAD"}), Deny},
		{"an edit of .git from a subdirectory", Call{Tool: "Edit", Input: map[string]any{"file_path": work + "/.git/config"}, WorkDir: work + "/api"}, Deny},
		{"a write into .git from a subdirectory", Call{Tool: "Bash", Input: map[string]any{"command": "echo x > ../.git/HEAD"}, WorkDir: work + "/api"}, Deny},
		{"without the working directory", Call{Tool: "Read", Input: map[string]any{"file_path": work + "/src/a.go"}}, Deny},
		// A shell call that runs in a directory of its own (Codex's
		// workdir, Gemini CLI's dir_path): its relative targets are there.
		{"a write from a workdir into .git", at("Bash", map[string]any{"command": "echo x > ../.git/HEAD", "workdir": work + "/api"}), Deny},
		{"a write from a relative workdir into .git", at("Bash", map[string]any{"command": "echo x > ../.git/HEAD", "workdir": "api"}), Deny},
		{"a write from a workdir under src", at("Bash", map[string]any{"command": "echo x > out.txt", "workdir": work + "/src"}), Allow},
		{"a write from Gemini's dir_path into .git", at("run_shell_command", map[string]any{"command": "echo x > HEAD", "dir_path": ".git"}), Deny},
		{"a write from Gemini's older directory into .git", at("run_shell_command", map[string]any{"command": "echo x > HEAD", "directory": work + "/.git"}), Deny},
		{"a workdir that is not a string", at("Bash", map[string]any{"command": "echo x > out.txt", "workdir": 5.0}), Deny},
		{"a workdir that is empty", at("Bash", map[string]any{"command": "echo x > src/out.txt", "workdir": ""}), Deny},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := p.Decide(tc.call); d.Behavior != tc.want {
				t.Errorf("Decide = %q (%s), want %q", d.Behavior, d.Reason, tc.want)
			}
		})
	}
}

func TestMatchWeb(t *testing.T) {
	fetch := func(u string) Call { return call("WebFetch", map[string]any{"url": u, "prompt": "p"}) }
	runMatches(t, []matchCase{
		{"WebFetch(domain:example.com)", Allow, fetch("https://example.com/x"), true},
		{"WebFetch(domain:example.com)", Allow, fetch("https://EXAMPLE.com./x"), true},
		{"WebFetch(domain:example.com)", Allow, fetch("https://example.com:8443/x"), true},
		{"WebFetch(domain:example.com)", Allow, fetch("https://api.example.com/"), false},
		{"WebFetch(domain:example.com)", Allow, fetch("https://example.com.evil.org/"), false},
		{"WebFetch(domain:example.com)", Allow, fetch("https://evil.org/?u=example.com"), false},
		{"WebFetch(domain:example.com)", Allow, fetch("https://example.com@evil.org/"), false},
		{"WebFetch(domain:*.example.com)", Allow, fetch("https://a.b.example.com/"), true},
		{"WebFetch(domain:*.example.com)", Allow, fetch("https://example.com/"), false},
		{"WebFetch(domain:example.*)", Allow, fetch("https://example.org/"), true},
		{"WebFetch(domain:example.*)", Allow, fetch("https://example.evil.com/"), false},
		{"WebFetch(domain:*)", Allow, fetch("https://any.where/"), true},
		{"WebFetch(domain:example.com)", Deny, fetch("::not a url"), true},
		{"WebFetch(domain:example.com)", Allow, fetch("::not a url"), false},
		{"WebFetch(https://example.com/*)", Allow, fetch("https://example.com/docs"), true},
		// Claude Code reads the host as WHATWG's URL does (Node): UTS-46
		// maps these to evil.com, which is not told here, so deny and ask
		// rules match them and allow rules do not.
		{"WebFetch(domain:evil.com)", Deny, fetch("https://ｅｖｉｌ.com/"), true},
		{"WebFetch(domain:evil.com)", Ask, fetch("https://evil。com/"), true},
		{"WebFetch(domain:evil.com)", Deny, fetch("https://e\u00advil.com/"), true},
		{"WebFetch(domain:ｅｖｉｌ.com)", Allow, fetch("https://ｅｖｉｌ.com/"), false},
		{"WebFetch(domain:*)", Allow, fetch("https://bücher.de/"), true},
		// ... and a host that ends in a number as IPv4 in any number form.
		{"WebFetch(domain:127.0.0.1)", Deny, fetch("http://2130706433/"), true},
		{"WebFetch(domain:127.0.0.1)", Deny, fetch("http://0x7f.1/"), true},
		{"WebFetch(domain:127.0.0.1)", Deny, fetch("http://127.1/"), true},
		{"WebFetch(domain:127.0.0.1)", Deny, fetch("http://0177.0.0.1./"), true},
		{"WebFetch(domain:127.0.0.1)", Allow, fetch("http://0x7f000001:8080/"), true},
		{"WebFetch(domain:127.0.0.1)", Deny, fetch("http://127.0.0.2/"), false},
		{"WebFetch(domain:10.*.*.*)", Deny, fetch("http://167772161/"), true},
		{"WebFetch(domain:127.0.0.1)", Deny, fetch("http://1.2.3.4.5/"), true}, // no URL to a browser: fail closed
		{"WebFetch(domain:127.0.0.1)", Allow, fetch("http://256.0.0.1/"), false},
		{"WebFetch(domain:v1.example.com)", Allow, fetch("https://v1.example.com/"), true},
		{"WebSearch(*weather*)", Ask, call("WebSearch", map[string]any{"query": "weather in Paris"}), true},
		{"WebSearch", Deny, call("WebSearch", map[string]any{"query": "x"}), true},
		{"Task(*deploy*)", Ask, call("Task", map[string]any{"prompt": "deploy to prod"}), true},
		{"Agent(Explore)", Deny, call("Agent", map[string]any{"subagent_type": "Explore", "prompt": "p"}), true},
		{"Agent(Explore)", Deny, call("Agent", map[string]any{"subagent_type": "Plan"}), false},
	})
}

func TestMatchNames(t *testing.T) {
	mcp := func(name string) Call { return call(name, map[string]any{}) }
	runMatches(t, []matchCase{
		{"mcp__github", Allow, mcp("mcp__github__create_issue"), true},
		{"mcp__github", Allow, mcp("mcp__github2__x"), false},
		{"mcp__github", Allow, mcp("mcp__github"), false},
		{"mcp__github__create_issue", Deny, mcp("mcp__github__create_issue"), true},
		{"mcp__github__create_issue", Deny, mcp("mcp__github__create_issues"), false},
		{"mcp__github__*", Allow, mcp("mcp__github__list"), true},
		{"mcp__github__get_*", Allow, mcp("mcp__github__get_issue"), true},
		{"mcp__github__get_*", Allow, mcp("mcp__github__create"), false},
		{"mcp__*", Deny, mcp("mcp__gitlab__x"), true},
		{"mcp__*", Allow, mcp("mcp__gitlab__x"), false}, // unanchored allow globs are skipped
		{"*", Deny, call("Bash", map[string]any{"command": "ls"}), true},
		{"*", Allow, call("Bash", map[string]any{"command": "ls"}), false},
		{"B*", Ask, call("Bash", map[string]any{"command": "ls"}), true},
		{"Bash", Deny, call("BashX", map[string]any{"command": "ls"}), false},
		// Shell tools of other agents are in the Bash family.
		{"Bash(rm *)", Deny, call("exec_command", map[string]any{"cmd": "ls && rm -rf /"}), true},
		{"Bash(rm *)", Deny, call("shell_command", map[string]any{"command": "rm x"}), true},
		{"Bash(rm *)", Deny, call("run_shell_command", map[string]any{"command": "sudo rm x"}), true},
		{"Bash(npm *)", Allow, call("run_shell_command", map[string]any{"command": "npm test"}), true},
		{"Bash", Deny, call("run_shell_command", map[string]any{"command": "ls"}), true},
	})
}

func TestToolsExtend(t *testing.T) {
	tools := DefaultTools()
	tools["Shell"] = Tool{Name: "Shell", Kind: Command, Arg: "command", Family: "Bash"}
	c := call("Shell", map[string]any{"command": "echo && rm x"})
	c.Tools = tools
	r, _ := ParseRule("Bash(rm *)")
	if !r.Match(Deny, c) {
		t.Error("a tool added to the table is not matched by the Bash rules")
	}
	c.Tools = nil
	if r.Match(Deny, c) {
		t.Error("the built-in table was changed through a copy")
	}
}

func TestMatchArgument(t *testing.T) {
	tests := []struct {
		spec         string
		b            Behavior
		call         Call
		match, known bool
	}{
		// the rule's own name does not matter: X(x) is read as the call's
		// tool's rule
		{"X(rm *)", Deny, bash("echo ok && rm -rf /"), true, true},
		{"X(rm *)", Allow, bash("rm -rf /"), true, true},
		{"X(npm *)", Allow, bash("npm test && rm -rf /"), false, true},
		{"X(npm *)", Deny, bash("npm test 'x"), true, true}, // unparsable
		{"X(npm *)", Allow, bash("npm test 'x"), false, true},
		{"X(npm *)", Allow, bash("npm test > out.txt"), false, true}, // a write needs an Edit rule
		{"X(./.env)", Deny, file("Read", project+"/.env"), true, true},
		{"X(./.env)", Deny, file("Read", project+"/a.txt"), false, true},
		{"X(src/**)", Allow, file("Write", project+"/src/a.go"), true, true},
		{"X(domain:example.com)", Deny, call("WebFetch", map[string]any{"url": "https://example.com/x"}), true, true},
		{"X(*.go)", Deny, call("Glob", map[string]any{"pattern": "*.go"}), true, true},
		{"X(model:opus)", Deny, call("Agent", map[string]any{"subagent_type": "x", "model": "opus"}), true, true},
		// no family: an Edit call is matched on its own argument only
		{"X", Allow, call("Bash", nil), true, true},
		{"X(rm *)", Deny, call("mcp__x__y", map[string]any{"command": "rm x"}), false, false},
	}
	for _, tc := range tests {
		r, err := ParseRule(tc.spec)
		if err != nil {
			t.Fatal(err)
		}
		m := NewMatcher(tc.call)
		if match, known := m.MatchArgument(&r, tc.b); match != tc.match || known != tc.known {
			t.Errorf("%s %q on %s %v: got %v, %v; want %v, %v", tc.b, tc.spec, tc.call.Tool, tc.call.Input, match, known, tc.match, tc.known)
		}
	}
}

func TestMatcherSharesTheSplit(t *testing.T) {
	rm, _ := ParseRule("Bash(rm *)")
	npm, _ := ParseRule("Bash(npm *)")
	m := NewMatcher(bash("npm test && rm -rf /"))
	if !m.Match(&rm, Deny) || m.Match(&npm, Allow) || !m.Match(&npm, Deny) {
		t.Error("a Matcher's matches differ from Rule.Match")
	}
	if len(m.m.split) != 1 {
		t.Errorf("the command was split into %d cache entries, want 1", len(m.m.split))
	}
}

// Codex's apply_patch is judged by the files its patch touches: deny and
// ask rules when any of them matches, allow rules when every one does.
func TestMatchApplyPatch(t *testing.T) {
	patch := func(files ...string) Call {
		return call("apply_patch", map[string]any{"command": "*** Begin Patch\n" + strings.Join(files, "\n") + "\n*** End Patch\n"})
	}
	two := patch("*** Update File: src/a.go", "@@", "-a", "+b", "*** Add File: docs/b.md", "+b")
	runMatches(t, []matchCase{
		{"Edit(src/**)", Deny, two, true},
		{"Edit(src/**)", Allow, two, false},
		{"Edit(src/**)", Allow, patch("*** Update File: src/a.go", "*** Move to: src/c.go"), true},
		{"Edit(src/**)", Allow, patch("*** Update File: src/a.go", "*** Move to: lib/c.go"), false},
		{"Read(docs/**)", Deny, two, true},
		{"Read(docs/**)", Allow, patch("*** Update File: docs/b.md"), false}, // Read allow rules do not grant edits
		{"Edit(lib/**)", Deny, two, false},
		{"Edit(lib/**)", Deny, patch(), true}, // names no file
		{"Edit(lib/**)", Allow, patch(), false},
		{"apply_patch(src/**)", Allow, patch("*** Delete File: src/a.go"), true},
		{"Edit", Deny, two, true},
	})
}
