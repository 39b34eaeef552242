package engine

import (
	"github.com/awaken-lua/awaken-lua/engine/phase"
)

// QueuedAction is an action waiting in the run's queue for its phase.
// In state (KeyPendingActions) it is kept as a plain value, so a
// checkpoint saves it like any other; Value and queuedAction are the one
// conversion between the two.
type QueuedAction struct {
	ID      string
	Key     string
	Phase   phase.Phase
	Payload any
	Plugin  string // the plugin that scheduled it
}

// DeadLetter is an action that failed (KeyFailedActions).
type DeadLetter struct {
	ID      string
	Key     string
	Payload any
	Error   string
}

// Value is the action as state keeps it.
func (a QueuedAction) Value() map[string]any {
	return map[string]any{"id": a.ID, "key": a.Key, "phase": a.Phase.String(), "payload": a.Payload, "plugin": a.Plugin}
}

// queuedAction reads an action state keeps; false when v is not one.
func queuedAction(v any) (QueuedAction, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return QueuedAction{}, false
	}
	ph, ok := phase.Parse(str(m["phase"]))
	if !ok {
		return QueuedAction{}, false
	}
	return QueuedAction{ID: str(m["id"]), Key: str(m["key"]), Phase: ph, Payload: m["payload"], Plugin: str(m["plugin"])}, true
}

// Value is the dead letter as state keeps it.
func (d DeadLetter) Value() map[string]any {
	return map[string]any{"id": d.ID, "key": d.Key, "payload": d.Payload, "error": d.Error}
}

func deadLetter(v any) (DeadLetter, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return DeadLetter{}, false
	}
	return DeadLetter{ID: str(m["id"]), Key: str(m["key"]), Payload: m["payload"], Error: str(m["error"])}, true
}
