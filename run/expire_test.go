package run_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/awaken-lua/awaken-lua/engine"
	"github.com/awaken-lua/awaken-lua/engine/event"
	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/engine/plugin"
	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// expiring suspends deploy with a ticket of the given timeout and
// on_timeout, and lets it pass once resumed; it records the resume reason
// the gate saw.
func expiring(timeout time.Duration, onTimeout string, seen *atomic.Value) plugin.Plugin {
	return gateFn("approver", func(in *plugin.Input) gate.Decision {
		if in.Tool.Call.Name != "deploy" {
			return gate.Decision{}
		}
		if r := in.Tool.Resume; r != nil {
			seen.Store(r.Reason)
			if r.Action == "resume" {
				return gate.Decision{}
			}
		}
		return gate.Decision{Kind: gate.Suspend, Ticket: &gate.Ticket{ID: "t-" + in.Tool.Call.ID, Timeout: timeout, OnTimeout: onTimeout}}
	})
}

func TestTicketExpiry(t *testing.T) {
	tests := []struct {
		name       string
		timeout    time.Duration // the ticket's
		onTimeout  string
		deflt      time.Duration // [runtime] ticket_timeout
		wait       time.Duration
		human      *run.ResumeDecision
		expired    bool
		deployRuns int32
		status     string
	}{
		{"not yet", time.Hour, "", 0, 59 * time.Minute, &run.ResumeDecision{Target: "call_1_1", Action: "cancel", Reason: "no"}, false, 0, "cancelled"},
		{"expired: cancel by default", time.Hour, "", 0, time.Hour, nil, true, 0, "cancelled"},
		{"expired: resume", time.Minute, gate.OnTimeoutResume, 0, 2 * time.Minute, nil, true, 1, "succeeded"},
		{"a late human answer is dropped", time.Minute, "", 0, time.Hour, &run.ResumeDecision{Target: "call_1_1", Action: "resume"}, true, 0, "cancelled"},
		{"the runtime's default", 0, "", 10 * time.Minute, 10 * time.Minute, nil, true, 0, "cancelled"},
		{"the ticket's own timeout wins", time.Hour, "", 10 * time.Minute, 30 * time.Minute, nil, false, 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{now: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)}
			var seen atomic.Value
			set, err := run.NewSet(expiring(tc.timeout, tc.onTimeout, &seen))
			if err != nil {
				t.Fatal(err)
			}
			var n atomic.Int64
			rt, err := run.New(engine.New(set, engine.WithClock(clock.Now)), run.WithTicketTimeout(tc.deflt),
				run.WithIDs(func(p string) string { return fmt.Sprintf("%s%d", p, n.Add(1)) }))
			if err != nil {
				t.Fatal(err)
			}
			deploy := newTool("deploy", nil)
			ctx := context.Background()
			res, _ := rt.Run(ctx, run.Request{ThreadID: "th", Model: turns(calls(call("deploy", nil))), Tools: []plugin.Tool{deploy}})
			if res.Status != run.Waiting {
				t.Fatalf("first run: %s %q", res.Status, res.Termination)
			}
			clock.Add(tc.wait)
			var ds []run.ResumeDecision
			if tc.human != nil {
				ds = append(ds, *tc.human)
			}
			rec := &event.Recorder{}
			res2, err := rt.ResumeRun(ctx, run.ResumeRequest{ThreadID: "th", Decisions: ds, Model: turns(text("ok")), Tools: []plugin.Tool{deploy}, Events: rec})
			if err != nil {
				t.Fatal(err)
			}
			var expired []event.TicketExpired
			var done event.ToolCallDone
			for _, ev := range rec.Events() {
				switch e := ev.(type) {
				case event.TicketExpired:
					expired = append(expired, e)
				case event.ToolCallDone:
					done = e
				}
			}
			if got := len(res2.Expired) == 1 && len(expired) == 1; got != tc.expired {
				t.Fatalf("expired %v, events %+v; want expired %v", res2.Expired, expired, tc.expired)
			}
			if tc.expired && seen.Load() == nil && tc.onTimeout == gate.OnTimeoutResume {
				t.Fatal("the gate did not see the resume")
			}
			if tc.onTimeout == gate.OnTimeoutResume && seen.Load() != "expired" {
				t.Fatalf("the gate saw resume reason %v, want \"expired\"", seen.Load())
			}
			if deploy.runs.Load() != tc.deployRuns || done.Status != tc.status {
				t.Fatalf("deploy ran %d times, call ended %q (%+v)", deploy.runs.Load(), done.Status, done)
			}
			if tc.status == "" && res2.Status != run.Waiting {
				t.Fatalf("nothing expired and nobody decided: the run waits, got %s", res2.Status)
			}
		})
	}
}

