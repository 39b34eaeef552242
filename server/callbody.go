package server

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/model"
	"github.com/awaken-lua/awaken-lua/engine/value"
)

// decodeCallBody reads {"call": {id, name, args}, "result"?: {status,
// data?, message?}}, the body of tool_gate and the tool phases, without
// reflection: encoding/json spent about 5 us and 26 allocations on it,
// as much as the gate decision itself. It accepts and rejects what
// decodeBody would (unknown fields, wrong types, trailing data; field
// names match case-insensitively, an exact match first), with messages
// that name the field.
func decodeCallBody(r *http.Request, v any) error {
	out := v.(*callBody)
	data, err := readBody(r)
	if err != nil {
		return err
	}
	if isBlank(data) {
		return nil // an empty body reads as {}
	}
	doc, err := value.ParseJSON(data)
	if err != nil {
		return badRequest("the body is not valid JSON for this endpoint: %v", err)
	}
	top, err := object(doc, "the body")
	if err != nil || top == nil {
		return err
	}
	if err := onlyFields(top, "", "call", "result"); err != nil {
		return err
	}
	if c, err := object(field(top, "call"), "call"); err != nil {
		return err
	} else if c != nil {
		if err := onlyFields(c, "call.", "id", "name", "args"); err != nil {
			return err
		}
		call := &model.ToolCall{}
		if call.ID, err = str(field(c, "id"), "call.id"); err != nil {
			return err
		}
		if call.Name, err = str(field(c, "name"), "call.name"); err != nil {
			return err
		}
		if call.Args, err = object(field(c, "args"), "call.args"); err != nil {
			return err
		}
		out.Call = call
	}
	if res, err := object(field(top, "result"), "result"); err != nil {
		return err
	} else if res != nil {
		if err := onlyFields(res, "result.", "status", "data", "message"); err != nil {
			return err
		}
		tr := &model.ToolResult{Data: field(res, "data")}
		if tr.Status, err = str(field(res, "status"), "result.status"); err != nil {
			return err
		}
		if tr.Message, err = str(field(res, "message"), "result.message"); err != nil {
			return err
		}
		out.Result = tr
	}
	return nil
}

// readBody reads the whole body, in one allocation when its length is
// declared (and small).
func readBody(r *http.Request) ([]byte, error) {
	var (
		data []byte
		err  error
	)
	if n := r.ContentLength; n > 0 && n <= 64<<10 {
		data = make([]byte, n)
		_, err = io.ReadFull(r.Body, data) // net/http ends the body at Content-Length
	} else {
		data, err = io.ReadAll(r.Body)
	}
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

// field returns m's value for name: the exact key, else one that matches
// it case-insensitively (as encoding/json matches struct fields).
func field(m map[string]any, name string) any {
	if v, ok := m[name]; ok {
		return v
	}
	for k, v := range m {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return nil
}

// onlyFields rejects a key that matches none of names.
func onlyFields(m map[string]any, prefix string, names ...string) error {
next:
	for k := range m {
		for _, n := range names {
			if strings.EqualFold(k, n) {
				continue next
			}
		}
		return badRequest("the body is not valid JSON for this endpoint: unknown field %q; %s takes %s",
			prefix+k, strings.TrimSuffix(prefixOr(prefix), "."), strings.Join(names, ", "))
	}
	return nil
}

func prefixOr(prefix string) string {
	if prefix == "" {
		return "the body"
	}
	return prefix
}

// object is v as an object; JSON null is nil.
func object(v any, what string) (map[string]any, error) {
	switch x := v.(type) {
	case nil:
		return nil, nil
	case map[string]any:
		return x, nil
	}
	return nil, badRequest("the body is not valid JSON for this endpoint: %s must be an object, not a JSON %s", what, value.TypeName(v))
}

// str is v as a string; JSON null is "".
func str(v any, what string) (string, error) {
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
	dst, _ = value.AppendJSON(dst, g.Decision)
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
