package shell

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// got renders commands compactly: "argv words|via|parent", with a * after
// a non-literal word.
func render(cs []Command) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		ws := make([]string, len(c.Words))
		for j, w := range c.Words {
			ws[j] = w.Value
			if !w.Literal {
				ws[j] += "*"
			}
		}
		out[i] = strings.Join(ws, " ") + "|" + c.Via.String() + "|" + itoa(c.Parent)
	}
	return out
}

func itoa(n int) string {
	if n < 0 {
		return "-"
	}
	return string(rune('0' + n))
}

func TestSplit(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		// Lists and pipelines.
		{"and", "echo ok && rm -rf /", []string{"echo ok|top|-", "rm -rf /|top|-"}},
		{"or", "test -f x || rm x", []string{"test -f x|top|-", "rm x|top|-"}},
		{"semicolon", "cd /tmp; rm -rf x", []string{"cd /tmp|top|-", "rm -rf x|top|-"}},
		{"newline", "ls\nrm x", []string{"ls|top|-", "rm x|top|-"}},
		{"pipe", "cat x | grep y | rm z", []string{"cat x|top|-", "grep y|top|-", "rm z|top|-"}},
		{"pipe stderr", "make |& tee log", []string{"make|top|-", "tee log|top|-"}},
		{"background", "sleep 9 & rm x", []string{"sleep 9|top|-", "rm x|top|-"}},
		{"negation", "! rm x", []string{"rm x|top|-"}},
		// Substitutions.
		{"command substitution", "echo $(rm -rf /)", []string{"echo $(rm -rf /)*|top|-", "rm -rf /|top|-"}},
		{"backticks", "echo `rm -rf /`", []string{"echo `rm -rf /`*|top|-", "rm -rf /|top|-"}},
		{"escaped backtick outside backticks", "git commit -m \"fix \\`x\\`\"", []string{"git commit -m fix `x`|top|-"}},
		{"nested substitution", "echo $(echo $(rm x))", []string{"echo $(echo $(rm x))*|top|-", "echo $(rm x)*|top|-", "rm x|top|-"}},
		{"substitution in double quotes", `echo "a $(rm x) b"`, []string{`echo "a $(rm x) b"*|top|-`, "rm x|top|-"}},
		{"process substitution", "diff <(ls a) >(rm b)", []string{"diff <(ls a)* >(rm b)*|top|-", "ls a|top|-", "rm b|top|-"}},
		{"substitution in assignment", "X=$(rm x)", []string{"|top|-", "rm x|top|-"}},
		{"substitution in parameter default", "echo ${X:-$(rm x)}", []string{"echo ${X:-$(rm x)}*|top|-", "rm x|top|-"}},
		{"substitution in arithmetic", "echo $(( $(rm x) + 1 ))", []string{"echo $(( $(rm x) + 1 ))*|top|-", "rm x|top|-"}},
		{"substitution in redirection", "echo x > $(rm y)", []string{"echo x|top|-", "rm y|top|-"}},
		{"here-document", "cat <<EOF\n$(rm x)\nEOF", []string{"cat|top|-", "rm x|top|-"}},
		{"quoted here-document", "cat <<'EOF'\n$(rm x)\nEOF", []string{"cat|top|-"}},
		// Compound commands.
		{"subshell", "(cd x && rm y)", []string{"cd x|top|-", "rm y|top|-"}},
		{"brace group", "{ ls; rm y; }", []string{"ls|top|-", "rm y|top|-"}},
		{"if", "if test -f a; then rm a; elif true; then rm b; else rm c; fi", []string{"test -f a|top|-", "rm a|top|-", "true|top|-", "rm b|top|-", "rm c|top|-"}},
		{"while", "while read l; do rm \"$l\"; done", []string{"read l|top|-", "rm \"$l\"*|top|-"}},
		{"until", "until false; do rm x; done", []string{"false|top|-", "rm x|top|-"}},
		{"for", "for f in a b; do rm $f; done", []string{"rm $f*|top|-"}},
		{"for over substitution", "for f in $(ls); do :; done", []string{"ls|top|-", ":|top|-"}},
		{"c-style for", "for ((i=0;i<3;i++)); do rm x; done", []string{"rm x|top|-"}},
		{"case", "case $x in a) rm a;; *) rm b;; esac", []string{"rm a|top|-", "rm b|top|-"}},
		{"select", "select x in a; do rm x; done", []string{"rm x|top|-"}},
		{"function", "f() { rm -rf /; }; f", []string{"rm -rf /|top|-", "f|top|-"}},
		{"function keyword", "function f { rm x; }", []string{"rm x|top|-"}},
		{"test clause", "[[ -f $(rm x) ]] && ls", []string{"rm x|top|-", "ls|top|-"}},
		{"time keyword", "time rm x", []string{"rm x|top|-"}},
		// bash skips a -- right after time or time -p, and nowhere else.
		{"time --", "time -- rm x", []string{"rm x|top|-"}},
		{"time -p --", "time -p -- git push | cat", []string{"git push|top|-", "cat|top|-"}},
		{"time -- assignment", "time -- A=1 rm x", []string{"rm x|top|-"}},
		{"time -- in a script", "bash -c 'time -- rm x'", []string{"bash -c time -- rm x|top|-", "rm x|script|0"}},
		{"time -- twice", "time -- -- rm x", []string{"-- rm x|top|-"}},
		{"time quoted --", `time "--" rm x`, []string{"-- rm x|top|-"}},
		{"time -- time --", "time -- time -- rm x", []string{"rm x|top|-"}},
		{"time -- after a redirection", "time >f -- rm x", []string{"-- rm x|top|-"}},
		// hash -p and enable -f bind a name to a program the line does not show.
		{"hash -p", "hash -p /bin/rm ls; ls x", []string{"hash -p /bin/rm ls|top|-", "hash -p (a name rebound to a program)*|runner|0", "ls x|top|-"}},
		{"hash -rp", "hash -rp /bin/rm ls", []string{"hash -rp /bin/rm ls|top|-", "hash -rp (a name rebound to a program)*|runner|0"}},
		{"hash option not known", "hash $O /bin/rm ls", []string{"hash $O* /bin/rm ls|top|-", "$O*|runner|0"}},
		{"enable -f", "enable -f ./x.so rm", []string{"enable -f ./x.so rm|top|-", "enable -f (a name rebound to a program)*|runner|0"}},
		{"hash lists", "hash -r; hash -t ls; hash -- -p", []string{"hash -r|top|-", "hash -t ls|top|-", "hash -- -p|top|-"}},
		{"a program named hash", "./hash -p x y", []string{"./hash -p x y|top|-"}},
		{"BASH_CMDS", "BASH_CMDS[ls]=/bin/rm; ls x", []string{"|top|-", "BASH_CMDS set (a name rebound to a program)*|runner|0", "ls x|top|-"}},
		{"BASH_ALIASES declared", "declare -A BASH_ALIASES=([ls]=rm)", []string{"declare -A BASH_ALIASES=([ls]=rm)*|top|-", "BASH_ALIASES set (a name rebound to a program)*|runner|0"}},
		// Programs that run their operands as a command, or as a script.
		{"ionice", "ionice -c 3 rm x", []string{"ionice -c 3 rm x|top|-", "rm x|runner|0"}},
		{"ionice -p", "ionice -p 5", []string{"ionice -p 5|top|-"}},
		{"chrt", "chrt -f 10 rm x", []string{"chrt -f 10 rm x|top|-", "rm x|runner|0"}},
		{"taskset", "taskset -c 0,1 rm x", []string{"taskset -c 0,1 rm x|top|-", "rm x|runner|0"}},
		{"chroot", "chroot --userspec u:g / rm x", []string{"chroot --userspec u:g / rm x|top|-", "rm x|runner|0"}},
		{"unshare", "unshare -m/x -S 0 rm x", []string{"unshare -m/x -S 0 rm x|top|-", "rm x|runner|0"}},
		{"nsenter", "nsenter -t 1 -m rm x", []string{"nsenter -t 1 -m rm x|top|-", "rm x|runner|0"}},
		{"strace", "strace -f -o out rm x", []string{"strace -f -o out rm x|top|-", "rm x|runner|0"}},
		{"fakeroot", "fakeroot -- rm x", []string{"fakeroot -- rm x|top|-", "rm x|runner|0"}},
		{"pkexec", "pkexec --user u rm x", []string{"pkexec --user u rm x|top|-", "rm x|runner|0"}},
		{"busybox", "busybox rm x", []string{"busybox rm x|top|-", "rm x|runner|0"}},
		{"flock", "flock -w 5 /tmp/l rm x", []string{"flock -w 5 /tmp/l rm x|top|-", "rm x|runner|0"}},
		{"flock -c", "flock /tmp/l -c 'ls; rm x'", []string{"flock /tmp/l -c ls; rm x|top|-", "ls|runner|0", "rm x|runner|0"}},
		{"flock -c not known", `flock /tmp/l -c "$X"`, []string{`flock /tmp/l -c "$X"*|top|-`, `"$X"*|runner|0`}},
		{"watch", "watch -n 1 'ls; rm x'", []string{"watch -n 1 ls; rm x|top|-", "ls|runner|0", "rm x|runner|0"}},
		{"watch joins its words", "watch -d rm '$(id)'", []string{"watch -d rm $(id)|top|-", "rm $(id)*|runner|0", "id|runner|0"}},
		{"watch -x", "watch -x rm '$(id)'", []string{"watch -x rm $(id)|top|-", "rm $(id)|runner|0"}},
		{"coproc", "coproc rm x", []string{"rm x|top|-"}},
		{"declaration", "export A=$(rm x) B=2", []string{"export A=$(rm x)* B=2|top|-", "rm x|top|-"}},
		// Scripts.
		{"bash -c", "bash -c 'git push; rm x'", []string{"bash -c git push; rm x|top|-", "git push|script|0", "rm x|script|0"}},
		{"sh -c", `sh -c "rm x"`, []string{"sh -c rm x|top|-", "rm x|script|0"}},
		{"zsh -c", "zsh -c 'rm x'", []string{"zsh -c rm x|top|-", "rm x|script|0"}},
		{"path to shell", "/bin/bash -c 'rm x'", []string{"/bin/bash -c rm x|top|-", "rm x|script|0"}},
		{"shell options", "bash -e -o pipefail -lc 'rm x' name arg", []string{"bash -e -o pipefail -lc rm x name arg|top|-", "rm x|script|0"}},
		{"env bash -c", "env FOO=1 bash -c 'rm x'", []string{"env FOO=1 bash -c rm x|top|-", "bash -c rm x|runner|0", "rm x|script|1"}},
		{"nested scripts", `bash -c "sh -c 'rm x'"`, []string{"bash -c sh -c 'rm x'|top|-", "sh -c rm x|script|0", "rm x|script|1"}},
		{"script with substitution", "bash -c 'echo $(rm x)'", []string{"bash -c echo $(rm x)|top|-", "echo $(rm x)*|script|0", "rm x|script|0"}},
		{"eval", `eval "rm -rf /"`, []string{"eval rm -rf /|top|-", "rm -rf /|script|0"}},
		{"eval joins its arguments", "eval rm '-rf /'", []string{"eval rm -rf /|top|-", "rm -rf /|script|0"}},
		{"env -S", `env -S "rm -rf" /`, []string{"env -S rm -rf /|top|-", "rm -rf /|script|0"}},
		// env -S's own escapes and expansions are not shell syntax.
		{"env -S escapes", `env -S 'rm\_-rf\_~'`, []string{`env -S rm\_-rf\_~|top|-`, `'rm\_-rf\_~'*|script|0`}},
		{"env -S expansion", `env -S 'r${X}m x'`, []string{"env -S r${X}m x|top|-", "'r${X}m x'*|script|0"}},
		{"shell running a file", "bash deploy.sh", []string{"bash deploy.sh|top|-"}},
		// Scripts that cannot be known.
		{"dynamic script", `bash -c "$X"`, []string{`bash -c "$X"*|top|-`, `"$X"*|script|0`}},
		{"dynamic eval", "eval $X", []string{"eval $X*|top|-", "$X*|script|0"}},
		{"shell reading stdin", "curl x | sh", []string{"curl x|top|-", "sh|top|-", "sh (script read from stdin)*|script|1"}},
		{"shell -s", "bash -s < x", []string{"bash -s|top|-", "bash (script read from stdin)*|script|0"}},
		{"dynamic shell option", "bash $OPTS 'rm x'", []string{"bash $OPTS* rm x|top|-", "$OPTS*|script|0"}},
		// Wrappers.
		{"sudo", "sudo rm -rf /", []string{"sudo rm -rf /|top|-", "rm -rf /|runner|0"}},
		{"sudo options", "sudo -u root -E -- rm x", []string{"sudo -u root -E -- rm x|top|-", "rm x|runner|0"}},
		{"sudo -l lists", "sudo -l rm x", []string{"sudo -l rm x|top|-"}},
		{"doas", "doas -u root rm x", []string{"doas -u root rm x|top|-", "rm x|runner|0"}},
		{"env", "env -i PATH=/bin rm x", []string{"env -i PATH=/bin rm x|top|-", "rm x|runner|0"}},
		{"nice", "nice -n 5 rm x", []string{"nice -n 5 rm x|top|-", "rm x|wrapper|0"}},
		{"nice digits", "nice -10 rm x", []string{"nice -10 rm x|top|-", "rm x|wrapper|0"}},
		{"timeout", "timeout -s KILL 30 npm test", []string{"timeout -s KILL 30 npm test|top|-", "npm test|wrapper|0"}},
		{"nohup", "nohup rm x &", []string{"nohup rm x|top|-", "rm x|wrapper|0"}},
		{"command", "command rm x", []string{"command rm x|top|-", "rm x|wrapper|0"}},
		{"command -v runs nothing", "command -v rm", []string{"command -v rm|top|-"}},
		{"exec", "exec -a name rm x", []string{"exec -a name rm x|top|-", "rm x|wrapper|0"}},
		{"time program", "/usr/bin/time -f %e rm x", []string{"/usr/bin/time -f %e rm x|top|-", "rm x|wrapper|0"}},
		{"stdbuf", "stdbuf -oL rm x", []string{"stdbuf -oL rm x|top|-", "rm x|wrapper|0"}},
		{"chain of wrappers", "sudo nice timeout 5 rm x", []string{"sudo nice timeout 5 rm x|top|-", "nice timeout 5 rm x|runner|0", "timeout 5 rm x|wrapper|1", "rm x|wrapper|2"}},
		{"xargs", "ls | xargs rm", []string{"ls|top|-", "xargs rm|top|-", "rm|wrapper|1"}},
		{"xargs with options", "xargs -n1 -I{} rm {}", []string{"xargs -n1 -I{} rm {}|top|-", "rm {}*|runner|0"}},
		{"find -exec", `find . -exec rm {} \; -ok echo {} +`, []string{"find . -exec rm {} ; -ok echo {} +|top|-", "rm {}*|runner|0", "echo {}*|runner|0"}},
		{"dynamic wrapper option", "sudo $ARGS", []string{"sudo $ARGS*|top|-", "$ARGS*|runner|0"}},
		// Command lines run by su, runuser, ssh and compgen.
		{"su -c", "su -c 'rm -rf /' root", []string{"su -c rm -rf / root|top|-", "rm -rf /|runner|0"}},
		{"su user -lc", "su - root -lc 'rm x'", []string{"su - root -lc rm x|top|-", "rm x|runner|0"}},
		{"su --command=", "su --command='rm x'", []string{"su --command=rm x|top|-", "rm x|runner|0"}},
		{"su -cCMD", "su -c'rm x'", []string{"su -crm x|top|-", "rm x|runner|0"}},
		{"su reads stdin", "su root", []string{"su root|top|-", "su (shell reading its script from stdin)*|script|0"}},
		{"su unknown option", "su --comm 'rm x'", []string{"su --comm rm x|top|-", "--comm*|script|0"}},
		{"su dynamic script", `su -c "$X"`, []string{`su -c "$X"*|top|-`, `"$X"*|script|0`}},
		{"runuser -c", "runuser -u app -- rm x", []string{"runuser -u app -- rm x|top|-", "rm x|runner|0"}},
		{"runuser -u", "runuser -u app rm x", []string{"runuser -u app rm x|top|-", "rm x|runner|0"}},
		// getopt takes runuser's options out from anywhere, up to a -- it drops.
		{"runuser -u drops the --", "runuser -u app bash -- -c 'rm x'", []string{"runuser -u app bash -- -c rm x|top|-", "bash -c rm x|runner|0", "rm x|script|1"}},
		{"runuser -u drops -- in the command", "runuser -u app rm -- -rf /", []string{"runuser -u app rm -- -rf /|top|-", "rm -rf /|runner|0"}},
		{"runuser -u after an operand", "runuser app -u bob rm x", []string{"runuser app -u bob rm x|top|-", "app rm x|runner|0"}},
		{"runuser -u option in the command", "runuser -u app ls -m x", []string{"runuser -u app ls -m x|top|-", "ls x|runner|0"}},
		{"su -s a shell", "su -s /bin/bash -c 'rm x' nobody", []string{"su -s /bin/bash -c rm x nobody|top|-", "rm x|runner|0"}},
		{"su -s a program", "su -s /usr/bin/python3 -c 'import os' root", []string{"su -s /usr/bin/python3 -c import os root|top|-", "/usr/bin/python3 (su -s: a program other than a shell)*|script|0"}},
		{"su --shell= a program", "su --shell=perl root", []string{"su --shell=perl root|top|-", "perl (su -s: a program other than a shell)*|script|0"}},
		{"runuser -l -c", "runuser -l app -c 'rm x'", []string{"runuser -l app -c rm x|top|-", "rm x|runner|0"}},
		{"ssh command", "ssh -p 22 host rm -rf /srv", []string{"ssh -p 22 host rm -rf /srv|top|-", "rm -rf /srv|runner|0"}},
		{"ssh quoted command", "ssh host 'cd app && rm x'", []string{"ssh host cd app && rm x|top|-", "cd app|runner|0", "rm x|runner|0"}},
		{"ssh login", "ssh -i key host", []string{"ssh -i key host|top|-"}},
		{"ssh ProxyCommand", "ssh -o 'ProxyCommand=rm x' host", []string{"ssh -o ProxyCommand=rm x host|top|-", "rm x|runner|0"}},
		{"ssh -oProxyCommand with spaces", "ssh '-oProxyCommand rm -o a=b' host ls", []string{"ssh -oProxyCommand rm -o a=b host ls|top|-", "rm -o a=b|runner|0", "ls|runner|0"}},
		// ssh reads -o's line as ssh_config's: a keyword quoted or led by
		// whitespace or '=', ended by any whitespace or a quote, and any
		// run of '=' and whitespace before the command.
		{"ssh ProxyCommand==", "ssh -o 'ProxyCommand==rm x' host", []string{"ssh -o ProxyCommand==rm x host|top|-", "rm x|runner|0"}},
		{"ssh ProxyCommand= =", "ssh -o 'ProxyCommand= =rm x' host", []string{"ssh -o ProxyCommand= =rm x host|top|-", "rm x|runner|0"}},
		{"ssh =ProxyCommand", "ssh -o '=ProxyCommand=rm x' host", []string{"ssh -o =ProxyCommand=rm x host|top|-", "rm x|runner|0"}},
		{"ssh ' =ProxyCommand'", "ssh -o ' =ProxyCommand rm x' host", []string{"ssh -o  =ProxyCommand rm x host|top|-", "rm x|runner|0"}},
		{"ssh quoted part of the keyword", `ssh -o 'Proxy"Command" rm x' host`, []string{`ssh -o Proxy"Command" rm x host|top|-`, "rm x|runner|0"}},
		{"ssh quote ends the keyword", `ssh -o '"Proxy"Command rm x' host`, []string{`ssh -o "Proxy"Command rm x host|top|-`}},
		{"ssh quoted whole keyword", `ssh -o '"ProxyCommand" rm x' host`, []string{`ssh -o "ProxyCommand" rm x host|top|-`, "rm x|runner|0"}},
		{"ssh newline before the keyword", "ssh -o $'\\nProxyCommand=rm x' host", []string{"ssh -o \nProxyCommand=rm x host|top|-", "rm x|runner|0"}},
		{"ssh newline after the keyword", "ssh -o $'ProxyCommand\\nrm x' host", []string{"ssh -o ProxyCommand\nrm x host|top|-", "rm x|runner|0"}},
		{"ssh CR after the keyword", "ssh -o $'ProxyCommand\\rrm x' host", []string{"ssh -o ProxyCommand\rrm x host|top|-", "rm x|runner|0"}},
		{"ssh ProxyCommand NONE", "ssh -o 'ProxyCommand= NONE' host", []string{"ssh -o ProxyCommand= NONE host|top|-"}},
		{"ssh unclosed quote", `ssh -o '"ProxyCommand rm x' host`, []string{`ssh -o "ProxyCommand rm x host|top|-`}},
		{"ssh RemoteCommand", "ssh -o 'RemoteCommand=rm -rf /srv' host", []string{"ssh -o RemoteCommand=rm -rf /srv host|top|-", "rm -rf /srv|runner|0"}},
		{"ssh -oRemoteCommand after the destination", "ssh host '-oRemoteCommand rm x'", []string{"ssh host -oRemoteCommand rm x|top|-", "rm x|runner|0"}},
		{"ssh -J", "ssh -J user@bastion:22,'[::1]:2222' host", []string{"ssh -J user@bastion:22,[::1]:2222 host|top|-"}},
		{"ssh -J with a command in it", "ssh -J 'y&rm${IFS}x&' host", []string{"ssh -J y&rm${IFS}x& host|top|-", "'y&rm${IFS}x&' (a jump host in ssh's command line)*|runner|0"}},
		{"ssh -oProxyJump with a command in it", "ssh -oProxyJump=y\\;rm host", []string{"ssh -oProxyJump=y;rm host|top|-", "-oProxyJump=y\\;rm (a jump host in ssh's command line)*|runner|0"}},
		{"ssh -o ProxyJump", "ssh -o ProxyJump=bastion host", []string{"ssh -o ProxyJump=bastion host|top|-"}},
		{"ssh ProxyCommand none", "ssh -o ProxyCommand=none host", []string{"ssh -o ProxyCommand=none host|top|-"}},
		{"ssh dynamic command", "ssh host $CMD", []string{"ssh host $CMD*|top|-", "$CMD*|script|0"}},
		{"ssh options after the destination", "ssh host -o ProxyCommand='rm x' -t ls", []string{"ssh host -o ProxyCommand=rm x -t ls|top|-", "rm x|runner|0", "ls|runner|0"}},
		{"ssh -- ends the options", "ssh host -- -t rm x", []string{"ssh host -- -t rm x|top|-", "-t rm x|runner|0"}},
		// xargs appends words: ssh's remote command, su's options and
		// arguments, runuser -u's command.
		{"xargs ssh", "xargs ssh host", []string{"xargs ssh host|top|-", "ssh host|wrapper|0", "ssh (remote command read from input)*|script|1"}},
		{"xargs ssh with a command", "xargs ssh host rm", []string{"xargs ssh host rm|top|-", "ssh host rm|wrapper|0", "ssh (remote command read from input)*|script|1", "rm|runner|1"}},
		{"xargs su -c", "xargs su -c", []string{"xargs su -c|top|-", "su -c|wrapper|0", "su (arguments read from input)*|script|1"}},
		{"xargs su -c ls", "xargs su -c ls", []string{"xargs su -c ls|top|-", "su -c ls|wrapper|0", "su (arguments read from input)*|script|1", "ls|runner|1"}},
		{"xargs runuser -u", "xargs runuser -u app", []string{"xargs runuser -u app|top|-", "runuser -u app|wrapper|0", "runuser (command read from input)*|runner|1"}},
		{"xargs through a wrapper", "xargs sudo sh -c", []string{"xargs sudo sh -c|top|-", "sudo sh -c|wrapper|0", "sh -c|runner|1", "sh (script read from input)*|script|2"}},
		{"xargs ssh through a wrapper", "xargs nice ssh host", []string{"xargs nice ssh host|top|-", "nice ssh host|wrapper|0", "ssh host|wrapper|1", "ssh (remote command read from input)*|script|2"}},
		{"compgen -C", "compgen -C 'rm x' y", []string{"compgen -C rm x y|top|-", "rm x|runner|0"}},
		{"compgen -C twice", "compgen -C ls -C 'rm x' y", []string{"compgen -C ls -C rm x y|top|-", "ls|runner|0", "rm x|runner|0"}},
		{"su --command= is empty", "su --command= 'rm x'", []string{"su --command= rm x|top|-"}},
		{"compgen -V takes a value (bash 5.3)", "compgen -V v -C 'rm x'", []string{"compgen -V v -C rm x|top|-", "rm x|runner|0"}},
		{"compgen -W", "compgen -W 'rm x' y", []string{"compgen -W rm x y|top|-"}},
		{"./compgen is a program", "./compgen -C 'rm x'", []string{"./compgen -C rm x|top|-"}},
		// Options that hide the command: GNU optional values attach with =
		// only, abbreviated long options, - for env -i, clustered -S; a
		// shell reading stdin or input (sudo -s, xargs sh -c, a word that
		// xargs -I or find fills in, /dev/stdin as a script); code that
		// builtins run (trap, source, alias).
		{"xargs --replace rm -rf /", "xargs --replace rm -rf /", []string{"xargs --replace rm -rf /|top|-", "rm -rf /|runner|0"}},
		{"xargs --max-lines rm x", "xargs --max-lines rm x", []string{"xargs --max-lines rm x|top|-", "rm x|runner|0"}},
		{"xargs --eof rm x", "xargs --eof rm x", []string{"xargs --eof rm x|top|-", "rm x|runner|0"}},
		{"xargs -eP rm x", "xargs -eP rm x", []string{"xargs -eP rm x|top|-", "rm x|runner|0"}},
		{"xargs --max-a 1 rm x", "xargs --max-a 1 rm x", []string{"xargs --max-a 1 rm x|top|-", "--max-a*|runner|0"}},
		{"env - rm x", "env - rm x", []string{"env - rm x|top|-", "rm x|runner|0"}},
		{"env -iS 'nice rm x'", "env -iS 'nice rm x'", []string{"env -iS nice rm x|top|-", "nice rm x|script|0", "rm x|wrapper|1"}},
		{"env -vS'rm x' y", "env -vS'rm x' y", []string{"env -vSrm x y|top|-", "rm x y|script|0"}},
		{"env --sp 'rm x'", "env --sp 'rm x'", []string{"env --sp rm x|top|-", "rm x|script|0"}},
		{"env --split-string='rm x' y", "env --split-string='rm x' y", []string{"env --split-string=rm x y|top|-", "rm x y|script|0"}},
		{"sudo -s <<< 'rm x'", "sudo -s <<< 'rm x'", []string{"sudo -s|top|-", "sudo (shell reading its script from stdin)*|script|0"}},
		{"sudo -i", "sudo -i", []string{"sudo -i|top|-", "sudo (shell reading its script from stdin)*|script|0"}},
		{"sudo --login", "sudo --login", []string{"sudo --login|top|-", "sudo (shell reading its script from stdin)*|script|0"}},
		{"doas -s", "doas -s", []string{"doas -s|top|-", "doas (shell reading its script from stdin)*|script|0"}},
		{"sudo -s rm x", "sudo -s rm x", []string{"sudo -s rm x|top|-", "rm x|runner|0"}},
		{"xargs -0 sh -c", "xargs -0 sh -c", []string{"xargs -0 sh -c|top|-", "sh -c|runner|0", "sh (script read from input)*|script|1"}},
		{"xargs env", "xargs env", []string{"xargs env|top|-", "env|wrapper|0", "env (command read from input)*|runner|1"}},
		{"xargs -I{} sh -c '{}'", "xargs -I{} sh -c '{}'", []string{"xargs -I{} sh -c {}|top|-", "sh -c '{}'*|runner|0", "'{}'*|script|1"}},
		{"xargs -I % rm %", "xargs -I % rm %", []string{"xargs -I % rm %|top|-", "rm %*|runner|0"}},
		{"xargs -i rm {}", "xargs -i rm {}", []string{"xargs -i rm {}|top|-", "rm {}*|runner|0"}},
		{"find /bin -name rm -exec {} -rf x \\;", "find /bin -name rm -exec {} -rf x \\;", []string{"find /bin -name rm -exec {} -rf x ;|top|-", "{}* -rf x|runner|0"}},
		{"find x $X", "find x $X", []string{"find x $X*|top|-", "$X*|runner|0"}},
		{"find x -exec$E rm {} \\;", "find x -exec$E rm {} \\;", []string{"find x -exec$E* rm {} ;|top|-", "-exec$E*|runner|0"}},
		{"trap 'rm x' EXIT", "trap 'rm x' EXIT", []string{"trap rm x EXIT|top|-", "rm x|runner|0"}},
		{"trap - EXIT", "trap - EXIT", []string{"trap - EXIT|top|-"}},
		{"trap -p", "trap -p", []string{"trap -p|top|-"}},
		{"source /dev/stdin", "source /dev/stdin", []string{"source /dev/stdin|top|-", "/dev/stdin (sourced)*|script|0"}},
		{"bash /dev/stdin", "bash /dev/stdin", []string{"bash /dev/stdin|top|-", "/dev/stdin (script read from stdin)*|script|0"}},
		{". /proc/self/fd/0", ". /proc/self/fd/0", []string{". /proc/self/fd/0|top|-", "/proc/self/fd/0 (sourced)*|script|0"}},
		{"source <(echo rm x)", "source <(echo rm x)", []string{"source <(echo rm x)*|top|-", "<(echo rm x) (sourced)*|script|0", "echo rm x|top|-"}},
		{"source ./env.sh", "source ./env.sh", []string{"source ./env.sh|top|-"}},
		{"bash ../../dev/fd/3", "bash ../../dev/fd/3", []string{"bash ../../dev/fd/3|top|-", "../../dev/fd/3 (script read from stdin)*|script|0"}},
		{"alias e=rm ll='ls -l'", "alias e=rm ll='ls -l'", []string{"alias e=rm ll=ls -l|top|-", "rm|runner|0", "ls -l|runner|0"}},
		// A name with a slash is a program on disk, never the builtin.
		{"./alias a=ls", "./alias a=ls", []string{"./alias a=ls|top|-"}},
		{"/tmp/x/trap ls EXIT", "/tmp/x/trap ls EXIT", []string{"/tmp/x/trap ls EXIT|top|-"}},
		{"./eval rm x", "./eval rm x", []string{"./eval rm x|top|-"}},
		{"./source /dev/stdin", "./source /dev/stdin", []string{"./source /dev/stdin|top|-"}},
		{"./. /dev/stdin", "./. /dev/stdin", []string{"./. /dev/stdin|top|-"}},
		{"/usr/bin/command rm x", "/usr/bin/command rm x", []string{"/usr/bin/command rm x|top|-", "rm x|runner|0"}},
		{"./exec rm x", "./exec rm x", []string{"./exec rm x|top|-", "rm x|runner|0"}},
		{"/bin/bash -c 'rm x'", "/bin/bash -c 'rm x'", []string{"/bin/bash -c rm x|top|-", "rm x|script|0"}},
		{"timeout --k 5 10 rm x", "timeout --k 5 10 rm x", []string{"timeout --k 5 10 rm x|top|-", "--k*|runner|0"}},
		{"command -v rm", "command -v rm", []string{"command -v rm|top|-"}},
		{"xargs command -v", "xargs command -v", []string{"xargs command -v|top|-", "command -v|wrapper|0"}},
		// Code bash runs from text: ${x@P}, a subscript in a value that
		// arithmetic or a builtin reading names evaluates, let.
		{"x='$(rm -rf /)'; echo \"${x@P}\"", "x='$(rm -rf /)'; echo \"${x@P}\"", []string{"|top|-", "echo \"${x@P}\"*|top|-", "${x@P}*|top|-"}},
		{"x='a[$(rm -rf /)]'; echo $((x))", "x='a[$(rm -rf /)]'; echo $((x))", []string{"|top|-", "echo $((x))*|top|-", "(a value run as code by arithmetic or ${!x})*|top|-"}},
		{"let 'a[$(rm -rf /)]'", "let 'a[$(rm -rf /)]'", []string{"let 'a[$(rm -rf /)]'*|top|-", "'a[$(rm -rf /)]'*|top|-"}},
		{"let x=1 y+=2", "let x=1 y+=2", []string{"let x=1* y+=2*|top|-"}},
		{"echo hi; let 'a[$(rm -rf ~)]'", "echo hi; let 'a[$(rm -rf ~)]'", []string{"echo hi|top|-", "let 'a[$(rm -rf ~)]'*|top|-", "'a[$(rm -rf ~)]'*|top|-"}},
		{"printf -v 'a[$(rm -rf /)]' x", "printf -v 'a[$(rm -rf /)]' x", []string{"printf -v a[$(rm -rf /)] x|top|-", "'a[$(rm -rf /)]'*|top|-"}},
		{"declare -a a='($(rm -rf /))'", "declare -a a='($(rm -rf /))'", []string{"declare -a a=($(rm -rf /))|top|-", "'($(rm -rf /))'*|top|-"}},
		{"declare 'a[$(rm x)]=1'", "declare 'a[$(rm x)]=1'", []string{"declare a[$(rm x)]=1|top|-", "'a[$(rm x)]=1'*|top|-"}},
		{"[[ 'a[$(rm -rf /)]' -eq 1 ]]", "[[ 'a[$(rm -rf /)]' -eq 1 ]]", []string{"'a[$(rm -rf /)]'*|top|-"}},
		{"[[ -v 'a[$(rm x)]' ]]", "[[ -v 'a[$(rm x)]' ]]", []string{"'a[$(rm x)]'*|top|-"}},
		{"awk '{print $1}' f", "awk '{print $1}' f", []string{"awk {print $1} f|top|-"}},
		{"for i in 1 2; do echo $((i+1)); done", "for i in 1 2; do echo $((i+1)); done", []string{"echo $((i+1))*|top|-"}},
		{"a='a[$'; b='(rm x)]'; x=$a$b; echo $((x))", "a='a[$'; b='(rm x)]'; x=$a$b; echo $((x))", []string{"|top|-", "|top|-", "|top|-", "echo $((x))*|top|-", "(a value run as code by arithmetic or ${!x})*|top|-"}},
		{"x='a[\\$(rm)]'; echo ${!x}", "x='a[\\$(rm)]'; echo ${!x}", []string{"|top|-", "echo ${!x}*|top|-", "(a value run as code by arithmetic or ${!x})*|top|-"}},
		// Arithmetic that no $(( )) shows: an assignment's subscript, a
		// variable declared -i or -n; and printf -v, whose format makes $.
		{"x='a[$(rm -rf ~)]'; a[x]=1", "x='a[$(rm -rf ~)]'; a[x]=1", []string{"|top|-", "|top|-", "(a value run as code by arithmetic or ${!x})*|top|-"}},
		{"x='a[$(rm -rf ~)]'; declare -i n=x", "x='a[$(rm -rf ~)]'; declare -i n=x", []string{"|top|-", "declare -i n=x|top|-", "(a value run as code by arithmetic or ${!x})*|top|-"}},
		{"x='a[$(rm -rf ~)]'; declare -i n; n=x", "x='a[$(rm -rf ~)]'; declare -i n; n=x", []string{"|top|-", "declare -i n|top|-", "|top|-", "(a value run as code by arithmetic or ${!x})*|top|-"}},
		{"x='a[$(rm -rf ~)]'; local -n r=x", "x='a[$(rm -rf ~)]'; local -n r=x", []string{"|top|-", "local -n r=x|top|-", "(a value run as code by arithmetic or ${!x})*|top|-"}},
		{"printf -v x 'a[\\x24(rm -rf ~)]'; echo $((x))", "printf -v x 'a[\\x24(rm -rf ~)]'; echo $((x))", []string{"printf -v x a[\\x24(rm -rf ~)]|top|-", "echo $((x))*|top|-", "(a value run as code by arithmetic or ${!x})*|top|-"}},
		{"a['a[$(rm x)]']=1", "a['a[$(rm x)]']=1", []string{"|top|-", "'a[$(rm x)]'*|top|-"}},
		{"printf '%s\\n' '$HOME'", "printf '%s\\n' '$HOME'", []string{"printf %s\\n $HOME|top|-"}},
		{"read 'a[$(rm x)]' <<< 1", "read 'a[$(rm x)]' <<< 1", []string{"read a[$(rm x)]|top|-", "'a[$(rm x)]'*|top|-"}},
		{"echo $((1+2))", "echo $((1+2))", []string{"echo $((1+2))*|top|-"}},
		{"[[ -f x ]] && npm test", "[[ -f x ]] && npm test", []string{"npm test|top|-"}},
		{"export A='$B'", "export A='$B'", []string{"export A=$B|top|-", "'$B'*|top|-"}},
		// Words.
		{"assignment prefix", "FOO=1 BAR=2 rm x", []string{"rm x|top|-"}},
		{"redirections", "rm x > out 2>&1 < in", []string{"rm x|top|-"}},
		{"redirection first", "> out rm x", []string{"rm x|top|-"}},
		{"redirection only", "> out", []string{"|top|-"}},
		{"quotes", `echo "a\"b" 'c d' x\ y`, []string{`echo a"b c d x y|top|-`}},
		{"globs", "rm *.go a? [ab] [", []string{"rm *.go* a?* [ab]* [|top|-"}},
		{"tilde", "rm ~/x a=~/y '~'", []string{"rm ~/x* a=~/y* ~|top|-"}},
		{"braces", "echo {a,b} {1..3} {} '{a,b}'", []string{"echo {a,b}* {1..3}* {} {a,b}|top|-"}},
		{"parameter", "rm $X ${Y} \"$Z\"", []string{`rm $X* ${Y}* "$Z"*|top|-`}},
		{"ansi-c string", `$'\x72m' -rf $'a\'b\n\101\u00e9\cA\q'`, []string{"rm -rf a'b\nA\u00e9\x01\\q|top|-"}},
		{"ansi-c nul", `echo $'a\0b'`, []string{`echo $'a\0b'*|top|-`}},
		{"locale string", `echo $"hi"`, []string{`echo $"hi"*|top|-`}},
		{"escaped glob", `rm \*`, []string{"rm *|top|-"}},
		{"line continuation", "rm \\\n  x", []string{"rm x|top|-"}},
		{"comment", "ls # ; rm x", []string{"ls|top|-"}},
		{"empty", "", nil},
		{"assignments only", "FOO=1", []string{"|top|-"}},
		{"rcfile", "bash --rcfile ./x -ic 'ls'", []string{"bash --rcfile ./x -ic ls|top|-", "./x (rcfile)*|script|0", "ls|script|0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs, err := Split(tc.src)
			if err != nil {
				t.Fatalf("Split(%q): %v", tc.src, err)
			}
			got := render(cs)
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("Split(%q)\n got: %q\nwant: %q", tc.src, got, tc.want)
			}
		})
	}
}

