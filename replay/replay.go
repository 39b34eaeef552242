// Package replay re-drives journaled runs (package journal) through a
// candidate plugin generation with the recorded inputs (no model, no
// tools) and reports where the candidate decides differently: gate
// decisions, context messages placed, the request's tools and parameters,
// runtime.continue and terminations. A run is replayed up to its first
// divergence, since what the agent saw next would no longer be recorded.
//
// A shadow generation (Shadow) is the same replay, fed live by the
// enforced generation's journal.
package replay

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/journal"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/run"
)

// Flip kinds besides "<from>-><to>" and "<kind> by another plugin" for
// gate decisions.
const (
	RewriteChanged     = "rewrite changed"
	ContextChanged     = "context changed"
	RequestChanged     = "request changed"
	TerminationChanged = "termination changed"
	ContinueChanged    = "continue changed"
	ReadsMasked        = "reads masked field"
	// Failed: the candidate could not take a recorded input (a hook
	// failed where the recording had none is a termination change; this is
	// a phase the candidate refused).
	Failed = "replay failed"

	byAnother = " by another plugin"
)

// Replayer drives recorded runs through one candidate runtime. It is safe
// for concurrent use by different runs.
type Replayer struct {
	rt    *run.Runtime
	store *run.MemoryStore

	mu   sync.Mutex
	runs map[string]*runState
}

type runState struct {
	header *journal.Record
	s      *run.Session
	got    *journal.Record // the candidate's record of the phase just driven
	done   bool            // diverged or ended: later records are ignored
	// ended: the run's end record came before the phase that ended the
	// run, as journals written before end was a run's last record have it;
	// the run is forgotten after that phase.
	ended bool
	// last is the run's phase record driven last (see retried).
	last *journal.Record
}

// New makes a Replayer over the candidate runtime; its runs keep their
// state in a memory store of their own.
func New(candidate *run.Runtime) (*Replayer, error) {
	r := &Replayer{store: run.NewMemoryStore(), runs: map[string]*runState{}}
	// No audit: the candidate's decisions were never enforced.
	rt, err := candidate.Derive(run.WithStore(r.store), run.WithJournal(recorder{r}, ""), run.WithoutAudit())
	if err != nil {
		return nil, err
	}
	r.rt = rt
	return r, nil
}

// recorder hands the candidate's own records to the run being replayed.
type recorder struct{ r *Replayer }

func (c recorder) Record(rec *journal.Record) {
	if rec.Rec != journal.KindPhase {
		return
	}
	c.r.mu.Lock()
	st := c.r.runs[rec.RunID]
	c.r.mu.Unlock()
	if st != nil {
		cp := *rec
		st.got = &cp
	}
}

// Apply drives one recorded record through the candidate and returns the
// flip it found, if any. Records of one run must come in order and not
// concurrently; records of runs without their header are ignored (their
// start was not recorded, or aged out). A phase record the writer
// shortened (Record.Omitted) ends the replay of its run.
func (r *Replayer) Apply(ctx context.Context, rec *journal.Record) (*journal.Flip, error) {
	switch rec.Rec {
	case journal.KindRun:
		r.mu.Lock()
		r.runs[rec.RunID] = &runState{header: rec}
		r.mu.Unlock()
		return nil, nil
	case journal.KindEnd:
		if rec.Termination == run.Abandoned {
			// Its host forgot it mid-step: no phase follows.
			r.forget(rec.RunID)
		} else {
			r.end(rec.RunID)
		}
		return nil, nil
	case journal.KindPhase:
	default:
		return nil, nil
	}
	r.mu.Lock()
	st := r.runs[rec.RunID]
	r.mu.Unlock()
	if st == nil || st.done {
		return nil, nil
	}
	if ok, _ := r.admit(st, rec); !ok {
		return nil, nil
	}
	return r.follow(ctx, st, rec)
}

// admit tells whether a phase record of a run still followed is to be
// driven, and when not, why the run is no longer followed ("" when it
// is: a retry that decided as the first try was driven once already).
func (r *Replayer) admit(st *runState, rec *journal.Record) (ok bool, stop string) {
	if len(rec.Omitted) > 0 {
		// The writer left out part of the record (it was too large for a
		// reader): the phase cannot be driven as it ran, nor the run after it.
		st.done = true
		return false, fmt.Sprintf("the journal left out this record's %s (too large to write whole)", strings.Join(rec.Omitted, ", "))
	}
	switch retried(st.last, rec) {
	case retrySame:
		return false, ""
	case retryOther:
		// The run went on from the retry, which the candidate cannot be
		// put back to drive.
		st.done = true
		return false, "the host ran this phase again (its save had failed) and it decided otherwise the second time"
	}
	st.last = rec
	return true, ""
}

