// Package anthropic is the model executor for Anthropic's Messages API
// with tool use. It maps the runtime's conversation onto the API's shape:
// system messages become the top-level system prompt, assistant tool calls
// become tool_use blocks, tool results become tool_result blocks of the
// next user turn, and consecutive turns of one role are merged, as the API
// wants roles to alternate. Requests go through httpjson (retries, backoff,
// Retry-After, the key redacted from errors).
package anthropic

import (
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

// Defaults for Config fields left empty.
const (
	DefaultBaseURL   = "https://api.anthropic.com/v1"
	DefaultAPIKeyEnv = "ANTHROPIC_API_KEY"
	// DefaultMaxTokens is sent when a request sets no max_tokens: the API
	// requires one.
	DefaultMaxTokens = 4096
	// Version is the anthropic-version header this executor speaks.
	Version = "2023-06-01"
)

// Config configures a Model.
type Config struct {
	BaseURL    string        // DefaultBaseURL when empty
	Model      string        // required; req.Params.Model overrides it
	APIKeyEnv  string        // DefaultAPIKeyEnv when empty
	Timeout    time.Duration // per HTTP attempt; 0: httpjson.DefaultTimeout
	MaxRetries int           // 0: httpjson.DefaultMaxRetries, negative: none
	RetryBase  time.Duration
	HTTPClient *http.Client
	// OnRetry hears of each retry (httpjson.Client.OnRetry).
	OnRetry func(attempt int, reason string, wait time.Duration)
	Getenv  func(string) string
}

// Model is an Anthropic Messages executor. It is safe for concurrent use.
type Model struct {
	endpoint string
	model    string
	keyEnv   string
	client   *httpjson.Client // holds the key: never printed, redacted from errors
}

var _ model.Model = (*Model)(nil)

// New checks the config and reads the API key once.
func New(c Config) (*Model, error) {
	if c.BaseURL == "" {
		c.BaseURL = DefaultBaseURL
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errs.New(errs.ConfigInvalid, "anthropic model: base_url %q is not an http(s) URL (for example %s)", c.BaseURL, DefaultBaseURL)
	}
	if c.Model == "" {
		return nil, errs.New(errs.ConfigInvalid, "anthropic model: model is required (for example claude-sonnet-4-5)")
	}
	if c.APIKeyEnv == "" {
		c.APIKeyEnv = DefaultAPIKeyEnv
	}
	getenv := c.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	key := strings.TrimSpace(getenv(c.APIKeyEnv))
	if key == "" {
		return nil, errs.New(errs.ConfigInvalid, "anthropic model: the environment variable %s is empty; export your Anthropic API key in it (or name another with api_key_env)", c.APIKeyEnv)
	}
	m := &Model{endpoint: strings.TrimRight(c.BaseURL, "/") + "/messages", model: c.Model, keyEnv: c.APIKeyEnv}
	h := http.Header{}
	h.Set("x-api-key", key)
	h.Set("anthropic-version", Version)
	m.client = &httpjson.Client{Name: "anthropic model", Endpoint: m.endpoint, Header: h, Secret: key, Timeout: c.Timeout,
		Retries: c.MaxRetries, Base: c.RetryBase, HTTP: c.HTTPClient, OnRetry: c.OnRetry, Hint: m.hint}
	return m, nil
}

// String names the endpoint and model, never the key.
func (m *Model) String() string { return "anthropic(" + m.model + " at " + m.endpoint + ")" }

func (m *Model) hint(status int) string {
	switch status {
	case http.StatusUnauthorized, http.StatusForbidden:
		return " (check the API key in " + m.keyEnv + ")"
	case http.StatusNotFound:
		return " (check base_url, which ends in /v1, and the model name)"
	}
	return ""
}

// Infer sends one Messages request and returns the answer.
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

// The wire format.
type (
	wireRequest struct {
		Model       string        `json:"model"`
		MaxTokens   int           `json:"max_tokens"`
		System      string        `json:"system,omitempty"`
		Messages    []wireMessage `json:"messages"`
		Tools       []wireTool    `json:"tools,omitempty"`
		Temperature *float64      `json:"temperature,omitempty"`
		TopP        *float64      `json:"top_p,omitempty"`
	}
	wireMessage struct {
		Role    string      `json:"role"` // user or assistant
		Content []wireBlock `json:"content"`
	}
	wireBlock struct {
		Type      string          `json:"type"` // text, tool_use, tool_result
		Text      string          `json:"text,omitempty"`
		ID        string          `json:"id,omitempty"`
		Name      string          `json:"name,omitempty"`
		Input     *map[string]any `json:"input,omitempty"` // a pointer: {} must be sent
		ToolUseID string          `json:"tool_use_id,omitempty"`
		Content   string          `json:"content,omitempty"`
	}
	wireTool struct {
		Name        string         `json:"name"`
		Description string         `json:"description,omitempty"`
		InputSchema map[string]any `json:"input_schema"`
	}
	wireResponse struct {
		Type       string `json:"type"`
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type  string          `json:"type"`
			Text  string          `json:"text"`
			ID    string          `json:"id"`
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"content"`
		Usage *struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
)

func (m *Model) encode(req model.Request) ([]byte, error) {
	w := wireRequest{Model: m.model, MaxTokens: DefaultMaxTokens, Temperature: req.Params.Temperature, TopP: req.Params.TopP}
	if req.Params.Model != "" {
		w.Model = req.Params.Model
	}
	if req.Params.MaxTokens != nil {
		w.MaxTokens = *req.Params.MaxTokens
	}
	var system []string
	add := func(role string, b wireBlock) {
		if n := len(w.Messages); n > 0 && w.Messages[n-1].Role == role {
			w.Messages[n-1].Content = append(w.Messages[n-1].Content, b)
			return
		}
		w.Messages = append(w.Messages, wireMessage{Role: role, Content: []wireBlock{b}})
	}
	for _, msg := range req.Messages {
		switch msg.Role {
		case model.RoleSystem:
			system = append(system, msg.Content)
		case model.RoleUser:
			add("user", wireBlock{Type: "text", Text: msg.Content})
		case model.RoleAssistant:
			if msg.Content != "" {
				add("assistant", wireBlock{Type: "text", Text: msg.Content})
			}
			for _, c := range msg.ToolCalls {
				args := c.Args
				if args == nil {
					args = map[string]any{}
				}
				add("assistant", wireBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: &args})
			}
		case model.RoleTool:
			add("user", wireBlock{Type: "tool_result", ToolUseID: msg.ToolCallID, Content: msg.Content})
		default:
			return nil, errs.New(errs.ModelFailed, "anthropic model: a message has role %q; roles are system, user, assistant and tool", msg.Role)
		}
	}
	w.System = strings.Join(system, "\n\n")
	if len(w.Messages) == 0 || w.Messages[0].Role != "user" {
		// The API wants the conversation to open with the user.
		w.Messages = append([]wireMessage{{Role: "user", Content: []wireBlock{{Type: "text", Text: "(start)"}}}}, w.Messages...)
	}
	for _, t := range req.Tools {
		schema := t.Parameters
		if schema == nil {
			schema = map[string]any{"type": "object", "properties": map[string]any{}}
		}
		w.Tools = append(w.Tools, wireTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	b, err := json.Marshal(w)
	if err != nil {
		return nil, errs.Wrap(errs.ModelFailed, err, "anthropic model: the request cannot be sent as JSON")
	}
	return b, nil
}

func decode(data []byte) (model.Response, error) {
	var w wireResponse
	if err := json.Unmarshal(data, &w); err != nil {
		return model.Response{}, fmt.Errorf("the reply is not Messages JSON (%v): %s", err, errs.Clip(strings.TrimSpace(string(data)), 200))
	}
	if w.Error != nil && w.Error.Message != "" {
		return model.Response{}, errors.New("the server answered with an error: " + w.Error.Message)
	}
	if w.Type != "" && w.Type != "message" {
		return model.Response{}, fmt.Errorf("the reply is a %q, not a message", w.Type)
	}
	var resp model.Response
	var text strings.Builder
	for i, b := range w.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			if b.Name == "" {
				return model.Response{}, fmt.Errorf("content block %d is a tool_use without a name", i)
			}
			args, err := decodeInput(b.Input)
			if err != nil {
				return model.Response{}, fmt.Errorf("tool_use %q (%s): %v", b.ID, b.Name, err)
			}
			resp.ToolCalls = append(resp.ToolCalls, model.ToolCall{ID: b.ID, Name: b.Name, Args: args})
		}
	}
	resp.Text = text.String()
	if u := w.Usage; u != nil {
		resp.Usage = &model.Usage{PromptTokens: u.InputTokens, CompletionTokens: u.OutputTokens, TotalTokens: u.InputTokens + u.OutputTokens}
	}
	return resp, nil
}

func decodeInput(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return map[string]any{}, nil
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, fmt.Errorf("the input is not JSON: %v", err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the input is a JSON %s, not an object", value.TypeName(v))
	}
	n, err := value.Normalize(obj)
	if err != nil {
		return nil, err
	}
	return n.(map[string]any), nil
}
