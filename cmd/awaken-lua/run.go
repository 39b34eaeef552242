package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

func cmdRun(e *env) int {
	fs := e.flags("run")
	agent := fs.String("agent", "", "the agent to run (default: the only or \"default\" agent)")
	thread := fs.String("thread", "", "reuse a thread's state (kept across invocations with [store] kind = \"file\")")
	modelFlag := fs.String("model", "", "override [model]: scripted:FILE, openai:MODEL or anthropic:MODEL")
	asJSON := fs.Bool("json", false, "print one JSON event per line instead of the trace")
	approve := fs.String("approve", "", "answer suspended calls without asking: all or none")
	width := fs.Int("width", 0, "wrap the final answer at this many columns (default: $COLUMNS, else 100)")
	logger := e.logFlags(fs, nil)
	args, err := parse(fs, e.args)
	if err != nil {
		return exitUsage
	}
	log, err := logger()
	if err != nil {
		fmt.Fprintf(e.stderr, "awaken-lua run: %v\n", err)
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
	retry := func(attempt int, reason string, wait time.Duration) {
		fmt.Fprintf(e.stderr, "  the model failed (%s); retry %d in %s\n", reason, attempt, wait.Round(time.Millisecond))
	}
	h, err := host.Open(e.ctx, host.Options{ConfigPath: e.config, Model: *modelFlag, Log: log, ModelRetry: retry,
		Run: true, Agent: *agent})
	if err != nil {
		return e.fail(err, configCode(err))
	}
	defer func() {
		// run's log is quiet unless asked: the writer's own report of
		// records it could not write would reach nobody.
		err := h.Close()
		if n := h.JournalLost(); n > 0 {
			why := plural(int(n), "record", "records") + " lost"
			if err != nil {
				why = err.Error() // with the count
			}
			fmt.Fprintf(e.stderr, "warning: the journal did not record this run whole: %s; "+
				"make room on the journal's disk or fix the permissions of [journal] path, or replay and export will not see the run as it was\n", why)
		}
	}()
	g := h.Acquire()
	defer g.Release()
	m, err := g.Model()
	if err != nil {
		return e.fail(err, exitUsage)
	}
	if *width <= 0 {
		*width, _ = strconv.Atoi(os.Getenv("COLUMNS"))
	}
	var sink event.Sink = &trace{w: e.stdout, color: colorOK(e.stdout), width: *width}
	if *asJSON {
		sink = newJSONLines(e.stdout)
	}
	if *thread != "" {
		if _, ok, err := h.Store().Thread(e.ctx, *thread); err == nil && !ok {
			fmt.Fprintf(e.stderr, "awaken-lua run: thread %q is new; this run starts it\n", *thread)
		}
	}
	m = slowModel{Model: m, w: e.stderr, after: slowAfter}
	interactive := *approve == "" && !*asJSON && isTerminal(e.stdin) && isTerminal(e.stdout)
	var res run.Result
	if waiting := waitingRun(e, h, *thread); waiting != "" && (interactive || *approve != "") {
		// The thread waits for decisions from an earlier invocation: answer
		// them and carry on rather than start another run.
		s, err := g.Runtime.Restore(e.ctx, waiting, nil)
		if err != nil {
			return e.fail(err, exitFailed)
		}
		// The run loop asks the model once per step, so a run waiting in
		// step N had N answers, from a model this process no longer has.
		resumed, err := g.ResumeModel(s.Step())
		if err != nil {
			return e.fail(err, exitUsage)
		}
		m = slowModel{Model: resumed, w: e.stderr, after: slowAfter}
		res = run.Result{RunID: waiting, ThreadID: *thread, Status: run.Waiting, Suspended: s.Suspended(), Steps: s.Step(), Session: s}
	} else {
		res, err = g.Runtime.Run(e.ctx, run.Request{Agent: *agent, ThreadID: *thread, Prompt: strings.Join(args, " "),
			Model: m, Events: sink})
		if err != nil {
			return e.fail(err, configCode(err))
		}
	}
	// A run that waits is traced as finished only when the command stops
	// there, not between a suspension and the answers given below.
	endTrace := func() {
		if t, ok := sink.(interface{ end() }); ok {
			t.end()
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
		if r, ok := sink.(interface{ resumed(run.Result) }); ok {
			r.resumed(res)
		}
		res, err = g.Runtime.ResumeRun(e.ctx, run.ResumeRequest{RunID: res.RunID, Decisions: ds, Model: m, Events: sink})
		if err != nil {
			endTrace()
			return e.fail(err, exitFailed)
		}
	}
	endTrace()
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
		if kind := storeKind(e); kind == "memory" {
			fmt.Fprintln(e.stderr, `the memory store forgets this run when the command exits: answer now with --approve all|none, or set [store] kind = "file" in awaken.toml to answer it later with --thread`)
		} else {
			fmt.Fprintf(e.stderr, "run again with --thread %s --approve all|none to answer them\n", res.ThreadID)
		}
		return exitWaiting
	case terminationKind(res.Termination) == run.Errored:
		if res.Err != nil {
			e.fail(res.Err, exitFailed)
		}
		return exitFailed
	}
	return exitOK
}

// storeKind is the configured store of the run's configuration.
func storeKind(e *env) string {
	cfg, err := loadConfig(e.config)
	if err != nil {
		return ""
	}
	return cfg.Store.Kind
}

// slowAfter is how long a model call runs before the trace says it waits.
const slowAfter = 3 * time.Second

// slowModel says on w when an inference takes long (a slow model, or one
// the client is retrying after 429 or 5xx), every slowAfter.
type slowModel struct {
	model.Model
	w     io.Writer
	after time.Duration
}

func (s slowModel) Infer(ctx context.Context, req model.Request) (model.Response, error) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	defer wg.Wait() // the notice is never printed after the answer
	defer close(done)
	wg.Add(1)
	go func() {
		defer wg.Done()
		start := time.Now()
		t := time.NewTicker(s.after)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(s.w, "  waiting for the model (%s; a model that answers 429 or 5xx is retried)\n", time.Since(start).Round(time.Second))
			}
		}
	}()
	return s.Model.Infer(ctx, req)
}
