package journal

import (
	"encoding/json"
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/awaken-lua/awaken-lua/engine/gate"
	"github.com/awaken-lua/awaken-lua/model"
)

// appendRecord encodes rec as one JSON object, as encoding/json would
// (the same field names and omissions, map keys unsorted), several times
// faster: the journal encodes every phase of every run. Records read back
// with encoding/json. Values of types this encoder does not know are
// encoded by encoding/json.
func appendRecord(b []byte, r *Record) []byte {
	e := enc{b: append(b, '{')}
	e.str("rec", r.Rec)
	if r.Format != 0 {
		e.key("format")
		e.b = strconv.AppendInt(e.b, int64(r.Format), 10)
	}
	e.str("run_id", r.RunID)
	e.strOmit("thread_id", r.ThreadID)
	e.strOmit("agent", r.Agent)
	if g := r.Generation; g != nil {
		e.key("generation")
		e.b = append(e.b, '{')
		e.first = true
		e.str("id", g.ID)
		e.strOmit("hash", g.Hash)
		e.b = append(e.b, '}')
		e.first = false
	}
	e.strOmit("config_hash", r.ConfigHash)
	if len(r.Plugins) > 0 {
		e.key("plugins")
		e.strings(r.Plugins)
	}
	e.timeOmit("ts", r.TS)
	if r.Save != 0 {
		e.key("save")
		e.b = strconv.AppendUint(e.b, r.Save, 10)
	}
	e.strOmit("phase", r.Phase)
	e.intOmit("step", r.Step)
	if in := r.Input; in != nil {
		e.key("input")
		e.input(in)
	}
	if len(r.Decisions) > 0 {
		e.key("decisions")
		e.b = append(e.b, '[')
		for i, d := range r.Decisions {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.obj(func() {
				e.str("call_id", d.CallID)
				e.str("tool", d.Tool)
				e.str("decision", d.Decision.String())
				e.strOmit("plugin", d.Plugin)
				e.strOmit("reason", d.Reason)
				if len(d.Args) > 0 {
					e.key("args")
					e.value(d.Args)
				}
			})
		}
		e.b = append(e.b, ']')
	}
	if len(r.Context) > 0 {
		e.key("context")
		e.b = append(e.b, '[')
		for i, c := range r.Context {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.obj(func() {
				e.str("key", c.Key)
				e.str("target", c.Target)
				e.str("role", c.Role)
				e.str("content", c.Content)
			})
		}
		e.b = append(e.b, ']')
	}
	if r.Request != nil {
		e.key("request")
		e.obj(func() {
			e.key("tools")
			if r.Request.Tools == nil {
				e.b = append(e.b, "null"...)
			} else {
				e.strings(r.Request.Tools)
			}
			e.key("params")
			e.params(r.Request.Params)
		})
	}
	e.intOmit("continued", r.Continued)
	e.strOmit("termination", r.Termination)
	e.strOmit("failed", r.Failed)
	if len(r.Expired) > 0 {
		e.key("expired")
		e.strings(r.Expired)
	}
	if len(r.Masked) > 0 {
		e.key("masked")
		e.strings(r.Masked)
	}
	if len(r.Omitted) > 0 {
		e.key("omitted")
		e.strings(r.Omitted)
	}
	e.intOmit("steps", r.Steps)
	if r.Shadow != nil {
		e.any("shadow", r.Shadow)
	}
	if len(r.Lost) > 0 {
		e.any("lost", r.Lost)
	}
	return append(e.b, '}')
}

type enc struct {
	b     []byte
	first bool // no field written yet in the current object
}

func (e *enc) key(k string) {
	if len(e.b) > 0 && e.b[len(e.b)-1] != '{' {
		e.b = append(e.b, ',')
	}
	e.b = append(e.b, '"')
	e.b = append(e.b, k...)
	e.b = append(e.b, '"', ':')
}

func (e *enc) obj(fields func()) {
	e.b = append(e.b, '{')
	fields()
	e.b = append(e.b, '}')
}

func (e *enc) str(k, v string) {
	e.key(k)
	e.b = appendString(e.b, v)
}

func (e *enc) strOmit(k, v string) {
	if v != "" {
		e.str(k, v)
	}
}

func (e *enc) intOmit(k string, v int) {
	if v != 0 {
		e.key(k)
		e.b = strconv.AppendInt(e.b, int64(v), 10)
	}
}

func (e *enc) timeOmit(k string, t time.Time) {
	if !t.IsZero() {
		e.key(k)
		e.b = append(e.b, '"')
		e.b = t.AppendFormat(e.b, time.RFC3339Nano)
		e.b = append(e.b, '"')
	}
}

func (e *enc) strings(ss []string) {
	e.b = append(e.b, '[')
	for i, s := range ss {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.b = appendString(e.b, s)
	}
	e.b = append(e.b, ']')
}

// any encodes a rare field with encoding/json.
func (e *enc) any(k string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		return
	}
	e.key(k)
	e.b = append(e.b, b...)
}

