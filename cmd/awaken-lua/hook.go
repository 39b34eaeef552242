package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/awaken-lua/awaken-lua/config"
	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/server"
	"github.com/awaken-lua/awaken-lua/server/hooks"
	"github.com/awaken-lua/awaken-lua/store/filestore"
)

// Defaults of the command hook.
const (
	defaultHookURL = "http://127.0.0.1:7878"
	// Under the 30 s the installer gives the hook in Claude Code's
	// settings, so the shim answers (and fails closed) before Claude Code
	// gives up on it and fails open.
	defaultHookTimeout = 20 * time.Second
	maxHookEvent       = 4 << 20
)

// hookProtocols are the agents whose hook events `hook` forwards, with the
// events on which a tool's permission is decided (those fail closed).
var hookProtocols = map[string]map[string]bool{
	"claude-code": {"PreToolUse": true, "PermissionRequest": true},
	"codex":       {"PreToolUse": true, "PermissionRequest": true},
	"gemini":      {"BeforeTool": true},
	"copilot":     {"preToolUse": true, "PreToolUse": true}, // camelCase and VS Code compatible formats
	"cursor":      {"preToolUse": true, "beforeShellExecution": true, "beforeMCPExecution": true, "beforeReadFile": true},
}

// cmdHook is a coding agent's command hook: one event on stdin, the
// sidecar's reply on stdout. When no reply comes, a tool-permission event
// fails closed (denied in the way that agent reads a deny) and the others
// fail open (exit 0, no output), unless --fail says otherwise.
//
// A hook command that is itself wrong (a bad flag, a typo in the settings
// the agent runs it from) is no reason to block a prompt or keep a Stop
// going, which is what exit 2 means on those events: the event is still
// read, a tool-permission event is denied, and any other goes on with exit
// 1, which the agent shows as a hook error.
func cmdHook(e *env) int {
	fs := e.flags("hook")
	agent := fs.String("agent", "claude-code", "the coding agent whose hook protocol the event speaks: claude-code, codex, copilot, cursor or gemini")
	addr := fs.String("url", "", "the sidecar (default $AWAKEN_URL, else http:// and [server] addr of awaken.toml when there is one, else "+defaultHookURL+")")
	timeout := fs.Duration("timeout", defaultHookTimeout, "how long to wait for the decision")
	fail := fs.String("fail", "", "closed or open: the answer when no decision comes (default: closed for tool-permission events, open for the rest)")
	local := fs.Bool("local", false, "decide in-process from awaken.toml and its plugins, with the file store, instead of asking a sidecar")
	as := fs.String("as", "", "the awaken-lua agent the event runs as (default: [server] hook_agent)")
	event := fs.String("event", "", "the event, for agents whose input does not name it (copilot: preToolUse, postToolUse, ...)")
	suspend := fs.String("suspend", "", "claude-code: how a call a plugin suspends is answered: ask (default), or defer (headless claude -p; decide it with POST /v1/runs/{id}/resume)")
	// The flag package's own report goes to the usage error below: on a
	// deny the agent shows stderr to the model, which needs one line, not
	// the whole usage.
	fs.SetOutput(io.Discard)
	args, err := parse(fs, e.args)
	if errors.Is(err, flag.ErrHelp) {
		fs.SetOutput(e.stderr)
		fs.Usage()
		return exitUsage
	}
	misuse := hookMisuse(err, args, *agent, *suspend, *fail, *event, *local)
	if err != nil {
		// Parsing stopped at the bad flag: --agent and --event after it
		// were not read, and the defaults could take a Gemini or Cursor
		// tool event for a Claude Code event that goes on. Read them
		// leniently (hookMisused denies any agent's tool event besides).
		// The last value wins, as it would have had parsing gone on.
		if a := lenientFlag(e.args, "agent"); hookProtocols[a] != nil || a == "gemini-cli" {
			*agent = a
		}
		if v := lenientFlag(e.args, "event"); v != "" {
			*event = v
		}
	}
	if *agent == "gemini-cli" {
		*agent = "gemini" // the CLI's own name
	}
	var body []byte
	if unread := hooks.Unread("/v1/hooks/" + *agent); unread != nil {
		// A member the adapter never reads (Cursor's file content) is
		// left out here, so that a large file is no event over the limit.
		body, err = hooks.ReadWithout(e.stdin, maxHookEvent+1, hooks.MaxUnread, unread...)
	} else {
		body, err = io.ReadAll(io.LimitReader(e.stdin, maxHookEvent+1))
	}
	var name struct {
		Event string `json:"hook_event_name"`
	}
	_ = json.Unmarshal(body, &name) // a bad event is the sidecar's to answer
	// The input's own name wins, as the sidecar has it.
	if name.Event == "" {
		name.Event = *event
	}
	if name.Event == "" {
		// Cut at the size limit, or otherwise broken: the name can
		// still be read where it comes before the break.
		name.Event = hooks.SniffEvent(body)
	}
	if misuse != nil {
		return hookMisused(e, *agent, name.Event, misuse)
	}
	if *event == "" && *agent == "copilot" {
		// Copilot CLI skips a hook that fails, so the deny goes on
		// stdout: on an event other than preToolUse it is not read.
		return hookFailed(e, *agent, name.Event, true, errors.New("--agent copilot needs --event NAME (Copilot's input does not name its event); fix the hook command (awaken-lua install copilot writes it)"))
	}
	closed := *fail == "closed" || (*fail == "" && hookProtocols[*agent][name.Event])
	if err == nil && len(body) > maxHookEvent {
		err = fmt.Errorf("the event is over %d bytes", maxHookEvent)
	}
	if err != nil {
		return hookFailed(e, *agent, name.Event, closed, err)
	}
	ctx, cancel := context.WithTimeout(e.ctx, *timeout)
	defer cancel()
	var reply []byte
	if *local {
		reply, err = hookLocal(ctx, e, *agent, *as, *event, body)
	} else {
		var target hookTarget
		if target, err = findHookTarget(e, *addr); err == nil {
			reply, err = hookRemote(ctx, target, *agent, *as, *event, *suspend, body)
		}
	}
	if err != nil {
		return hookFailed(e, *agent, name.Event, closed, err)
	}
	e.stdout.Write(reply)
	return exitOK
}

