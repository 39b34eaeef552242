package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
	"github.com/awaken-lua/awaken-lua/server/hooks"
)

// maxIDLen bounds thread ids a client chooses (they name files in the file
// store).
const maxIDLen = 256

// The request and reply shapes (server/README.md, Endpoints).
type (
	createRequest struct {
		Agent    string           `json:"agent"`
		ThreadID string           `json:"thread_id"`
		Messages []model.Message  `json:"messages"`
		Tools    []model.ToolSpec `json:"tools"`
		// Cwd is the agent's working directory (ctx.run.cwd), as a hook
		// event reports it.
		Cwd string `json:"cwd"`
		// bare starts the conversation with Messages alone (the Claude
		// Code adapter: Claude Code keeps its own conversation).
		bare bool
	}
	createReply struct {
		RunID       string `json:"run_id"`
		ThreadID    string `json:"thread_id"`
		Generation  string `json:"generation"`
		Revision    uint64 `json:"revision"`
		Termination string `json:"termination,omitempty"` // a plugin stopped the run in run_start
	}
	outcomeReply struct {
		Revision    uint64 `json:"revision"`
		Termination string `json:"termination,omitempty"`
	}
	// stepEndReply: continued lists the messages runtime.continue added;
	// the client appends them to its conversation and runs another step.
	stepEndReply struct {
		Revision    uint64          `json:"revision"`
		Termination string          `json:"termination,omitempty"`
		Continued   []model.Message `json:"continued,omitempty"`
	}
	inferenceRequest struct {
		Messages []model.Message `json:"messages"`
		// Tools: absent means the tools given when the run was created.
		Tools  []model.ToolSpec `json:"tools"`
		Params model.Params     `json:"params"`
	}
	beforeInferenceBody struct {
		Request *inferenceRequest `json:"request"`
	}
	beforeInferenceReply struct {
		Request     model.Request `json:"request"`
		Revision    uint64        `json:"revision"`
		Termination string        `json:"termination,omitempty"`
	}
	afterInferenceBody struct {
		Response *model.Response `json:"response"`
	}
	callBody struct {
		Call   *model.ToolCall   `json:"call"`
		Result *model.ToolResult `json:"result"`
	}
	gateReply struct {
		Decision gate.Kind         `json:"decision"`
		Args     map[string]any    `json:"args"`
		Reason   string            `json:"reason,omitempty"`
		Ticket   *gate.Ticket      `json:"ticket,omitempty"`
		Result   *model.ToolResult `json:"result,omitempty"`
		Revision uint64            `json:"revision"`
	}
	beforeToolReply struct {
		Revision    uint64            `json:"revision"`
		Termination string            `json:"termination,omitempty"`
		Result      *model.ToolResult `json:"result,omitempty"` // the sidecar ran a plugin's tool
	}
	afterToolReply struct {
		Result      model.ToolResult `json:"result"`
		Revision    uint64           `json:"revision"`
		Termination string           `json:"termination,omitempty"`
	}
	resumeBody struct {
		Decisions []run.ResumeDecision `json:"decisions"`
	}
	callView struct {
		ID       string            `json:"id"`
		Name     string            `json:"name"`
		Args     map[string]any    `json:"args"`
		Status   string            `json:"status"`
		Decision string            `json:"decision,omitempty"`
		Ticket   *gate.Ticket      `json:"ticket,omitempty"`
		Result   *model.ToolResult `json:"result,omitempty"`
	}
	resumeReply struct {
		Revision uint64     `json:"revision"`
		Calls    []callView `json:"calls"`
	}
	runReply struct {
		RunID       string         `json:"run_id"`
		ThreadID    string         `json:"thread_id"`
		Status      string         `json:"status"`
		Step        int            `json:"step"`
		Revision    uint64         `json:"revision"`
		Generation  string         `json:"generation"`
		Suspended   []gate.Ticket  `json:"suspended"`
		State       map[string]any `json:"state"`
		Termination string         `json:"termination,omitempty"`
	}
)

// decodeBody reads one JSON object into v. Unknown fields are an error (a
// typo such as "tool_call" must not silently mean "no calls"), and so is a
// key given twice; an empty body reads as {}.
func decodeBody(r *http.Request, v any) error {
	data, err := readBody(r)
	if err != nil {
		return err
	}
	if isBlank(data) {
		return nil
	}
	if err := duplicateKey(data); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return bodyError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		if err != nil {
			return bodyError(err)
		}
		return badRequest("the body holds more than one JSON value")
	}
	return nil
}