// follow drives an admitted phase record and returns the flip it found.
func (r *Replayer) follow(ctx context.Context, st *runState, rec *journal.Record) (*journal.Flip, error) {
	flip, err := r.drive(ctx, st, rec)
	if flip != nil || err != nil {
		st.done = true
	}
	if st.ended {
		r.forget(rec.RunID)
	}
	return flip, err
}

// end forgets a run at its end record, unless the candidate has not
// finished it: then the end came before the phase that ended the run (the
// order of journals written before end was a run's last record), and the
// run is kept for that phase.
func (r *Replayer) end(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.runs[id]
	if st == nil {
		return
	}
	if st.done || st.s == nil || st.s.Status() == run.Done {
		delete(r.runs, id)
		return
	}
	st.ended = true
}

// Forget drops a run's state (its end was recorded, or it is abandoned).
func (r *Replayer) forget(id string) {
	r.mu.Lock()
	delete(r.runs, id)
	r.mu.Unlock()
}

func (r *Replayer) drive(ctx context.Context, st *runState, rec *journal.Record) (*journal.Flip, error) {
	in := rec.Input
	if in == nil {
		in = &journal.Input{}
	}
	st.got = nil
	var err error
	s := st.s
	if s == nil && rec.Phase != journal.RunStart {
		return nil, nil // the run's start is not in the journal
	}
	if s != nil {
		s.SetNow(in.Now)
		s.SetCwd(in.Cwd)
	}
	switch rec.Phase {
	case journal.RunStart:
		h := st.header
		if err := r.seed(ctx, h.ThreadID, in.Thread); err != nil {
			return nil, err
		}
		st.s, _, err = r.rt.Start(ctx, run.StartOptions{Agent: h.Agent, ThreadID: h.ThreadID, RunID: h.RunID,
			Messages: in.Messages, Tools: in.Tools, Now: in.Now, Cwd: in.Cwd})
		if st.s == nil {
			return r.failed(rec, err), nil
		}
	case journal.StepStart:
		_, err = s.StepStart(ctx)
	case journal.BeforeInference:
		req := model.Request{Messages: in.Messages, Tools: in.Tools}
		if in.HostTools {
			req.Tools = s.HostTools()
		}
		if in.Params != nil {
			req.Params = *in.Params
		}
		_, _, err = s.BeforeInference(ctx, req)
	case journal.AfterInference:
		var resp model.Response
		if in.Response != nil {
			resp = *in.Response
		}
		_, err = s.AfterInference(ctx, resp)
	case journal.Announce:
		_, err = s.AnnounceCall(ctx, call(in))
	case journal.ToolGate:
		_, _, err = s.ToolGate(ctx, call(in))
	case journal.BeforeToolExecute:
		_, err = s.BeforeToolExecute(ctx, call(in))
	case journal.AfterToolExecute:
		var res model.ToolResult
		if in.Result != nil {
			res = *in.Result
		}
		_, _, err = s.AfterToolExecute(ctx, call(in), res)
	case journal.StepEnd:
		_, err = s.StepEnd(ctx)
	case journal.RunEnd:
		_, err = s.RunEnd(ctx)
	case journal.Resume:
		_, _, err = s.Resume(ctx, in.Resume)
	case journal.Cancel:
		_, err = s.Cancel(ctx, in.Reason)
	case journal.EndUninferred:
		_, err = s.EndUninferred(ctx)
	case journal.Unbound:
		// No plugin runs: the host lifted the call's expiry, which the
		// candidate's ticket must lose too (a late approval is not expired).
		s.Unbound(call(in).ID)
		return nil, nil
	default:
		return nil, nil // a phase this version does not know: nothing to compare
	}
	got := st.got
	if got == nil {
		// The candidate refused the input (its run is in another stage):
		// an earlier divergence this comparison does not see.
		return r.failed(rec, err), nil
	}
	return r.compare(ctx, st, rec, got), nil
}

// How a phase record relates to the run's record before it (retried).
const (
	notRetry   = iota
	retrySame  // a host's retry that decided as the first time: nothing new to compare
	retryOther // a retry that decided otherwise (its clock or state moved)
)

