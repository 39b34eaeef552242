// Package gate holds tool-gate decisions, suspension tickets and the
// priority rule that picks one decision among many (docs/design.md, "The gate").
package gate

import (
	"fmt"
	"time"

	"github.com/awaken-lua/awaken-lua/model"
)

// Kind is a decision kind; its value is its priority.
type Kind uint8

// Decision kinds, lowest priority first. Allow means "no decision".
const (
	Allow Kind = iota
	Rewrite
	SetResult
	Suspend
	Block
)

var kindNames = [...]string{"allow", "rewrite", "set_result", "suspend", "block"}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// ParseKind reads a decision kind name.
func ParseKind(s string) (Kind, bool) {
	for i, n := range kindNames {
		if n == s {
			return Kind(i), true
		}
	}
	return 0, false
}

// MarshalText encodes the kind's name.
func (k Kind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a kind's name, so a saved or posted decision is a
// Kind again, never a free string.
func (k *Kind) UnmarshalText(b []byte) error {
	v, ok := ParseKind(string(b))
	if !ok {
		return fmt.Errorf("%q is not a gate decision (allow, rewrite, set_result, suspend or block)", b)
	}
	*k = v
	return nil
}

// Decision is what one gate hook says about one call.
type Decision struct {
	Kind   Kind
	Reason string            // Block
	Ticket *Ticket           // Suspend
	Result *model.ToolResult // SetResult
	Args   map[string]any    // Rewrite
}

// ResumeMode says what happens when a suspended call is resumed.
type ResumeMode string

// Resume modes.
const (
	// Replay runs the tool on resume (the default).
	Replay ResumeMode = "replay"
	// UseDecisionAsResult makes the decision's result the tool result.
	UseDecisionAsResult ResumeMode = "use_decision_as_result"
	// PassDecisionToTool runs the tool with the decision's result in its
	// arguments under "decision".
	PassDecisionToTool ResumeMode = "pass_decision_to_tool"
)

// Valid reports whether m is a known resume mode ("" counts as replay).
func (m ResumeMode) Valid() bool {
	switch m {
	case "", Replay, UseDecisionAsResult, PassDecisionToTool:
		return true
	}
	return false
}

// Ticket describes a suspended call and what a human is asked to decide.
type Ticket struct {
	ID             string     `json:"id"`
	CallID         string     `json:"call_id,omitempty"`
	Action         string     `json:"action,omitempty"`
	Message        string     `json:"message,omitempty"`
	Parameters     any        `json:"parameters,omitempty"`
	ResponseSchema any        `json:"response_schema,omitempty"`
	Options        []string   `json:"options,omitempty"`
	ResumeMode     ResumeMode `json:"resume_mode"`
	// Timeout, when positive, is how long the call waits for a decision
	// (the host's default applies when zero); OnTimeout is what the runtime
	// then decides: OnTimeoutCancel (the default) or OnTimeoutResume.
	Timeout   time.Duration `json:"-"`
	OnTimeout string        `json:"on_timeout,omitempty"`
	// ExpiresAt is when the runtime settles the call itself (zero: never),
	// set when the call is suspended.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// What the runtime decides for a call whose ticket expired.
const (
	OnTimeoutCancel = "cancel"
	OnTimeoutResume = "resume"
)

// Value is the ticket as a canonical value, with its JSON field names.
func (t Ticket) Value() map[string]any {
	m := map[string]any{"id": t.ID, "resume_mode": string(t.ResumeMode)}
	set := func(k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	set("call_id", t.CallID)
	set("action", t.Action)
	set("message", t.Message)
	if t.Parameters != nil {
		m["parameters"] = t.Parameters
	}
	if t.ResponseSchema != nil {
		m["response_schema"] = t.ResponseSchema
	}
	set("on_timeout", t.OnTimeout)
	if !t.ExpiresAt.IsZero() {
		m["expires_at"] = t.ExpiresAt.UTC().Format(time.RFC3339Nano)
	}
	if len(t.Options) > 0 {
		opts := make([]any, len(t.Options))
		for i, o := range t.Options {
			opts[i] = o
		}
		m["options"] = opts
	}
	return m
}

// Resume is the host's answer to a suspended call.
type Resume struct {
	Target string `json:"target"`
	Action string `json:"action"` // "resume" or "cancel"
	Result any    `json:"result,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// Tagged is a decision with the plugin that made it.
type Tagged struct {
	Decision
	Plugin string
}

// Resolve picks the decision with the highest priority, the first in ds
// among equals (callers pass them in hook order). It returns the winner
// (Kind Allow when there is none) and the decisions of the winner's
// priority that lost, so the caller can log the conflict.
func Resolve(ds []Tagged) (Tagged, []Tagged) {
	var win Tagged
	var lost []Tagged
	for _, d := range ds {
		switch {
		case d.Kind == Allow:
		case d.Kind > win.Kind:
			win, lost = d, lost[:0]
		case d.Kind == win.Kind:
			lost = append(lost, d)
		}
	}
	return win, lost
}