// lenientFlag is the last value given for the flag name in args (-name
// v, --name v, -name=v, --name=v) before a "--", or "". A value that
// looks like a flag is none.
func lenientFlag(args []string, name string) string {
	v := ""
	for i, a := range args {
		if a == "--" {
			break
		}
		if !strings.HasPrefix(a, "-") {
			continue
		}
		a = strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		if rest, ok := strings.CutPrefix(a, name+"="); ok {
			v = rest
		} else if a == name && i+1 < len(args) && !strings.HasPrefix(args[i+1], "-") {
			v = args[i+1]
		}
	}
	return v
}

// hookMisuse is what is wrong with the hook's own command line, or nil.
func hookMisuse(parseErr error, args []string, agent, suspend, fail, event string, local bool) error {
	if parseErr != nil {
		return parseErr
	}
	if agent == "gemini-cli" {
		agent = "gemini"
	}
	switch {
	case len(args) > 0:
		return fmt.Errorf("unexpected argument %q (the event comes on stdin)", args[0])
	case hookProtocols[agent] == nil:
		return fmt.Errorf("--agent %q is not a supported agent; supported: claude-code, codex, copilot, cursor, gemini", agent)
	case suspend != "" && suspend != "ask" && suspend != "defer":
		return fmt.Errorf("--suspend is ask or defer, not %q", suspend)
	case suspend != "" && agent != "claude-code":
		return errors.New("--suspend is for --agent claude-code (only Claude Code can defer a call)")
	case suspend == "defer" && local:
		return errors.New("--suspend defer needs a sidecar (awaken-lua serve): a deferred call waits there for its decision, which a program gives over its API, and --local serves no API")
	case fail != "" && fail != "closed" && fail != "open":
		return fmt.Errorf("--fail is closed or open, not %q", fail)
	}
	return nil
}

// hookMisused answers an event whose hook command is wrong: an event on
// which any agent decides a tool's permission is denied (the command line
// that names the agent is the one in doubt), anything else goes on with
// exit 1, a non-blocking error the agent shows. An event that cannot be
// told keeps exit 2.
func hookMisused(e *env, agent, event string, misuse error) int {
	err := fmt.Errorf("the hook command is wrong: %w; fix it in the agent's hook settings (awaken-lua help hook)", misuse)
	if event == "" && (agent == "copilot" || agent == "cursor") {
		// These agents read a deny only on stdout (a failed hook is
		// skipped), and ignore it on events that decide nothing.
		return hookFailed(e, agent, event, true, err)
	}
	if event == "" {
		fmt.Fprintf(e.stderr, "awaken-lua hook: %v\n", err)
		return exitUsage
	}
	closed := false
	for _, events := range hookProtocols {
		closed = closed || events[event]
	}
	if closed {
		return hookFailed(e, agent, event, true, err)
	}
	fmt.Fprintf(e.stderr, "awaken-lua hook: %v; the event goes on without a decision\n", err)
	return exitFailed
}

