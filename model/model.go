// Package model holds the conversation data that flows between the runtime,
// plugins and a language model (the message, tool call and result shapes of
// the README's reference), and the Model interface that executors implement.
package model

import (
	"context"
)

// Roles of a message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one conversation message. Content is always a string.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// ToolCall is a model's request to run a tool. Args is a canonical value
// map (see package value).
type ToolCall struct {
	ID   string         `json:"id"`
	Name string         `json:"name"`
	Args map[string]any `json:"args"`
}

// ToolSpec describes a tool offered to the model. Parameters is a JSON
// Schema object.
type ToolSpec struct {
	Name        string         `json:"name"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]any `json:"parameters,omitempty"`
}

// Params are the inference parameters; nil or empty means the model's own
// default.
type Params struct {
	Model           string   `json:"model,omitempty"`
	Temperature     *float64 `json:"temperature,omitempty"`
	MaxTokens       *int     `json:"max_tokens,omitempty"`
	TopP            *float64 `json:"top_p,omitempty"`
	ReasoningEffort string   `json:"reasoning_effort,omitempty"`
}

// Request is what the model receives for one inference.
type Request struct {
	Messages []Message  `json:"messages"`
	Tools    []ToolSpec `json:"tools"`
	Params   Params     `json:"params"`
}

// Usage counts tokens of one inference.
type Usage struct {
	PromptTokens     int `json:"prompt_tokens"`
	CompletionTokens int `json:"completion_tokens"`
	TotalTokens      int `json:"total_tokens"`
}

// Response is the model's answer: text, tool calls, or both.
type Response struct {
	Text      string     `json:"text"`
	ToolCalls []ToolCall `json:"tool_calls"`
	Usage     *Usage     `json:"usage,omitempty"`
}

// Result statuses.
const (
	StatusSuccess = "success"
	StatusError   = "error"
	StatusPending = "pending"
)

// ToolResult is the outcome of a tool call as the model will see it.
type ToolResult struct {
	Status  string `json:"status"`
	Data    any    `json:"data,omitempty"`
	Message string `json:"message,omitempty"`
}

// Value is the result as a canonical value {status, data?, message?}, the
// shape plugins and state see.
func (r ToolResult) Value() map[string]any {
	m := map[string]any{"status": r.Status}
	if r.Data != nil {
		m["data"] = r.Data
	}
	if r.Message != "" {
		m["message"] = r.Message
	}
	return m
}

// Value is the call as a canonical value {id?, name, args}; args is a
// copy, so the value may be changed freely.
func (c ToolCall) Value() map[string]any {
	args := make(map[string]any, len(c.Args))
	for k, v := range c.Args {
		args[k] = v
	}
	v := map[string]any{"name": c.Name, "args": args}
	if c.ID != "" {
		v["id"] = c.ID
	}
	return v
}

// CallsValue is a list of calls as canonical values.
func CallsValue(calls []ToolCall) []any {
	out := make([]any, len(calls))
	for i, c := range calls {
		out[i] = c.Value()
	}
	return out
}

// Value is the message as a canonical value {role, content, tool_calls?,
// tool_call_id?}.
func (m Message) Value() map[string]any {
	v := map[string]any{"role": m.Role, "content": m.Content}
	if len(m.ToolCalls) > 0 {
		v["tool_calls"] = CallsValue(m.ToolCalls)
	}
	if m.ToolCallID != "" {
		v["tool_call_id"] = m.ToolCallID
	}
	return v
}

// MessagesValue is a conversation as canonical values.
func MessagesValue(msgs []Message) []any {
	out := make([]any, len(msgs))
	for i, m := range msgs {
		out[i] = m.Value()
	}
	return out
}

// Value is the response as a canonical value {text, tool_calls?}.
func (r Response) Value() map[string]any {
	v := map[string]any{"text": r.Text}
	if len(r.ToolCalls) > 0 {
		v["tool_calls"] = CallsValue(r.ToolCalls)
	}
	return v
}

// Success makes a success result.
func Success(data any) ToolResult { return ToolResult{Status: StatusSuccess, Data: data} }

// Error makes an error result.
func Error(msg string) ToolResult { return ToolResult{Status: StatusError, Message: msg} }

// Model is a language model executor.
type Model interface {
	Infer(ctx context.Context, req Request) (Response, error)
}

// ModelFunc adapts a function to Model.
type ModelFunc func(ctx context.Context, req Request) (Response, error)

// Infer calls f.
func (f ModelFunc) Infer(ctx context.Context, req Request) (Response, error) { return f(ctx, req) }
