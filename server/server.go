// Package server is the sidecar (see README.md): an HTTP+JSON driver over
// run.Session, so an agent written in any language can call the runtime at
// each phase while the runtime keeps the run's state, pins its plugin
// generation and enforces the phase order.
//
// It implements no phase itself: every phase endpoint decodes a body, calls
// one Session method under the run's mutex, checkpoints the run into the
// host's run.Store (a durable one after every change) and encodes the reply. The same Session drives
// `awaken-lua run`, so a run behaves the same in process and over HTTP.
//
// Handlers are func(w, r) error and one writeProblem turns every error into
// application/problem+json (Caddy's pattern); the HTTP boundary recovers
// panics. See README.md for the API, the status codes and the Claude Code
// adapter.
package server

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/replay"
	"github.com/awaken-lua/awaken-lua/run"
	"github.com/awaken-lua/awaken-lua/server/hooks"
)

// GenerationHeader names the plugin generation that served a reply: the
// run's pinned generation for run endpoints, the current one otherwise.
const GenerationHeader = "Awaken-Generation"

// Defaults of Options.
const (
	DefaultBodyLimit     = 1 << 20
	DefaultMaxConcurrent = 64
	DefaultIdleTimeout   = 30 * time.Minute
	DefaultDoneRetention = 5 * time.Minute
	DefaultAbandonAfter  = 24 * time.Hour
	DefaultMaxRuns       = 10000
	// HoldsPerRun: with a durable store, how many runs out of memory may
	// hold their thread per run MaxRuns allows in memory.
	HoldsPerRun = 10
)

// Options configure a Server. The zero value serves without a token (fit
// only for loopback; see CheckListen) with the defaults above.
type Options struct {
	// Token is the bearer token every request but /healthz and /readyz must
	// carry; "" accepts every request.
	Token string
	// BodyLimit bounds a request body in bytes (413 past it; default 1 MiB).
	BodyLimit int64
	// BodyTimeout bounds how long a client may take to send a body (408
	// past it; default DefaultBodyTimeout), and to take each MiB of a
	// reply (the connection is closed past it). The body is read before
	// the request takes a concurrency slot.
	BodyTimeout time.Duration
	// Addr is the address the server listens on (host:port). Requests
	// must name it, localhost or a loopback address in Host (DNS
	// rebinding); when it listens on every address (0.0.0.0, ::, which
	// needs a token) any Host is accepted. "" accepts loopback only.
	Addr string
	// MaxConcurrent bounds the API requests served at once (429 past it).
	MaxConcurrent int
	// HookAgent is the agent hook events run as when the request names
	// none (?agent=); "" is the runtime's default agent.
	HookAgent string
	// Log receives the access log (Info), failures (Error) and run events
	// (Debug); nil discards.
	Log *slog.Logger
	// IdleTimeout drops a run nobody called for this long from memory and
	// unpins its generation. Its checkpoint stays in the store, so a later
	// call restores it, on the generation current then, as after a restart.
	IdleTimeout time.Duration
	// DoneRetention keeps a finished run readable (GET) for this long,
	// holding what a read answers but not its conversation or calls
	// (run.Session.Compact); the store forgets a run when it ends, so
	// afterwards it is 404.
	DoneRetention time.Duration
	// AbandonAfter forgets, with the memory store only, a run in the middle
	// of a step that nobody called for this long: that store would
	// otherwise keep every run a client abandoned until the process exits.
	// Waiting runs are kept (someone is to decide), and durable stores are
	// never pruned. It also bounds how long a run that left memory before
	// it ended keeps its thread (see MaxRuns).
	AbandonAfter time.Duration
	// MaxRuns bounds the runs kept in memory (default DefaultMaxRuns).
	// Past it, the least recently used of a few sampled runs leaves memory
	// as an idle run does, except that with the memory store a run in the
	// middle of a step is forgotten, as after a restart. The runs the idle
	// sweep parks in the memory store, and a coding agent's hook sessions,
	// are bounded by the same number. So a client that opens sessions and
	// never ends them cannot make the sidecar hold more than about twice
	// MaxRuns runs, however fast it goes; waiting runs (someone is to
	// decide) and deferred Claude Code calls are kept whatever the count.
	// A run in progress that left memory keeps its thread (a new run there
	// is refused) until it ends, for at most AbandonAfter, and with a
	// durable store for at most HoldsPerRun times MaxRuns such runs (a
	// hold is a few hundred bytes, where the memory store's parked runs are
	// whole copies): past either, the oldest let go of their threads, as
	// after a restart. A durable store keeps the run, and its next call
	// restores it; the memory store forgets a parked one.
	MaxRuns int
	// Hooks, when set, adds per-plugin call latency to /metrics; open the
	// host with HookObserver: Hooks.Observe so it sees the calls.
	Hooks *HookMetrics
	// Shadow, when set, is the shadow generation (the host's journal tap):
	// GET /v1/shadow and /metrics report its disagreements.
	Shadow *replay.Shadow
	// Pprof serves Go's profiles under PprofPath (token, no concurrency
	// limit); off, those paths answer 404 saying how to turn them on.
	Pprof bool
	// HookFailed, when set, sees the error of every coding-agent hook
	// event that failed (the adapter has answered it, failing closed):
	// `hook --local` runs an event again whose save lost a race.
	HookFailed func(error)
}