// hookFailed answers when no decision came. Claude Code, Codex and Gemini
// CLI block a call on exit 2 with the reason on stderr, but Claude Code
// (and Codex, which speaks its protocol) do not honour exit 2 on a
// PermissionRequest: that deny goes in the decision object. Cursor and
// Copilot CLI read their decision from the JSON on stdout, so they get a
// deny there.
func hookFailed(e *env, agent, event string, closed bool, err error) int {
	if !closed {
		fmt.Fprintf(e.stderr, "awaken-lua hook: no decision (%v); the event goes on without one\n", err)
		return exitOK
	}
	msg := "awaken-lua could not decide on this tool call, so it is denied (fail closed): " + err.Error()
	var deny any
	switch {
	case agent == "cursor":
		deny = map[string]string{"permission": "deny", "user_message": msg, "agent_message": msg}
	case agent == "copilot":
		d := map[string]any{"permissionDecision": "deny", "permissionDecisionReason": msg}
		if event != "preToolUse" { // also where the VS Code compatible format reads it
			d["hookSpecificOutput"] = map[string]string{"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": msg}
		}
		deny = d
	case event == "PermissionRequest" && (agent == "claude-code" || agent == "codex"):
		deny = map[string]any{"hookSpecificOutput": map[string]any{
			"hookEventName": "PermissionRequest",
			"decision":      map[string]string{"behavior": "deny", "message": msg},
		}}
	default:
		fmt.Fprintln(e.stderr, msg)
		return exitUsage // 2: the agent blocks the call and shows the reason
	}
	b, _ := json.Marshal(deny)
	fmt.Fprintf(e.stdout, "%s\n", b)
	fmt.Fprintln(e.stderr, msg)
	return exitOK
}

func hookPath(agent, as, event, suspend string) string {
	q := url.Values{}
	if suspend != "" {
		q.Set("suspend", suspend)
	}
	if as != "" {
		q.Set("agent", as)
	}
	if event != "" {
		q.Set("event", event)
	}
	p := "/v1/hooks/" + agent
	if len(q) > 0 {
		p += "?" + q.Encode()
	}
	return p
}

// hookTarget is the sidecar a hook event goes to.
type hookTarget struct {
	url, token string
}

// findHookTarget finds the sidecar: --url, else $AWAKEN_URL, else the
// [server] addr of the configuration (--config, or ./awaken.toml when there
// is one: the agent runs its hooks in the project), else the default; the
// token comes from the variable [server] token_env names ($AWAKEN_TOKEN by
// default). A sidecar moved to another port in awaken.toml is thus found
// without settings of its own, rather than every tool call being denied.
func findHookTarget(e *env, flagURL string) (hookTarget, error) {
	t := hookTarget{url: flagURL}
	if t.url == "" {
		t.url = os.Getenv("AWAKEN_URL")
	}
	tokenEnv := "AWAKEN_TOKEN"
	path := e.config
	if path == "" {
		if config.Here(host.DefaultConfig) { // a dangling link too: Load says so
			path = host.DefaultConfig
		}
	}
	if path != "" {
		cfg, err := config.Load(path)
		switch {
		case err == nil:
			if t.url == "" {
				t.url = "http://" + cfg.Server.Addr // ":7878" and "0.0.0.0:7878" dial this host
			}
			tokenEnv = cfg.Server.TokenEnv
		case t.url == "":
			// Guessing the default address could post the event to another
			// sidecar than the one this project configures.
			return t, fmt.Errorf("the configuration that names the sidecar: %w", err)
		}
	}
	if t.url == "" {
		t.url = defaultHookURL
	}
	if tokenEnv != "" {
		t.token = strings.TrimSpace(os.Getenv(tokenEnv))
	}
	return t, nil
}

