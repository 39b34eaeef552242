package run

import (
	"cmp"
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"
	"unsafe"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/model"
)

// RunLog is a Store that can save a run as the changes since its last save
// (a Delta) rather than the whole checkpoint, so that a step of n tool
// calls writes O(n) in all instead of O(n²). A store keeps a run as a base
// checkpoint and the deltas appended since, in order; Run returns the base
// with them applied (Checkpoint.Apply). Session.SaveRun uses it when the
// store has it; a store without it gets the whole checkpoint (PutRun), as
// does the first save of a session and the first after a failed one.
type RunLog interface {
	// AppendRun saves d durably if the run's saved checkpoint is at
	// revision d.Base (its Seq): the run is then at d.Base+1. A run at
	// another revision, or not in the store, is revision_conflict and
	// nothing is saved. PutRun replaces the base and every delta.
	AppendRun(ctx context.Context, d Delta) error
}

// Delta is what changed in a run between two saves: the run's scalar fields
// (always, they are small), and of the rest only what changed. It is plain
// data and JSON-serializable, so a store may keep it as a log line or a row.
//
// A Delta shares its values with the session that made it (they are never
// changed in place): a store encodes it, or keeps a deep copy.
type Delta struct {
	RunID string `json:"run_id"`
	// Base is the Seq of the checkpoint the delta applies on; applied, it
	// makes the checkpoint's Seq Base+1.
	Base uint64 `json:"base"`

	Generation     string `json:"generation"`
	Bundle         string `json:"bundle,omitempty"`
	Status         Status `json:"status"`
	Stage          Stage  `json:"stage"`
	Step           int    `json:"step"`
	Termination    string `json:"termination,omitempty"`
	Natural        bool   `json:"natural,omitempty"`
	Cwd            string `json:"cwd,omitempty"`
	Revision       uint64 `json:"revision"`
	ThreadRevision uint64 `json:"thread_revision,omitempty"`
	// NextExpiry is the checkpoint's NextExpiry once the delta is applied
	// (a store that indexes waiting runs by it need not apply the delta).
	NextExpiry time.Time `json:"next_expiry,omitzero"`

	// Values are the run-scoped keys whose values changed; null: the key
	// no longer holds a value.
	Values map[string]any `json:"values,omitempty"`
	// ThreadValues are the thread-scoped keys whose values changed; null:
	// the run has not set the key (as in Checkpoint.ThreadValues).
	ThreadValues map[string]any `json:"thread_values,omitempty"`
	// ToolCalls are the records of __runtime.tool_calls (a map of call id
	// to record) that changed, when Values does not hold the key whole:
	// the key mirrors the calls, and one call's change must not re-encode
	// every record.
	ToolCalls map[string]any `json:"tool_calls,omitempty"`

	// MessagesFrom is how many leading messages are unchanged; Messages
	// follow them (an append: MessagesFrom is the old length; a host that
	// replaced the conversation: 0).
	MessagesFrom int             `json:"messages_from"`
	Messages     []model.Message `json:"messages,omitempty"`

	// Offered, when set, replaces the tools offered in the step.
	Offered *ToolNames `json:"offered,omitempty"`
	// StepTools, when set, replaces the checkpoint's StepTools. It is set
	// whenever Offered is: a delta that changes Offered alone (written
	// before step tools were kept) drops StepTools, which then follow
	// Offered.
	StepTools *StepToolList `json:"step_tools,omitempty"`

	// CallCount is the number of the step's calls; Calls are the calls that
	// changed or are new, by position (every position past the old count
	// is among them).
	CallCount int          `json:"call_count"`
	Calls     []CallChange `json:"calls,omitempty"`
}

// ToolNames is a list of tool names; nil Names (JSON null) means every
// tool, an empty list none.
type ToolNames struct {
	Names []string `json:"names"`
}

// CallChange is one call record of a Delta at its position in the step.
type CallChange struct {
	Index  int        `json:"index"`
	Record CallRecord `json:"record"`
}

