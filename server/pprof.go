package server

// The profiling endpoints (Options.Pprof, `awaken-lua serve --pprof`):
// net/http/pprof's handlers, behind the bearer token and outside the
// concurrency limit, so a sidecar that is slow under load can be profiled
// while it is (server/README.md, "Profiling a running sidecar").

import (
	"net/http"
	"net/http/pprof"
	rpprof "runtime/pprof"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// PprofPath is where the profiles are served, under the names
// net/http/pprof gives them: go tool pprof http://HOST/debug/pprof/heap.
const PprofPath = "/debug/pprof/"

func (s *Server) pprofRoutes(handle func(pattern, label string, a access, fn handlerFunc)) {
	// Without the trailing slash the mux would redirect; the API tells.
	bare := strings.TrimSuffix(PprofPath, "/")
	if !s.pprof {
		off := func(w http.ResponseWriter, r *http.Request) error {
			return fail(http.StatusNotFound, errs.BadRequest, "profiling is off; start the sidecar with awaken-lua serve --pprof")
		}
		handle(PprofPath, "pprof", probe, off)
		handle(bare, "pprof", probe, off)
		return
	}
	handle(bare, "pprof", probe, func(w http.ResponseWriter, r *http.Request) error {
		return fail(http.StatusNotFound, errs.BadRequest, "the profiles are listed at %s", PprofPath)
	})
	// The index and every named profile (heap, goroutine, allocs, mutex,
	// block, threadcreate); a name runtime/pprof does not know is a 404
	// like any other.
	handle("GET "+PprofPath, "pprof", meta, func(w http.ResponseWriter, r *http.Request) error {
		if name := strings.TrimPrefix(r.URL.Path, PprofPath); name != "" && rpprof.Lookup(name) == nil {
			return fail(http.StatusNotFound, errs.BadRequest, "there is no profile %q; the profiles are listed at %s", name, PprofPath)
		}
		pprof.Index(w, r)
		return nil
	})
	// A CPU profile or a trace lasts ?seconds=N (30 and 1 by default):
	// net/http lifts the read deadline while a handler runs, and serve sets
	// no write timeout, so neither cuts a capture short. Nor does the
	// deadline a reply is taken within: a trace streams a little at a time
	// for as long as it lasts, and a profile holds no run and no slot.
	for path, h := range map[string]http.HandlerFunc{
		"cmdline": pprof.Cmdline, "symbol": pprof.Symbol, "profile": pprof.Profile, "trace": pprof.Trace,
	} {
		handle("GET "+PprofPath+path, "pprof", meta, func(w http.ResponseWriter, r *http.Request) error {
			if rec, ok := w.(*recorder); ok {
				rec.wait = 0
			}
			h(w, r)
			return nil
		})
	}
	handle(PprofPath, "method_not_allowed", probe, methodNotAllowed("GET"))
}
