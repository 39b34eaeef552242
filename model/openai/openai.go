// Package openai is the model executor for any OpenAI-compatible
// chat-completions endpoint (OpenAI, Ollama, vLLM, LiteLLM). It
// speaks only the common subset of the wire format, so one executor serves
// them all. Requests go through httpjson, which retries what is worth
// retrying (429, 408, 5xx, transport errors) with capped exponential
// backoff that honours Retry-After.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/value"
	"github.com/awaken-lua/awaken-lua/model"
	"github.com/awaken-lua/awaken-lua/model/httpjson"
)

// Defaults for Config fields left zero.
const (
	DefaultTimeout    = httpjson.DefaultTimeout
	DefaultMaxRetries = httpjson.DefaultMaxRetries
	DefaultRetryBase  = httpjson.DefaultRetryBase
)

// Config configures a Model.
type Config struct {
	BaseURL    string        // e.g. https://api.openai.com/v1 (a trailing slash is fine)
	Model      string        // default model; req.Params.Model overrides it
	APIKeyEnv  string        // environment variable holding the key; empty: no Authorization header (Ollama)
	Timeout    time.Duration // per HTTP attempt; 0: DefaultTimeout
	MaxRetries int           // retries after the first attempt; 0: DefaultMaxRetries, negative: none
	RetryBase  time.Duration // first backoff delay, doubled per retry up to 5s (or RetryBase if longer); 0: DefaultRetryBase
	HTTPClient *http.Client  // nil: a client without its own timeout (Timeout applies per attempt)
	// OnRetry hears of each retry (httpjson.Client.OnRetry).
	OnRetry func(attempt int, reason string, wait time.Duration)
	Getenv  func(string) string
}

// Model is an OpenAI-compatible executor. It is safe for concurrent use.
type Model struct {
	endpoint string
	model    string
	keyEnv   string
	client   *httpjson.Client // holds the key: never printed, redacted from errors
}

var _ model.Model = (*Model)(nil)

// New checks the config and reads the API key once, so a missing key is a
// startup error rather than a failure in the middle of a run.
func New(c Config) (*Model, error) {
	if c.BaseURL == "" {
		return nil, errs.New(errs.ConfigInvalid, "openai model: base_url is required (for example https://api.openai.com/v1 or http://localhost:11434/v1)")
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errs.New(errs.ConfigInvalid, "openai model: base_url %q is not an http(s) URL (for example https://api.openai.com/v1)", c.BaseURL)
	}
	if c.Model == "" {
		return nil, errs.New(errs.ConfigInvalid, "openai model: model is required (for example gpt-4o-mini or llama3.1)")
	}
	m := &Model{endpoint: strings.TrimRight(c.BaseURL, "/") + "/chat/completions", model: c.Model, keyEnv: c.APIKeyEnv}
	m.client = &httpjson.Client{Name: "openai model", Endpoint: m.endpoint, Timeout: c.Timeout, Retries: c.MaxRetries,
		Base: c.RetryBase, HTTP: c.HTTPClient, OnRetry: c.OnRetry, Hint: m.hint, Header: http.Header{}}
	if c.APIKeyEnv != "" {
		getenv := c.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		key := strings.TrimSpace(getenv(c.APIKeyEnv))
		if key == "" {
			return nil, errs.New(errs.ConfigInvalid, "openai model: the environment variable %s that api_key_env names is empty; export the API key in it (or leave api_key_env out for a server without keys)", c.APIKeyEnv)
		}
		m.client.Header.Set("Authorization", "Bearer "+key)
		m.client.Secret = key
	}
	return m, nil
}

// String names the endpoint and model, never the key.
func (m *Model) String() string { return "openai(" + m.model + " at " + m.endpoint + ")" }

// Infer sends one chat-completions request, retrying 429, 5xx and transport
// errors (httpjson). A done ctx ends it at once with ctx.Err(), even during
// a backoff.
func (m *Model) Infer(ctx context.Context, req model.Request) (model.Response, error) {
	body, err := m.encode(req)
	if err != nil {
		return model.Response{}, err
	}
	var resp model.Response
	err = m.client.Post(ctx, body, func(data []byte) (err error) {
		resp, err = decode(data)
		return err
	})
	return resp, err
}

// hint says what to check for statuses that are usually a setup mistake.
func (m *Model) hint(status int) string {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		if m.keyEnv == "" {
			return " (the server wants an API key: set api_key_env to the variable holding it)"
		}
		return " (check the API key in " + m.keyEnv + ")"
	case http.StatusNotFound:
		return " (check base_url, which usually ends in /v1, and the model name)"
	}
	return ""
}

