package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/run"
)

// Codes of the sidecar's own (README.md, Errors).
const (
	// codeInternal marks an error that carries no code: a bug, never
	// something the client can fix.
	codeInternal errs.Code = "internal"
	// codeStoreUnavailable: the store could not save what a call did, so
	// the call changed nothing; retry it.
	codeStoreUnavailable errs.Code = "store_unavailable"
	// codeSessionNotFound: GET /v1/hooks/claude-code/sessions/{session}
	// for a session the sidecar does not hold.
	codeSessionNotFound errs.Code = "session_not_found"
)

// statusOf is the one table from codes to HTTP statuses (OPA's ErrorAuto).
//
// unknown_resume_target is 400, not 404: the target is named in the body,
// and 404 stays reserved for the run in the URL, so a client can tell
// "wrong run" (404 run_not_found) from "wrong ticket" (400).
// invalid_transition never reaches the table: the session's code for a
// phase called out of order is reported as phase_out_of_order. run_lost
// is 409 like a busy thread: the thread is released, and the same POST
// again starts the run.
var statusOf = map[errs.Code]int{
	errs.BadRequest:          http.StatusBadRequest,
	errs.SchemaViolation:     http.StatusBadRequest,
	errs.UnknownResumeTarget: http.StatusBadRequest,
	errs.Unauthorized:        http.StatusUnauthorized,
	errs.RunNotFound:         http.StatusNotFound,
	errs.PhaseOutOfOrder:     http.StatusConflict,
	errs.InvalidTransition:   http.StatusConflict,
	errs.RevisionConflict:    http.StatusConflict,
	errs.RunLost:             http.StatusConflict,
	errs.PayloadTooLarge:     http.StatusRequestEntityTooLarge,
	errs.Overloaded:          http.StatusTooManyRequests,
	errs.NotReady:            http.StatusServiceUnavailable,
	codeStoreUnavailable:     http.StatusServiceUnavailable,
}

// problem is an RFC 9457 problem+json body with OPA's stable code, plus
// extension members that tell a driver where its run stands after a failed
// call.
type problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail"`
	Code   string `json:"code"`

	RunID       string  `json:"run_id,omitempty"`
	Termination string  `json:"termination,omitempty"`
	Revision    *uint64 `json:"revision,omitempty"`
	Plugin      string  `json:"plugin,omitempty"`
	Phase       string  `json:"phase,omitempty"`
	Pos         string  `json:"pos,omitempty"`
	// Field is the path of the field a 400 is about ("call.args.path").
	Field string `json:"field,omitempty"`
}

// apiError is an error a handler returns with its status and code decided.
type apiError struct {
	status int
	code   errs.Code
	detail string
	err    error // the cause, for the log
	// Run context, when the error is about a run.
	runID       string
	termination string
	revision    *uint64
	retryAfter  string
	allow       string
	field       string
}

func (e *apiError) Error() string { return string(e.code) + ": " + e.detail }
func (e *apiError) Unwrap() error { return e.err }

// withField names the field the error is about.
func (e *apiError) withField(path string) *apiError {
	e.field = path
	return e
}

func fail(status int, code errs.Code, format string, args ...any) *apiError {
	return &apiError{status: status, code: code, detail: fmt.Sprintf(format, args...)}
}

func badRequest(format string, args ...any) *apiError {
	return fail(http.StatusBadRequest, errs.BadRequest, format, args...)
}

func runNotFound(id string) *apiError {
	return fail(http.StatusNotFound, errs.RunNotFound,
		"run %q is neither in memory nor in the store; start one with POST /v1/runs (a finished run is forgotten once it ends)", errs.Clip(id, 200))
}

// toProblem decides the status, code and body of any error a handler
// returns.
func toProblem(err error) (problem, *apiError) {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = classify(err)
	}
	p := problem{Status: ae.status, Code: string(ae.code), Detail: ae.detail, RunID: ae.runID,
		Termination: ae.termination, Revision: ae.revision, Field: ae.field}
	p.Type = "urn:awaken-lua:problem:" + p.Code
	p.Title = http.StatusText(p.Status)
	if p.Field == "" {
		// The session names a bad field as a JSON path from the body's
		// root ("$.call.name"); field names it as the decoders' errors do.
		p.Field = strings.TrimPrefix(errs.PathOf(err), "$.")
	}
	var e *errs.Error
	if errors.As(err, &e) {
		p.Plugin, p.Phase = e.Plugin, e.Phase
		if e.Pos.IsValid() {
			p.Pos = e.Pos.String()
		}
	}
	return p, ae
}