// Apply applies d to cp, which must be the checkpoint d was computed
// against: the same run at revision d.Base (revision_conflict otherwise).
// A delta that does not fit cp (a call position past the end, messages
// past the conversation) is an error too; on any error cp is unchanged.
// The checkpoint then holds d's values without copying them, and its own
// maps are changed in place.
func (cp *Checkpoint) Apply(d Delta) error {
	if d.RunID != cp.RunID {
		return errs.New(errs.RevisionConflict, "a change of run %q does not apply to run %q", d.RunID, cp.RunID)
	}
	if d.Base != cp.Seq {
		return errs.New(errs.RevisionConflict, "run %q is at save %d; a change made on save %d does not apply to it", cp.RunID, cp.Seq, d.Base)
	}
	if d.MessagesFrom < 0 || d.MessagesFrom > len(cp.Messages) {
		return fmt.Errorf("run %q: the change keeps %d messages of %d", cp.RunID, d.MessagesFrom, len(cp.Messages))
	}
	if d.CallCount < 0 || d.CallCount-len(cp.Calls) > len(d.Calls) {
		return fmt.Errorf("run %q: the change has %d calls (%d before) and %d records", cp.RunID, d.CallCount, len(cp.Calls), len(d.Calls))
	}
	set := make([]bool, max(d.CallCount-len(cp.Calls), 0))
	for _, c := range d.Calls {
		if c.Index < 0 || c.Index >= d.CallCount {
			return fmt.Errorf("run %q: the change sets call %d of %d", cp.RunID, c.Index, d.CallCount)
		}
		if c.Index >= len(cp.Calls) {
			set[c.Index-len(cp.Calls)] = true
		}
	}
	for i, ok := range set {
		if !ok {
			return fmt.Errorf("run %q: the change adds call %d without its record", cp.RunID, len(cp.Calls)+i)
		}
	}
	var toolCalls map[string]any
	if len(d.ToolCalls) > 0 {
		cur, had := d.Values[KeyToolCalls]
		if !had {
			cur = cp.Values[KeyToolCalls]
		}
		switch m := cur.(type) {
		case nil:
			toolCalls = map[string]any{}
		case map[string]any:
			toolCalls = m
		default:
			return fmt.Errorf("run %q: %s holds %T, not a map of call records", cp.RunID, KeyToolCalls, cur)
		}
	}

	cp.Seq = d.Base + 1
	cp.Generation, cp.Bundle, cp.Status, cp.Stage, cp.Step = d.Generation, d.Bundle, d.Status, d.Stage, d.Step
	cp.Termination, cp.Natural, cp.Cwd = d.Termination, d.Natural, d.Cwd
	cp.Revision, cp.ThreadRevision = d.Revision, d.ThreadRevision
	if len(d.Values) > 0 && cp.Values == nil {
		cp.Values = map[string]any{}
	}
	for k, v := range d.Values {
		if v == nil {
			delete(cp.Values, k)
		} else {
			cp.Values[k] = v
		}
	}
	if len(d.ThreadValues) > 0 && cp.ThreadValues == nil {
		cp.ThreadValues = map[string]any{}
	}
	for k, v := range d.ThreadValues {
		cp.ThreadValues[k] = v
	}
	if toolCalls != nil {
		for id, rec := range d.ToolCalls {
			toolCalls[id] = rec
		}
		if cp.Values == nil {
			cp.Values = map[string]any{}
		}
		cp.Values[KeyToolCalls] = toolCalls
	}
	cp.Messages = append(cp.Messages[:d.MessagesFrom], d.Messages...)
	if d.Offered != nil {
		cp.Offered = d.Offered.Names
		cp.StepTools = nil
	}
	if d.StepTools != nil {
		cp.StepTools = d.StepTools.Tools
	}
	switch {
	case d.CallCount == 0:
		cp.Calls = nil
	case d.CallCount <= len(cp.Calls):
		cp.Calls = cp.Calls[:d.CallCount]
	default:
		cp.Calls = append(cp.Calls, make([]CallRecord, d.CallCount-len(cp.Calls))...)
	}
	for _, c := range d.Calls {
		cp.Calls[c.Index] = c.Record
	}
	return nil
}

// savedRun is what the store holds of the run as this session last saved
// it, and what changed since: the next save's Delta. Session.saved is nil
// while the store's copy is not known to be that (before the first save,
// after a restore, a failed save or a rollback): the next save is whole.
type savedRun struct {
	snap *state.Snapshot // the state saved
	// messages is how many leading messages are unchanged since.
	messages int
	// calls are the records changed since (by position, see callChanged);
	// allCalls: the step's calls were replaced.
	calls     map[*CallRecord]struct{}
	allCalls  bool
	offered   []string
	tools     []model.ToolSpec
	hostTools []model.ToolSpec
}