// retried tells whether rec is a host's retry of prev, the run's phase
// record before it: the same phase of the same step with the same input,
// from the same save. A sidecar whose checkpoint failed after a phase
// (the phase was journaled) restores the run from its last save and runs
// the client's retry of that phase again, and the run goes on from the
// retry. The candidate, driven through the first, would refuse the
// second as out of order, so a retry that recorded the same outcome is
// not driven again (nor is a pure retry, a tool_gate gated again); one
// that recorded another outcome cannot be followed: the candidate is not
// put back to where the first began.
func retried(prev, rec *journal.Record) int {
	if prev == nil || prev.Phase != rec.Phase || prev.Step != rec.Step || prev.Save != rec.Save {
		return notRetry
	}
	a, b := journal.Input{}, journal.Input{}
	if prev.Input != nil {
		a = *prev.Input
	}
	if rec.Input != nil {
		b = *rec.Input
	}
	a.Now, b.Now = time.Time{}, time.Time{} // a retry reads the clock again
	if !reflect.DeepEqual(a, b) {
		return notRetry
	}
	if prev.Termination != rec.Termination || prev.Failed != rec.Failed || prev.Continued != rec.Continued ||
		!reflect.DeepEqual(prev.Decisions, rec.Decisions) || !reflect.DeepEqual(prev.Context, rec.Context) ||
		!reflect.DeepEqual(prev.Request, rec.Request) || !slices.Equal(prev.Expired, rec.Expired) {
		return retryOther
	}
	return retrySame
}

func call(in *journal.Input) model.ToolCall {
	if in.Call == nil {
		return model.ToolCall{}
	}
	return *in.Call
}

// seed makes the replay's thread what the recorded run started from.
func (r *Replayer) seed(ctx context.Context, id string, th *journal.Thread) error {
	cur, _, err := r.store.Thread(ctx, id)
	if err != nil {
		return err
	}
	t := run.Thread{ID: id, Revision: cur.Revision}
	if th != nil {
		t.Values = th.Values
	}
	_, err = r.store.PutThread(ctx, t)
	return err
}

func (r *Replayer) failed(rec *journal.Record, err error) *journal.Flip {
	msg := "the candidate refused the recorded input"
	if err != nil {
		msg = err.Error()
	}
	return &journal.Flip{Kind: Failed, RunID: rec.RunID, Step: rec.Step, Phase: rec.Phase, Detail: msg}
}

// compare finds the first difference between the recorded phase and the
// candidate's, in the order the agent would see them.
func (r *Replayer) compare(ctx context.Context, st *runState, want, got *journal.Record) *journal.Flip {
	base := journal.Flip{RunID: want.RunID, Step: want.Step, Phase: want.Phase}
	if want.Input != nil && want.Input.Call != nil {
		base.CallID, base.Tool, base.Args = want.Input.Call.ID, want.Input.Call.Name, want.Input.Call.Args
	}
	if want.Phase == journal.ToolGate && len(want.Decisions) == 1 && len(got.Decisions) == 1 {
		w, g := want.Decisions[0], got.Decisions[0]
		if w.Decision != g.Decision || w.Plugin != g.Plugin {
			f := base
			f.Kind, f.From, f.To = w.Decision.String()+"->"+g.Decision.String(), describe(w), describe(g)
			f.Plugin = g.Plugin
			if w.Decision == g.Decision {
				f.Kind = w.Decision.String() + byAnother
			}
			if g.Decision == gate.Allow {
				f.Plugin = w.Plugin
			}
			if len(want.Masked) > 0 && r.readsMasked(ctx, st, want, g) {
				f.Kind = ReadsMasked
				f.Detail = "the candidate's decision depends on " + strings.Join(want.Masked, ", ") +
					", which the journal masks; replay cannot tell what it decides on the real value"
			}
			return &f
		}
		if !reflect.DeepEqual(w.Args, g.Args) {
			f := base
			f.Kind, f.Plugin = RewriteChanged, g.Plugin
			f.From, f.To = journal.ArgsText(w.Args), journal.ArgsText(g.Args)
			f.FromArgs, f.ToArgs = w.Args, g.Args
			return &f
		}
	}
	if want.Phase == journal.BeforeInference {
		if !sameContext(want.Context, got.Context) {
			f := base
			f.Kind, f.From, f.To = ContextChanged, contextText(want.Context), contextText(got.Context)
			f.Plugin = contextPlugin(want.Context, got.Context)
			return &f
		}
		if !reflect.DeepEqual(normRequest(want.Request), normRequest(got.Request)) {
			f := base
			f.Kind, f.From, f.To = RequestChanged, requestText(want.Request), requestText(got.Request)
			return &f
		}
	}
	if want.Continued != got.Continued {
		f := base
		f.Kind, f.From, f.To = ContinueChanged, fmt.Sprintf("%d messages", want.Continued), fmt.Sprintf("%d messages", got.Continued)
		return &f
	}
	if want.Termination != got.Termination {
		f := base
		f.Kind, f.From, f.To = TerminationChanged, orNone(want.Termination), orNone(got.Termination)
		if got.Failed != "" {
			f.Detail = got.Failed
		}
		return &f
	}
	return nil
}

