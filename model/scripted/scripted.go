// Package scripted is the offline, deterministic model executor:
// it answers each inference with the next turn of a script. It is the
// default model, so every run, test and demo works without a network and
// gives the same trace each time.
package scripted

import (
	"context"
	"strconv"
	"sync"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/value"
	"github.com/awaken-lua/awaken-lua/model"
)

// Turn is one scripted model reply. A tool call without an ID keeps it
// empty: the run loop assigns call_<step>_<index>, so scripts stay short and
// IDs stay stable when turns are edited.
type Turn struct {
	Text      string
	ToolCalls []model.ToolCall
	Usage     *model.Usage
}

// Model replies with its turns in order. It is safe for concurrent use; each
// reply is a deep copy, so callers (and rewriting plugins) may mutate it
// freely without changing the script.
type Model struct {
	source string // the script's file name, for the "add a turn" hint

	mu    sync.Mutex
	turns []Turn
	next  int
}

var _ model.Model = (*Model)(nil)

// New makes a model that replies with turns in order. It copies the turns,
// so later changes to the slice do not reach the model.
func New(turns []Turn) *Model {
	cp := make([]Turn, len(turns))
	for i, t := range turns {
		cp[i] = cloneTurn(t)
	}
	return &Model{turns: cp}
}

// Open loads a script file and makes a model of it. The model remembers the
// file name, so running out of turns says which file to extend.
func Open(path string) (*Model, error) {
	turns, err := Load(path)
	if err != nil {
		return nil, err
	}
	m := New(turns)
	m.source = path
	return m, nil
}

// Infer returns the next turn. A cancelled ctx returns ctx.Err() without
// consuming a turn; an exhausted script is a model_failed error, because a
// scenario that asks for more replies than it scripts is a broken scenario,
// not a natural end.
func (m *Model) Infer(ctx context.Context, _ model.Request) (model.Response, error) {
	if err := ctx.Err(); err != nil {
		return model.Response{}, err
	}
	m.mu.Lock()
	if m.next >= len(m.turns) {
		n := len(m.turns)
		m.mu.Unlock()
		return model.Response{}, m.exhausted(n)
	}
	t := m.turns[m.next]
	m.next++
	m.mu.Unlock()

	t = cloneTurn(t)
	return model.Response{Text: t.Text, ToolCalls: t.ToolCalls, Usage: t.Usage}, nil
}

// Skip moves past the first n turns, so the next inference answers with
// turn n+1: a run resumed in another process had its earlier answers from
// a model that is gone, and must continue the script, not restart it. It
// never moves back; past the end, the next inference is exhausted.
func (m *Model) Skip(n int) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.next = max(m.next, min(n, len(m.turns)))
}

// Remaining reports how many turns are left, so a test can check that a
// scenario used its whole script.
func (m *Model) Remaining() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.turns) - m.next
}

func (m *Model) exhausted(n int) error {
	where := "the script"
	if m.source != "" {
		where = m.source
	}
	return errs.New(errs.ModelFailed,
		"scripted model: the script has %s and a %s inference was asked for; add a turn to %s",
		plural(n, "turn"), ordinal(n+1), where)
}

// cloneTurn deep-copies a turn: the tool calls, their args and the usage.
func cloneTurn(t Turn) Turn {
	out := Turn{Text: t.Text}
	if t.ToolCalls != nil {
		out.ToolCalls = make([]model.ToolCall, len(t.ToolCalls))
		for i, c := range t.ToolCalls {
			c.Args, _ = value.Clone(c.Args).(map[string]any)
			if c.Args == nil {
				c.Args = map[string]any{}
			}
			out.ToolCalls[i] = c
		}
	}
	if t.Usage != nil {
		u := *t.Usage
		out.Usage = &u
	}
	return out
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// ordinal renders 1st, 2nd, 3rd, 4th, 11th, 12th, 13th, 21st...
func ordinal(n int) string {
	suffix := "th"
	switch n % 100 {
	case 11, 12, 13:
	default:
		switch n % 10 {
		case 1:
			suffix = "st"
		case 2:
			suffix = "nd"
		case 3:
			suffix = "rd"
		}
	}
	return strconv.Itoa(n) + suffix
}
