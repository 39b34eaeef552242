package run

import (
	"math"
	"strconv"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/phase"
	"github.com/awaken-lua/awaken-lua/engine/value"
	"github.com/awaken-lua/awaken-lua/model"
)

// The Session's methods are the boundary every driver crosses (the loop,
// the sidecar, the coding agents' adapters), so they validate what they are
// given, one rule for all: a bad value is bad_request naming the field's
// path in the request body the sidecar reads ($.call.name,
// $.response.tool_calls[2].id, $.request.params.max_tokens,
// $.decisions[0].result), and nothing changes.

// checkCall checks a tool call the model made (after_inference's
// tool_calls, AnnounceCall) and puts its arguments in canonical form: it
// needs an id, a name, and arguments that are a JSON object.
func checkCall(path string, c *model.ToolCall) error {
	if c.ID == "" {
		return errs.Field(path+".id", "a tool call needs an id")
	}
	if c.Name == "" {
		return errs.Field(path+".name", "tool call %q has no name; send the name of the tool the model called", c.ID)
	}
	if c.Args == nil {
		c.Args = map[string]any{}
		return nil
	}
	n, err := value.Normalize(c.Args)
	if err != nil {
		return errs.Field(path+".args", "tool call %q: the arguments are not a JSON object: %v", c.ID, err)
	}
	c.Args = n.(map[string]any)
	return nil
}

// addressed finds the call of this step that a call phase names: by id,
// and by name too when the host sends one. A call the model did not
// announce in this step (after_inference, AnnounceCall) is refused: a gate
// decision, or a tool run, for a call nobody made would be recorded as if
// the model had made it.
func (s *Session) addressed(p phase.Phase, call model.ToolCall) (*CallRecord, error) {
	if call.ID == "" {
		return nil, errs.Field("$.call.id", "%s needs the id of a tool call the model made in this step", p)
	}
	c := s.call(call.ID)
	if c == nil {
		return nil, errs.Field("$.call.id", "%s: the model made no tool call %q in this step (%s); send the model's response with its calls to after_inference first",
			p, call.ID, s.someCallIDs())
	}
	if call.Name != "" && call.Name != c.Call.Name {
		return nil, errs.Field("$.call.name", "%s: tool call %q calls %q, not %q", p, call.ID, c.Call.Name, call.Name)
	}
	return c, nil
}

// someCallIDs names the step's first calls, for messages.
func (s *Session) someCallIDs() string {
	const show = 5
	if len(s.calls) == 0 {
		return "it made none"
	}
	ids := make([]string, 0, show)
	for _, c := range s.calls[:min(show, len(s.calls))] {
		ids = append(ids, strconv.Quote(c.Call.ID))
	}
	out := "its calls: " + strings.Join(ids, ", ")
	if len(s.calls) > show {
		out += " and " + strconv.Itoa(len(s.calls)-show) + " more"
	}
	return out
}

// checkResultStatus checks the status of a tool result a host sends.
func checkResultStatus(r model.ToolResult) error {
	switch r.Status {
	case model.StatusSuccess, model.StatusError, model.StatusPending:
		return nil
	case "":
		return errs.Field("$.result.status", "the tool result has no status; send \"success\", \"error\" or \"pending\"")
	}
	return errs.Field("$.result.status", "a tool result status is \"success\", \"error\" or \"pending\", not %q", r.Status)
}

// checkMessages checks a conversation a host sends (path names it in the
// request body): each message has a known role, and each tool call in one
// an id and a name. Its arguments are the host's record of the past, kept
// as sent.
func checkMessages(path string, ms []model.Message) error {
	for i, m := range ms {
		at := path + "[" + strconv.Itoa(i) + "]"
		switch m.Role {
		case model.RoleSystem, model.RoleUser, model.RoleAssistant, model.RoleTool:
		default:
			return errs.Field(at+".role", "messages[%d].role is %q; use system, user, assistant or tool", i, m.Role)
		}
		for j, c := range m.ToolCalls {
			call := at + ".tool_calls[" + strconv.Itoa(j) + "]"
			if c.ID == "" {
				return errs.Field(call+".id", "messages[%d].tool_calls[%d] has no id; a tool call needs one", i, j)
			}
			if c.Name == "" {
				return errs.Field(call+".name", "messages[%d].tool_calls[%d] (%q) has no name; send the name of the tool the model called", i, j, c.ID)
			}
		}
	}
	return nil
}

// checkTools checks the tools a host offers (path names them in the
// request body): each has a name, and no two the same one, which would
// leave it open which one a call of that name calls.
func checkTools(path string, ts []model.ToolSpec) error {
	for i, t := range ts {
		if t.Name == "" {
			return errs.Field(path+"["+strconv.Itoa(i)+"].name", "tools[%d] has no name", i)
		}
		for j := range i { // few tools: no map
			if ts[j].Name == t.Name {
				return errs.Field(path+"["+strconv.Itoa(i)+"].name", "tools[%d] and tools[%d] are both named %q; give each tool its own name", j, i, t.Name)
			}
		}
	}
	return nil
}

// checkUsage checks the token counts of a model's answer: none is negative.
func checkUsage(u *model.Usage) error {
	if u == nil {
		return nil
	}
	for _, f := range []struct {
		name string
		n    int
	}{{"prompt_tokens", u.PromptTokens}, {"completion_tokens", u.CompletionTokens}, {"total_tokens", u.TotalTokens}} {
		if f.n < 0 {
			return errs.Field("$.response.usage."+f.name, "usage.%s is a count of tokens, not %d; leave it out when the model does not say", f.name, f.n)
		}
	}
	return nil
}

// checkRequest checks the request a host sends to before_inference.
func checkRequest(req model.Request) error {
	if err := checkMessages("$.request.messages", req.Messages); err != nil {
		return err
	}
	if err := checkTools("$.request.tools", req.Tools); err != nil {
		return err
	}
	p := req.Params
	if p.MaxTokens != nil && *p.MaxTokens < 1 {
		return errs.Field("$.request.params.max_tokens", "max_tokens is at least 1, not %d; leave it out for the model's default", *p.MaxTokens)
	}
	if p.Temperature != nil && !(*p.Temperature >= 0 && !math.IsInf(*p.Temperature, 0)) {
		return errs.Field("$.request.params.temperature", "temperature is a number of at least 0, not %v; leave it out for the model's default", *p.Temperature)
	}
	if p.TopP != nil && !(*p.TopP >= 0 && *p.TopP <= 1) {
		return errs.Field("$.request.params.top_p", "top_p is a number from 0 to 1, not %v; leave it out for the model's default", *p.TopP)
	}
	return nil
}