func (e *enc) input(in *Input) {
	e.obj(func() {
		e.timeOmit("now", in.Now)
		e.strOmit("cwd", in.Cwd)
		if len(in.Messages) > 0 {
			e.key("messages")
			e.messages(in.Messages)
		}
		if th := in.Thread; th != nil {
			e.key("thread")
			e.obj(func() {
				if len(th.Values) > 0 {
					e.key("values")
					e.value(th.Values)
				}
				if len(th.Messages) > 0 {
					e.key("messages")
					e.messages(th.Messages)
				}
			})
		}
		if len(in.Tools) > 0 {
			e.key("tools")
			e.tools(in.Tools)
		}
		if in.HostTools {
			e.key("host_tools")
			e.b = append(e.b, "true"...)
		}
		if in.Params != nil {
			e.key("params")
			e.params(*in.Params)
		}
		if r := in.Response; r != nil {
			e.key("response")
			e.obj(func() {
				e.str("text", r.Text)
				e.key("tool_calls")
				e.calls(r.ToolCalls)
				if r.Usage != nil {
					e.any("usage", r.Usage)
				}
			})
		}
		if c := in.Call; c != nil {
			e.key("call")
			e.call(*c)
		}
		if r := in.Result; r != nil {
			e.key("result")
			e.obj(func() {
				e.str("status", r.Status)
				if r.Data != nil {
					e.key("data")
					e.value(r.Data)
				}
				e.strOmit("message", r.Message)
			})
		}
		if len(in.Resume) > 0 {
			e.key("resume")
			e.resume(in.Resume)
		}
		e.strOmit("reason", in.Reason)
	})
}

func (e *enc) tools(ts []model.ToolSpec) {
	e.b = append(e.b, '[')
	for i, t := range ts {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.obj(func() {
			e.str("name", t.Name)
			e.strOmit("description", t.Description)
			if len(t.Parameters) > 0 {
				e.key("parameters")
				e.value(t.Parameters)
			}
		})
	}
	e.b = append(e.b, ']')
}

func (e *enc) params(p model.Params) {
	e.obj(func() {
		e.strOmit("model", p.Model)
		if p.Temperature != nil {
			e.key("temperature")
			e.value(*p.Temperature)
		}
		if p.MaxTokens != nil {
			e.key("max_tokens")
			e.b = strconv.AppendInt(e.b, int64(*p.MaxTokens), 10)
		}
		if p.TopP != nil {
			e.key("top_p")
			e.value(*p.TopP)
		}
		e.strOmit("reasoning_effort", p.ReasoningEffort)
	})
}

func (e *enc) resume(rs []gate.Resume) {
	e.b = append(e.b, '[')
	for i, r := range rs {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.obj(func() {
			e.str("target", r.Target)
			e.str("action", r.Action)
			if r.Result != nil {
				e.key("result")
				e.value(r.Result)
			}
			e.strOmit("reason", r.Reason)
		})
	}
	e.b = append(e.b, ']')
}

func (e *enc) messages(ms []model.Message) {
	e.b = append(e.b, '[')
	for i, m := range ms {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.obj(func() {
			e.str("role", m.Role)
			e.str("content", m.Content)
			if len(m.ToolCalls) > 0 {
				e.key("tool_calls")
				e.calls(m.ToolCalls)
			}
			e.strOmit("tool_call_id", m.ToolCallID)
		})
	}
	e.b = append(e.b, ']')
}

func (e *enc) calls(cs []model.ToolCall) {
	if cs == nil {
		e.b = append(e.b, "null"...)
		return
	}
	e.b = append(e.b, '[')
	for i, c := range cs {
		if i > 0 {
			e.b = append(e.b, ',')
		}
		e.call(c)
	}
	e.b = append(e.b, ']')
}

func (e *enc) call(c model.ToolCall) {
	e.obj(func() {
		e.str("id", c.ID)
		e.str("name", c.Name)
		e.key("args")
		if c.Args == nil {
			e.b = append(e.b, "null"...)
		} else {
			e.value(c.Args)
		}
	})
}

// value encodes a canonical value (the runtime normalizes arguments,
// results and state to these types); anything else goes to encoding/json.
func (e *enc) value(v any) {
	switch t := v.(type) {
	case nil:
		e.b = append(e.b, "null"...)
	case string:
		e.b = appendString(e.b, t)
	case bool:
		e.b = strconv.AppendBool(e.b, t)
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			e.b = append(e.b, "null"...)
			return
		}
		if t == math.Trunc(t) && math.Abs(t) < 1e15 {
			e.b = strconv.AppendInt(e.b, int64(t), 10)
			return
		}
		e.b = strconv.AppendFloat(e.b, t, 'g', -1, 64)
	case map[string]any:
		e.b = append(e.b, '{')
		n := 0
		for k, x := range t {
			if n > 0 {
				e.b = append(e.b, ',')
			}
			n++
			e.b = appendString(e.b, k)
			e.b = append(e.b, ':')
			e.value(x)
		}
		e.b = append(e.b, '}')
	case []any:
		e.b = append(e.b, '[')
		for i, x := range t {
			if i > 0 {
				e.b = append(e.b, ',')
			}
			e.value(x)
		}
		e.b = append(e.b, ']')
	default:
		b, err := json.Marshal(v)
		if err != nil {
			b = []byte("null")
		}
		e.b = append(e.b, b...)
	}
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string: control characters, quotes and
// backslashes escaped, invalid UTF-8 replaced, as encoding/json does (but
// <, > and & are left as they are: the journal is not HTML).
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 || r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			if r == utf8.RuneError {
				b = append(b, `\ufffd`...)
			} else {
				b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			}
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