// The wire format.
type (
	wireRequest struct {
		Model           string        `json:"model"`
		Messages        []wireMessage `json:"messages"`
		Tools           []wireTool    `json:"tools,omitempty"`
		Temperature     *float64      `json:"temperature,omitempty"`
		MaxTokens       *int          `json:"max_tokens,omitempty"`
		TopP            *float64      `json:"top_p,omitempty"`
		ReasoningEffort string        `json:"reasoning_effort,omitempty"`
	}
	wireMessage struct {
		Role       string         `json:"role"`
		Content    *string        `json:"content"` // null for an assistant message that only calls tools
		ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
		ToolCallID string         `json:"tool_call_id,omitempty"`
	}
	wireToolCall struct {
		ID       string       `json:"id,omitempty"`
		Type     string       `json:"type"`
		Function wireFunction `json:"function"`
	}
	wireFunction struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"` // a JSON string on the wire; some servers send an object
	}
	wireTool struct {
		Type     string          `json:"type"`
		Function wireToolFuncDef `json:"function"`
	}
	wireToolFuncDef struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		Parameters  map[string]any `json:"parameters"`
	}
	wireResponse struct {
		Choices []struct {
			Message struct {
				Content   json.RawMessage `json:"content"`
				ToolCalls []wireToolCall  `json:"tool_calls"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage *model.Usage `json:"usage"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
)

func (m *Model) encode(req model.Request) ([]byte, error) {
	w := wireRequest{
		Model:           m.model,
		Messages:        make([]wireMessage, len(req.Messages)),
		Temperature:     req.Params.Temperature,
		MaxTokens:       req.Params.MaxTokens,
		TopP:            req.Params.TopP,
		ReasoningEffort: req.Params.ReasoningEffort,
	}
	if req.Params.Model != "" {
		w.Model = req.Params.Model
	}
	for i, msg := range req.Messages {
		content := msg.Content
		wm := wireMessage{Role: msg.Role, Content: &content, ToolCallID: msg.ToolCallID}
		if len(msg.ToolCalls) > 0 {
			if content == "" {
				wm.Content = nil // some servers reject "" next to tool_calls
			}
			wm.ToolCalls = make([]wireToolCall, len(msg.ToolCalls))
			for j, c := range msg.ToolCalls {
				args := c.Args
				if args == nil {
					args = map[string]any{}
				}
				b, err := json.Marshal(args)
				if err != nil {
					return nil, errs.Wrap(errs.ModelFailed, err, "openai model: the arguments of tool call %q (%s) cannot be sent as JSON", c.ID, c.Name)
				}
				s, _ := json.Marshal(string(b))
				wm.ToolCalls[j] = wireToolCall{ID: c.ID, Type: "function", Function: wireFunction{Name: c.Name, Arguments: s}}
			}
		}
		w.Messages[i] = wm
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if params == nil {
			params = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		w.Tools = append(w.Tools, wireTool{Type: "function", Function: wireToolFuncDef{Name: t.Name, Description: t.Description, Parameters: params}})
	}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, errs.Wrap(errs.ModelFailed, err, "openai model: the request cannot be sent as JSON")
	}
	return b, nil
}

func decode(data []byte) (model.Response, error) {
	var w wireResponse
	if err := json.Unmarshal(data, &w); err != nil {
		return model.Response{}, fmt.Errorf("the reply is not chat-completions JSON (%v): %s", err, errs.Clip(strings.TrimSpace(string(data)), 200))
	}
	if w.Error != nil && w.Error.Message != "" {
		return model.Response{}, errors.New("the server answered with an error: " + w.Error.Message)
	}
	if len(w.Choices) == 0 {
		return model.Response{}, errors.New("the reply has no choices")
	}
	msg := w.Choices[0].Message
	text, err := decodeContent(msg.Content)
	if err != nil {
		return model.Response{}, err
	}
	resp := model.Response{Text: text, Usage: w.Usage}
	if u := resp.Usage; u != nil && u.TotalTokens == 0 {
		u.TotalTokens = u.PromptTokens + u.CompletionTokens
	}
	for i, c := range msg.ToolCalls {
		if c.Function.Name == "" {
			return model.Response{}, fmt.Errorf("tool call %d of the reply has no function name", i+1)
		}
		args, err := decodeArgs(c.Function.Arguments)
		if err != nil {
			return model.Response{}, fmt.Errorf("tool call %q (%s): %v", c.ID, c.Function.Name, err)
		}
		resp.ToolCalls = append(resp.ToolCalls, model.ToolCall{ID: c.ID, Name: c.Function.Name, Args: args})
	}
	return resp, nil
}

// decodeContent accepts a string, null, or a list of content parts (whose
// text parts are joined), since servers differ.
func decodeContent(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("the reply's message content is neither text nor a list of parts: %s", errs.Clip(string(raw), 200))
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "" || p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String(), nil
}

// decodeArgs turns a call's arguments (a JSON string holding an object, or
// an object itself) into a canonical map. Empty means no arguments.
func decodeArgs(raw json.RawMessage) (map[string]any, error) {
	src := []byte(raw)
	var s string
	if json.Unmarshal(raw, &s) == nil {
		src = []byte(s)
	}
	if len(bytes.TrimSpace(src)) == 0 || string(raw) == "null" {
		return map[string]any{}, nil
	}
	var v any
	if err := json.Unmarshal(src, &v); err != nil {
		return nil, fmt.Errorf("the arguments are not valid JSON (%v): %s", err, errs.Clip(string(src), 200))
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the arguments are a JSON %s, not an object: %s", value.TypeName(v), errs.Clip(string(src), 200))
	}
	n, err := value.Normalize(obj)
	if err != nil {
		return nil, err
	}
	return n.(map[string]any), nil
}
