package model

import "fmt"

// The readers of canonical values (maps and lists as JSON or a Lua table
// decode to) into model types: one validation for every host that takes
// them from plugins or tests. Indices in their errors count from 1, as a
// Lua table's do.

// ListFromValue reads a list: a []any, or nothing (nil, or an empty
// table, which a Lua bridge cannot tell from an empty object).
func ListFromValue(v any) ([]any, bool) {
	switch x := v.(type) {
	case []any:
		return x, true
	case map[string]any:
		return nil, len(x) == 0
	}
	return nil, v == nil
}

// ToolCallFromValue reads {name, args?, id?}.
func ToolCallFromValue(v any) (ToolCall, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return ToolCall{}, fmt.Errorf("a tool call is a table {name, args?, id?}")
	}
	var c ToolCall
	var err error
	if c.Name, err = optString(m, "name"); err != nil {
		return c, err
	}
	if c.Name == "" {
		return c, fmt.Errorf("a tool call needs a name")
	}
	if c.ID, err = optString(m, "id"); err != nil {
		return c, err
	}
	switch a := m["args"].(type) {
	case nil:
		c.Args = map[string]any{}
	case map[string]any:
		c.Args = a
	default:
		return c, fmt.Errorf("the args of tool call %q are a table, not %T", c.Name, a)
	}
	return c, nil
}

// ToolCallsFromValue reads a list of tool calls.
func ToolCallsFromValue(v any) ([]ToolCall, error) {
	list, ok := ListFromValue(v)
	if !ok {
		return nil, fmt.Errorf("tool_calls is a list")
	}
	var out []ToolCall
	for i, x := range list {
		c, err := ToolCallFromValue(x)
		if err != nil {
			return nil, fmt.Errorf("tool_calls[%d]: %w", i+1, err)
		}
		out = append(out, c)
	}
	return out, nil
}

// MessageFromValue reads {role, content?, tool_calls?, tool_call_id?}.
func MessageFromValue(v any) (Message, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return Message{}, fmt.Errorf("a message is a table {role, content}")
	}
	var msg Message
	var err error
	if msg.Role, err = optString(m, "role"); err != nil {
		return msg, err
	}
	switch msg.Role {
	case RoleSystem, RoleUser, RoleAssistant, RoleTool:
	default:
		return msg, fmt.Errorf("role %q is not system, user, assistant or tool", msg.Role)
	}
	if msg.Content, err = optString(m, "content"); err != nil {
		return msg, err
	}
	if msg.ToolCallID, err = optString(m, "tool_call_id"); err != nil {
		return msg, err
	}
	if msg.ToolCalls, err = ToolCallsFromValue(m["tool_calls"]); err != nil {
		return msg, err
	}
	return msg, nil
}

// MessagesFromValue reads a conversation.
func MessagesFromValue(v any) ([]Message, error) {
	list, ok := ListFromValue(v)
	if !ok {
		return nil, fmt.Errorf("messages is a list")
	}
	var out []Message
	for i, x := range list {
		msg, err := MessageFromValue(x)
		if err != nil {
			return nil, fmt.Errorf("messages[%d]: %w", i+1, err)
		}
		out = append(out, msg)
	}
	return out, nil
}

// ResponseFromValue reads {text?, tool_calls?, usage?}. A usage without
// total_tokens totals the other two.
func ResponseFromValue(v any) (Response, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return Response{}, fmt.Errorf("a response is a table {text?, tool_calls?, usage?}")
	}
	var r Response
	var err error
	if r.Text, err = optString(m, "text"); err != nil {
		return r, err
	}
	if r.ToolCalls, err = ToolCallsFromValue(m["tool_calls"]); err != nil {
		return r, err
	}
	if u, ok := m["usage"].(map[string]any); ok {
		num := func(k string) int { f, _ := u[k].(float64); return int(f) }
		r.Usage = &Usage{PromptTokens: num("prompt_tokens"), CompletionTokens: num("completion_tokens"), TotalTokens: num("total_tokens")}
		if r.Usage.TotalTokens == 0 {
			r.Usage.TotalTokens = r.Usage.PromptTokens + r.Usage.CompletionTokens
		}
	}
	return r, nil
}

// RequestFromValue reads {messages?, tools?, params?}.
func RequestFromValue(v any) (Request, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return Request{}, fmt.Errorf("a request is a table {messages, tools, params}")
	}
	var r Request
	var err error
	if r.Messages, err = MessagesFromValue(m["messages"]); err != nil {
		return r, err
	}
	tools, ok := ListFromValue(m["tools"])
	if !ok {
		return r, fmt.Errorf("tools is a list")
	}
	for i, x := range tools {
		tm, ok := x.(map[string]any)
		if !ok {
			return r, fmt.Errorf("tools[%d] is not a table", i+1)
		}
		ts := ToolSpec{}
		ts.Name, _ = tm["name"].(string)
		ts.Description, _ = tm["description"].(string)
		ts.Parameters, _ = tm["parameters"].(map[string]any)
		if ts.Name == "" {
			return r, fmt.Errorf("tools[%d] has no name", i+1)
		}
		r.Tools = append(r.Tools, ts)
	}
	if pm, ok := m["params"].(map[string]any); ok {
		r.Params.Model, _ = pm["model"].(string)
		r.Params.ReasoningEffort, _ = pm["reasoning_effort"].(string)
		if f, ok := pm["temperature"].(float64); ok {
			r.Params.Temperature = &f
		}
		if f, ok := pm["top_p"].(float64); ok {
			r.Params.TopP = &f
		}
		if f, ok := pm["max_tokens"].(float64); ok {
			n := int(f)
			r.Params.MaxTokens = &n
		}
	}
	return r, nil
}

// optString reads an optional string field: absent is "", another type
// an error.
func optString(m map[string]any, key string) (string, error) {
	switch s := m[key].(type) {
	case nil:
		return "", nil
	case string:
		return s, nil
	default:
		return "", fmt.Errorf("%s is a string, not %T", key, s)
	}
}
