package shell

// Programs that run a command line given as an option or as their last
// words, for a shell to run: su and runuser (-c), ssh (the remote command,
// and the local ProxyCommand and LocalCommand), compgen (-C).

import (
	"path"
	"strings"
)

// su runs a shell as another user: its script is the value of -c
// (--command, --session-command); without one the shell reads its script
// from stdin. runuser -u USER COMMAND runs the command itself. Options
// may follow the user or be among the command's words (getopt permutes
// them, and drops the first --); an option this does not
// know, or a long one that may be a shortened one, hides what runs.
func (w *walker) su(idx int, words []iword, appended bool) {
	// xargs appends words getopt reads too: an option's value, options
	// (a -c of their own), the user, the shell's arguments.
	fromInput := func() {
		if appended {
			w.unknown(idx, words[0].Source+" (arguments read from input)", Script)
		}
	}
	script, scripted := "", false
	shell := ""     // -s: the program that runs the script
	direct := false // runuser -u
	// The words that are not options, in order: getopt takes the options
	// out wherever they are, up to a --, which it drops.
	var operands []iword
	for i := 1; i < len(words); i++ {
		x := words[i]
		if !x.Literal {
			w.unknown(idx, x.Source, Script)
			return
		}
		v := x.Value
		if v == "--" {
			operands = append(operands, words[i+1:]...)
			break
		}
		if v == "-" || !strings.HasPrefix(v, "-") {
			operands = append(operands, x)
			continue
		}
		if strings.HasPrefix(v, "--") {
			name, val, valued := strings.Cut(v, "=")
			switch name {
			case "--command", "--session-command", "--user", "--group", "--supp-group", "--shell", "--whitelist-environment":
				var ok bool
				if val, i, ok = w.optValue(idx, words, i, val, valued); !ok {
					fromInput()
					return
				}
				switch name {
				case "--command", "--session-command":
					script, scripted = val, true
				case "--user":
					direct = true
				case "--shell":
					shell = val
				}
			case "--login", "--preserve-environment", "--fast", "--pty", "--no-pty", "--help", "--version":
			default:
				w.unknown(idx, x.Source, Script)
				return
			}
			continue
		}
	cluster:
		for j := 1; j < len(v); j++ {
			switch c := v[j]; c {
			case 'c', 'g', 'G', 's', 'w', 'u':
				val, last, ok := w.optValue(idx, words, i, v[j+1:], false)
				if !ok {
					fromInput()
					return
				}
				i = last
				switch c {
				case 'c':
					script, scripted = val, true
				case 'u':
					direct = true
				case 's':
					shell = val
				}
				break cluster
			case 'l', 'm', 'p', 'f', 'P', 'T', 'h', 'V':
			default:
				w.unknown(idx, x.Source, Script)
				return
			}
		}
	}
	if direct {
		// runuser -u USER COMMAND: the operands, as getopt leaves them
		// (runuser -u app bash -- -c 'rm x' runs bash -c 'rm x').
		// The words xargs appends follow the command's.
		if len(operands) > 0 {
			w.wrapped(idx, operands, -1, nil, Runner, 0, appended)
		} else if appended {
			w.unknown(idx, words[0].Source+" (command read from input)", Runner)
		}
		return
	}
	fromInput()
	if shell != "" && !shells[path.Base(shell)] {
		// su -s python3 -c CODE: the script is not one for a shell
		// (python3 runs it), and the program is not on the line.
		w.unknown(idx, shell+" (su -s: a program other than a shell)", Script)
		return
	}
	if !scripted {
		if !appended {
			w.unknown(idx, words[0].Source+" (shell reading its script from stdin)", Script)
		}
		return
	}
	// Run as another user: su must be allowed as well as the script's
	// commands, as sudo must (Runner), not stand aside as bash -c does.
	w.subVia(idx, script, Runner)
}

// optValue is the value of the option in words[i]: attached to it
// (-cCMD, or given with = as in --command=CMD), or else the next word. It
// returns the index of the last word read, and false when the value is
// missing or not literal (then what runs cannot be told: recorded as an
// unknown command).
func (w *walker) optValue(idx int, words []iword, i int, attached string, given bool) (string, int, bool) {
	if given || attached != "" {
		return attached, i, true
	}
	if i+1 >= len(words) {
		return "", i, false
	}
	i++
	if !words[i].Literal {
		w.unknown(idx, words[i].Source, Script)
		return "", i, false
	}
	return words[i].Value, i, true
}

// sshArgOpts are ssh's options that take a value.
const sshArgOpts = "BbcDEeFIiJLlmOoPpQRSWw"

// sshLocal are the ssh_config keywords whose value is a command line ssh
// runs on this machine, through the user's shell.
var sshLocal = map[string]bool{"proxycommand": true, "localcommand": true, "knownhostscommand": true}

// sshJumpMeta are the bytes that make a jump host (-J, ProxyJump) more
// than a word: ssh puts it unquoted in the ssh command line it runs
// through the user's shell as a ProxyCommand (OpenSSH 9.2 takes -J
// 'h&touch${IFS}x&' and runs touch), so what runs cannot be told.
const sshJumpMeta = " \t\r\n;&|<>()$`\\\"'"

