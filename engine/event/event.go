// Package event defines the run events (the README's "Events"). The
// harness, `run --json` and the sidecar's logs all use these names and
// fields.
package event

import (
	"encoding/json"
	"sync"

	"github.com/awaken-lua/awaken-lua/model"
)

// Event is one run event.
type Event interface {
	// Type is the event's snake_case name.
	Type() string
}

// Sink receives events in the order they happen. Implementations must be
// safe for use by one run at a time; Recorder and Func are.
type Sink interface {
	Emit(ev Event)
}

// Func adapts a function to Sink.
type Func func(ev Event)

// Emit calls f.
func (f Func) Emit(ev Event) { f(ev) }

// Discard drops every event.
type Discard struct{}

// Emit does nothing.
func (Discard) Emit(Event) {}

// Selective is a Sink that says which events it takes. A runtime may leave
// out the others (it does for those that copy a run's data), so Emit still
// ignores what it does not want.
type Selective interface {
	Sink
	Wants(typ string) bool
}

// Wants reports whether s takes events of type typ (see Event.Type).
func Wants(s Sink, typ string) bool {
	switch x := s.(type) {
	case Discard:
		return false
	case Selective:
		return x.Wants(typ)
	}
	return true
}

// Recorder keeps every event; safe for concurrent use.
type Recorder struct {
	mu     sync.Mutex
	events []Event
}

// Emit records ev.
func (r *Recorder) Emit(ev Event) {
	r.mu.Lock()
	r.events = append(r.events, ev)
	r.mu.Unlock()
}

// Events returns a copy of what was recorded.
func (r *Recorder) Events() []Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Event(nil), r.events...)
}

// Names lists the names of what was recorded.
func (r *Recorder) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.events))
	for i, e := range r.events {
		out[i] = e.Type()
	}
	return out
}

// RunStart opens a run.
type RunStart struct {
	RunID      string `json:"run_id"`
	ThreadID   string `json:"thread_id"`
	Generation string `json:"generation"`
	Agent      string `json:"agent,omitempty"`
	// Prompt is the run's last user message when it started, if any.
	Prompt string `json:"prompt,omitempty"`
}

// StepStart opens a step.
type StepStart struct {
	Step int `json:"step"`
}

// InferenceComplete reports the model's answer.
type InferenceComplete struct {
	Text      string           `json:"text"`
	ToolCalls []model.ToolCall `json:"tool_calls"`
	Usage     *model.Usage     `json:"usage"`
}

// ContextMessages reports the context messages placed in a step's
// inference request (emitted only when
// there are any), so a trace shows what plugins told the model.
type ContextMessages struct {
	Step     int              `json:"step"`
	Messages []ContextMessage `json:"messages"`
}

// ContextMessage is one placed context message.
type ContextMessage struct {
	Key     string `json:"key"`
	Target  string `json:"target"`
	Kind    string `json:"kind"`
	Role    string `json:"role"`
	Content string `json:"content"`
}

// GateDecision reports the gate's decision for a call (allow included).
type GateDecision struct {
	CallID   string `json:"call_id"`
	Decision string `json:"decision"`
	Plugin   string `json:"plugin"`
	Reason   string `json:"reason"`
}

// ToolCallStart reports a call about to run.
type ToolCallStart struct {
	CallID string         `json:"call_id"`
	Name   string         `json:"name"`
	Args   map[string]any `json:"args"`
}

// ToolCallDone reports a call that ended: succeeded, failed, suspended or
// cancelled.
type ToolCallDone struct {
	CallID string            `json:"call_id"`
	Name   string            `json:"name,omitempty"` // the tool
	Status string            `json:"status"`
	Result *model.ToolResult `json:"result"`
}

// ToolCallResumed reports a suspended call that was resumed.
type ToolCallResumed struct {
	CallID string `json:"call_id"`
	Result any    `json:"result"`
}

// EffectFailed reports an effect handler that failed; nothing else stops.
type EffectFailed struct {
	Key    string `json:"key"`
	Plugin string `json:"plugin"`
	Error  string `json:"error"`
}

// StepEnd closes a step.
type StepEnd struct {
	Step int `json:"step"`
}

// RunContinued says a run goes on after the model answered without tool
// calls, because a plugin scheduled runtime.continue.
type RunContinued struct {
	Step    int    `json:"step"`
	Plugin  string `json:"plugin"`
	Content string `json:"content"`
	Role    string `json:"role"`
}

// ContinueLimit says a runtime.continue was refused: the run already went
// on max times, so it ends natural.
type ContinueLimit struct {
	Step   int    `json:"step"`
	Plugin string `json:"plugin"`
	Max    int    `json:"max"`
}

// TicketExpired says a suspended call waited past its ticket's timeout
// and the runtime decided for it: OnTimeout "cancel" or "resume".
type TicketExpired struct {
	CallID    string `json:"call_id"`
	TicketID  string `json:"ticket_id"`
	OnTimeout string `json:"on_timeout"`
	ExpiredAt string `json:"expired_at"`
}

// RunFinish closes a run with its termination string.
type RunFinish struct {
	Termination string `json:"termination"`
}

// Type implementations.
func (RunStart) Type() string          { return "run_start" }
func (StepStart) Type() string         { return "step_start" }
func (RunContinued) Type() string      { return "run_continued" }
func (ContinueLimit) Type() string     { return "continue_limit" }
func (InferenceComplete) Type() string { return "inference_complete" }
func (ContextMessages) Type() string   { return "context_messages" }
func (GateDecision) Type() string      { return "gate_decision" }
func (ToolCallStart) Type() string     { return "tool_call_start" }
func (ToolCallDone) Type() string      { return "tool_call_done" }
func (ToolCallResumed) Type() string   { return "tool_call_resumed" }
func (TicketExpired) Type() string     { return "ticket_expired" }
func (EffectFailed) Type() string      { return "effect_failed" }
func (StepEnd) Type() string           { return "step_end" }
func (RunFinish) Type() string         { return "run_finish" }

// Marshal encodes an event as one JSON object with its name under "event".
func Marshal(ev Event) ([]byte, error) {
	m, err := Map(ev)
	if err != nil {
		return nil, err
	}
	return json.Marshal(m)
}

// Map turns an event into a plain map with its name under "event".
func Map(ev Event) (map[string]any, error) {
	b, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	m := map[string]any{}
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	m["event"] = ev.Type()
	return m, nil
}