// outRun is a run that left memory before it ended: when, the thread it
// still holds (or ""), and whether it is parked in the memory store (a
// copy that is forgotten when the run is abandoned).
type outRun struct {
	at     time.Time
	thread string
	parked bool
}

// Server is the sidecar. Make it with New, serve Handler (or the Server
// itself) with an http.Server, and Close it after Shutdown.
type Server struct {
	h         *host.Host
	log       *slog.Logger
	token     [sha256.Size]byte
	hasToken  bool
	bodyLimit int64
	bodyWait  time.Duration
	hosts     hostRule
	sem       chan struct{}
	idle      time.Duration
	retain    time.Duration
	abandon   time.Duration
	maxRuns   int
	metrics   *metrics
	hooks     *HookMetrics
	shadowing *replay.Shadow
	pprof     bool // Options.Pprof
	mux       *http.ServeMux
	volatile  bool // the store keeps nothing across a restart (run.Volatile)
	draining  atomic.Bool
	health    storeHealth

	mu      sync.Mutex
	runs    map[string]*entry
	threads map[string]string // thread id -> the run not done that holds it (in memory, or in out)
	out     map[string]outRun // runs out of memory that hold their thread or are parked
	// expiries: waiting runs -> when their next ticket expires.
	expiries map[string]time.Time

	agents    *hooks.Adapters // the coding agents' hook endpoints
	hookAgent string
	// hookFailed is Options.HookFailed, or nil.
	hookFailed func(error)

	curGen atomic.Pointer[[]string] // {current generation id} for reply headers

	stop      chan struct{}
	janitor   sync.WaitGroup
	closeOnce sync.Once
}

// New makes a server over a host. It starts a janitor goroutine that Close
// stops.
func New(h *host.Host, o Options) *Server {
	s := &Server{h: h, log: o.Log, bodyLimit: o.BodyLimit, idle: o.IdleTimeout, retain: o.DoneRetention,
		abandon: o.AbandonAfter, runs: map[string]*entry{}, threads: map[string]string{}, expiries: map[string]time.Time{},
		out: map[string]outRun{}, stop: make(chan struct{})}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if o.Token != "" {
		s.token, s.hasToken = sha256.Sum256([]byte(o.Token)), true
	}
	if s.bodyLimit <= 0 {
		s.bodyLimit = DefaultBodyLimit
	}
	s.bodyWait = o.BodyTimeout
	if s.bodyWait <= 0 {
		s.bodyWait = DefaultBodyTimeout
	}
	s.hosts = newHostRule(o.Addr)
	n := o.MaxConcurrent
	if n <= 0 {
		n = DefaultMaxConcurrent
	}
	s.sem = make(chan struct{}, n)
	if s.idle <= 0 {
		s.idle = DefaultIdleTimeout
	}
	if s.retain <= 0 {
		s.retain = DefaultDoneRetention
	}
	if s.abandon <= 0 {
		s.abandon = DefaultAbandonAfter
	}
	s.maxRuns = o.MaxRuns
	if s.maxRuns <= 0 {
		s.maxRuns = DefaultMaxRuns
	}
	if v, ok := h.Store().(run.Volatile); ok {
		s.volatile = v.Volatile()
	}
	s.metrics = newMetrics()
	s.hooks = o.Hooks
	s.shadowing = o.Shadow
	s.pprof = o.Pprof
	s.hookAgent = o.HookAgent
	s.hookFailed = o.HookFailed
	s.agents = s.newHookAdapters()
	s.routes()
	s.janitor.Add(1)
	go s.sweepLoop()
	return s
}