func TestSplitText(t *testing.T) {
	tests := []struct {
		src  string
		text []string
	}{
		{"FOO=1 rm x > out 2>&1; ls", []string{"FOO=1 rm x > out 2>&1", "ls"}},
		{"> out rm x", []string{"> out rm x"}},
		{"sudo -u r rm -rf / >log", []string{"sudo -u r rm -rf / >log", "rm -rf / >log"}},
		{"bash -c 'a=1 rm x >y'", []string{"bash -c 'a=1 rm x >y'", "a=1 rm x >y"}},
		{"find . -exec rm {} \\; -print", []string{"find . -exec rm {} \\; -print", "rm {}"}},
	}
	for _, tc := range tests {
		cs, err := Split(tc.src)
		if err != nil {
			t.Fatalf("Split(%q): %v", tc.src, err)
		}
		var got []string
		for _, c := range cs {
			got = append(got, c.Text)
		}
		if strings.Join(got, "\n") != strings.Join(tc.text, "\n") {
			t.Errorf("Split(%q) texts\n got: %q\nwant: %q", tc.src, got, tc.text)
		}
	}
}

func TestSplitEnvAndWrites(t *testing.T) {
	cs, err := Split("A=1 B=$(x) rm y > o1 >> o2 2> e 2>&1 >&- &> all <> rw < in >&f; { ls; } > grp; cat <<<s >| clob")
	if err != nil {
		t.Fatal(err)
	}
	c := cs[0]
	if strings.Join(c.Env, ",") != "A=1,B=$(x)" {
		t.Errorf("Env = %q", c.Env)
	}
	var w []string
	for _, x := range c.Writes {
		w = append(w, x.Value)
	}
	if strings.Join(w, ",") != "o1,o2,e,all,rw,f" {
		t.Errorf("Writes = %q, want o1,o2,e,all,rw,f", w)
	}
	if ls := cs[2]; ls.Argv[0] != "ls" || len(ls.Writes) != 1 || ls.Writes[0].Value != "grp" {
		t.Errorf("a group's redirection applies to its commands: %+v", ls)
	}
	if cat := cs[3]; len(cat.Writes) != 1 || cat.Writes[0].Value != "clob" {
		t.Errorf("cat writes = %+v", cat.Writes)
	}
	cs, err = Split("{ { a; } > in; b > own; c; } > out < r; d")
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"out,in", "out,own", "out", ""} {
		var got []string
		for _, x := range cs[i].Writes {
			got = append(got, x.Value)
		}
		if strings.Join(got, ",") != want {
			t.Errorf("%s writes %q, want %q: a group's targets apply inside it only", cs[i].Argv[0], got, want)
		}
	}
	cs, _ = Split("echo > $OUT")
	if len(cs[0].Writes) != 1 || cs[0].Writes[0].Literal || cs[0].Writes[0].Source != "$OUT" {
		t.Errorf("a dynamic target is kept as written: %+v", cs[0].Writes)
	}
}