// readsMasked reports whether the candidate's decision changes with the
// value of the masked fields: it gates the call again with them set to
// something else.
func (r *Replayer) readsMasked(ctx context.Context, st *runState, want *journal.Record, got journal.Decision) bool {
	c := *want.Input.Call
	for _, alt := range []any{"[masked:probe]", float64(0), nil} {
		// From the recorded arguments each time: replaced once, they
		// hold no masked value for the next alternative to replace.
		c.Args = replaceMasked(want.Input.Call.Args, alt)
		d, err := st.s.Probe(ctx, c)
		if err != nil || d.Decision != got.Decision || d.Plugin != got.Plugin {
			return true
		}
	}
	return false
}

func replaceMasked(v map[string]any, alt any) map[string]any {
	out := make(map[string]any, len(v))
	for k, x := range v {
		out[k] = replaceMaskedValue(x, alt)
	}
	return out
}

// replaceMaskedValue is v with its masked values replaced by alt, in lists
// too: the writer masks a field at any depth.
func replaceMaskedValue(v, alt any) any {
	switch t := v.(type) {
	case string:
		if t == journal.Masked {
			return alt
		}
	case map[string]any:
		return replaceMasked(t, alt)
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			out[i] = replaceMaskedValue(x, alt)
		}
		return out
	}
	return v
}

func describe(d journal.Decision) string {
	s := d.Decision.String()
	if d.Plugin != "" {
		s += " by " + d.Plugin
	}
	if d.Reason != "" {
		s += ": " + d.Reason
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// sameContext reports whether two phases placed the same context
// messages where the agent reads them: each target's in the same order
// (a record lists them by priority), whatever the order across targets.
func sameContext(a, b []journal.Context) bool {
	return len(a) == len(b) && reflect.DeepEqual(placedContext(a), placedContext(b))
}

// placedContext is cs grouped by target, in the order they are placed,
// each target's in the order recorded.
func placedContext(cs []journal.Context) []journal.Context {
	out := append([]journal.Context(nil), cs...)
	sort.SliceStable(out, func(i, j int) bool { return targetRank(out[i].Target) < targetRank(out[j].Target) })
	return out
}

// targetRank orders context targets as the runtime places them.
func targetRank(target string) int {
	switch target {
	case "system":
		return 0
	case "session":
		return 1
	case "conversation":
		return 2
	case "suffix_system":
		return 3
	}
	return 4
}

func contextText(cs []journal.Context) string {
	if len(cs) == 0 {
		return "(no context)"
	}
	var parts []string
	for _, c := range placedContext(cs) {
		parts = append(parts, fmt.Sprintf("%s: %q", c.Key, c.Content))
	}
	return strings.Join(parts, "; ")
}

// contextPlugin names the plugin whose context message changed: keys are
// "<plugin>.<name>" by convention of the context_message action.
func contextPlugin(a, b []journal.Context) string {
	seen := map[string]journal.Context{}
	for _, c := range a {
		seen[c.Key] = c
	}
	for _, c := range b {
		if w, ok := seen[c.Key]; !ok || w != c {
			return keyPlugin(c.Key)
		}
		delete(seen, c.Key)
	}
	for k := range seen {
		return keyPlugin(k)
	}
	return ""
}

func keyPlugin(key string) string {
	if i := strings.IndexAny(key, ".:"); i > 0 {
		return key[:i]
	}
	return key
}

func normRequest(r *journal.Request) *journal.Request {
	if r == nil {
		return &journal.Request{Tools: []string{}}
	}
	cp := *r
	if cp.Tools == nil {
		cp.Tools = []string{}
	}
	return &cp
}

func requestText(r *journal.Request) string {
	r = normRequest(r)
	s := "tools [" + strings.Join(r.Tools, ", ") + "]"
	if r.Params.Model != "" {
		s += " model " + r.Params.Model
	}
	if r.Params.Temperature != nil {
		s += fmt.Sprintf(" temperature %g", *r.Params.Temperature)
	}
	if r.Params.MaxTokens != nil {
		s += fmt.Sprintf(" max_tokens %d", *r.Params.MaxTokens)
	}
	return s
}
