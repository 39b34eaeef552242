package hooks

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/awaken-lua/awaken-lua/model"
)

// SessionFacts is what the Claude Code adapter learned of a session
// besides its runs that changes its later replies and records. A sidecar
// keeps them in memory; `awaken-lua hook --local` serves each event in a
// process of its own, so it carries them from one event to the next
// (Adapters.Facts, Adapters.Restore), as it carries the runs
// (server.Server.Hold). What else a session holds is the event's own or
// comes back from its run (the open step's offer: relist).
type SessionFacts struct {
	// Agent is the awaken-lua agent the session's events run as: only a
	// run of that agent is taken up.
	Agent string `json:"agent,omitempty"`
	// Posts: the session sends PostToolUse, so a call that never reported
	// was declined or failed, rather than of an unknown result.
	Posts bool `json:"posts,omitempty"`
	// Seen are the tools outside the built-in set the session used, which
	// every step offers.
	Seen []string `json:"seen,omitempty"`
	// Approved are the calls answered "ask" whose user approved them (their
	// PostToolUse came) while their step still waits for other calls.
	Approved map[string]model.ToolResult `json:"approved,omitempty"`
	// SubRuns are the subagents' runs a runtime.continue kept open at
	// their SubagentStop, oldest first.
	SubRuns []SubRun `json:"sub_runs,omitempty"`
	// Used is when the session's last event was: a session idle for
	// long is forgotten (Sweep, Restore).
	Used time.Time `json:"used,omitzero"`
}

// SubRun is a subagent's run kept open at its SubagentStop.
type SubRun struct {
	Agent string `json:"agent"` // the subagent's agent_id
	Run   string `json:"run"`
}

// MaxSubagentFacts bounds the subagent sessions whose facts Facts gives
// for one session (the most recently used): a record that hook --local
// reads and writes at every event must not grow with the subagents a
// long session started.
const MaxSubagentFacts = 64

// Facts returns the facts of every session the adapters hold, by the
// adapter's session key (a session id, or a subagent's thread), and of at
// most MaxSubagentFacts subagents per session.
func (a *Adapters) Facts() map[string]SessionFacts {
	c := a.cc
	c.mu.Lock()
	sessions := slices.Collect(maps.Values(c.sessions))
	c.mu.Unlock()
	type held struct {
		key  string
		used int64
		f    SessionFacts
	}
	var all []held
	for _, cs := range sessions {
		cs.mu.Lock()
		if !cs.gone {
			all = append(all, held{cs.id, cs.lastUsed.Load(), cs.facts()})
		}
		cs.mu.Unlock()
	}
	// The most recently used first, so that the bound keeps those.
	slices.SortFunc(all, func(x, y held) int { return cmp.Compare(y.used, x.used) })
	out := make(map[string]SessionFacts, len(all))
	subs := map[string]int{}
	for _, h := range all {
		if main, _, isSub := strings.Cut(h.key, subagentInfix); isSub {
			if subs[main] >= MaxSubagentFacts {
				continue
			}
			subs[main]++
		}
		out[h.key] = h.f
	}
	return out
}

// Restore gives the adapters the facts Facts returned, before the first
// event; a session the adapters hold already keeps its own, and one idle
// past idle is left out, as Sweep would have forgotten it.
func (a *Adapters) Restore(facts map[string]SessionFacts, idle time.Duration) {
	c := a.cc
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for key, f := range facts {
		used := f.Used
		if used.IsZero() || used.After(now) {
			used = now
		}
		if key == "" || c.sessions[key] != nil || now.Sub(used) > idle {
			continue
		}
		seen := f.Seen[max(0, len(f.Seen)-MaxSeenTools):] // the latest last
		cs := &ccSession{id: key, agent: f.Agent, posts: f.Posts, seen: slices.Clone(seen),
			subRuns: slices.Clone(f.SubRuns)}
		if len(f.Approved) > 0 {
			cs.approved = maps.Clone(f.Approved)
		}
		cs.held = cs.heldBuf[:0]
		cs.lastUsed.Store(used.UnixNano())
		c.sessions[key] = cs
	}
}

// facts are the session's facts (cs.mu held).
func (cs *ccSession) facts() SessionFacts {
	f := SessionFacts{Agent: cs.agent, Posts: cs.posts, Seen: slices.Clone(cs.seen), SubRuns: slices.Clone(cs.subRuns),
		Used: time.Unix(0, cs.lastUsed.Load()).UTC()}
	if len(cs.approved) > 0 {
		f.Approved = maps.Clone(cs.approved)
	}
	return f
}
