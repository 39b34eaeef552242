package hooks

import (
	"fmt"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/value"
)

// decodeCCInput decodes a Claude Code (or Codex) hook input with
// value.ParseJSON instead of encoding/json's reflection: a PreToolUse spent
// about a tenth of its time there, and the strings it kept (the call's id
// and arguments, for as long as the session lasts) were each an allocation
// the collector marks; ParseJSON keeps a document's short strings in one
// chunk. It accepts what json.Unmarshal into a ccInput accepts: unknown
// fields are ignored, null leaves a field empty, a field name matches
// case-insensitively when no field has it exactly, and a top-level null is
// an empty input. A field of the wrong type is an error that names it.
func decodeCCInput(body []byte, in *ccInput) error {
	doc, err := value.ParseJSON(body)
	if err != nil {
		return err
	}
	m, ok := doc.(map[string]any)
	if !ok {
		if doc == nil {
			return nil
		}
		return fmt.Errorf("the input is %s, not a JSON object", kindOf(doc))
	}
	found := 0
	for i := range ccFields {
		f := &ccFields[i]
		v, ok := m[f.name]
		if !ok {
			continue
		}
		found++
		if err := f.set(in, v); err != nil {
			return err
		}
	}
	if found == len(m) {
		return nil
	}
	// Keys that are no field's exact name: a case-insensitive match fills
	// a field its exact name did not (encoding/json's rule).
	for k, v := range m {
		for i := range ccFields {
			f := &ccFields[i]
			if k == f.name || !strings.EqualFold(k, f.name) {
				continue
			}
			if _, exact := m[f.name]; exact {
				break
			}
			if err := f.set(in, v); err != nil {
				return err
			}
			break
		}
	}
	return nil
}

// ccField is one JSON field of ccInput and how a decoded value sets it.
type ccField struct {
	name string
	set  func(in *ccInput, v any) error
}

// ccFields are ccInput's JSON fields, in the order they are decoded (the
// first of several wrong-typed fields is the one reported).
var ccFields = [...]ccField{
	ccString("session_id", func(in *ccInput) *string { return &in.SessionID }),
	ccString("transcript_path", func(in *ccInput) *string { return &in.TranscriptPath }),
	ccString("cwd", func(in *ccInput) *string { return &in.Cwd }),
	ccString("permission_mode", func(in *ccInput) *string { return &in.PermissionMode }),
	ccString("hook_event_name", func(in *ccInput) *string { return &in.HookEventName }),
	ccString("tool_name", func(in *ccInput) *string { return &in.ToolName }),
	{"tool_input", func(in *ccInput, v any) error { in.ToolInput = v; return nil }},
	ccString("tool_use_id", func(in *ccInput) *string { return &in.ToolUseID }),
	{"tool_response", func(in *ccInput, v any) error { in.ToolResponse = v; return nil }},
	{"error", func(in *ccInput, v any) error { in.Error = v; return nil }},
	ccString("prompt", func(in *ccInput) *string { return &in.Prompt }),
	ccString("source", func(in *ccInput) *string { return &in.Source }),
	ccString("reason", func(in *ccInput) *string { return &in.Reason }),
	{"stop_hook_active", func(in *ccInput, v any) error {
		switch b := v.(type) {
		case nil:
		case bool:
			in.StopHookActive = b
		default:
			return fmt.Errorf("stop_hook_active is %s, not true or false", kindOf(v))
		}
		return nil
	}},
	ccString("agent_id", func(in *ccInput) *string { return &in.AgentID }),
	ccString("last_assistant_message", func(in *ccInput) *string { return &in.LastAssistantMessage }),
}

// ccString is a string field: a string sets it, null leaves it empty.
func ccString(name string, field func(in *ccInput) *string) ccField {
	return ccField{name, func(in *ccInput, v any) error {
		switch s := v.(type) {
		case nil:
		case string:
			*field(in) = s
		default:
			return fmt.Errorf("%s is %s, not a string", name, kindOf(v))
		}
		return nil
	}}
}

// kindOf names a decoded JSON value's type for a message.
func kindOf(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	}
	return "null"
}
