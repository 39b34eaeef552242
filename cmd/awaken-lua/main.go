// Command awaken-lua runs agent plugins written in Lua: run an agent, test
// and check plugins, develop with hot reload, or serve the sidecar API.
//
//	awaken-lua [--config FILE] run [--agent ID] [--thread ID] [--model scripted:FILE|openai:MODEL] [--json] [--approve all|none] [PROMPT]
//	awaken-lua [--config FILE] test [PATH...] [-run REGEX] [-v]
//	awaken-lua [--config FILE] check
//	awaken-lua [--config FILE] dev
//	awaken-lua [--config FILE] serve [--addr HOST:PORT]
//	awaken-lua [--config FILE] hook [--agent claude-code] [--url URL] [--timeout D] [--fail closed|open] [--local] [--as AGENT]
//	awaken-lua install claude-code [--scope project|local|user] [--http] [--uninstall]
//	awaken-lua version
//
// Exit codes: 0 success, 1 the work failed (a test, a check, a run that
// ended in error), 2 bad usage or configuration, 3 a run waiting for
// decisions.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
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
}

func commands() []command {
	return []command{
		{"run", "run an agent and print its trace", cmdRun},
		{"test", "run Lua plugin tests (*_test.lua)", cmdTest},
		{"check", "load everything and report every problem", cmdCheck},
		{"dev", "watch, reload and re-run the tests on every save", cmdDev},
		{"serve", "serve the sidecar HTTP API (and the Claude Code hooks)", cmdServe},
		{"hook", "a coding agent's command hook: an event on stdin, the decision on stdout", cmdHook},
		{"install", "add awaken-lua's hooks to a coding agent's settings (claude-code)", cmdInstall},
		{"version", "print the version", cmdVersion},
	}
}

// cli runs one command line and returns the exit code; only main exits.
func cli(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr}
	global := flag.NewFlagSet("awaken-lua", flag.ContinueOnError)
	global.SetOutput(stderr)
	global.StringVar(&e.config, "config", "", "the configuration file (default ./awaken.toml)")
	global.Usage = func() { usage(stderr) }
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK
		}
		return exitUsage
	}
	rest := global.Args()
	if len(rest) == 0 {
		usage(stderr)
		return exitUsage
	}
	for _, c := range commands() {
		if c.name == rest[0] {
			e.args = rest[1:]
			return c.run(e)
		}
	}
	if rest[0] == "help" || rest[0] == "-h" {
		usage(stdout)
		return exitOK
	}
	fmt.Fprintf(stderr, "awaken-lua: unknown command %q%s\n", rest[0], errs.DidYouMean(rest[0], names()))
	usage(stderr)
	return exitUsage
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
	fmt.Fprintln(w)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Run 'awaken-lua COMMAND -h' for a command's flags.")
}

// flags makes a command's flag set; --config is accepted after the command
// name too.
func (e *env) flags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("awaken-lua "+name, flag.ContinueOnError)
	fs.SetOutput(e.stderr)
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
// configuration, 1 for plugins that failed to load.
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