// ssh runs its words after the destination, joined by spaces, as a script
// of the remote user's shell; -o ProxyCommand=... (and LocalCommand,
// KnownHostsCommand) run here, and -o RemoteCommand=... there as the
// words after the destination would. Options may follow the destination too
// (ssh parses them again there, unless -- ended them). Without a command
// ssh runs a login shell on the terminal: nothing this line shows.
func (w *walker) ssh(idx int, words []iword, appended bool) {
	if appended {
		// xargs appends words: the destination or the remote command,
		// which the remote shell splits again.
		w.unknown(idx, words[0].Source+" (remote command read from input)", Script)
	}
	host, ended := false, false
	for i := 1; i < len(words); i++ {
		x := words[i]
		if !x.Literal {
			w.unknown(idx, x.Source, Script)
			return
		}
		v := x.Value
		switch {
		case !ended && v == "--":
			ended = true
		case !ended && len(v) >= 2 && v[0] == '-':
			var ok bool
			if i, ok = w.sshOption(idx, words, i); !ok {
				return
			}
		case !host:
			host = true
		default: // the remote command
			parts := make([]string, 0, len(words)-i)
			for _, a := range words[i:] {
				if !a.Literal {
					w.unknown(idx, a.Source, Script)
					return
				}
				parts = append(parts, a.Value)
			}
			// Run on another machine: ssh must be allowed as well as the
			// remote command (Runner), not stand aside as bash -c does.
			w.subVia(idx, strings.Join(parts, " "), Runner)
			return
		}
	}
}

// sshSpace is ssh_config's whitespace.
const sshSpace = " \t\r\n"

// sshConfigLine reads an ssh_config line as ssh reads one given with -o:
// its keyword, lowercased, and what follows it as a command keyword
// (ProxyCommand) takes it. The keyword may be quoted, or in part, and
// end at whitespace, a quote or '='; whitespace, then one '=' or one
// empty token, may lead it; the command starts past any whitespace and
// '=' after it. false: ssh reads no keyword from the line.
func sshConfigLine(line string) (key, arg string, ok bool) {
	line = strings.TrimRight(line, sshSpace+"\f")
	key, rest, ok := sshDelim(line)
	if ok && key == "" && rest != "" {
		key, rest, ok = sshDelim(rest)
	}
	if !ok || key == "" {
		return "", "", false
	}
	return strings.ToLower(key), strings.TrimLeft(rest, sshSpace+"="), true
}

// sshDelim is ssh's strdelim (misc.c): the token s starts with and the
// rest after it. A token ends at whitespace, a '"' or a '='; a quoted
// part is taken whole, its quotes dropped, and ends the token; the
// whitespace after a token and one '=' (with whitespace around it) are
// skipped. false: a quote is not closed.
func sshDelim(s string) (tok, rest string, ok bool) {
	k := strings.IndexAny(s, sshSpace+`"=`)
	if k < 0 {
		return s, "", true
	}
	if s[k] == '"' {
		q := strings.IndexByte(s[k+1:], '"')
		if q < 0 {
			return "", "", false
		}
		return s[:k] + s[k+1:k+1+q], strings.TrimLeft(s[k+2+q:], sshSpace), true
	}
	rest = strings.TrimLeft(s[k+1:], sshSpace)
	if s[k] != '=' && strings.HasPrefix(rest, "=") {
		rest = strings.TrimLeft(rest[1:], sshSpace)
	}
	return s[:k], rest, true
}

// sshOption reads the options of words[i] (and the next word, when the
// last of them takes it as its value): it returns the index of the last
// word read, and false when what runs cannot be told past them.
func (w *walker) sshOption(idx int, words []iword, i int) (int, bool) {
	v := words[i].Value
	for j := 1; j < len(v); j++ {
		if strings.IndexByte(sshArgOpts, v[j]) < 0 {
			continue
		}
		val, last, ok := w.optValue(idx, words, i, v[j+1:], false)
		if !ok {
			return last, false // or ssh fails: an option without its value
		}
		i = last
		if v[j] == 'J' && strings.ContainsAny(val, sshJumpMeta) {
			w.unknown(idx, words[i].Source+" (a jump host in ssh's command line)", Runner)
		}
		if v[j] == 'o' {
			if key, arg, ok := sshConfigLine(val); ok && arg != "" && !strings.EqualFold(arg, "none") {
				switch {
				case sshLocal[key], key == "remotecommand": // RemoteCommand: as the command after the destination
					w.subVia(idx, arg, Runner)
				case key == "proxyjump" && strings.ContainsAny(arg, sshJumpMeta):
					w.unknown(idx, words[i].Source+" (a jump host in ssh's command line)", Runner)
				}
			}
		}
		break
	}
	return i, true
}

// compgen -C COMMAND runs the command to list completions. -A, -G, -W,
// -X, -F, -P, -S, -o and (bash 5.3) -V take a value.
func (w *walker) compgen(idx int, words []iword) {
	for i := 1; i < len(words); i++ {
		x := words[i]
		if !x.Literal {
			w.unknown(idx, x.Source, Script)
			return
		}
		v := x.Value
		if v == "--" || !strings.HasPrefix(v, "-") {
			return
		}
		for j := 1; j < len(v); j++ {
			if strings.IndexByte("AGWXFPSoCV", v[j]) < 0 {
				continue
			}
			if v[j] != 'C' {
				if v[j+1:] == "" {
					i++ // the value is the next word
				}
				break
			}
			cmd, last, ok := w.optValue(idx, words, i, v[j+1:], false)
			if !ok {
				return
			}
			i = last
			w.subVia(idx, cmd, Runner)
			break
		}
	}
}
