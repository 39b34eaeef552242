package run

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/journal"
)

// expiredReason is the reason of the runtime's decision for an expired
// call, as a gate hook reads it in call.resume.reason.
const expiredReason = "expired"

// arm sets when a suspended call's ticket expires: its own timeout, else
// the runtime's default, counted from the runtime's clock.
func (s *Session) arm(t *gate.Ticket) {
	d := t.Timeout
	if d <= 0 {
		d = s.rt.ticketTimeout
	}
	if d <= 0 {
		return
	}
	t.ExpiresAt = s.now.Add(d)
	if t.OnTimeout == "" {
		t.OnTimeout = gate.OnTimeoutCancel
	}
}

// NextExpiry is when the earliest suspended call's ticket expires (zero:
// none will), so a host knows when to call Expire.
func (s *Session) NextExpiry() time.Time {
	var next time.Time
	for _, c := range s.calls {
		next = earlier(next, c)
	}
	return next
}

// NextExpiry is when the earliest suspended call of a saved run expires
// (zero: none will), as Session.NextExpiry says for the restored run: a
// store indexes it so that some replica settles the run.
func (cp Checkpoint) NextExpiry() time.Time {
	var next time.Time
	for i := range cp.Calls {
		next = earlier(next, &cp.Calls[i])
	}
	return next
}

// earlier is next, or c's expiry when c is suspended and expires first.
func earlier(next time.Time, c *CallRecord) time.Time {
	if c.Status != CallSuspended || c.Gate == nil || c.Gate.Ticket == nil {
		return next
	}
	if at := c.Gate.Ticket.ExpiresAt; !at.IsZero() && (next.IsZero() || at.Before(next)) {
		return at
	}
	return next
}

// Expire settles the suspended calls whose tickets have expired, as a
// human's decisions would be (ticket.on_timeout: cancel or resume), and
// records them as expired. It does nothing while none has, or when the run
// is not waiting. Resume settles them too, before a human's decisions.
func (s *Session) Expire(ctx context.Context) ([]CallRecord, Outcome, error) {
	s.stamp()
	if s.status != Waiting || len(s.due(s.now)) == 0 {
		return nil, s.outcome(), nil
	}
	return s.Resume(ctx, nil)
}

// due lists the suspended calls whose tickets expired by now.
func (s *Session) due(now time.Time) []*CallRecord {
	var out []*CallRecord
	for _, c := range s.calls {
		if c.Status != CallSuspended || c.Gate == nil || c.Gate.Ticket == nil {
			continue
		}
		if at := c.Gate.Ticket.ExpiresAt; !at.IsZero() && !now.Before(at) {
			out = append(out, c)
		}
	}
	return out
}

// withExpiries returns the decisions the runtime takes for expired calls
// followed by the host's decisions for the others; a host's decision for
// an expired call comes too late and is dropped (the ticket_expired event
// says what was decided instead).
func (s *Session) withExpiries(decisions []ResumeDecision) ([]ResumeDecision, []*CallRecord) {
	due := s.due(s.now)
	if len(due) == 0 {
		return decisions, nil
	}
	expired := make(map[string]bool, 2*len(due))
	out := make([]ResumeDecision, 0, len(due)+len(decisions))
	for _, c := range due {
		t := c.Gate.Ticket
		expired[c.Call.ID], expired[t.ID] = true, true
		action := "cancel"
		if t.OnTimeout == gate.OnTimeoutResume {
			action = "resume"
		}
		out = append(out, ResumeDecision{Target: c.Call.ID, Action: action, Reason: expiredReason})
	}
	for _, d := range decisions {
		if !expired[d.Target] {
			out = append(out, d)
		}
	}
	return out, due
}

// markExpired records the calls the runtime decided for, once Resume has
// accepted every decision.
func (s *Session) markExpired(due []*CallRecord) {
	for _, c := range due {
		c.Expired = true
		s.callChanged(c)
		s.expired = append(s.expired, c.Call.ID)
		t := c.Gate.Ticket
		s.events.Emit(event.TicketExpired{CallID: c.Call.ID, TicketID: t.ID, OnTimeout: t.OnTimeout,
			ExpiredAt: t.ExpiresAt.UTC().Format(time.RFC3339Nano)})
	}
}

// Unbound lifts the expiry of suspended call id's ticket: its decision is
// taken where no expiry can be enforced (a coding agent's own dialog,
// which runs the call whenever its user approves), so a late approval is
// the truth about the call, not a decision to drop. It reports whether
// the call had an expiry to lift.
func (s *Session) Unbound(id string) bool {
	c := s.call(id)
	if c == nil || c.Status != CallSuspended || c.Gate == nil || c.Gate.Ticket == nil || c.Gate.Ticket.ExpiresAt.IsZero() {
		return false
	}
	// Copies: the record's gate and ticket may be shared with a decision
	// already handed out.
	g, t := *c.Gate, *c.Gate.Ticket
	t.ExpiresAt = time.Time{}
	g.Ticket = &t
	c.Gate = &g
	s.callChanged(c)
	// Journaled: replay and a shadow would otherwise expire a late
	// approval the run took, and flag the run as disagreeing with itself.
	s.journalPhase(journal.Unbound, nil, func(sl *journal.Slot) { sl.SetCall(c.Call) })
	return true
}

// ExpiredCalls lists the calls the runtime decided for since this
// Session was started or restored.
func (s *Session) ExpiredCalls() []string { return slices.Clone(s.expired) }

// lateFor says why a decision for target comes too late when target names
// a call (or its ticket) of the step whose approval expired and that the
// runtime decided for: "" otherwise. Without it a late decision is refused
// as one for a run that does not wait or for an unknown target, which
// does not tell the human that nobody's answer was awaited any longer.
func (s *Session) lateFor(target string) string {
	for _, c := range s.calls {
		if !c.Expired || c.Status == CallSuspended || c.Gate == nil || c.Gate.Ticket == nil {
			continue
		}
		if t := c.Gate.Ticket; c.Call.ID == target || t.ID == target {
			decided := "cancelled"
			if t.OnTimeout == gate.OnTimeoutResume {
				decided = "resumed"
			}
			return fmt.Sprintf("the approval of call %s (ticket %s) expired at %s and the runtime %s it (on_timeout %q)",
				c.Call.ID, t.ID, t.ExpiresAt.UTC().Format(time.RFC3339), decided, t.OnTimeout)
		}
	}
	return ""
}