// Assignments are in the environment of what the command runs, and a
// statement of assignments only is a command of its own: both change what
// a later command does (PATH picks the program).
func TestSplitEnvInherited(t *testing.T) {
	tests := []struct {
		src string
		env []string // each command's Env, joined by spaces
	}{
		{"PATH=./bin; git status", []string{"PATH=./bin", ""}},
		{"PATH=./bin nice git status", []string{"PATH=./bin", "PATH=./bin"}},
		{"PATH=./bin timeout 5 env A=1 git status", []string{"PATH=./bin", "PATH=./bin", "PATH=./bin"}},
		{"PATH=./bin eval 'B=2 git status'", []string{"PATH=./bin", "PATH=./bin B=2"}},
		{"BASH_ENV=./e.sh bash -c 'echo hi'", []string{"BASH_ENV=./e.sh", "BASH_ENV=./e.sh"}},
		{"A=1 echo $(git status)", []string{"A=1", ""}}, // the substitution runs first, without A
	}
	for _, tc := range tests {
		cs, err := Split(tc.src)
		if err != nil {
			t.Fatalf("Split(%q): %v", tc.src, err)
		}
		var got []string
		for _, c := range cs {
			got = append(got, strings.Join(c.Env, " "))
		}
		if strings.Join(got, "|") != strings.Join(tc.env, "|") {
			t.Errorf("Split(%q) env %q, want %q", tc.src, got, tc.env)
		}
	}
}

