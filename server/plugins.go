package server

import (
	"net/http"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/host"
	"github.com/awaken-lua/awaken-lua/replay"
	"github.com/awaken-lua/awaken-lua/run"
	"github.com/awaken-lua/awaken-lua/store/filestore"
)

// pluginsReply is GET /v1/plugins: what the current generation holds, and
// how the last reload went (a failed reload leaves the previous generation
// current and says why, with file:line).
type pluginsReply struct {
	Generation string               `json:"generation"`
	Hash       string               `json:"hash"`
	LoadedAt   time.Time            `json:"loaded_at"`
	Agents     []string             `json:"agents"`
	Plugins    []plugin.Description `json:"plugins"`
	// Order lists, per agent, its plugins in the order their hooks run.
	Order      map[string][]string `json:"order"`
	LastReload host.Status         `json:"last_reload"`
	Store      storeReport         `json:"store"`
}

type storeReport struct {
	Kind string `json:"kind"`
	// Problems are corrupt files the file store set aside (never dropped).
	Problems []filestore.Problem `json:"problems,omitempty"`
}

// storeProblems is a store that sets corrupt files aside (the file store).
type storeProblems interface {
	Problems() []filestore.Problem
}

func (s *Server) storeReport() storeReport {
	st := s.h.Store()
	r := storeReport{Kind: "custom"} // a store an embedder wrote
	if k, ok := st.(run.Kinded); ok {
		r.Kind = k.Kind()
	}
	if p, ok := st.(storeProblems); ok {
		r.Problems = p.Problems()
	}
	return r
}

// shadow is GET /v1/shadow: the shadow generation's disagreements.
func (s *Server) shadow(w http.ResponseWriter, r *http.Request) error {
	if s.shadowing == nil {
		return writeJSON(w, http.StatusOK, map[string]any{"enabled": false,
			"hint": "set [shadow] plugin_dir in awaken.toml to evaluate a candidate beside the enforced plugins"})
	}
	return writeJSON(w, http.StatusOK, struct {
		Enabled bool `json:"enabled"`
		replay.Summary
	}{true, s.shadowing.Summary()})
}

func (s *Server) plugins(w http.ResponseWriter, r *http.Request) error {
	g := s.h.Current()
	if g == nil {
		return notReady()
	}
	order := map[string][]string{}
	for _, id := range g.Runtime.AgentIDs() {
		order[id] = g.Runtime.PluginOrder(id)
	}
	return writeJSON(w, http.StatusOK, pluginsReply{Generation: g.ID, Hash: g.Hash, LoadedAt: g.LoadedAt,
		Agents: g.Runtime.AgentIDs(), Plugins: g.Runtime.Set().Describe(), Order: order, LastReload: s.h.Status(), Store: s.storeReport()})
}

// reload builds a generation from the files as they are now. A failed load
// is a result, not an HTTP error: 200 with last_result "failed" and the
// errors, and the previous generation stays current.
func (s *Server) reload(w http.ResponseWriter, r *http.Request) error {
	st := s.Reload(r.Context())
	if g := s.h.Current(); g != nil {
		w.Header().Set(GenerationHeader, g.ID)
	}
	return writeJSON(w, http.StatusOK, st)
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) error {
	return writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

// readyz is ready once a generation is loaded and until the server drains,
// while the store can write.
func (s *Server) readyz(w http.ResponseWriter, r *http.Request) error {
	if s.draining.Load() {
		return fail(http.StatusServiceUnavailable, errs.NotReady, "the sidecar is shutting down")
	}
	g := s.h.Current()
	if g == nil {
		return notReady()
	}
	if err := s.health.check(r.Context(), s.h.Store()); err != nil {
		return fail(http.StatusServiceUnavailable, errs.NotReady,
			"the store cannot write, so calls that change a run fail (503 store_unavailable): %v", err)
	}
	return writeJSON(w, http.StatusOK, map[string]string{"status": "ready", "generation": g.ID})
}

func notReady() error {
	return fail(http.StatusServiceUnavailable, errs.NotReady, "no plugin generation is loaded yet")
}
