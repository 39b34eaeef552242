package hooks

import (
	"fmt"
	"strings"

	"github.com/awaken-lua/awaken-lua/engine/value"
)

// decodeCCInput decodes a Claude Code (or Codex) hook input with
// value.ParseJSONObject instead of encoding/json's reflection: a PreToolUse
// spent about a tenth of its time there, and the strings it kept (the
// call's id and arguments, for as long as the session lasts) were each an
// object the collector marks; ParseJSONObject keeps a document's short
// strings in one chunk. It decodes what json.Unmarshal into a ccInput
// decodes, by its rules: members in input order (the last duplicate wins),
// a name matches a field exactly or else case-insensitively, unknown
// fields are checked for syntax only (a number out of float64 range there
// is no error), null leaves a field empty, and a top-level null is an
// empty input. A field of the wrong type is an error that names it.
func decodeCCInput(body []byte, in *ccInput) error {
	var field *ccJSONField // the field of the key want was last asked about
	known := func(k string) bool { field = ccField(k); return field != nil }
	v, object, err := value.ParseJSONObject(body, known, func(_ string, v any) error { return field.set(in, v) })
	switch {
	case err != nil:
		return err
	case !object && v != nil:
		return fmt.Errorf("the input must be a JSON object, not a JSON %s", value.TypeName(v))
	}
	return nil
}

// ccField is the field a member's name sets: the one of that name, else
// one whose name matches it case-insensitively, else nil.
func ccField(name string) *ccJSONField {
	for i := range ccFields {
		if ccFields[i].name == name {
			return &ccFields[i]
		}
	}
	for i := range ccFields {
		if strings.EqualFold(ccFields[i].name, name) {
			return &ccFields[i]
		}
	}
	return nil
}

// ccJSONField is one JSON field of ccInput and how a decoded value sets it.
type ccJSONField struct {
	name string
	set  func(in *ccInput, v any) error
}

// ccFields are ccInput's JSON fields.
var ccFields = [...]ccJSONField{
	ccString("session_id", func(in *ccInput) *string { return &in.SessionID }),
	ccString("transcript_path", func(in *ccInput) *string { return &in.TranscriptPath }),
	ccString("cwd", func(in *ccInput) *string { return &in.Cwd }),
	ccString("permission_mode", func(in *ccInput) *string { return &in.PermissionMode }),
	ccString("hook_event_name", ccName),
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
			return fmt.Errorf("stop_hook_active must be true or false, not a JSON %s", value.TypeName(v))
		}
		return nil
	}},
	ccString("agent_id", func(in *ccInput) *string { return &in.AgentID }),
	ccString("last_assistant_message", func(in *ccInput) *string { return &in.LastAssistantMessage }),
}

// ccString is a string field: a string sets it, null leaves it empty.
func ccString(name string, field func(in *ccInput) *string) ccJSONField {
	return ccJSONField{name, func(in *ccInput, v any) error {
		switch s := v.(type) {
		case nil:
		case string:
			*field(in) = s
		default:
			return fmt.Errorf("%s must be a string, not a JSON %s", name, value.TypeName(v))
		}
		return nil
	}}
}
