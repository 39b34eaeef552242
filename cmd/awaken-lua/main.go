// Command awaken-lua runs agent plugins written in Lua: run an agent, test
// and check plugins, develop with hot reload, or serve the sidecar API.
//
//	awaken-lua [--config FILE] run [--agent ID] [--thread ID] [--model scripted:FILE|openai:MODEL|anthropic:MODEL] [--json] [--approve all|none] [PROMPT]
//	awaken-lua [--config FILE] test [PATH...] [-run REGEX] [-v]
//	awaken-lua init [DIR]
//	awaken-lua [--config FILE] check
//	awaken-lua [--config FILE] eval [--agent ID] [--thread ID] [--json] TOOL [ARGS-JSON]
//	awaken-lua [--config FILE] dev
//	awaken-lua [--config FILE] serve [--addr HOST:PORT]
//	awaken-lua [--config FILE] replay [PATH...] [--plugin-dir DIR] [--since D] [--json] [--fail-on KINDS]
//	awaken-lua [--config FILE] journal verify [PATH...] | journal export RUN_ID [-o FILE] [PATH...]
//	awaken-lua [--config FILE] migrate
//	awaken-lua [--config FILE] publish [DIR]
//	awaken-lua [--config FILE] hook [--agent claude-code] [--url URL] [--timeout D] [--fail closed|open] [--local] [--as AGENT]
//	awaken-lua install claude-code [--scope project|local|user] [--http] [--uninstall]
//	awaken-lua version
//
// Exit codes: 0 success, 1 the work failed (a test, a check, a plugin
// that does not load, a run that ended in error), 2 bad usage or
// configuration, 3 a run waiting for decisions.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// Exit codes (the README's "Exit codes").
const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	exitWaiting = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// env is what a command gets: its arguments and streams.
type env struct {
	ctx    context.Context
	config string
	args   []string
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
}

type command struct {
	name, summary string
	run           func(e *env) int
	// args names the positional arguments, for usage lines; more is text
	// help COMMAND prints after the flags.
	args, more string
}

const runExitCodes = `Exit codes: 0 the run ended (natural, stopped by a plugin or by its step
limit, or blocked by the gate), 1 it ended in error (error:<code>) or a
plugin did not load, 2 bad usage or configuration (a flag, awaken.toml, no
model), 3 it waits for decisions on suspended calls (answer with --thread
ID --approve all|none).`

func commands() []command {
	return []command{
		{"init", "make a project: awaken.toml, an example plugin and its test, a scenario", cmdInit, "[DIR]", ""},
		{"run", "run an agent and print its trace", cmdRun, "[PROMPT]", runExitCodes},
		{"test", "run Lua plugin tests (*_test.lua)", cmdTest, "[PATH...]", ""},
		{"check", "load everything and report every problem", cmdCheck, "", ""},
		{"eval", "gate one tool call and print the decision (exit 0 allow, 1 otherwise)", cmdEval, "TOOL [ARGS-JSON]", ""},
		{"dev", "watch, reload and re-run the tests on every save", cmdDev, "", ""},
		{"serve", "serve the sidecar HTTP API (and the Claude Code hooks)", cmdServe, "", ""},
		{"replay", "replay the journal's runs through the current plugins and report the flips", cmdReplay, "[PATH...]", replayMore},
		{"journal", "verify the journal, or export a recorded run as a Lua test", cmdJournal, "verify|export ...", journalMore},
		{"publish", "publish the plugin directory as the bundle every PostgreSQL replica loads", cmdPublish, "[DIR]", ""},
		{"migrate", "create or update the PostgreSQL schema of [store] kind = \"postgres\"", cmdMigrate, "", ""},
		{"hook", "a coding agent's command hook: an event on stdin, the decision on stdout", cmdHook, "< EVENT.json", ""},
		{"install", "add awaken-lua's hooks to a coding agent's settings (claude-code, codex, copilot, cursor, gemini)", cmdInstall, "AGENT", installMore},
		{"version", "print the version", cmdVersion, "", ""},
	}
}

// readsNoConfig are the commands that read no awaken.toml: init writes a
// project's own, and install writes an agent's settings whose hook finds
// awaken.toml where the agent runs it. They refuse --config rather than
// drop it.
var readsNoConfig = map[string]string{
	"init":    "init writes a new project, with an awaken.toml of its own",
	"install": `install writes the agent's settings; the hook reads ./awaken.toml where the agent runs it, or give it one with --command "awaken-lua hook --config PATH"`,
}

func lookup(name string) (command, bool) {
	for _, c := range commands() {
		if c.name == name {
			return c, true
		}
	}
	return command{}, false
}

// cli runs one command line and returns the exit code; only main exits.
func cli(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr}
	global := flag.NewFlagSet("awaken-lua", flag.ContinueOnError)
	global.SetOutput(stderr)
	global.StringVar(&e.config, "config", "", "the configuration file (default ./awaken.toml)")
	showVersion := global.Bool("version", false, "print the version")
	global.Usage = func() {}
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout)
			return exitOK
		}
		usage(stderr)
		return exitUsage
	}
	if *showVersion {
		return cmdVersion(e)
	}
	rest := global.Args()
	if len(rest) == 0 {
		usage(stderr)
		return exitUsage
	}
	if rest[0] == "help" {
		if len(rest) == 1 {
			usage(stdout)
			return exitOK
		}
		return help(e, rest[1])
	}
	c, ok := lookup(rest[0])
	if !ok {
		fmt.Fprintf(stderr, "awaken-lua: unknown command %q%s\n", rest[0], errs.DidYouMean(rest[0], names()))
		usage(stderr)
		return exitUsage
	}
	for _, a := range rest[1:] {
		if a == "--" {
			break
		}
		if a == "-h" || a == "-help" || a == "--help" {
			return help(e, c.name)
		}
	}
	if why, ok := readsNoConfig[c.name]; ok && (e.config != "" || givesConfig(rest[1:])) {
		fmt.Fprintf(stderr, "awaken-lua %s: --config: %s reads no awaken.toml (%s); leave --config out\n", c.name, c.name, why)
		return exitUsage
	}
	e.args = rest[1:]
	return c.run(e)
}