// classify maps an error that carries an errs code (or none) to a status.
// The session's invalid_transition is a phase called out of order.
func classify(err error) *apiError {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge(mbe.Limit)
	}
	if isStoreFailure(err) {
		return storeUnavailable(err)
	}
	code := errs.CodeOf(err)
	detail := err.Error()
	var e *errs.Error
	if errors.As(err, &e) && e.Msg != "" {
		detail = e.Msg
		if e.Err != nil {
			detail += ": " + e.Err.Error()
		}
	}
	if code == errs.InvalidTransition {
		code = errs.PhaseOutOfOrder
	}
	status, ok := statusOf[code]
	if !ok {
		status = http.StatusInternalServerError
		if code == "" {
			code = codeInternal
		}
	}
	return &apiError{status: status, code: code, detail: detail, err: err}
}

// storeUnavailable is a store that failed to save or load a run: nothing of
// the call was kept, and nothing in memory shows it; the client retries.
// A save whose outcome the store cannot tell may have been kept: the
// client reads the run before it calls again.
func storeUnavailable(err error) *apiError {
	if run.OutcomeUnknown(err) {
		e := fail(http.StatusServiceUnavailable, codeStoreUnavailable,
			"the store lost its connection while saving this call and cannot tell now whether the save was kept; "+
				"GET the run (its revision and stage show whether this call took effect) before calling again "+
				"(/readyz fails until the store writes again): %v", err)
		e.err, e.retryAfter = err, "1"
		return e
	}
	e := fail(http.StatusServiceUnavailable, codeStoreUnavailable,
		"the store failed, so this call changed nothing; retry it (/readyz fails until the store writes again): %v", err)
	e.err, e.retryAfter = err, "1"
	return e
}

// isStoreFailure reports whether err is a save the store could not do (an
// I/O failure, not a refusal such as revision_conflict).
func isStoreFailure(err error) bool {
	var se *run.SaveError
	var le *run.LoadError
	return (errors.As(err, &se) || errors.As(err, &le)) && errs.CodeOf(err) == ""
}

func tooLarge(limit int64) *apiError {
	return fail(http.StatusRequestEntityTooLarge, errs.PayloadTooLarge,
		"the body is larger than %d bytes; send less or raise [server] body_limit", limit)
}

// writeProblem is the one place that logs and encodes an error (Caddy's
// handleError): handlers only return errors.
func (s *Server) writeProblem(w http.ResponseWriter, r *http.Request, err error) {
	p, ae := toProblem(err)
	if rw, ok := w.(*recorder); ok {
		rw.code = p.Code
	}
	if p.Status >= 500 {
		s.log.LogAttrs(r.Context(), slog.LevelError, "request failed", slog.String("method", r.Method),
			slog.String("path", r.URL.Path), slog.String("code", p.Code), slog.String("error", err.Error()))
	}
	h := w.Header()
	if ae.retryAfter != "" {
		h.Set("Retry-After", ae.retryAfter)
	}
	if ae.allow != "" {
		h.Set("Allow", ae.allow)
	}
	if p.Status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="awaken-lua"`)
	}
	if ae.revision != nil {
		h.Set("ETag", etag(*ae.revision))
	}
	b, mErr := json.Marshal(p)
	if mErr != nil { // only strings and ints: cannot happen, but never send nothing
		b = []byte(`{"type":"urn:awaken-lua:problem:internal","title":"Internal Server Error","status":500,"code":"internal","detail":"the error could not be encoded"}`)
		p.Status = http.StatusInternalServerError
	}
	h.Set("Content-Type", "application/problem+json")
	h.Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(p.Status)
	_, _ = w.Write(append(b, '\n'))
}

func etag(rev uint64) string { return `"` + strconv.FormatUint(rev, 10) + `"` }