// hookRemote posts the event to a sidecar.
func hookRemote(ctx context.Context, t hookTarget, agent, as, event, suspend string, body []byte) ([]byte, error) {
	addr := t.url
	req, err := http.NewRequestWithContext(ctx, "POST", strings.TrimSuffix(addr, "/")+hookPath(agent, as, event, suspend), bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("the sidecar address %q: %w", addr, err)
	}
	req.Header.Set("Content-Type", "application/json")
	if t.token != "" {
		req.Header.Set("Authorization", "Bearer "+t.token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return nil, fmt.Errorf("the sidecar at %s did not answer in time", addr)
		}
		return nil, fmt.Errorf("the sidecar at %s cannot be reached: %w (start it with awaken-lua serve, or name it with --url or $AWAKEN_URL, or pass --local)", addr, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxHookEvent))
	if err != nil {
		return nil, fmt.Errorf("reading the sidecar's reply: %w", err)
	}
	return checkHookReply(resp.StatusCode, out)
}

func checkHookReply(status int, out []byte) ([]byte, error) {
	if status != http.StatusOK {
		msg := strings.TrimSpace(string(out))
		if len(msg) > 300 {
			msg = msg[:300] + "..."
		}
		return nil, fmt.Errorf("the sidecar answered %d: %s", status, msg)
	}
	var v map[string]any
	if err := json.Unmarshal(out, &v); err != nil {
		return nil, fmt.Errorf("the sidecar's reply is not a JSON object: %w", err)
	}
	return out, nil
}

// maxLocalTries bounds how often hookLocal runs one event whose save lost
// a race (another process saved the session's thread or run meanwhile).
const maxLocalTries = 4

// hookLocal decides in this process: the configuration and plugins of
// awaken.toml, with the file store, so thread state carries from one event
// to the next; so do the session's runs in progress and what the adapter
// learned of the session (hookLocalOnce), though each event runs in a
// fresh process.
//
// A coding agent runs the hooks of parallel tool calls at once, each in a
// process of its own, and two events that read the session's thread and
// save it would make one of them a revision_conflict, which fails a tool
// call closed. So the event holds the session's event lock in the store
// from its first read to its last save (the plugins load before, in
// parallel), and an event whose save still lost a race (to a sidecar or
// `run --thread` on the same store) runs again, on a fresh read of the
// store, up to maxLocalTries times; both within ctx, the hook's --timeout.
//
// The event runs on a goroutine of its own, and hookLocal answers when ctx
// ends even if the event has not: a wait that cannot see ctx (a lock of
// the store a hung process holds, a save the server detaches from the
// request's context) must not hold the answer past --timeout, after which
// the agent kills the hook and, for most agents, lets the call run. The
// process exits after the answer, which ends the event as a crash would.
func hookLocal(ctx context.Context, e *env, agent, as, event string, body []byte) ([]byte, error) {
	type result struct {
		reply []byte
		err   error
	}
	done := make(chan result, 1)
	go func() {
		reply, err := hookLocalEvent(ctx, e, agent, as, event, body)
		done <- result{reply, err}
	}()
	select {
	case r := <-done:
		return r.reply, r.err
	case <-ctx.Done():
		return nil, errs.Wrap(errs.HookTimeout, context.Cause(ctx), "hook --local did not decide within --timeout; "+
			"if that repeats, look for a hung awaken-lua process on the store, or give the hook a longer --timeout")
	}
}

