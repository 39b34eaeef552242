package run

import "strings"

// TerminationKind is how a run ended, or stopped for now (Suspended).
type TerminationKind uint8

// Termination kinds. NotEnded is a run still going.
const (
	NotEnded  TerminationKind = iota
	Natural                   // the model answered without tool calls
	Stopped                   // a plugin's ctx:stop, or the step limit; Detail is the code
	Blocked                   // a gate blocked a call; Detail is the reason
	Suspended                 // waiting on suspended calls
	Cancelled                 // the host cancelled it
	Errored                   // a hook, action or model failed; Detail is the error code
)

var terminationNames = [...]string{"", "natural", "stopped", "blocked", "suspended", "cancelled", "error"}

// Termination is a run's termination. Its text form is what checkpoints,
// events, the sidecar and the journal carry: "natural", "stopped:<code>",
// "blocked:<reason>", "suspended", "cancelled" or "error:<code>".
type Termination struct {
	Kind   TerminationKind
	Detail string
}

// MaxSteps is the termination of a run that reached its agent's max_steps.
var MaxSteps = Termination{Kind: Stopped, Detail: "max_steps"}

func (t Termination) String() string {
	if int(t.Kind) >= len(terminationNames) {
		return "unknown"
	}
	name := terminationNames[t.Kind]
	switch t.Kind {
	case Stopped, Blocked, Errored:
		return name + ":" + t.Detail
	}
	return name
}

// ParseTermination reads a termination's text form; false when s is not
// one ("" is NotEnded).
func ParseTermination(s string) (Termination, bool) {
	name, detail, hasDetail := strings.Cut(s, ":")
	for k, n := range terminationNames {
		if n != name {
			continue
		}
		kind := TerminationKind(k)
		switch kind {
		case Stopped, Blocked, Errored:
			if !hasDetail {
				return Termination{}, false
			}
		default:
			if hasDetail {
				return Termination{}, false
			}
		}
		return Termination{Kind: kind, Detail: detail}, true
	}
	return Termination{}, false
}

// PluginStopped reports whether a plugin stopped the run (ctx:stop), as
// opposed to the step limit or any other ending.
func (t Termination) PluginStopped() bool { return t.Kind == Stopped && t != MaxSteps }

// Terminate ends a running run with t at its next RunEnd: a host that
// gives up on the run (its context was cancelled, its model failed) says
// why. A run that already ends keeps its termination.
func (s *Session) Terminate(t Termination) {
	if s.status == Running && s.termination == "" && t.Kind != NotEnded {
		s.termination = t.String()
	}
}

// Ended returns the session's termination, parsed.
func (s *Session) Ended() Termination {
	t, _ := ParseTermination(s.termination)
	return t
}
