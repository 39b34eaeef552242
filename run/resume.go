package run

import (
	"context"
	"fmt"
	"strconv"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/value"
	"github.com/awaken-lua/awaken-lua/journal"
)

// ResumeDecision is a host's decision for a suspended call.
type ResumeDecision = gate.Resume

// Resume applies decisions to suspended calls, addressed by call id or
// ticket id, after the runtime's own for calls whose tickets expired (see
// Expire): "resume" makes the call pass the gate again (with call.resume
// set), "cancel" cancels it without running it. Every target is checked
// first; an unknown one is unknown_resume_target and nothing changes. The run
// is running again afterwards: the host gates and runs the resumed calls,
// then ends the step.
func (s *Session) Resume(ctx context.Context, decisions []ResumeDecision) (_ []CallRecord, o Outcome, err error) {
	s.stamp()
	var expired []*CallRecord
	if s.rt.journal != nil {
		given := decisions
		defer func() {
			s.journalPhase(journal.Resume, err, func(sl *journal.Slot) {
				sl.In.Resume = given
				for _, c := range expired {
					sl.Rec.Expired = append(sl.Rec.Expired, c.Call.ID)
				}
			})
		}()
	}
	if s.status != Waiting {
		for _, d := range decisions {
			if late := s.lateFor(d.Target); late != "" {
				return nil, s.outcome(), invalid("resume: %s; the run is %s, not waiting", late, s.status)
			}
		}
		return nil, s.outcome(), invalid("resume: the run is %s, not waiting", s.status)
	}
	decisions, expired = s.withExpiries(decisions)
	// Every decision is checked before anything changes.
	byTicket := map[string]*CallRecord{}
	for _, c := range s.calls {
		if c.Status == CallSuspended && c.Gate != nil && c.Gate.Ticket != nil {
			if _, seen := byTicket[c.Gate.Ticket.ID]; !seen {
				byTicket[c.Gate.Ticket.ID] = c
			}
		}
	}
	targets := make([]*CallRecord, len(decisions))
	results := make([]any, len(decisions))
	taken := make(map[*CallRecord]int, len(decisions))
	for i, d := range decisions {
		path := "$.decisions[" + strconv.Itoa(i) + "]"
		if d.Target == "" {
			return nil, s.outcome(), errs.Field(path+".target", "a decision needs a target: the id of a suspended call or of its ticket")
		}
		hit := s.call(d.Target)
		if hit == nil || hit.Status != CallSuspended {
			hit = byTicket[d.Target]
		}
		if hit == nil {
			msg := fmt.Sprintf("%q is not a suspended call or ticket of run %s", d.Target, s.info.ID)
			if late := s.lateFor(d.Target); late != "" {
				msg = late
			}
			e := errs.Field(path+".target", "%s; suspended: %s", msg, s.suspendedIDs())
			e.Code = errs.UnknownResumeTarget
			return nil, s.outcome(), e
		}
		if d.Action != "resume" && d.Action != "cancel" {
			return nil, s.outcome(), errs.Field(path+".action", "decision for %q: action is \"resume\" or \"cancel\", not %q", d.Target, d.Action)
		}
		if j, dup := taken[hit]; dup {
			return nil, s.outcome(), errs.Field(path+".target", "decisions[%d] and decisions[%d] both target call %s", j, i, hit.Call.ID)
		}
		taken[hit] = i
		r, err := value.Normalize(d.Result)
		if err != nil {
			return nil, s.outcome(), errs.Field(path+".result", "decision for %q: the result is not a JSON value: %v", d.Target, err)
		}
		targets[i], results[i] = hit, r
	}
	if !allowed(runMoves, s.status, Running) {
		return nil, s.outcome(), invalid("resume: the run cannot go from %s to running", s.status)
	}
	s.status = Running
	s.termination = ""
	s.markExpired(expired)
	var out []CallRecord
	for i, d := range decisions {
		c := targets[i]
		if d.Action == "cancel" {
			s.cancelCall(c, d.Reason)
		} else {
			mode := string(gate.Replay)
			if c.Gate != nil && c.Gate.Ticket != nil {
				mode = string(c.Gate.Ticket.ResumeMode)
			}
			c.Resume = &ResumeRecord{Action: d.Action, Result: results[i], Reason: d.Reason, Mode: mode}
			if c.Gate != nil && c.Gate.Ticket != nil {
				c.Resume.TicketID = c.Gate.Ticket.ID
			}
			if err := s.move(c, CallResuming); err != nil {
				return nil, s.outcome(), err
			}
			c.Started = false
			s.events.Emit(event.ToolCallResumed{CallID: c.Call.ID, Result: c.Resume.Result})
		}
		out = append(out, *c)
	}
	if err := s.record(ctx, phase.StepEnd, KeyRun, s.runRecord()); err != nil {
		return nil, s.outcome(), err
	}
	if err := s.recordCalls(ctx, phase.ToolGate); err != nil {
		return nil, s.outcome(), err
	}
	return out, s.outcome(), nil
}