func bodyError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return tooLarge(mbe.Limit)
	}
	// encoding/json names the Go type it decodes into ("cannot unmarshal
	// array into Go value of type struct {}"): say it in JSON's words.
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		got := strings.Fields(te.Value + " value")[0] // "number 1e400" is a number
		if got == "bool" {
			got = "boolean"
		}
		if te.Field == "" {
			return bodyNotObject(got)
		}
		if want := jsonKind(te.Type); got == "number" && (want == "a number" || want == "an integer") {
			// The right kind of value, but not one the field holds: "a
			// number, not a JSON number" would say nothing.
			lit := strings.TrimPrefix(te.Value, "number ")
			if len(lit) > 32 {
				lit = lit[:32] + "..."
			}
			fix := "send a number of a 64-bit float's range"
			if want == "an integer" {
				fix = "send a whole number of at most 64 bits, without a fraction or an exponent"
			}
			return badRequest("the body is not valid JSON for this endpoint: %s must be %s, not %s; %s",
				te.Field, want, lit, fix).withField(te.Field)
		}
		return badRequest("the body is not valid JSON for this endpoint: %s must be %s, not a JSON %s", te.Field, jsonKind(te.Type), got).withField(te.Field)
	}
	return badRequest("the body is not valid JSON for this endpoint: %v", err)
}

// bodyNotObject is a body that is a JSON value other than an object.
func bodyNotObject(got string) *apiError {
	return badRequest("the body must be a JSON object, not a JSON %s; send this endpoint's fields in one object, or {} for none", got)
}

// jsonKind names the JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "another JSON value"
}

// writeJSON encodes v before writing anything, so a value that cannot be
// encoded becomes a problem reply instead of half a body.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeBody(w, status, b)
}

// writeBody writes an encoded JSON reply and its newline.
func writeBody(w http.ResponseWriter, status int, b []byte) error {
	// Header values are assigned, not Set: one slice for both instead of
	// one each (a tool_gate reply is on the hot path).
	vals := []string{"application/json", strconv.Itoa(len(b) + 1)}
	h := w.Header()
	h["Content-Type"], h["Content-Length"] = vals[0:1:1], vals[1:2:2]
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
	return nil
}

// stamp names the run's generation and revision on the reply; a run
// dropped from memory by a failed save has no revision to show (the store
// keeps the one before the call).
func stamp(w http.ResponseWriter, e *entry) {
	h := w.Header()
	h[GenerationHeader] = e.genHdr
	if !e.gone {
		h["Etag"] = []string{etag(e.sess.Revision())}
	}
}

// lockMatching locks the run the request names (see lockRun) and checks
// its If-Match; the caller unlocks.
func (s *Server) lockMatching(ctx context.Context, r *http.Request) (*entry, error) {
	e, err := s.lockRun(ctx, r.PathValue("id"))
	if err != nil {
		return nil, err
	}
	if err := ifMatch(r, e.sess.Revision()); err != nil {
		err = failed(e, err) // names the run, as every error about one does
		s.unlock(e)
		return nil, err
	}
	return e, nil
}

// ifMatch enforces "If-Match: <revision>" (quoted or not, "*" for any): a
// client that saw an older revision gets 409 instead of acting on state it
// has not seen.
func ifMatch(r *http.Request, rev uint64) error {
	h := strings.TrimSpace(r.Header.Get("If-Match"))
	if h == "" || h == "*" {
		return nil
	}
	for _, tag := range strings.Split(h, ",") {
		tag = strings.Trim(strings.TrimPrefix(strings.TrimSpace(tag), "W/"), `"`)
		if n, err := strconv.ParseUint(tag, 10, 64); err == nil && n == rev {
			return nil
		}
	}
	e := fail(http.StatusConflict, errs.RevisionConflict,
		"If-Match %s does not match the run's revision %d; GET the run and decide again", errs.Clip(h, 200), rev)
	e.revision = &rev
	return e
}

// failed decorates an error from a session call with where the run stands,
// so a driver learns from the problem itself that a hook ended the run. A
// failed save changed nothing: it names the run only.
func failed(e *entry, err error) error {
	var ae *apiError
	if !errors.As(err, &ae) {
		ae = classify(err)
	}
	ae.runID = e.id
	if ae.code == codeStoreUnavailable {
		return ae
	}
	ae.termination = e.sess.Termination()
	rev := e.sess.Revision()
	ae.revision = &rev
	return ae
}

