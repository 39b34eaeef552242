package main

import (
	"bufio"
	"fmt"
	"io"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/run"
)

func cmdRun(e *env) int {
	fs := e.flags("run")
	agent := fs.String("agent", "", "the agent to run (default: the only or \"default\" agent)")
	thread := fs.String("thread", "", "reuse a thread's state (kept across invocations with [store] kind = \"file\")")
	modelFlag := fs.String("model", "", "override [model]: scripted:FILE, openai:MODEL or anthropic:MODEL")
	asJSON := fs.Bool("json", false, "print one JSON event per line instead of the trace")
	approve := fs.String("approve", "", "answer suspended calls without asking: all or none")
	args, err := parse(fs, e.args)
	if err != nil {
		return exitUsage
	}
	if *approve != "" && *approve != "all" && *approve != "none" {
		fmt.Fprintf(e.stderr, "awaken-lua run: --approve is all or none, not %q\n", *approve)
		return exitUsage
	}
	cleanup, err := e.useDefault("run")
	if err != nil {
		fmt.Fprintf(e.stderr, "awaken-lua run: %v\n", err)
		return exitFailed
	}
	defer cleanup()
	h, err := host.Open(e.ctx, host.Options{ConfigPath: e.config, Model: *modelFlag})
	if err != nil {
		return e.fail(err, configCode(err))
	}
	defer h.Close()
	g := h.Acquire()
	defer g.Release()
	m, err := g.Model()
	if err != nil {
		return e.fail(err, exitUsage)
	}
	var sink event.Sink = &trace{w: e.stdout, color: colorOK(e.stdout)}
	if *asJSON {
		sink = jsonLines{w: e.stdout}
	}
	interactive := *approve == "" && !*asJSON && isTerminal(e.stdin) && isTerminal(e.stdout)
	var res run.Result
	if waiting := waitingRun(e, h, *thread); waiting != "" && (interactive || *approve != "") {
		// The thread waits for decisions from an earlier invocation: answer
		// them and carry on rather than start another run.
		s, err := g.Runtime.Restore(e.ctx, waiting, nil)
		if err != nil {
			return e.fail(err, exitFailed)
		}
		res = run.Result{RunID: waiting, ThreadID: *thread, Status: run.Waiting, Suspended: s.Suspended()}
	} else {
		res, err = g.Runtime.Run(e.ctx, run.Request{Agent: *agent, ThreadID: *thread, Prompt: strings.Join(args, " "),
			Model: m, Events: sink})
		if err != nil {
			return e.fail(err, configCode(err))
		}
	}
	in := bufio.NewReader(e.stdin)
	for res.Status == run.Waiting && (interactive || *approve != "") {
		var ds []run.ResumeDecision
		for _, t := range res.Suspended {
			action := "resume"
			if *approve == "none" || (interactive && !ask(e.stdout, in, t)) {
				action = "cancel"
			}
			ds = append(ds, run.ResumeDecision{Target: t.ID, Action: action})
		}
		res, err = g.Runtime.ResumeRun(e.ctx, run.ResumeRequest{RunID: res.RunID, Decisions: ds, Model: m, Events: sink})
		if err != nil {
			return e.fail(err, exitFailed)
		}
	}
	return finish(e, res)
}

// waitingRun names the run a thread waits on, if any.
func waitingRun(e *env, h *host.Host, thread string) string {
	if thread == "" {
		return ""
	}
	th, ok, err := h.Store().Thread(e.ctx, thread)
	if err != nil || !ok {
		return ""
	}
	return th.Waiting
}

// ask asks about one suspended call on a terminal; yes resumes it.
func ask(w io.Writer, in *bufio.Reader, t gate.Ticket) bool {
	msg := t.Message
	if msg == "" {
		msg = "run " + t.CallID + "?"
	}
	fmt.Fprintf(w, "  ? %s [y/N] ", msg)
	line, _ := in.ReadString('\n')
	line = strings.ToLower(strings.TrimSpace(line))
	return line == "y" || line == "yes"
}

func finish(e *env, res run.Result) int {
	switch {
	case res.Status == run.Waiting:
		fmt.Fprintln(e.stderr, "the run is waiting for decisions:")
		for _, t := range res.Suspended {
			fmt.Fprintf(e.stderr, "  ticket %s (call %s): %s\n", t.ID, t.CallID, t.Message)
		}
		fmt.Fprintf(e.stderr, "run again with --thread %s --approve all|none to answer them\n", res.ThreadID)
		return exitWaiting
	case strings.HasPrefix(res.Termination, "error"):
		if res.Err != nil {
			e.fail(res.Err, exitFailed)
		}
		return exitFailed
	}
	return exitOK
}