// hookLocalEvent is hookLocal's work, which may outlast ctx.
func hookLocalEvent(ctx context.Context, e *env, agent, as, event string, body []byte) ([]byte, error) {
	path := e.config
	if path == "" {
		if !config.Here(host.DefaultConfig) { // a dangling link is here: Load says what is wrong
			// Without a configuration no plugin would decide, and every
			// call would go through: the agent may run the hook in a
			// directory below the project's.
			wd, _ := os.Getwd()
			return nil, errs.New(errs.ConfigInvalid, "hook --local found no %s in %s: give the project's with --config PATH (the agent may run hooks in a subdirectory), or make one with awaken-lua init", host.DefaultConfig, wd)
		}
		path = host.DefaultConfig // as host.Open finds it
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	store, err := filestore.Open(cfg.Path(cfg.Store.Path), log)
	if err != nil {
		return nil, err
	}
	h, err := host.Open(ctx, host.Options{ConfigPath: path, Log: log, Store: store})
	if err != nil {
		return nil, err
	}
	defer h.Close()
	session := hookSessionKey(body)
	unlock, err := store.LockEvent(ctx, session)
	if err != nil {
		return nil, err
	}
	defer unlock()
	return retryLost(ctx, cfg.Path(cfg.Store.Path), func() localTry {
		return hookLocalOnce(ctx, h, cfg, log, localSession{store, session}, agent, as, event, body)
	})
}

// retryLost runs an event (once) again while its save lost a race, at
// most maxLocalTries times and while ctx lasts. An event that lost every
// time is an error (the hook fails it closed) that says what to do.
func retryLost(ctx context.Context, store string, once func() localTry) ([]byte, error) {
	var lost error
	for range maxLocalTries {
		t := once()
		if lost = t.lost; lost == nil {
			return t.reply, t.err
		}
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errs.Wrap(errs.RevisionConflict, lost, "the event lost the race for its session's records to another process "+
		"(tried up to %d times within --timeout); run the call again, and if this repeats, keep other processes "+
		"(a sidecar, awaken-lua run --thread) off the store %s while hook --local uses it", maxLocalTries, store)
}

// localTry is what one run of a hook --local event gave: the reply or
// err, as checkHookReply has them, and lost, the revision_conflict the
// event failed with when it did (a save on a base another process changed).
type localTry struct {
	reply     []byte
	lost, err error
}

// localSession is the session a hook --local event belongs to, and the
// store that keeps, between its events, the runs in progress it left.
type localSession struct {
	store *filestore.Store
	key   string
}

// hookLocalOnce runs the event on a server of its own, which reads the
// session from the store afresh: it takes up the runs in progress the
// session's last event left and what the hook adapter had learned of the
// session, and records those this one leaves.
func hookLocalOnce(ctx context.Context, h *host.Host, cfg *config.Config, log *slog.Logger, ls localSession, agent, as, event string, body []byte) localTry {
	var mu sync.Mutex
	var t localTry
	srv := server.New(h, server.Options{HookAgent: cfg.Server.HookAgent, Log: log, HookFailed: func(err error) {
		if errs.CodeOf(err) == errs.RevisionConflict {
			mu.Lock()
			t.lost = err
			mu.Unlock()
		}
	}})
	left, err := ls.store.Session(ctx, ls.key)
	if err != nil {
		// Not knowing the session's run costs a new run, not a decision.
		log.Warn("cannot read which runs the session's last event left; this event starts a new one",
			"session", ls.key, "error", err.Error())
	}
	for thread, run := range left.Runs {
		srv.Hold(thread, run)
	}
	if len(left.Facts) > 0 {
		var facts map[string]hooks.SessionFacts
		if err := json.Unmarshal(left.Facts, &facts); err != nil {
			// Without them the event decides as a sidecar that forgot the
			// session would.
			log.Warn("cannot read what the session's last event learned of it; this event goes on without",
				"session", ls.key, "error", err.Error())
		}
		srv.RestoreHookFacts(facts)
	}
	rec := httptest.NewRecorder()
	req := httptest.NewRequestWithContext(ctx, "POST", "http://127.0.0.1"+hookPath(agent, as, event, ""), bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	srv.ServeHTTP(rec, req)
	next := filestore.LocalSession{Runs: srv.Holds()}
	if facts := srv.HookFacts(); len(facts) > 0 {
		var err error
		if next.Facts, err = json.Marshal(facts); err != nil {
			log.Warn("cannot record what the event learned of the session; its next event goes on without",
				"session", ls.key, "error", err.Error())
		}
	}
	srv.Close()
	mu.Lock()
	defer mu.Unlock()
	t.reply, t.err = checkHookReply(rec.Code, rec.Body.Bytes())
	if t.lost == nil {
		if err := ls.store.PutSession(context.WithoutCancel(ctx), ls.key, next); err != nil {
			log.Warn("cannot record the runs the event left; the session's next event starts a new one",
				"session", ls.key, "error", err.Error())
		}
	}
	return t
}

// hookSessionKey is the session an event belongs to, as the agents name
// it (session_id; Copilot CLI's sessionId, else its cwd; Cursor's
// conversation_id), which keys the event lock: events of one session wait
// for each other, other sessions' do not. An event that names none takes
// the lock of "" (they all wait for each other).
func hookSessionKey(body []byte) string {
	var in struct {
		SessionID      string `json:"session_id"`
		SessionIDCamel string `json:"sessionId"`
		Conversation   string `json:"conversation_id"`
		Cwd            string `json:"cwd"`
	}
	_ = json.Unmarshal(body, &in) // a body that does not decode is the adapter's to answer
	for _, k := range []string{in.SessionID, in.SessionIDCamel, in.Conversation, in.Cwd} {
		if k != "" {
			return k
		}
	}
	return ""
}
