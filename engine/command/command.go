// Package command is what a hook, action handler or tool returns: state
// updates, scheduled actions, effects, and an optional stop (docs/design.md, "The phase engine").
package command

import (
	"fmt"

	"github.com/awaken-lua/awaken-lua/engine/state"
	"github.com/awaken-lua/awaken-lua/engine/value"
)

// Action asks for a registered action handler to run; the phase comes from
// the action's declaration.
type Action struct {
	Key     string
	Payload any
	Plugin  string
}

// Effect is dispatched to its handler after the command is committed.
type Effect struct {
	Key     string
	Payload any
	Plugin  string
}

// Stop ends the run with termination "stopped:<code>".
type Stop struct {
	Code   string
	Detail string
	Plugin string
}

// Command collects one writer's output. The zero value is empty and ready.
type Command struct {
	Plugin  string
	Updates []state.Update
	Actions []Action
	Effects []Effect
	Stop    *Stop
	err     error
}

// Update records an update of key by the key's reducer.
func (c *Command) Update(key string, v any) {
	n, err := value.Normalize(v)
	if err != nil {
		c.fail(fmt.Errorf("update %q: %w", key, err))
		return
	}
	c.Updates = append(c.Updates, state.Update{Key: key, Value: n, Plugin: c.Plugin})
}

// UpdateValue records an update whose value is already canonical (see
// package value): callers that build values themselves, such as the Lua
// bridge and the runtime, skip the normalizing walk.
func (c *Command) UpdateValue(key string, v any) {
	c.Updates = append(c.Updates, state.Update{Key: key, Value: v, Plugin: c.Plugin})
}

// Schedule records an action.
func (c *Command) Schedule(action string, payload any) {
	n, err := value.Normalize(payload)
	if err != nil {
		c.fail(fmt.Errorf("schedule %q: %w", action, err))
		return
	}
	c.Actions = append(c.Actions, Action{Key: action, Payload: n, Plugin: c.Plugin})
}

// Emit records an effect.
func (c *Command) Emit(effect string, payload any) {
	n, err := value.Normalize(payload)
	if err != nil {
		c.fail(fmt.Errorf("emit %q: %w", effect, err))
		return
	}
	c.Effects = append(c.Effects, Effect{Key: effect, Payload: n, Plugin: c.Plugin})
}

// StopRun asks to end the run with "stopped:<code>". The first stop wins.
func (c *Command) StopRun(code, detail string) {
	if c.Stop == nil {
		c.Stop = &Stop{Code: code, Detail: detail, Plugin: c.Plugin}
	}
}

func (c *Command) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// Err returns the first value that could not be recorded.
func (c *Command) Err() error { return c.err }

// Empty reports whether the command has nothing to commit or dispatch.
func (c *Command) Empty() bool {
	return len(c.Updates) == 0 && len(c.Actions) == 0 && len(c.Effects) == 0 && c.Stop == nil
}

// Bumps reports whether committing the command changes the revision: it has
// state updates, actions or a stop (effects alone do not).
func (c *Command) Bumps() bool {
	return len(c.Updates) != 0 || len(c.Actions) != 0 || c.Stop != nil
}

// Reset empties the command for reuse, keeping its buffers.
func (c *Command) Reset() {
	c.Updates = c.Updates[:0]
	c.Actions = c.Actions[:0]
	c.Effects = c.Effects[:0]
	c.Stop = nil
	c.err = nil
}

// Merge appends o's parts after c's, in order; the first stop wins.
func (c *Command) Merge(o *Command) {
	c.Updates = append(c.Updates, o.Updates...)
	c.Actions = append(c.Actions, o.Actions...)
	c.Effects = append(c.Effects, o.Effects...)
	if c.Stop == nil && o.Stop != nil {
		c.Stop = o.Stop
	}
	if c.err == nil {
		c.err = o.err
	}
}