// Handler returns the server as an http.Handler.
func (s *Server) Handler() http.Handler { return s }

// Drain marks the server as shutting down: /readyz answers 503 and new runs
// are refused, while calls on existing runs go on until Shutdown ends them.
func (s *Server) Drain() { s.draining.Store(true) }

// Close stops the janitor, saves every run that changed since its last
// checkpoint and unpins every run's generation. Runs stay in the store;
// call it after http.Server.Shutdown so no request is running.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.stop)
		s.janitor.Wait()
		s.mu.Lock()
		entries := make([]*entry, 0, len(s.runs))
		for _, e := range s.runs {
			entries = append(entries, e)
		}
		s.runs, s.threads = map[string]*entry{}, map[string]string{}
		s.mu.Unlock()
		for _, e := range entries {
			e.mu.Lock()
			if e.dirty && !e.done.Load() {
				if err := s.checkpoint(context.Background(), e); err != nil {
					s.log.Error("cannot save a run while closing", "run_id", e.id, "error", err.Error())
				}
			}
			e.gone = true
			e.release()
			e.mu.Unlock()
		}
	})
	return nil
}

// Reload builds a generation now (POST /v1/plugins/reload) and counts it.
func (s *Server) Reload(ctx context.Context) host.Status {
	st := s.h.Reload(ctx)
	s.ObserveReload(st)
	return st
}

// ObserveReload counts a reload made elsewhere (host.Watch in `serve`).
func (s *Server) ObserveReload(st host.Status) { s.metrics.reloads.inc(st.LastResult) }

type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// access says what an endpoint needs before its handler runs.
type access int

const (
	probe access = iota // no token, no limit: orchestrators probe without secrets
	meta                // token, no concurrency limit: scrapes must work under load
	api                 // token, concurrency limit and body limit
	hook                // token only: the Claude Code adapter applies the limits itself and answers 200
)

func (s *Server) routes() {
	m := http.NewServeMux()
	handle := func(pattern, label string, a access, fn handlerFunc) {
		m.Handle(pattern, s.endpoint(label, a, fn))
	}
	handle("POST /v1/runs", "create_run", api, s.createRun)
	for p, fn := range s.phaseRoutes() {
		handle("POST /v1/runs/{id}/phases/"+p.String(), p.String(), api, fn)
	}
	handle("POST /v1/runs/{id}/phases/{phase}", "unknown", api, s.noPhase)
	handle("POST /v1/runs/{id}/resume", "resume", api, s.resume)
	handle("GET /v1/runs/{id}", "get_run", api, s.getRun)
	handle("DELETE /v1/runs/{id}", "delete_run", api, s.deleteRun)
	handle("POST /v1/hooks/claude-code", "claude_code", hook, s.agents.ClaudeCode)
	handle("GET /v1/hooks/claude-code/sessions/{session}", "claude_code_session", api, s.claudeCodeSession)
	handle("POST /v1/hooks/cursor", "cursor", hook, s.agents.Cursor)
	handle("POST /v1/hooks/codex", "codex", hook, s.agents.Codex)
	handle("POST /v1/hooks/gemini", "gemini", hook, s.agents.Gemini)
	handle("POST /v1/hooks/gemini-cli", "gemini", hook, s.agents.Gemini) // the CLI's own name
	handle("POST /v1/hooks/copilot", "copilot", hook, s.agents.Copilot)
	handle("GET /v1/plugins", "plugins", api, s.plugins)
	handle("GET /v1/shadow", "shadow", meta, s.shadow)
	handle("POST /v1/plugins/reload", "reload", api, s.reload)
	handle("GET /healthz", "healthz", probe, s.healthz)
	handle("GET /readyz", "readyz", probe, s.readyz)
	handle("GET /metrics", "metrics", meta, s.serveMetrics)
	s.pprofRoutes(handle)
	// The same paths with another method: 405 with Allow, as problem+json.
	for path, allow := range map[string]string{
		"/v1/runs": "POST", "/v1/runs/{id}/phases/{phase}": "POST", "/v1/runs/{id}/resume": "POST",
		"/v1/runs/{id}": "GET, DELETE", "/v1/hooks/claude-code": "POST", "/v1/hooks/claude-code/sessions/{session}": "GET", "/v1/hooks/cursor": "POST", "/v1/hooks/codex": "POST", "/v1/hooks/gemini": "POST", "/v1/hooks/gemini-cli": "POST", "/v1/hooks/copilot": "POST", "/v1/plugins": "GET", "/v1/shadow": "GET",
		"/v1/plugins/reload": "POST", "/healthz": "GET", "/readyz": "GET", "/metrics": "GET",
	} {
		handle(path, "method_not_allowed", probe, methodNotAllowed(allow))
	}
	handle("/", "not_found", probe, func(w http.ResponseWriter, r *http.Request) error {
		return fail(http.StatusNotFound, errs.BadRequest, "no endpoint %s %s; the API is listed in server/README.md", errs.Clip(r.Method, 20), errs.Clip(r.URL.Path, 200))
	})
	s.mux = m
}