// TestExpireThroughTheSession is how a sidecar settles a call nobody
// answered: NextExpiry says when, Expire settles and saves nothing twice.
func TestExpireThroughTheSession(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)}
	var seen atomic.Value
	set, err := run.NewSet(expiring(5*time.Minute, "", &seen))
	if err != nil {
		t.Fatal(err)
	}
	rt, err := run.New(engine.New(set, engine.WithClock(clock.Now)))
	if err != nil {
		t.Fatal(err)
	}
	res, _ := rt.Run(context.Background(), run.Request{Model: turns(calls(call("deploy", nil))), Tools: []plugin.Tool{newTool("deploy", nil)}})
	s := res.Session
	if want := clock.Now().Add(5 * time.Minute); !s.NextExpiry().Equal(want) {
		t.Fatalf("NextExpiry %v, want %v", s.NextExpiry(), want)
	}
	if got, _, err := s.Expire(context.Background()); err != nil || got != nil || s.Status() != run.Waiting {
		t.Fatalf("before the expiry: %v %v %s", got, err, s.Status())
	}
	clock.Add(5 * time.Minute)
	got, _, err := s.Expire(context.Background())
	if err != nil || len(got) != 1 || got[0].Status != run.CallCancelled || !got[0].Expired {
		t.Fatalf("at the expiry: %+v %v", got, err)
	}
	if got, _, _ := s.Expire(context.Background()); got != nil {
		t.Fatalf("a second Expire settled %+v", got)
	}
	if !s.NextExpiry().IsZero() {
		t.Fatal("no ticket is left to expire")
	}
}

type records struct {
	mu   sync.Mutex
	recs []journal.Record
}

func (r *records) Record(rec *journal.Record) {
	r.mu.Lock()
	r.recs = append(r.recs, *rec)
	r.mu.Unlock()
}

// The journal records an expired call as the runtime's decision: a resume
// with no human decision that names the call as expired.
func TestExpiryIsJournaled(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)}
	var seen atomic.Value
	set, err := run.NewSet(expiring(5*time.Minute, "", &seen))
	if err != nil {
		t.Fatal(err)
	}
	j := &records{}
	rt, err := run.New(engine.New(set, engine.WithClock(clock.Now)), run.WithJournal(j, "h"))
	if err != nil {
		t.Fatal(err)
	}
	res, _ := rt.Run(context.Background(), run.Request{Model: turns(calls(call("deploy", nil))), Tools: []plugin.Tool{newTool("deploy", nil)}})
	clock.Add(5 * time.Minute)
	if _, _, err := res.Session.Expire(context.Background()); err != nil {
		t.Fatal(err)
	}
	last := j.recs[len(j.recs)-1]
	if last.Phase != journal.Resume || len(last.Input.Resume) != 0 || len(last.Expired) != 1 ||
		!last.Input.Now.Equal(clock.Now()) {
		t.Fatalf("the expiry's record: %+v", last)
	}
	if last.Expired[0] != res.Session.Calls()[0].Call.ID {
		t.Fatalf("expired %v, calls %+v", last.Expired, res.Session.Calls())
	}
}

// A tool that answers pending suspends its call with the ticket its data
// holds, read as a plugin's ticket is: its timeout arms the expiry. Data
// that is not a ticket fails the call, saying why.
func TestToolPendingTicket(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 1, 1, 9, 0, 0, 0, time.UTC)}
	var pending any = map[string]any{"message": "approve the deploy", "action": "approve", "timeout": "10m", "on_timeout": "resume"}
	deploy := newTool("deploy", func(map[string]any) (model.ToolResult, error) {
		return model.ToolResult{Status: model.StatusPending, Data: pending}, nil
	})
	set, err := run.NewSet()
	if err != nil {
		t.Fatal(err)
	}
	rt, err := run.New(engine.New(set, engine.WithClock(clock.Now)))
	if err != nil {
		t.Fatal(err)
	}
	res, err := rt.Run(context.Background(), run.Request{Model: turns(calls(call("deploy", nil))), Tools: []plugin.Tool{deploy}})
	if err != nil {
		t.Fatal(err)
	}
	tk := res.Session.Suspended()
	if len(tk) != 1 || tk[0].Action != "approve" || tk[0].Message != "approve the deploy" || tk[0].OnTimeout != gate.OnTimeoutResume ||
		tk[0].ResumeMode != gate.UseDecisionAsResult || !tk[0].ExpiresAt.Equal(clock.Now().Add(10*time.Minute)) {
		t.Fatalf("suspended: %+v", tk)
	}

	for _, tc := range []struct {
		data any
		want string
	}{
		{map[string]any{"resume_mode": "sideways"}, "not a ticket: resume_mode \"sideways\""},
		{42.0, "not a ticket: a ticket is an object of fields"},
		{[]any{"approve"}, "not a ticket: a ticket is an object of fields"},
	} {
		pending = tc.data
		res, err = rt.Run(context.Background(), run.Request{Model: turns(calls(call("deploy", nil)), text("done")), Tools: []plugin.Tool{deploy}})
		if err != nil {
			t.Fatal(err)
		}
		var answer string
		for _, m := range res.Session.Messages() {
			if m.Role == model.RoleTool {
				answer = m.Content
			}
		}
		if res.Session.SuspendedCount() != 0 || res.Termination != "natural" || !strings.Contains(answer, tc.want) {
			t.Fatalf("%v: a pending answer that is no ticket: %s, the model read %q", tc.data, res.Termination, answer)
		}
	}
}
