package hooks

// The admission every agent's hook endpoint shares: read the body within
// the body limit, decode it strictly, take a concurrency slot, recover a
// panic, and whatever goes wrong answer 200 with the agent's own failure
// reply (an agent reads an HTTP error as "no decision" and lets the tool
// run, so a tool-permission event must fail closed in the reply itself).
// Each adapter supplies only what differs: its types, how it names the
// event of a body, its failure reply and its mapping.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"regexp"
	"runtime/debug"
)

// hookProtocol is one agent's hook protocol, as the shared admission sees
// it.
type hookProtocol[In, Out any] struct {
	agent string // for the log: "Claude Code", "Codex", ...
	// event names the event a failure answers. in is nil when the body
	// did not decode: a tool-permission event must then be recognised in
	// the raw body, so that it fails closed. When it names none, the
	// request's ?event= (the hook command's --event) does.
	event func(r *http.Request, in *In, body []byte) string
	// name is where a decoded body names its event, which ?event= fills
	// when the body leaves it empty; nil for a protocol whose input names
	// no event.
	name func(in *In) *string
	// failure is the reply when the adapter could not do its work.
	failure func(event string, err error) Out
	// serve answers a decoded event, holding a concurrency slot.
	serve func(ctx context.Context, r *http.Request, in *In, agent string) Out
	// decode decodes a body into in; nil for json.Unmarshal.
	decode func(body []byte, in *In) error
}

// serveHook answers one hook request of protocol p: always 200 with p's
// JSON (only a missing or wrong token, checked before, is an HTTP error).
func serveHook[In, Out any](o *Options, w http.ResponseWriter, r *http.Request, p *hookProtocol[In, Out]) (err error) {
	body, rerr := readBody(r.Body, o.BodyLimit)
	var in In
	decoded := false
	// The event a failure answers: the one the body names (decoded, or
	// recognised before it breaks), else the request's ?event= (the hook
	// command's --event). A body that names a tool event is answered as
	// one, whatever --event says, so it is denied.
	event := func() string {
		if decoded {
			return p.event(r, &in, body) // ?event= is in it already (p.name)
		}
		if e := p.event(r, nil, body); e != "" {
			return e
		}
		return query(r, "event")
	}
	var out Out
	defer func() {
		if v := recover(); v != nil {
			o.Log.LogAttrs(r.Context(), slog.LevelError, "panic in the "+p.agent+" adapter", slog.String("panic", fmt.Sprint(v)),
				slog.String("stack", string(debug.Stack())))
			out = p.failure(event(), errors.New("internal error in the sidecar"))
			err = writeJSON(w, http.StatusOK, out)
		}
	}()
	switch {
	case rerr != nil:
		out = p.failure(event(), fmt.Errorf("reading the hook input failed: %v", rerr))
	case int64(len(body)) > o.BodyLimit:
		out = p.failure(event(), fmt.Errorf("the hook input is larger than the sidecar's body limit (%d bytes); raise [server] body_limit", o.BodyLimit))
	default:
		// Before decoding: a body that names a key twice (in any case,
		// at the top level) decodes to whichever came last, so its
		// event is read from the body as it first names it.
		if derr := o.CheckBody(body); derr != nil {
			out = p.failure(event(), derr)
			break
		}
		decode := p.decode
		if decode == nil {
			decode = func(body []byte, in *In) error { return json.Unmarshal(body, in) }
		}
		if jerr := decode(body, &in); jerr != nil {
			out = p.failure(event(), fmt.Errorf("the hook input is not valid JSON: %v", jerr))
			break
		}
		decoded = true
		if p.name != nil {
			if n := p.name(&in); *n == "" {
				*n = query(r, "event") // the hook command's --event
			}
		}
		select {
		case o.Slots <- struct{}{}:
			out = func() Out {
				defer func() { <-o.Slots }() // a panic must not keep the slot
				agent := query(r, "agent")
				if agent == "" {
					agent = o.HookAgent
				}
				return p.serve(context.WithoutCancel(r.Context()), r, &in, agent)
			}()
		default:
			out = p.failure(event(), fmt.Errorf("the sidecar is overloaded (%d requests in flight); raise [server] max_concurrent", cap(o.Slots)))
		}
	}
	return writeJSON(w, http.StatusOK, out)
}

// readBodyer is a body the server has read in full already: its bytes are
// final and the adapter may keep them. Any other body the adapter reads.
type readBodyer interface{ ReadBody() ([]byte, error) }

// readBody returns at most limit+1 bytes of body: one over the limit tells
// a body that is too large.
func readBody(body io.Reader, limit int64) ([]byte, error) {
	if rb, ok := body.(readBodyer); ok {
		data, err := rb.ReadBody()
		if int64(len(data)) > limit+1 {
			data = data[:limit+1]
		}
		if err == io.EOF {
			err = nil // as io.ReadAll has it: the end of the body is no error
		}
		return data, err
	}
	return io.ReadAll(io.LimitReader(body, limit+1))
}

// query is r's query parameter name, without parsing a query that is not
// there (most hook requests have none).
func query(r *http.Request, name string) string {
	if r.URL.RawQuery == "" {
		return ""
	}
	return r.URL.Query().Get(name)
}

// eventName is how an event names itself in the input of every agent that
// names it (Copilot's camelCase input does not).
var eventName = regexp.MustCompile(`"hook_event_name"\s*:\s*"([A-Za-z_]+)"`)

// SniffEvent is the event a body that does not parse names before it
// breaks, or "": the first "hook_event_name" key (agents send it near the
// start; in a string value its quotes would be escaped).
func SniffEvent(body []byte) string {
	if m := eventName.FindSubmatch(body); m != nil {
		return string(m[1])
	}
	return ""
}
