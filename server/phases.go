package server

// The phase endpoints: POST /v1/runs/{id}/phases/<phase>, one route and
// one handler per phase, each decoding only its own body and sharing
// withRun for the rest (lock, call, settle, reply).

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// phaseOut is what a phase handler produced: a reply to encode, or raw
// JSON (the gate's reply, encoded by hand: boxing it costs an
// allocation), and whether the run changed (a retry changes nothing, so
// nothing is saved).
type phaseOut struct {
	reply   any
	raw     []byte
	changed bool
}

// withRun locks the run the request names, runs fn (a phase, or resume:
// what the metrics call it) on its session, settles the run (saving it when
// fn changed it) and writes the reply. The call finishes whatever the
// client does once it started.
func (s *Server) withRun(w http.ResponseWriter, r *http.Request, what string,
	fn func(ctx context.Context, sess *run.Session, out *phaseOut) error) error {
	ctx := context.WithoutCancel(r.Context())
	e, err := s.lockMatching(ctx, r)
	if err != nil {
		return err
	}
	body, err := func() ([]byte, error) {
		defer s.unlock(e)
		start := time.Now()
		out := phaseOut{changed: true}
		err := fn(ctx, e.sess, &out)
		s.metrics.phase(what, time.Since(start))
		if err != nil {
			// Nothing changed unless the error ended the run; settle sees that.
			out.changed = false
		}
		if serr := s.settle(ctx, e, out.changed); err == nil {
			err = serr
		}
		stamp(w, e)
		if err != nil {
			return nil, failed(e, err)
		}
		if out.raw != nil {
			return out.raw, nil
		}
		return json.Marshal(out.reply)
	}()
	if err != nil {
		return err
	}
	// Written once the run is unlocked: a client slow to read a large
	// reply holds up only itself, not the run's next call.
	return writeBody(w, http.StatusOK, body)
}

// phaseRoutes are the phase endpoints, each with its handler.
func (s *Server) phaseRoutes() map[phase.Phase]handlerFunc {
	return map[phase.Phase]handlerFunc{
		phase.StepStart:         s.stepStart,
		phase.BeforeInference:   s.beforeInference,
		phase.AfterInference:    s.afterInference,
		phase.ToolGate:          s.toolGate,
		phase.BeforeToolExecute: s.beforeToolExecute,
		phase.AfterToolExecute:  s.afterToolExecute,
		phase.StepEnd:           s.stepEnd,
		phase.RunEnd:            s.runEnd,
	}
}

// noPhase answers a phase path that is not a phase endpoint: run_start
// (which runs at POST /v1/runs) or an unknown name.
func (s *Server) noPhase(w http.ResponseWriter, r *http.Request) error {
	name := r.PathValue("phase")
	if name == phase.RunStart.String() {
		return fail(http.StatusConflict, errs.PhaseOutOfOrder, "run_start runs when the run is created (POST /v1/runs)")
	}
	return fail(http.StatusNotFound, errs.BadRequest, "no phase %q%s; phases: step_start, before_inference, after_inference, tool_gate, before_tool_execute, after_tool_execute, step_end, run_end",
		errs.Clip(name, 200), errs.DidYouMean(name, phase.Names()))
}

func (s *Server) stepStart(w http.ResponseWriter, r *http.Request) error {
	if err := decodeBody(r, &struct{}{}); err != nil {
		return err
	}
	return s.withRun(w, r, phase.StepStart.String(), func(ctx context.Context, sess *run.Session, out *phaseOut) error {
		o, err := sess.StepStart(ctx)
		out.reply = outcomeReply{Revision: o.Revision, Termination: o.Termination}
		return err
	})
}

func (s *Server) beforeInference(w http.ResponseWriter, r *http.Request) error {
	var body beforeInferenceBody
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	if body.Request == nil {
		return badRequest("before_inference needs {\"request\": {\"messages\", \"tools\", \"params\"}}")
	}
	return s.withRun(w, r, phase.BeforeInference.String(), func(ctx context.Context, sess *run.Session, out *phaseOut) error {
		req := model.Request{Messages: body.Request.Messages, Tools: body.Request.Tools, Params: body.Request.Params}
		if req.Tools == nil {
			req.Tools = sess.HostTools()
		}
		req.Tools = withPluginTools(req.Tools, sess.PluginToolSpecs())
		sent, o, err := sess.BeforeInference(ctx, req)
		if sent.Messages == nil {
			sent.Messages = []model.Message{}
		}
		if sent.Tools == nil {
			sent.Tools = []model.ToolSpec{}
		}
		out.reply = beforeInferenceReply{Request: sent, Revision: o.Revision, Termination: o.Termination}
		return err
	})
}

