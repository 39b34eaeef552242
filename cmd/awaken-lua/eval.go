package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/value"
	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// cmdEval gates one call, as `opa eval` evaluates one query: the plugins
// of the configuration decide about TOOL with ARGS-JSON in a run of its
// own that is never saved, so thread state is read and not changed. It
// prints the decision, the deciding plugin and the reason; exit 0 when
// the call is allowed (rewritten included), 1 otherwise.
func cmdEval(e *env) int {
	fs := e.flags("eval")
	agent := fs.String("agent", "", "the agent whose plugins decide (default: the only or \"default\" agent)")
	thread := fs.String("thread", "", "read this thread's state (with [store] kind = \"file\", across invocations)")
	asJSON := fs.Bool("json", false, "print the decision as JSON")
	cwd := fs.String("cwd", "", "the agent's working directory, ctx.run.cwd, where path rules such as Read(./.env) are anchored (default: none; --cwd . for this one)")
	args, err := parse(fs, e.args)
	if err != nil {
		return exitUsage
	}
	if len(args) < 1 || len(args) > 2 {
		fmt.Fprintln(e.stderr, `usage: awaken-lua eval [--agent ID] [--thread ID] [--cwd DIR] [--json] TOOL [ARGS-JSON], such as: awaken-lua eval fs_read '{"path": ".env"}'`)
		return exitUsage
	}
	if args[0] == "" {
		// The gate would refuse the nameless call as a sidecar request
		// (bad_request, exit 1), as if a plugin had decided.
		return e.fail(errs.New(errs.ConfigInvalid, `TOOL is empty; name the tool of the call, such as: awaken-lua eval fs_read '{"path": ".env"}'`), exitUsage)
	}
	call := model.ToolCall{ID: "eval_1", Name: args[0], Args: map[string]any{}}
	if len(args) == 2 {
		var raw any
		if err := json.Unmarshal([]byte(args[1]), &raw); err != nil {
			return e.fail(errs.New(errs.ConfigInvalid, `ARGS-JSON %s is not JSON (%v); give the call's arguments as one JSON object in single quotes, such as '{"path": "src/main.go"}'`,
				args[1], err), exitUsage)
		}
		v, err := value.Normalize(raw)
		m, ok := v.(map[string]any)
		if err != nil || !ok {
			return e.fail(errs.New(errs.ConfigInvalid, `ARGS-JSON %s is not a JSON object; give the call's arguments as one, such as '{"path": "src/main.go"}'`,
				args[1]), exitUsage)
		}
		call.Args = m
	}
	if *cwd != "" {
		// As an agent reports it: absolute, so a relative one names a
		// directory from here.
		abs, err := filepath.Abs(*cwd)
		if err != nil {
			return e.fail(errs.New(errs.ConfigInvalid, "--cwd %s: %v; give the agent's working directory as a path", *cwd, err), exitUsage)
		}
		*cwd = abs
	}
	cleanup, err := e.useDefault("eval")
	if err != nil {
		fmt.Fprintf(e.stderr, "awaken-lua eval: %v\n", err)
		return exitFailed
	}
	defer cleanup()
	h, err := host.Open(e.ctx, host.Options{ConfigPath: e.config, Candidate: true})
	if err != nil {
		return e.fail(err, configCode(err))
	}
	defer h.Close()
	g := h.Acquire()
	defer g.Release()
	d, err := evalCall(e, g.Runtime, run.StartOptions{Agent: *agent, ThreadID: *thread, Cwd: *cwd}, call)
	if err != nil {
		return e.fail(err, configCode(err))
	}
	if *asJSON {
		fmt.Fprintf(e.stdout, "%s\n", jsonText(d, ""))
	} else {
		line := d.Decision.String()
		if d.Decision == gate.Allow && d.Plugin != "" {
			line = gate.Rewrite.String()
		}
		if d.Plugin != "" {
			line += " by " + d.Plugin
		}
		reason := d.Reason
		if reason == "" && d.Result != nil {
			reason = run.ResultText(*d.Result)
		}
		if reason != "" {
			line += ": " + reason
		}
		fmt.Fprintln(e.stdout, line)
		if d.Decision == gate.Allow && d.Plugin != "" {
			fmt.Fprintf(e.stdout, "  args: %s\n", jsonText(d.Args, ""))
		}
	}
	if d.Decision == gate.Allow {
		return exitOK
	}
	return exitFailed
}

// evalCall runs one step up to the gate: the call is the model's answer,
// offered as a tool of that step. The session is dropped, never saved.
func evalCall(e *env, rt *run.Runtime, opts run.StartOptions, call model.ToolCall) (run.Decision, error) {
	opts.Events = event.Discard{}
	s, o, err := rt.Start(e.ctx, opts)
	if err != nil {
		return run.Decision{}, err
	}
	if a, ok := rt.Agent(s.AgentID()); ok && len(a.Tools) > 0 {
		warnUnknownTool(e, s.AgentID(), s.ToolNames(), call.Name)
	}
	steps := []func() (run.Outcome, error){
		func() (run.Outcome, error) { return s.StepStart(e.ctx) },
		func() (run.Outcome, error) {
			_, o, err := s.BeforeInference(e.ctx, model.Request{Tools: []model.ToolSpec{{Name: call.Name}}})
			return o, err
		},
		func() (run.Outcome, error) {
			return s.AfterInference(e.ctx, model.Response{ToolCalls: []model.ToolCall{call}})
		},
	}
	for _, step := range steps {
		if o.Termination != "" {
			return run.Decision{}, errs.New(errs.HookFailed, "the run ended before the gate (%s): a plugin stopped it", o.Termination)
		}
		if o, err = step(); err != nil {
			return run.Decision{}, err
		}
	}
	d, _, err := s.ToolGate(e.ctx, call)
	return d, err
}

// warnUnknownTool says on stderr when name is not one of the agent's tools:
// the plugins decide by name all the same (a rule may be written for a tool
// the agent does not have yet, or for a coding agent's tool such as Bash),
// so the decision and the exit code stand, but a misspelt name would
// otherwise pass as allowed. The caller asks only for an agent with
// built-in tools configured: one without gets its tools from its host (a
// sidecar's client, a hook), which eval cannot see.
func warnUnknownTool(e *env, agent string, tools []string, name string) {
	if slices.Contains(tools, name) {
		return
	}
	fmt.Fprintf(e.stderr, "warning: agent %q has no tool %q%s (its tools: %s); the plugins decided the call all the same, but a run of this agent never makes it\n",
		agent, name, errs.DidYouMean(name, tools), strings.Join(tools, ", "))
}