func TestLine(t *testing.T) {
	tests := []struct{ src, line string }{
		{"git   commit  -m \"fix it\"", "git commit -m 'fix it'"},
		{"FOO=1 rm x > y", "rm x"},
		{`echo "it's" a=b {} '*' "$X"`, `echo 'it'\''s' a=b {} '*' "$X"`},
		{`echo '' "#" a#b`, `echo '' '#' a#b`},
	}
	for _, tc := range tests {
		cs, err := Split(tc.src)
		if err != nil {
			t.Fatal(err)
		}
		if got := cs[0].Line(); got != tc.line {
			t.Errorf("Line of %q = %q, want %q", tc.src, got, tc.line)
		}
		// A literal command reads back as itself.
		back, err := Split(cs[0].Line())
		if err != nil || strings.Join(back[0].Argv, "\x00") != strings.Join(cs[0].Argv, "\x00") {
			t.Errorf("Line %q reads back as %q (%v), want %q", cs[0].Line(), back[0].Argv, err, cs[0].Argv)
		}
	}
}

func TestSplitErrors(t *testing.T) {
	deep := func(open, close string, n int) string {
		return strings.Repeat(open, n) + "true" + strings.Repeat(close, n)
	}
	bashC := "rm x"
	for range MaxScriptDepth + 1 {
		bashC = "bash -c " + quoteAll(bashC)
	}
	tests := []struct {
		name, src, want string
	}{
		{"syntax", "echo ok; (", "not valid shell syntax"},
		{"unclosed quote", "rm 'x", "not valid shell syntax"},
		{"nul", "rm \x00x", "a NUL byte"},
		// bash reads \<CR><LF> as an escaped CR and a newline; the parser
		// as a line continuation, and a lone CR as a blank.
		{"backslash crlf", "echo hi \\\r\nrm -rf /", "a carriage return"},
		{"crlf", "ls\r\nrm x", "a carriage return"},
		{"cr in quotes", "echo 'a\r\nb'", "a carriage return"},
		{"lone cr", "echo x\r#c; rm -rf /", "a carriage return"},
		{"cr in a script", `bash -c $'echo hi \\\r\nrm x'`, "a carriage return"},
		{"nested backticks", "echo `echo \\`rm x\\``", "backticks inside backticks"},
		{"nested backticks in a here-document", "cat <<E\n`a \\`b\\``\nE", "backticks inside backticks"},
		{"unclosed substitution in a script", "bash -c 'echo $('", "not valid shell syntax"},
		{"negation after time --", "time -- ! rm x", "once time's -- is skipped"},
		{"too large", strings.Repeat("a", MaxInput+1), "more than the 65536"},
		{"parentheses", deep("(", ")", MaxNesting+1), "nested more than 100"},
		{"substitutions", deep("$(", ")", 20000), "nested more than 100"},
		{"quoted closers", strings.Repeat(`( echo ")" `, MaxNesting+1), "nested more than 100"},
		{"here-document", "cat <<E\n" + deep("$(", ")", MaxNesting+1) + "\nE", "nested more than 100"},
		{"braces", deep("{ ", "; }", MaxNesting+1), "nested more than 100"},
		{"ifs", deep("if ", "; then :; fi", MaxNesting+1), "nested more than 100"},
		{"and chain", "true" + strings.Repeat(" && true", 3000), "nested more than 5000"},
		{"scripts", bashC, "scripts nested more than 8"},
		{"commands", strings.Repeat("a;", MaxCommands+1), "more than 4096 commands"},
		{"wrappers", strings.Repeat("nice ", MaxWrappers+1) + "rm x", "more than 16 wrappers"},
		// each command of a redirected group carries the group's targets,
		// and each wrapped command the words after its wrapper: the sum
		// is bounded, not the product
		{"redirected group", "{ " + strings.Repeat("a;", 1000) + " } " + strings.Repeat(">x ", 1000), "more than 65536 words"},
		{"wrapped words", strings.Repeat("nice ", MaxWrappers-1) + strings.Repeat("x ", 5000), "more than 65536 words"},
		// each command of a script carries its shell's assignments
		{"inherited assignments", strings.Repeat("A=1 ", 5000) + "bash -c '" + strings.Repeat("a;", 100) + "'", "more than 65536 words"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			cs, err := Split(tc.src)
			if err == nil {
				t.Fatalf("Split returned %d commands, want an error", len(cs))
			}
			if !errors.Is(err, CodeUnparsable) || errs.CodeOf(err) != CodeUnparsable {
				t.Errorf("error %v has code %q, want %q", err, errs.CodeOf(err), CodeUnparsable)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not say %q", err, tc.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d) // a generous bound: only a runaway fails it
			}
		})
	}
}