func (s *Server) afterInference(w http.ResponseWriter, r *http.Request) error {
	var body afterInferenceBody
	if err := decodeBody(r, &body); err != nil {
		return err
	}
	if body.Response == nil {
		return badRequest("after_inference needs {\"response\": {\"text\", \"tool_calls\", \"usage\"}}")
	}
	return s.withRun(w, r, phase.AfterInference.String(), func(ctx context.Context, sess *run.Session, out *phaseOut) error {
		o, err := sess.AfterInference(ctx, *body.Response)
		out.reply = outcomeReply{Revision: o.Revision, Termination: o.Termination}
		return err
	})
}

// callPhase decodes the body of a per-call phase: the call, and for
// after_tool_execute its result.
func callPhase(r *http.Request, p phase.Phase) (*callBody, error) {
	body := new(callBody)
	if err := decodeCallBody(r, body); err != nil {
		return nil, err
	}
	if body.Call == nil || body.Call.ID == "" {
		return nil, badRequest("%s needs {\"call\": {\"id\", \"name\", \"args\"}} with the call's id", p)
	}
	if body.Result != nil && p != phase.AfterToolExecute {
		return nil, badRequest("%s takes no result; send it to after_tool_execute", p)
	}
	return body, nil
}

func (s *Server) toolGate(w http.ResponseWriter, r *http.Request) error {
	body, err := callPhase(r, phase.ToolGate)
	if err != nil {
		return err
	}
	return s.withRun(w, r, phase.ToolGate.String(), func(ctx context.Context, sess *run.Session, out *phaseOut) error {
		rev0 := sess.Revision()
		d, o, err := sess.ToolGate(ctx, *body.Call)
		if err != nil {
			return err
		}
		// A retry gets the kept decision and changes nothing: no save, no count.
		if out.changed = o.Revision != rev0; out.changed {
			s.metrics.decisions.inc(d.Decision.String())
		}
		if d.Args == nil {
			d.Args = map[string]any{}
		}
		out.raw, err = appendGateReply(make([]byte, 0, 256),
			gateReply{Decision: d.Decision, Args: d.Args, Reason: d.Reason, Ticket: d.Ticket, Result: d.Result, Revision: o.Revision})
		return err
	})
}

func (s *Server) beforeToolExecute(w http.ResponseWriter, r *http.Request) error {
	body, err := callPhase(r, phase.BeforeToolExecute)
	if err != nil {
		return err
	}
	return s.withRun(w, r, phase.BeforeToolExecute.String(), func(ctx context.Context, sess *run.Session, out *phaseOut) error {
		// A plugin's tool runs here (the client cannot run it): the reply
		// carries its result for the client to pass on to
		// after_tool_execute. A retry gets the same result, and changes
		// nothing.
		if res, ran := sess.RunPluginTool(ctx, body.Call.ID); ran {
			out.changed, out.reply = false, beforeToolReply{Revision: sess.Revision(), Result: &res}
			return nil
		}
		o, err := sess.BeforeToolExecute(ctx, *body.Call)
		reply := beforeToolReply{Revision: o.Revision, Termination: o.Termination}
		if err == nil && o.Termination == "" {
			if res, ran := sess.RunPluginTool(ctx, body.Call.ID); ran {
				reply.Result, reply.Revision = &res, sess.Revision()
			}
		}
		out.reply = reply
		return err
	})
}

func (s *Server) afterToolExecute(w http.ResponseWriter, r *http.Request) error {
	body, err := callPhase(r, phase.AfterToolExecute)
	if err != nil {
		return err
	}
	return s.withRun(w, r, phase.AfterToolExecute.String(), func(ctx context.Context, sess *run.Session, out *phaseOut) error {
		var res model.ToolResult
		if body.Result != nil {
			res = *body.Result
		}
		result, o, err := sess.AfterToolExecute(ctx, *body.Call, res)
		out.reply = afterToolReply{Result: result, Revision: o.Revision, Termination: o.Termination}
		return err
	})
}

func (s *Server) stepEnd(w http.ResponseWriter, r *http.Request) error {
	if err := decodeBody(r, &struct{}{}); err != nil {
		return err
	}
	return s.withRun(w, r, phase.StepEnd.String(), func(ctx context.Context, sess *run.Session, out *phaseOut) error {
		o, err := sess.StepEnd(ctx)
		out.reply = stepEndReply{Revision: o.Revision, Termination: o.Termination, Continued: o.Continued}
		return err
	})
}

func (s *Server) runEnd(w http.ResponseWriter, r *http.Request) error {
	if err := decodeBody(r, &struct{}{}); err != nil {
		return err
	}
	return s.withRun(w, r, phase.RunEnd.String(), func(ctx context.Context, sess *run.Session, out *phaseOut) error {
		o, err := sess.RunEnd(ctx)
		out.reply = outcomeReply{Revision: o.Revision, Termination: o.Termination}
		return err
	})
}