// callChanged notes that c changed since the last save. Every change of a
// call record calls it (setStatus, for most).
func (s *Session) callChanged(c *CallRecord) {
	if s.saved != nil && !s.saved.allCalls {
		s.saved.calls[c] = struct{}{}
	}
}

// callsReplaced notes that the step's calls were replaced.
func (s *Session) callsReplaced() {
	if s.saved != nil {
		s.saved.allCalls = true
		clear(s.saved.calls)
	}
}

// messagesReplaced notes that the conversation was replaced (otherwise it
// only grows).
func (s *Session) messagesReplaced() {
	if s.saved != nil {
		s.saved.messages = 0
	}
}

// synced records that the store now holds the session as it is, when the
// store takes deltas (with any other store nothing is tracked).
func (s *Session) synced() {
	if _, ok := s.rt.store.(RunLog); !ok {
		s.saved = nil
		return
	}
	if s.saved == nil {
		s.saved = &savedRun{calls: map[*CallRecord]struct{}{}}
	}
	sv := s.saved
	sv.snap, sv.messages, sv.offered, sv.tools, sv.hostTools = s.st().Snapshot(), len(s.messages), s.offered, s.tools, s.hostTools
	sv.allCalls = false
	clear(sv.calls)
}

// SaveRun writes the run to its runtime's store, so another Session (in
// this process or after a restart) can continue it: as a Delta of what
// changed since this session's last save when the store is a RunLog, or as
// the whole checkpoint (PutRun). A failed save returns the store's error;
// the session is unchanged and its next save is whole. A done run is not
// saved: its session saved its thread and forgot it.
func (s *Session) SaveRun(ctx context.Context) error {
	if s.status == Done {
		return nil
	}
	if lg, ok := s.rt.store.(RunLog); ok && s.saved != nil {
		if d, ok := s.delta(); ok {
			if err := lg.AppendRun(ctx, d); err != nil {
				s.saved = nil
				return err
			}
			s.seq = d.Base + 1
			s.synced()
			return nil
		}
	}
	return s.putRun(ctx)
}

// putRun saves the whole checkpoint as the next save.
func (s *Session) putRun(ctx context.Context) error {
	cp := s.Checkpoint()
	cp.Seq = s.seq + 1
	put := s.rt.store.PutRun
	if m, ok := s.rt.store.(*MemoryStore); ok {
		// cp is a fresh copy nobody else holds. Only the memory store
		// itself: a store that embeds it may count or wrap PutRun.
		put = m.putOwnedRun
	}
	if err := put(ctx, cp); err != nil {
		s.saved = nil
		return err
	}
	s.seq = cp.Seq
	s.synced()
	return nil
}

