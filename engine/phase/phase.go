// Package phase names the nine phases of an agent run (docs/design.md, "Runs and phases").
package phase

import (
	"fmt"
)

// Phase is one of the nine phases, in run order.
type Phase uint8

// The phases, in the order a run passes through them.
const (
	RunStart Phase = iota + 1
	StepStart
	BeforeInference
	AfterInference
	ToolGate
	BeforeToolExecute
	AfterToolExecute
	StepEnd
	RunEnd
)

// All lists the phases in order.
var All = [...]Phase{RunStart, StepStart, BeforeInference, AfterInference, ToolGate,
	BeforeToolExecute, AfterToolExecute, StepEnd, RunEnd}

var names = [...]string{"", "run_start", "step_start", "before_inference", "after_inference",
	"tool_gate", "before_tool_execute", "after_tool_execute", "step_end", "run_end"}

// Count is the number of phases; a Phase indexes arrays of size Count+1.
const Count = 9

// String gives the snake_case name.
func (p Phase) String() string {
	if p.Valid() {
		return names[p]
	}
	return fmt.Sprintf("phase(%d)", uint8(p))
}

// Valid reports whether p is one of the nine phases.
func (p Phase) Valid() bool { return p >= RunStart && p <= RunEnd }

// Parse reads a snake_case phase name.
func Parse(s string) (Phase, bool) {
	for i := 1; i < len(names); i++ {
		if names[i] == s {
			return Phase(i), true
		}
	}
	return 0, false
}

// Names lists the snake_case names in order, for messages that list choices.
func Names() []string { return append([]string(nil), names[1:]...) }

// MarshalText encodes the snake_case name.
func (p Phase) MarshalText() ([]byte, error) {
	if !p.Valid() {
		return nil, fmt.Errorf("invalid phase %d", uint8(p))
	}
	return []byte(names[p]), nil
}

// UnmarshalText decodes a snake_case name.
func (p *Phase) UnmarshalText(b []byte) error {
	v, ok := Parse(string(b))
	if !ok {
		return fmt.Errorf("unknown phase %q (one of %v)", b, Names())
	}
	*p = v
	return nil
}

// PerCall reports whether the phase fires once per tool call.
func (p Phase) PerCall() bool {
	return p == ToolGate || p == BeforeToolExecute || p == AfterToolExecute
}