// createRun starts a run on the current generation and pins it: run_start
// runs here.
func (s *Server) createRun(w http.ResponseWriter, r *http.Request) error {
	if s.draining.Load() {
		return fail(http.StatusServiceUnavailable, errs.NotReady, "the sidecar is shutting down; start the run on another replica or after the restart")
	}
	var req createRequest
	if err := decodeBody(r, &req); err != nil {
		return err
	}
	if len(req.ThreadID) > maxIDLen || !utf8.ValidString(req.ThreadID) {
		return badRequest("thread_id must be valid UTF-8 of at most %d bytes", maxIDLen)
	}
	if len(req.Cwd) > hooks.MaxCwd {
		return badRequest("cwd must be a path of at most %d bytes, not %d (the agent's working directory)", hooks.MaxCwd, len(req.Cwd))
	}
	ctx := context.WithoutCancel(r.Context())
	e, err := s.start(ctx, req)
	if err != nil {
		return err
	}
	defer s.unlock(e)
	stamp(w, e)
	return writeJSON(w, http.StatusCreated, createReply{RunID: e.id, ThreadID: e.threadID, Generation: e.genID,
		Revision: e.sess.Revision(), Termination: e.sess.Termination()})
}

// start begins a run and registers it, locked. The HTTP API and the Claude
// Code adapter share it.
func (s *Server) start(ctx context.Context, req createRequest) (*entry, error) {
	if err := s.reserveThread(ctx, req.ThreadID); err != nil {
		return nil, err
	}
	g := s.h.Acquire()
	if req.Agent != "" {
		if _, ok := g.Runtime.Agent(req.Agent); !ok {
			g.Release()
			s.unreserveThread(req.ThreadID)
			return nil, badRequest("unknown agent %q%s; agents: %s", errs.Clip(req.Agent, 200),
				errs.DidYouMean(req.Agent, g.Runtime.AgentIDs()), strings.Join(g.Runtime.AgentIDs(), ", "))
		}
	}
	msgs := req.Messages
	if !req.bare {
		var err error
		if msgs, err = g.Runtime.Conversation(ctx, req.Agent, req.ThreadID, req.Messages); err != nil {
			g.Release()
			s.unreserveThread(req.ThreadID)
			return nil, err
		}
	}
	e := &entry{gen: g, genID: g.ID, genHdr: s.genHeader(g.ID)}
	e.sink = runSink{log: s.log, expired: &s.metrics.ticketsExpired}
	start := time.Now()
	sess, _, err := g.Runtime.Start(ctx, run.StartOptions{Agent: req.Agent, ThreadID: req.ThreadID,
		Messages: msgs, Tools: req.Tools, Events: &e.sink, Cwd: req.Cwd})
	s.metrics.phase(phase.RunStart.String(), time.Since(start))
	if sess == nil {
		g.Release()
		s.unreserveThread(req.ThreadID)
		return nil, err
	}
	sess.SetHandOff(true) // every request is decoded afresh
	e.id, e.threadID, e.sess, e.sink.runID = sess.RunID(), sess.ThreadID(), sess, sess.RunID()
	e.mu.Lock()
	if sess.Status() == run.Done {
		e.done.Store(true)
		e.release()
	}
	s.register(e)
	s.shed(e)
	if serr := s.settle(ctx, e, true); err == nil {
		err = serr
	}
	if err != nil {
		err = failed(e, err)
		s.unlock(e)
		return nil, err
	}
	return e, nil
}

// withPluginTools puts the active plugins' tools before a step's tools (the
// order `awaken-lua run` offers them in); a plugin's tool takes the place
// of a client tool of the same name (the sidecar runs it).
func withPluginTools(tools, plugin []model.ToolSpec) []model.ToolSpec {
	if len(plugin) == 0 {
		return tools
	}
	names := make(map[string]bool, len(plugin))
	for _, t := range plugin {
		names[t.Name] = true
	}
	out := append(make([]model.ToolSpec, 0, len(tools)+len(plugin)), plugin...)
	for _, t := range tools {
		if !names[t.Name] {
			out = append(out, t)
		}
	}
	return out
}

func viewCall(c run.CallRecord) callView {
	v := callView{ID: c.Call.ID, Name: c.Call.Name, Args: c.Call.Args, Status: string(c.Status), Result: c.Result}
	if v.Args == nil {
		v.Args = map[string]any{}
	}
	if c.Gate != nil {
		v.Decision = c.Gate.Decision.String()
		v.Ticket = c.Gate.Ticket
	}
	return v
}

