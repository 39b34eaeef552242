package journal

import (
	"sort"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/model"
)

// Masked is what a masked field's value becomes in the journal.
const Masked = "[masked]"

// Mask masks fields of tool arguments and results before they are written.
// A pattern is a dotted key path ("password", "headers.authorization");
// it matches a field whose path ends with it, at any depth, ignoring case.
type Mask struct {
	patterns [][]string
}

// NewMask compiles the patterns of [journal] mask.
func NewMask(patterns []string) *Mask {
	m := &Mask{}
	for _, p := range patterns {
		if p = strings.TrimSpace(p); p != "" {
			m.patterns = append(m.patterns, strings.Split(strings.ToLower(p), "."))
		}
	}
	return m
}

// Empty reports whether the mask masks nothing.
func (m *Mask) Empty() bool { return m == nil || len(m.patterns) == 0 }

// apply returns rec with its masked fields replaced, copying what it
// changes (rec itself is never modified: a shadow may still read it).
func (m *Mask) apply(rec *Record) *Record {
	if m.Empty() || rec.Input == nil && len(rec.Decisions) == 0 && rec.Shadow == nil {
		return rec
	}
	out := *rec
	var masked []string
	if in := rec.Input; in != nil {
		cp := *in
		if in.Call != nil {
			c := *in.Call
			c.Args = m.maskMap(c.Args, "call.args", &masked)
			cp.Call = &c
		}
		if in.Result != nil {
			r := *in.Result
			r.Data, _ = m.maskValue(r.Data, "result.data", nil, &masked)
			cp.Result = &r
		}
		if in.Response != nil {
			r := *in.Response
			r.ToolCalls = m.maskCalls(r.ToolCalls, "response.tool_calls", &masked)
			cp.Response = &r
		}
		if len(in.Messages) > 0 {
			cp.Messages = m.maskMessages(in.Messages, "messages", &masked)
		}
		if len(in.Resume) > 0 {
			// A resume's result becomes the call's result, or its
			// arguments' "decision": masked there, and so here.
			var rs []gate.Resume
			for i, r := range in.Resume {
				v, changed := m.maskValue(r.Result, "resume.result", nil, &masked)
				if !changed {
					continue
				}
				if rs == nil {
					rs = append([]gate.Resume(nil), in.Resume...)
				}
				rs[i].Result = v
			}
			if rs != nil {
				cp.Resume = rs
			}
		}
		if in.Thread != nil {
			th := *in.Thread
			th.Messages = m.maskMessages(th.Messages, "thread.messages", &masked)
			cp.Thread = &th
		}
		out.Input = &cp
	}
	if len(rec.Decisions) > 0 {
		ds := make([]Decision, len(rec.Decisions))
		for i, d := range rec.Decisions {
			d.Args = m.maskMap(d.Args, "decisions.args", &masked)
			ds[i] = d
		}
		out.Decisions = ds
	}
	if f := rec.Shadow; f != nil {
		cp := *f
		cp.Args = m.maskMap(f.Args, "shadow.args", &masked)
		if f.FromArgs != nil || f.ToArgs != nil {
			cp.FromArgs = m.maskMap(f.FromArgs, "shadow.from", &masked)
			cp.ToArgs = m.maskMap(f.ToArgs, "shadow.to", &masked)
			cp.From, cp.To = ArgsText(cp.FromArgs), ArgsText(cp.ToArgs)
		}
		out.Shadow = &cp
	}
	sort.Strings(masked)
	out.Masked = masked
	return &out
}

func (m *Mask) maskMessages(msgs []model.Message, at string, masked *[]string) []model.Message {
	var out []model.Message
	for i, msg := range msgs {
		if len(msg.ToolCalls) == 0 {
			continue
		}
		if out == nil {
			out = append([]model.Message(nil), msgs...)
		}
		msg.ToolCalls = m.maskCalls(msg.ToolCalls, at+".tool_calls", masked)
		out[i] = msg
	}
	if out == nil {
		return msgs
	}
	return out
}

func (m *Mask) maskCalls(calls []model.ToolCall, at string, masked *[]string) []model.ToolCall {
	if len(calls) == 0 {
		return calls
	}
	out := make([]model.ToolCall, len(calls))
	for i, c := range calls {
		c.Args = m.maskMap(c.Args, at+".args", masked)
		out[i] = c
	}
	return out
}

func (m *Mask) maskMap(v map[string]any, at string, masked *[]string) map[string]any {
	if v == nil {
		return nil
	}
	out, _ := m.maskValue(v, at, nil, masked)
	return out.(map[string]any)
}

// maskValue returns v with matching fields masked, and whether it changed
// anything; path is the key path from the argument or result root. Only
// what changes is copied.
func (m *Mask) maskValue(v any, at string, path []string, masked *[]string) (any, bool) {
	switch t := v.(type) {
	case map[string]any:
		var out map[string]any
		for k, x := range t {
			p := append(path[:len(path):len(path)], strings.ToLower(k))
			nx, changed := any(Masked), true
			if m.matches(p) {
				*masked = append(*masked, at+"."+strings.Join(p, "."))
			} else if nx, changed = m.maskValue(x, at, p, masked); !changed {
				continue
			}
			if out == nil {
				out = make(map[string]any, len(t))
				for k2, x2 := range t {
					out[k2] = x2
				}
			}
			out[k] = nx
		}
		if out == nil {
			return t, false
		}
		return out, true
	case []any:
		var out []any
		for i, x := range t {
			nx, changed := m.maskValue(x, at, path, masked)
			if !changed {
				continue
			}
			if out == nil {
				out = append([]any(nil), t...)
			}
			out[i] = nx
		}
		if out == nil {
			return t, false
		}
		return out, true
	}
	return v, false
}

func (m *Mask) matches(path []string) bool {
	for _, p := range m.patterns {
		if len(p) > len(path) {
			continue
		}
		tail := path[len(path)-len(p):]
		ok := true
		for i := range p {
			if p[i] != tail[i] {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}