// methodNotAllowed answers a method a path does not take: 405 with Allow.
func methodNotAllowed(allow string) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		e := fail(http.StatusMethodNotAllowed, errs.BadRequest, "%s does not take %s; use %s", errs.Clip(r.URL.Path, 200), errs.Clip(r.Method, 20), allow)
		e.allow = allow
		return e
	}
}

// endpoint wraps a handler with what its access calls for, writes its
// error, and counts the request by phase (or endpoint) and outcome.
func (s *Server) endpoint(label string, a access, fn handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := label
		err := s.admit(w, r, a, fn)
		outcome := "ok"
		if err != nil {
			s.noteStore(err)
			s.writeProblem(w, r, err)
			p, _ := toProblem(err)
			outcome = p.Code
		}
		if a != probe || name == "healthz" || name == "readyz" {
			s.metrics.requests.inc(name, outcome)
		}
	})
}

// admit runs what an endpoint's access calls for, in order: the token, a
// JSON content type on POST, the body read in full (bounded in size and
// time), and only then a concurrency slot, so a slow client cannot hold
// one.
func (s *Server) admit(w http.ResponseWriter, r *http.Request, a access, fn handlerFunc) error {
	if a == probe {
		return fn(w, r)
	}
	if err := s.authorize(r); err != nil {
		return err
	}
	if r.Method == http.MethodPost {
		if err := jsonContent(r); err != nil {
			return err
		}
	}
	if a == meta {
		return fn(w, r)
	}
	if a == hook {
		// The adapter answers 200 to a body too large, too slow or
		// malformed, and takes a slot after reading it: it gets the body
		// read the same way, with what went wrong, and one byte over the
		// limit to tell a body that is too large.
		var data []byte
		var err error
		if unread := hooks.Unread(r.URL.Path); unread != nil {
			// Members the adapter never reads (a file's content) count
			// against no limit but MaxUnread, and are not kept.
			data, err = s.readWithinFunc(w, func() ([]byte, error) {
				return hooks.ReadWithout(r.Body, s.bodyLimit+1, hooks.MaxUnread, unread...)
			})
		} else {
			data, err = s.readWithin(w, io.LimitReader(r.Body, s.bodyLimit+1), min(r.ContentLength, s.bodyLimit+1))
		}
		r.Body = &bodyBytes{data: data, err: err}
		return fn(w, r)
	}
	body, err := s.readRequestBody(w, r)
	if err != nil {
		return err
	}
	r.Body = body
	select {
	case s.sem <- struct{}{}:
		defer func() { <-s.sem }()
	default:
		e := fail(http.StatusTooManyRequests, errs.Overloaded,
			"%d requests are being served; retry after a second or raise [server] max_concurrent", cap(s.sem))
		e.retryAfter = "1"
		return e
	}
	return fn(w, r)
}

// noteStore makes /readyz fail after a save the store could not do.
func (s *Server) noteStore(err error) {
	var ae *apiError
	if isStoreFailure(err) || (errors.As(err, &ae) && ae.code == codeStoreUnavailable) {
		s.health.failed(err)
	}
}

