package server

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/value"
	"github.com/awaken-lua/awaken-lua/model"
)

// decodeCallBody reads {"call": {id, name, args}, "result"?: {status,
// data?, message?}}, the body of tool_gate and the tool phases, without
// reflection: encoding/json spent about 5 us and 26 allocations on it,
// as much as the gate decision itself. It accepts and rejects what
// decodeBody would (unknown fields, wrong types, trailing data; field
// names match case-insensitively), with messages that name the field, but
// for one case: two spellings of one field ("id" and "ID"), which
// encoding/json lets the last win, are refused, as their order is gone. A
// key given twice is refused by both (duplicateKey).
func decodeCallBody(r *http.Request, v any) error {
	out := v.(*callBody)
	data, err := readBody(r)
	if err != nil {
		return err
	}
	if isBlank(data) {
		return nil // an empty body reads as {}
	}
	if err := duplicateKey(data); err != nil {
		return err
	}
	doc, err := value.ParseJSON(data)
	if err != nil {
		return badRequest("the body is not valid JSON for this endpoint: %v", err)
	}
	top, ok := doc.(map[string]any)
	switch {
	case doc == nil:
		return nil // null reads as {}
	case !ok:
		return bodyNotObject(value.TypeName(doc))
	}
	f, err := jsonFields(top, "", "call", "result")
	if err != nil {
		return err
	}
	if c, err := jsonObject(f[0], "call"); err != nil {
		return err
	} else if c != nil {
		cf, err := jsonFields(c, "call.", "id", "name", "args")
		if err != nil {
			return err
		}
		call := &model.ToolCall{}
		if call.ID, err = jsonString(cf[0], "call.id"); err != nil {
			return err
		}
		if call.Name, err = jsonString(cf[1], "call.name"); err != nil {
			return err
		}
		if call.Args, err = jsonObject(cf[2], "call.args"); err != nil {
			return err
		}
		out.Call = call
	}
	if res, err := jsonObject(f[1], "result"); err != nil {
		return err
	} else if res != nil {
		rf, err := jsonFields(res, "result.", "status", "data", "message")
		if err != nil {
			return err
		}
		tr := &model.ToolResult{Data: rf[1]}
		if tr.Status, err = jsonString(rf[0], "result.status"); err != nil {
			return err
		}
		if tr.Message, err = jsonString(rf[2], "result.message"); err != nil {
			return err
		}
		out.Result = tr
	}
	return nil
}

// readBody returns the body admit read (see readRequestBody), or reads it
// (a handler called without admit, as in tests).
func readBody(r *http.Request) ([]byte, error) {
	if b, ok := r.Body.(*bodyBytes); ok {
		return b.data, nil
	}
	data, err := readAllBody(r.Body, r.ContentLength)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(mbe.Limit)
		}
		return nil, badRequest("cannot read the body: %v", err)
	}
	return data, nil
}

func isBlank(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return false
		}
	}
	return true
}

// jsonFields returns the values of names in m, in order (nil when
// absent), matching keys case-insensitively as encoding/json matches
// struct fields. A key that matches no name, or a second key for one name,
// is an error.
func jsonFields(m map[string]any, prefix string, names ...string) ([]any, error) {
	out := make([]any, len(names))
	seen := make([]string, len(names))
next:
	for k, v := range m {
		for i, n := range names {
			if !strings.EqualFold(k, n) {
				continue
			}
			if seen[i] != "" {
				a, b := min(seen[i], k), max(seen[i], k)
				return nil, badRequest("the body is not valid JSON for this endpoint: %s is given twice (as %q and %q)", prefix+n, a, b)
			}
			seen[i], out[i] = k, v
			continue next
		}
		what := "the body"
		if prefix != "" {
			what = strings.TrimSuffix(prefix, ".")
		}
		return nil, badRequest("the body is not valid JSON for this endpoint: unknown field %q; %s takes %s",
			prefix+k, what, strings.Join(names, ", "))
	}
	return out, nil
}

// jsonObject is v as an object; JSON null is nil.
func jsonObject(v any, what string) (map[string]any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return x, nil
	}
	return nil, badRequest("the body is not valid JSON for this endpoint: %s must be an object, not a JSON %s", what, value.TypeName(v))
}

// jsonString is v as a string; JSON null is "".
func jsonString(v any, what string) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		return x, nil
	}
	return "", badRequest("the body is not valid JSON for this endpoint: %s must be a string, not a JSON %s", what, value.TypeName(v))
}

// appendGateReply encodes g as json.Marshal would (the test compares them),
// without reflection for the common replies: those without a ticket or a
// result. Others go through encoding/json.
func appendGateReply(dst []byte, g gateReply) ([]byte, error) {
	if g.Ticket != nil || g.Result != nil {
		b, err := json.Marshal(g)
		return append(dst, b...), err
	}
	dst = append(dst, `{"decision":`...)
	dst, _ = value.AppendJSON(dst, g.Decision.String())
	dst = append(dst, `,"args":`...)
	dst, err := value.AppendJSON(dst, g.Args)
	if err != nil {
		return nil, err
	}
	if g.Reason != "" {
		dst = append(dst, `,"reason":`...)
		dst, _ = value.AppendJSON(dst, g.Reason)
	}
	dst = append(dst, `,"revision":`...)
	dst = strconv.AppendUint(dst, g.Revision, 10)
	return append(dst, '}'), nil
}
