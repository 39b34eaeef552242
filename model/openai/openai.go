// Package openai is the model executor for any OpenAI-compatible
// chat-completions endpoint (OpenAI, Ollama, vLLM, LiteLLM). It
// speaks only the common subset of the wire format, so one executor serves
// them all, and it retries what is worth retrying (429, 5xx, transport
// errors) with capped exponential backoff.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
	"github.com/awaken-lua/awaken-lua/engine/value"
	"github.com/awaken-lua/awaken-lua/model"
)

// Defaults for Config fields left zero.
const (
	DefaultTimeout    = 60 * time.Second
	DefaultMaxRetries = 3
	DefaultRetryBase  = 200 * time.Millisecond

	maxBackoff    = 5 * time.Second  // cap of the exponential backoff
	maxRetryAfter = 60 * time.Second // a longer Retry-After is shortened to this
	maxBody       = 32 << 20         // larger replies are an error, not an OOM
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
	Getenv     func(string) string
}

// Model is an OpenAI-compatible executor. It is safe for concurrent use.
type Model struct {
	endpoint   string
	model      string
	key        string // never printed: Model has a String method and errors redact it
	keyEnv     string
	timeout    time.Duration
	maxRetries int
	retryBase  time.Duration
	client     *http.Client
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
	m := &Model{
		endpoint:   strings.TrimRight(c.BaseURL, "/") + "/chat/completions",
		model:      c.Model,
		timeout:    c.Timeout,
		maxRetries: c.MaxRetries,
		retryBase:  c.RetryBase,
		client:     c.HTTPClient,
	}
	if c.APIKeyEnv != "" {
		getenv := c.Getenv
		if getenv == nil {
			getenv = os.Getenv
		}
		m.keyEnv = c.APIKeyEnv
		m.key = strings.TrimSpace(getenv(c.APIKeyEnv))
		if m.key == "" {
			return nil, errs.New(errs.ConfigInvalid, "openai model: the environment variable %s that api_key_env names is empty; export the API key in it (or leave api_key_env out for a server without keys)", c.APIKeyEnv)
		}
	}
	if m.timeout <= 0 {
		m.timeout = DefaultTimeout
	}
	switch {
	case m.maxRetries == 0:
		m.maxRetries = DefaultMaxRetries
	case m.maxRetries < 0:
		m.maxRetries = 0
	}
	if m.retryBase <= 0 {
		m.retryBase = DefaultRetryBase
	}
	if m.client == nil {
		m.client = &http.Client{}
	}
	return m, nil
}

// String names the endpoint and model, never the key.
func (m *Model) String() string { return "openai(" + m.model + " at " + m.endpoint + ")" }

// Infer sends one chat-completions request, retrying 429, 5xx and transport
// errors. A done ctx ends it at once with ctx.Err(), even during a backoff.
func (m *Model) Infer(ctx context.Context, req model.Request) (model.Response, error) {
	body, err := m.encode(req)
	if err != nil {
		return model.Response{}, err
	}
	delay := m.retryBase
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return model.Response{}, err
		}
		resp, aerr := m.attempt(ctx, body)
		if aerr == nil {
			return resp, nil
		}
		if err := ctx.Err(); err != nil {
			return model.Response{}, err
		}
		if !aerr.retry || attempt >= m.maxRetries {
			if aerr.retry && attempt > 0 {
				aerr.msg = fmt.Sprintf("gave up after %d attempts: %s", attempt+1, aerr.msg)
			}
			return model.Response{}, m.fail(aerr)
		}
		wait := delay
		if aerr.retryAfter >= 0 {
			wait = aerr.retryAfter // the server knows best when it will have room
		}
		delay = min(2*delay, max(maxBackoff, m.retryBase))
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return model.Response{}, ctx.Err()
		case <-t.C:
		}
	}
}