// givesConfig reports whether a command's arguments carry --config.
func givesConfig(args []string) bool {
	for _, a := range args {
		if a == "--" {
			return false
		}
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && name == "config" {
			return true
		}
	}
	return false
}

// help prints a command's usage, flags and notes to stdout.
func help(e *env, name string) int {
	c, ok := lookup(name)
	if !ok {
		fmt.Fprintf(e.stderr, "awaken-lua help: unknown command %q%s\n", name, errs.DidYouMean(name, names()))
		return exitUsage
	}
	h := *e
	h.stderr, h.args = e.stdout, []string{"-h"}
	c.run(&h) // its flag set prints the usage and stops at -h
	return exitOK
}

func names() []string {
	var out []string
	for _, c := range commands() {
		out = append(out, c.name)
	}
	return out
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "usage: awaken-lua [--config FILE] COMMAND [ARGS]")
	fmt.Fprintln(w, "       awaken-lua help COMMAND | --version")
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'awaken-lua help COMMAND' for a command's arguments and flags.")
}

// flags makes a command's flag set; --config is accepted after the command
// name too.
func (e *env) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("awaken-lua "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
	c, _ := lookup(name)
	fs.Usage = func() {
		w := fs.Output()
		n := 0
		fs.VisitAll(func(*flag.Flag) { n++ })
		if n == 0 {
			fmt.Fprintf(w, "usage: awaken-lua %s %s\n\n%s\n", name, c.args, c.summary)
		} else {
			fmt.Fprintf(w, "usage: awaken-lua %s [flags] %s\n\n%s\n\nflags:\n", name, c.args, c.summary)
			fs.PrintDefaults()
		}
		if c.more != "" {
			fmt.Fprintf(w, "\n%s\n", c.more)
		}
	}
	if _, ok := readsNoConfig[name]; ok {
		return fs
	}
	fs.StringVar(&e.config, "config", e.config, "the configuration file (default ./awaken.toml)")
	return fs
}

// parse parses flags that may be mixed with positional arguments.
func parse(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		if args[0] == "--" {
			return append(pos, args[1:]...), nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// fail prints an error, one problem per line with its position first, and
// returns the exit code its kind calls for.
func (e *env) fail(err error, code int) int {
	var list errs.List
	list.Add(err)
	if len(list) == 0 {
		return code
	}
	for _, p := range list {
		fmt.Fprintln(e.stderr, p.Error())
	}
	return code
}

// configCode is the exit code for an error that stopped the start: 2 for
// configuration (awaken.toml, flags), 1 for plugins that failed to load,
// whose code is wrong as a failing test's is (the README's "Exit codes").
func configCode(err error) int {
	var list errs.List
	list.Add(err)
	for _, p := range list {
		if p.Code == errs.ConfigInvalid {
			return exitUsage
		}
	}
	return exitFailed
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

// logFlags adds -v and --log-level to a command; the function it returns
// makes the logger they ask for (plugin logs, print and runtime.log are
// info), on stderr. Without them the log is quiet: the command reports
// its own failures, once.
// verbose is the command's own -v when it has one (nil: -v is added).
func (e *env) logFlags(fs *flag.FlagSet, verbose *bool) func() (*slog.Logger, error) {
	if verbose == nil {
		verbose = fs.Bool("v", false, "verbose: plugin logs (awaken.log.*, print, runtime.log) and debug lines, as --log-level debug")
	}
	level := fs.String("log-level", "", "debug, info (plugin logs), warn or error (default: none; the command reports its own errors)")
	return func() (*slog.Logger, error) {
		lv := slog.LevelError + 4 // quiet: what fails is reported by the command itself
		if *level != "" {
			if err := lv.UnmarshalText([]byte(*level)); err != nil {
				return nil, fmt.Errorf("--log-level is debug, info, warn or error, not %q", *level)
			}
		}
		if *verbose {
			lv = slog.LevelDebug
		}
		return slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: lv})), nil
	}
}

// noArgs refuses the positional arguments of a command that takes none:
// `dev myproject` would otherwise work on the current directory. does says
// what the command does with ./awaken.toml; a directory argument gets the
// --config that names its project.
func (e *env) noArgs(name, does string, args []string) bool {
	if len(args) == 0 {
		return true
	}
	cfg := "PATH"
	if fi, err := os.Stat(args[0]); err == nil && fi.IsDir() {
		cfg = filepath.Join(args[0], "awaken.toml")
	}
	fmt.Fprintf(e.stderr, "awaken-lua %s: unexpected argument %q; %s takes no arguments: it %s the project of ./awaken.toml, or give one with --config %s\n",
		name, args[0], name, does, cfg)
	return false
}