// delta is what changed since the last save, and false when it cannot be
// told (save the whole checkpoint then).
func (s *Session) delta() (Delta, bool) {
	sv := s.saved
	if !sameValue(sv.hostTools, s.hostTools) {
		return Delta{}, false
	}
	snap := s.st().Snapshot()
	d := Delta{RunID: s.info.ID, Base: s.seq,
		Generation: s.rt.generation, Bundle: s.rt.bundle, Status: s.status, Stage: s.stage, Step: s.info.Step,
		Termination: s.termination, Natural: s.natural, Cwd: s.info.Cwd,
		Revision: snap.Revision(), ThreadRevision: s.thread.Revision, NextExpiry: s.NextExpiry()}
	for _, k := range s.rt.set.Registry().Keys() {
		if k.Transient || (k.Scope != state.ScopeRun && k.Scope != state.ScopeThread) {
			continue
		}
		old, cur := sv.snap.Raw(k), snap.Raw(k)
		if sameValue(old, cur) {
			continue
		}
		if k == s.rt.toolCalls && s.toolCallsDelta(&d, old, cur) {
			continue
		}
		var v any
		if cur != nil {
			v = snap.Get(k)
		}
		if k.Scope == state.ScopeRun {
			if d.Values == nil {
				d.Values = map[string]any{}
			}
			d.Values[k.Name] = v
		} else {
			if d.ThreadValues == nil {
				d.ThreadValues = map[string]any{}
			}
			d.ThreadValues[k.Name] = v
		}
	}
	d.MessagesFrom = min(sv.messages, len(s.messages))
	if d.MessagesFrom < len(s.messages) {
		d.Messages = s.messages[d.MessagesFrom:len(s.messages):len(s.messages)]
	}
	if !sameValue(sv.offered, s.offered) || (sv.offered == nil) != (s.offered == nil) {
		d.Offered = &ToolNames{Names: s.offered}
	}
	// The step's tools change with a step's before_inference: once a
	// step, encoded as a whole save would (a host tool is its index).
	if d.Offered != nil || !sameValue(sv.tools, s.tools) {
		d.StepTools = &StepToolList{Tools: encodeStepTools(s.tools, s.offered, s.hostTools)}
	}
	d.CallCount = len(s.calls)
	if sv.allCalls {
		d.Calls = make([]CallChange, len(s.calls))
		for i, c := range s.calls {
			d.Calls[i] = CallChange{Index: i, Record: *c}
		}
		return d, true
	}
	for c := range sv.calls {
		i := s.position(c)
		if i >= len(s.calls) || s.calls[i] != c {
			return Delta{}, false // not a call of this step: cannot happen, but never save a wrong delta
		}
		d.Calls = append(d.Calls, CallChange{Index: i, Record: *c})
	}
	slices.SortFunc(d.Calls, func(a, b CallChange) int { return cmp.Compare(a.Index, b.Index) })
	return d, true
}

// toolCallsDelta puts the records of __runtime.tool_calls that changed from
// old to cur in d.ToolCalls, when both are versions of this session's log
// of the same calls; false: the value must be saved whole.
func (s *Session) toolCallsDelta(d *Delta, old, cur any) bool {
	o, _ := old.(*callLog)
	c, _ := cur.(*callLog)
	if o == nil || c == nil || o.owner != s || c.owner != s || o.gen != c.gen {
		return false
	}
	if d.ToolCalls == nil {
		d.ToolCalls = map[string]any{}
	}
	changedEntries(o, c, func(e *logEntry) { d.ToolCalls[e.id] = e.rec.value() })
	return true
}

// changedEntries calls f for each record of cur that old does not hold at
// the same position, skipping the subtrees the two versions share: after
// k records changed, O(k log n). A log only grows within one calls
// generation, so cur holds every position old does.
func changedEntries(old, cur *callLog, f func(e *logEntry)) {
	a := old.root
	if old.depth > cur.depth {
		a = nil // not derived from old: compare every record
	}
	for depth := old.depth; a != nil && depth < cur.depth; depth++ {
		up := new(logInner) // cur grew: old's root is the first child
		up[0] = a
		a = unsafe.Pointer(up)
	}
	var walk func(a, b unsafe.Pointer, level int)
	walk = func(a, b unsafe.Pointer, level int) {
		if a == b || b == nil {
			return
		}
		if level == 0 {
			lb := (*logLeaf)(b)
			for i := range lb {
				e := &lb[i]
				if e.id == "" {
					continue
				}
				if a != nil {
					if p := (*logLeaf)(a)[i]; p.id == e.id && p.rec == e.rec {
						continue
					}
				}
				f(e)
			}
			return
		}
		ib := (*logInner)(b)
		for i, child := range ib {
			var ca unsafe.Pointer
			if a != nil {
				ca = (*logInner)(a)[i]
			}
			walk(ca, child, level-1)
		}
	}
	walk(a, cur.root, cur.depth)
}

// sameValue reports whether a and b are the same value: the same map,
// slice (and length) or pointer, or equal scalars. Saved values are never
// changed in place, so the same one has the same contents; equal contents
// in another map count as a change (saved again, never lost).
func sameValue(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Type() != vb.Type() {
		return false
	}
	switch va.Kind() {
	case reflect.Map, reflect.Pointer, reflect.UnsafePointer, reflect.Chan, reflect.Func:
		return va.UnsafePointer() == vb.UnsafePointer()
	case reflect.Slice:
		return va.Len() == vb.Len() && (va.Len() == 0 || va.UnsafePointer() == vb.UnsafePointer())
	}
	return va.Comparable() && va.Equal(vb)
}
