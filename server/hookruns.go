package server

import (
	"context"
	"errors"
	"net/http"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
	"github.com/awaken-lua/awaken-lua/server/hooks"
)

// The runs of the sidecar as the coding agents' hook adapters see them
// (package hooks): they start, lock, settle and unlock runs like the phase
// endpoints do, and know nothing else of the server.

func (e *entry) ID() string            { return e.id }
func (e *entry) Session() *run.Session { return e.sess }
func (e *entry) Done() bool            { return e.done.Load() }

type hookRuns struct{ s *Server }

func (h hookRuns) Start(ctx context.Context, agent, threadID string, msgs []model.Message, cwd string) (hooks.Run, error) {
	e, err := h.s.start(ctx, createRequest{Agent: agent, ThreadID: threadID, Messages: msgs, bare: true, Cwd: cwd})
	if err != nil {
		return nil, err
	}
	return e, nil
}

func (h hookRuns) Lock(ctx context.Context, id string) (hooks.Run, error) {
	e, err := h.s.lockRun(ctx, id)
	if err != nil {
		var ae *apiError
		if errors.As(err, &ae) && ae.status == http.StatusNotFound {
			return nil, hooks.ErrNoRun
		}
		return nil, err
	}
	return e, nil
}

func (h hookRuns) Settle(ctx context.Context, r hooks.Run) error {
	return h.s.settle(ctx, r.(*entry), true)
}

func (h hookRuns) Unlock(r hooks.Run)                  { h.s.unlock(r.(*entry)) }
func (h hookRuns) ThreadHolder(threadID string) string { return h.s.threadHolder(threadID) }
func (h hookRuns) Store() run.Store                    { return h.s.h.Store() }

func (h hookRuns) AgentID(agent string) string {
	g := h.s.h.Acquire()
	defer g.Release()
	return g.Runtime.AgentID(agent)
}

// newHookAdapters makes the hook adapters over the server's runs, limits
// and metrics.
func (s *Server) newHookAdapters() *hooks.Adapters {
	return hooks.New(hooks.Options{Runs: hookRuns{s}, BodyLimit: s.bodyLimit, MaxIDLen: maxIDLen, Slots: s.sem,
		HookAgent: s.hookAgent, MaxSessions: s.maxRuns, Log: s.log, CheckBody: duplicateKey,
		Decided: func(k gate.Kind) { s.metrics.decisions.inc(k.String()) }, Failed: s.hookFailure})
}

// hookFailure sees the error a hook event failed with: the store's health
// watches it, and so does Options.HookFailed.
func (s *Server) hookFailure(err error) {
	s.noteStore(err)
	if s.hookFailed != nil {
		s.hookFailed(err)
	}
}

// claudeCodeSession is GET /v1/hooks/claude-code/sessions/{session}.
func (s *Server) claudeCodeSession(w http.ResponseWriter, r *http.Request) error {
	id := r.PathValue("session")
	v, ok, err := s.agents.ClaudeCodeSession(r.Context(), id)
	if err != nil {
		return err
	}
	if !ok {
		return fail(http.StatusNotFound, codeSessionNotFound,
			"no Claude Code session %q in this sidecar (it ended, idled out, was let go of past [server] max_runs, or the sidecar restarted); its deferred calls, if any, were cancelled", errs.Clip(id, 200))
	}
	return writeJSON(w, http.StatusOK, v)
}