// quoteAll single-quotes s for the shell.
func quoteAll(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

func TestNestingCountsBracketsAndKeywords(t *testing.T) {
	tests := []struct {
		src  string
		want int
	}{
		{"ls", 0},
		{"(a) (b)", 1},
		{"$(a $(b))", 2},
		{"if a; then if b; then c; fi; fi", 2},
		{"diff notify lsif fi_x", 0},
		{"for x in a; do case y in z) ;; esac; done", 2},
		// A closer in quotes or in a here-document closes nothing.
		{`( echo ")" ( echo ")" ( x ) ) )`, 3},
		{"( cat <<E\n)\n)\nE\n( x ) )", 2},
		// Substitutions nest in a here-document (counted in a quoted one too).
		{"cat <<E\n$( $( x ) )\nE", 3},
		{"cat <<-'E'\n( ( x\n\tE\n(x)", 1},
		{`echo "$(a "$(b)")"`, 4},
		{"ls # ( ( (\n(x)", 1},
		{`echo '(((' \(`, 0},
	}
	for _, tc := range tests {
		if got, _, _ := nesting(tc.src); got != tc.want {
			t.Errorf("nesting(%q) = %d, want %d", tc.src, got, tc.want)
		}
	}
}

// A reused Splitter answers as a fresh one, whatever it parsed before: a
// failed parse, a here-document, scripts inside scripts.
func TestSplitterReusesItsParser(t *testing.T) {
	srcs := []string{
		"echo ok; (", "cat <<EOF\nrm x\nEOF\nls", "bash -c 'sh -c \"rm -rf /\"' && ls",
		"rm 'x", "FOO=1 env -S 'rm x' > out", "echo $(rm a) `rm b`", "ls",
		"cat <<A\n$(rm y)\nA", "bash -c 'echo $('", "git push",
	}
	var sp Splitter
	for round := range 2 {
		for _, src := range srcs {
			want, werr := Split(src)
			got, gerr := sp.Split(src)
			if !reflect.DeepEqual(got, want) || fmt.Sprint(gerr) != fmt.Sprint(werr) {
				t.Errorf("round %d, %q: reused %v %v, fresh %v %v", round, src, got, gerr, want, werr)
			}
		}
	}
}

func BenchmarkSplit(b *testing.B) {
	src := `FOO=1 npm run test -- --watch=false && git diff HEAD~1 | grep -v '^#' > /tmp/out; bash -c "echo $(date)"`
	b.Run("fresh", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Split(src); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reused", func(b *testing.B) {
		b.ReportAllocs()
		var sp Splitter
		for b.Loop() {
			if _, err := sp.Split(src); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// Text reaches arithmetic only through a variable: quoted $ in an
// argument of an ordinary command (awk '{print $1}') is not code, in a
// value a variable takes it is once arithmetic reads the variable.
func TestSplitArithmeticReadsValues(t *testing.T) {
	const marker = "(a value run as code by arithmetic or ${!x})"
	for src, want := range map[string]bool{
		`for ((i=0; i<3; i++)); do awk '{print $1}' f; done`:         false,
		`echo $((n+1)) && grep -n '\$HOME' README.md`:                false,
		`[[ $count -eq 0 ]] && awk '{print $1}' f`:                   false,
		`grep -c '$' f; [[ $n -eq 1 ]]`:                              false,
		`n=$(wc -l < f); echo $((n*2)); awk '{print $2}' f`:          false,
		`[[ $# -gt 0 ]] && sed -n 's/$/;/p' f`:                       false,
		`grep '$' f | while read l; do echo "$l"; done`:              false,
		`x=1; echo $((x+1)); echo '$x'`:                              false,
		`x='a[$(rm -rf ~)]'; echo $((x))`:                            true,
		`x=$(echo 'a[$(rm -rf ~)]'); echo $((x))`:                    true,
		`x='a[$(rm -rf ~)]'; [[ $x -eq 1 ]]`:                         true,
		`x='a[$(rm -rf ~)]'; a[x]=1`:                                 true,
		`x='a[$(rm -rf ~)]'; declare -i n=x`:                         true,
		`x='a[$(rm -rf ~)]'; declare -i n; n=x`:                      true,
		`printf -v x 'a[\x24(rm -rf ~)]'; echo $((x))`:               true,
		`printf -v x %s "$y"; echo $((x))`:                           true,
		`a=('a[$(rm -rf ~)]'); echo $((a))`:                          true,
		`declare -a a=('a[$(rm -rf ~)]'); echo $((a))`:               true,
		`for x in 'a[$(rm -rf ~)]'; do echo $((x)); done`:            true,
		`f() { echo $(($1)); }; f 'a[$(rm -rf ~)]'`:                  true,
		`f() { local v=$1; echo $((v)); }; f 'a[$(rm -rf ~)]'`:       true,
		`echo 'a[$(rm -rf ~)]' | while read x; do echo $((x)); done`: true,
		`read x <<< 'a[$(rm -rf ~)]'; echo $((x))`:                   true,
		`: 'a[$(rm -rf ~)]'; echo $((_))`:                            true,
		`[[ 'a[$(rm -rf ~)]' =~ .* ]]; echo $((BASH_REMATCH))`:       true,
		`x='a[\$(rm)]'; echo ${!x}`:                                  true,
		`bash -c 'echo $(($0))' 'a[$(rm -rf ~)]'`:                    true,
	} {
		cs, err := Split(src)
		if err != nil {
			t.Fatalf("Split(%q): %v", src, err)
		}
		got := false
		for _, c := range cs {
			got = got || len(c.Words) == 1 && c.Words[0].Source == marker
		}
		if got != want {
			t.Errorf("Split(%q): unknown command %v, want %v\n%q", src, got, want, render(cs))
		}
	}
}
