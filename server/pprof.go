package server

// The profiling endpoints (Options.Pprof, `awaken-lua serve --pprof`):
// net/http/pprof's handlers, behind the bearer token and outside the
// concurrency limit, so a sidecar that is slow under load can be profiled
// while it is (server/README.md, "Profiling a running sidecar").

import (
	"net/http"
	"net/http/pprof"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// PprofPath is where the profiles are served, under the names
// net/http/pprof gives them: go tool pprof http://HOST/debug/pprof/heap.
const PprofPath = "/debug/pprof/"

func (s *Server) pprofRoutes(handle func(pattern, label string, a access, fn handlerFunc)) {
	if !s.pprof {
		handle(PprofPath, "pprof", probe, func(w http.ResponseWriter, r *http.Request) error {
			return fail(http.StatusNotFound, errs.BadRequest, "profiling is off; start the sidecar with awaken-lua serve --pprof")
		})
		return
	}
	// A CPU profile or a trace lasts ?seconds=N (30 and 1 by default):
	// net/http lifts the read deadline while a handler runs, and serve sets
	// no write timeout, so neither cuts a capture short.
	for path, h := range map[string]http.HandlerFunc{
		"":        pprof.Index, // the index and every named profile: heap, goroutine, allocs, mutex, block
		"cmdline": pprof.Cmdline, "symbol": pprof.Symbol, "profile": pprof.Profile, "trace": pprof.Trace,
	} {
		handle("GET "+PprofPath+path, "pprof", meta, func(w http.ResponseWriter, r *http.Request) error { h(w, r); return nil })
	}
}