// authorize compares the bearer token in constant time. Both sides are
// hashed first, so the comparison does not even leak the token's length.
func (s *Server) authorize(r *http.Request) error {
	if !s.hasToken {
		return nil
	}
	h := r.Header.Get("Authorization")
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return fail(http.StatusUnauthorized, errs.Unauthorized,
			"send the token as \"Authorization: Bearer <token>\" (the sidecar reads it from the variable [server] token_env names)")
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	if subtle.ConstantTimeCompare(sum[:], s.token[:]) != 1 {
		return fail(http.StatusUnauthorized, errs.Unauthorized, "the bearer token is wrong")
	}
	return nil
}

// recorder remembers what a handler wrote, for the access log, and gives
// the client wait to take each piece of the reply: a client that never
// reads would otherwise block the write for ever, and a run's reply is
// written holding the run (and a concurrency slot), which every other
// call on the run and the janitor's expiries wait for.
type recorder struct {
	http.ResponseWriter
	status int
	code   string
	wait   time.Duration
	left   int // bytes the current write deadline still covers
}

// writeDeadliner is a ResponseWriter on a connection (net/http's).
type writeDeadliner interface{ SetWriteDeadline(time.Time) error }

// replyChunk is how much of a reply one write deadline covers, so a large
// reply needs progress, not all of it, within wait.
const replyChunk = 1 << 20

func (w *recorder) deadline() {
	w.left = replyChunk
	if d, ok := w.ResponseWriter.(writeDeadliner); ok && w.wait > 0 {
		_ = d.SetWriteDeadline(time.Now().Add(w.wait))
	}
}

func (w *recorder) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
		w.deadline() // a reply without a body is flushed after the handler
	}
	w.ResponseWriter.WriteHeader(status)
}

// Unwrap lets http.ResponseController reach the connection (read
// deadlines).
func (w *recorder) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (w *recorder) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n := 0
	for {
		if w.left <= 0 {
			w.deadline() // one per reply, unless it is over a chunk
		}
		k, err := w.ResponseWriter.Write(b[n : n+min(len(b)-n, w.left)])
		w.left -= k
		if n += k; err != nil || n == len(b) {
			return n, err
		}
	}
}

// genHeader returns the header value {id}, made once per generation: the
// slice is shared by replies and never modified.
func (s *Server) genHeader(id string) []string {
	if p := s.curGen.Load(); p != nil && (*p)[0] == id {
		return *p
	}
	v := []string{id}
	s.curGen.Store(&v)
	return v
}

// ServeHTTP is the HTTP boundary: it stamps the current generation (run
// endpoints overwrite it with the run's), recovers panics into a 500 and
// writes the access log line.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	// net/http clears the write deadline after each reply, so a
	// keep-alive connection's next request starts without one.
	rw := &recorder{ResponseWriter: w, wait: s.bodyWait}
	if g := s.h.Current(); g != nil {
		w.Header()[GenerationHeader] = s.genHeader(g.ID)
	}
	defer func() {
		if v := recover(); v != nil {
			if v == http.ErrAbortHandler {
				panic(v)
			}
			s.log.LogAttrs(r.Context(), slog.LevelError, "panic serving a request", slog.String("method", r.Method),
				slog.String("path", r.URL.Path), slog.String("panic", fmt.Sprint(v)), slog.String("stack", string(debug.Stack())))
			if rw.status == 0 {
				s.writeProblem(rw, r, fail(http.StatusInternalServerError, codeInternal, "the sidecar failed while serving this request; the log has the details"))
			}
		}
		if s.log.Enabled(r.Context(), slog.LevelInfo) {
			s.log.LogAttrs(r.Context(), slog.LevelInfo, "request", slog.String("method", r.Method),
				slog.String("path", r.URL.Path), slog.Int("status", rw.status), slog.String("code", rw.code),
				slog.String("generation", w.Header().Get(GenerationHeader)),
				slog.Float64("took_ms", float64(time.Since(start).Microseconds())/1000), slog.String("remote", r.RemoteAddr))
		}
	}()
	if err := s.hosts.check(r); err != nil {
		s.writeProblem(rw, r, err)
		return
	}
	// The mux would redirect a path with "." or ".." segments or "//" to
	// its clean form; an API client is better told than redirected.
	if p := r.URL.Path; p == "" || p[0] != '/' || (path.Clean(p) != p && p != PprofPath) {
		s.writeProblem(rw, r, fail(http.StatusNotFound, errs.BadRequest, "the path %q is not in canonical form; send %q", errs.Clip(p, 200), errs.Clip(path.Clean("/"+p), 200)))
		return
	}
	s.mux.ServeHTTP(rw, r)
}