// attemptError is one failed attempt: what to say, and whether to retry.
type attemptError struct {
	msg        string
	retry      bool
	retryAfter time.Duration // -1: no Retry-After header
}

func (m *Model) fail(a *attemptError) error {
	msg := "openai model: POST " + m.endpoint + ": " + a.msg
	if m.key != "" {
		msg = strings.ReplaceAll(msg, m.key, "[redacted]")
	}
	return &errs.Error{Code: errs.ModelFailed, Msg: msg}
}

func (m *Model) attempt(ctx context.Context, body []byte) (model.Response, *attemptError) {
	actx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, m.endpoint, bytes.NewReader(body))
	if err != nil {
		return model.Response{}, &attemptError{msg: err.Error(), retryAfter: -1}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("User-Agent", "awaken-lua")
	if m.key != "" {
		hreq.Header.Set("Authorization", "Bearer "+m.key)
	}
	hresp, err := m.client.Do(hreq)
	if err != nil {
		msg := err.Error()
		var uerr *url.Error
		if errors.As(err, &uerr) {
			msg = uerr.Err.Error() // the URL is already in the message
		}
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			msg = "no reply within " + m.timeout.String()
		}
		return model.Response{}, &attemptError{msg: msg, retry: true, retryAfter: -1}
	}
	defer hresp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(hresp.Body, maxBody+1))
	if err != nil {
		return model.Response{}, &attemptError{msg: "reading the reply: " + err.Error(), retry: true, retryAfter: -1}
	}
	if hresp.StatusCode/100 != 2 {
		return model.Response{}, &attemptError{
			msg:        hresp.Status + errorDetail(data) + m.hint(hresp.StatusCode),
			retry:      hresp.StatusCode == http.StatusTooManyRequests || hresp.StatusCode == http.StatusRequestTimeout || hresp.StatusCode >= 500,
			retryAfter: retryAfter(hresp.Header.Get("Retry-After")),
		}
	}
	if len(data) > maxBody {
		return model.Response{}, &attemptError{msg: fmt.Sprintf("the reply is larger than %d bytes", maxBody), retryAfter: -1}
	}
	resp, err := decode(data)
	if err != nil {
		return model.Response{}, &attemptError{msg: err.Error(), retryAfter: -1}
	}
	return resp, nil
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

// errorDetail extracts {error: {message}} (or a short text body) for the
// user; servers put the useful part there.
func errorDetail(data []byte) string {
	var e struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &e) == nil && len(e.Error) > 0 {
		var obj struct {
			Message string `json:"message"`
		}
		if json.Unmarshal(e.Error, &obj) == nil && obj.Message != "" {
			return ": " + obj.Message
		}
		var s string
		if json.Unmarshal(e.Error, &s) == nil && s != "" {
			return ": " + s
		}
	}
	s := strings.TrimSpace(string(data))
	if s == "" {
		return ""
	}
	return ": " + clip(s, 300)
}

// retryAfter parses a Retry-After header (seconds or an HTTP date); -1 when
// absent or unreadable.
func retryAfter(h string) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return -1
	}
	if n, err := strconv.Atoi(h); err == nil {
		if n < 0 {
			return -1
		}
		return time.Duration(min(n, int(maxRetryAfter/time.Second))) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return min(max(time.Until(t), 0), maxRetryAfter)
	}
	return -1
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
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
		return model.Response{}, fmt.Errorf("the reply is not chat-completions JSON (%v): %s", err, clip(strings.TrimSpace(string(data)), 200))
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
		return "", fmt.Errorf("the reply's message content is neither text nor a list of parts: %s", clip(string(raw), 200))
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
		return nil, fmt.Errorf("the arguments are not valid JSON (%v): %s", err, clip(string(src), 200))
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("the arguments are a JSON %s, not an object: %s", value.TypeName(v), clip(string(src), 200))
	}
	n, err := value.Normalize(obj)
	if err != nil {
		return nil, err
	}
	return n.(map[string]any), nil
}
