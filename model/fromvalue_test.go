package model

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// What Value writes, FromValue reads back; bad shapes are refused with a
// message that names the place.
func TestFromValue(t *testing.T) {
	msgs := []Message{
		{Role: RoleSystem, Content: "be brief"},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "ls", Args: map[string]any{"dir": "src"}}}},
		{Role: RoleTool, Content: "a.go", ToolCallID: "c1"},
	}
	back, err := MessagesFromValue(MessagesValue(msgs))
	if err != nil || !reflect.DeepEqual(back, msgs) {
		t.Fatalf("messages: %v %v", back, err)
	}
	resp := Response{Text: "done", ToolCalls: []ToolCall{{Name: "add", Args: map[string]any{}}}}
	if r, err := ResponseFromValue(resp.Value()); err != nil || !reflect.DeepEqual(r, resp) {
		t.Fatalf("response: %+v %v", r, err)
	}
	for _, tc := range []struct {
		name string
		read func() error
		want string
	}{
		{"role", func() error { _, err := MessagesFromValue([]any{map[string]any{"role": "boss"}}); return err }, `messages[1]: role "boss"`},
		{"content", func() error { _, err := MessageFromValue(map[string]any{"role": "user", "content": 3.0}); return err }, "content is a string"},
		{"call name", func() error {
			_, err := ResponseFromValue(map[string]any{"tool_calls": []any{map[string]any{"args": map[string]any{}}}})
			return err
		}, "tool_calls[1]: a tool call needs a name"},
		{"args", func() error { _, err := ToolCallFromValue(map[string]any{"name": "x", "args": "y"}); return err }, "args of tool call"},
		{"list", func() error { _, err := MessagesFromValue("hello"); return err }, "messages is a list"},
		{"tool name", func() error { _, err := RequestFromValue(map[string]any{"tools": []any{map[string]any{}}}); return err }, "tools[1] has no name"},
	} {
		if err := tc.read(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// No JSON value makes a reader panic.
func FuzzFromValue(f *testing.F) {
	f.Add(`{"role":"user","content":"hi","tool_calls":[{"name":"x","args":{}}]}`)
	f.Add(`{"messages":[],"tools":[{"name":"a"}],"params":{"max_tokens":3}}`)
	f.Add(`[1,{"text":2}]`)
	f.Fuzz(func(t *testing.T, src string) {
		var v any
		if json.Unmarshal([]byte(src), &v) != nil {
			return
		}
		MessagesFromValue(v)
		MessageFromValue(v)
		ResponseFromValue(v)
		RequestFromValue(v)
		ToolCallsFromValue(v)
	})
}