// resume applies decisions to a waiting run's suspended calls. Resumed
// calls come back with status "resuming": gate them again, run them, then
// end the step.
func (s *Server) resume(w http.ResponseWriter, r *http.Request) error {
	var body resumeBody
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	if len(body.Decisions) == 0 {
		return badRequest("resume needs {\"decisions\": [{\"target\", \"action\": \"resume\" | \"cancel\", \"result\"?, \"reason\"?}]}")
	}
	for i, d := range body.Decisions {
		if d.Target == "" {
			return badRequest("decisions[%d] has no target (a call id or a ticket id)", i).withField(fmt.Sprintf("decisions[%d].target", i))
		}
	}
	return s.withRun(w, r, "resume", func(ctx context.Context, sess *run.Session, out *phaseOut) error {
		calls, o, err := sess.Resume(ctx, body.Decisions)
		if err != nil {
			return err
		}
		reply := resumeReply{Revision: o.Revision, Calls: make([]callView, 0, len(calls))}
		for _, c := range calls {
			reply.Calls = append(reply.Calls, viewCall(c))
		}
		out.reply = reply
		return nil
	})
}

func (s *Server) getRun(w http.ResponseWriter, r *http.Request) error {
	e, err := s.lockRun(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	body, err := func() ([]byte, error) {
		defer s.unlock(e)
		sess := e.sess
		reply := runReply{RunID: e.id, ThreadID: e.threadID, Status: string(sess.Status()), Step: sess.Step(),
			Revision: sess.Revision(), Generation: e.genID, Suspended: sess.Suspended(), State: sess.State(),
			Termination: sess.Termination()}
		if reply.Suspended == nil {
			reply.Suspended = []gate.Ticket{}
		}
		stamp(w, e)
		return json.Marshal(reply)
	}()
	if err != nil {
		return err
	}
	// Written unlocked, as a phase's reply (withRun).
	return writeBody(w, http.StatusOK, body)
}

// deleteRun ends a run for good: a waiting run is cancelled (its calls are
// cancelled and run_end runs, so its thread can start another run); a run
// that ended but has not run run_end runs it; a run in the middle of a step
// is forgotten without saving its thread. Then it leaves memory and store.
func (s *Server) deleteRun(w http.ResponseWriter, r *http.Request) error {
	ctx := context.WithoutCancel(r.Context())
	e, err := s.lockMatching(ctx, r)
	if err != nil {
		return err
	}
	defer s.unlock(e)
	stamp(w, e)
	sess := e.sess
	var endErr error
	switch {
	case sess.Status() == run.Waiting:
		_, endErr = sess.Cancel(ctx, "the run was deleted through the sidecar API")
	case sess.Status() == run.Running && sess.Termination() != "":
		_, endErr = sess.RunEnd(ctx)
	}
	var se *run.SaveError
	if errors.As(endErr, &se) {
		// The thread was not saved (the session is as it was): deleting
		// the run now would leave its thread naming a run that is gone.
		return failed(e, endErr)
	}
	if endErr != nil {
		// A failing run_end hook ends the run in error; it is deleted all the same.
		s.log.LogAttrs(ctx, slog.LevelWarn, "run_end failed while deleting a run", slog.String("run_id", e.id), slog.String("error", endErr.Error()))
	}
	del := s.h.Store().DeleteRun
	if sd, ok := s.h.Store().(run.SeqDeleter); ok {
		// Another replica may have saved the run since the check that
		// lockMatching made: forget only the save this decision is on.
		del = func(ctx context.Context, id string) error { return sd.DeleteRunAt(ctx, id, sess.Saves()) }
	}
	if err := del(ctx, e.id); err != nil {
		if errs.CodeOf(err) == errs.RevisionConflict {
			s.drop(e) // stale: the retry restores the run as saved
			return failed(e, fail(http.StatusConflict, errs.RevisionConflict, "run %s was changed by another replica during this call, so it was not deleted; call again", e.id))
		}
		err = storeUnavailable(fmt.Errorf("delete run %s: %w", e.id, err))
		// The store still has the run: the next call restores it, and a run
		// that did not end keeps its thread meanwhile.
		s.unload(e, time.Now(), sess.Status() != run.Done)
		return failed(e, err)
	}
	sess.JournalAbandon() // a run deleted mid-step ends nowhere else
	if err := sess.Release(ctx); err != nil {
		// The run is gone: the thread's next run reports it lost and
		// releases the thread then.
		s.log.LogAttrs(ctx, slog.LevelWarn, "cannot release the thread of a deleted run", slog.String("run_id", e.id), slog.String("error", err.Error()))
	}
	s.finish(e)
	s.drop(e)
	w.WriteHeader(http.StatusNoContent)
	return nil
}
