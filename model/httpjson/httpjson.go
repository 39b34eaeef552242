// Package httpjson is what the HTTP model executors share: POST a JSON
// body, read a bounded JSON reply, and retry what is worth retrying (429,
// 408, 5xx, transport errors) with capped exponential backoff that honours
// Retry-After. Each executor (openai, anthropic) only encodes its request
// and decodes its reply.
package httpjson

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/awaken-lua/awaken-lua/engine/errs"
)

// Defaults for Client fields left zero.
const (
	DefaultTimeout    = 60 * time.Second
	DefaultMaxRetries = 3
	DefaultRetryBase  = 200 * time.Millisecond

	maxBackoff    = 5 * time.Second  // cap of the exponential backoff
	maxRetryAfter = 60 * time.Second // a longer Retry-After is shortened to this
	// MaxBody bounds a reply: a larger one is an error, not an OOM.
	MaxBody = 32 << 20
)

// Client posts to one endpoint. It is safe for concurrent use.
type Client struct {
	Name     string           // for messages: "openai model"
	Endpoint string           // the URL requests go to
	Header   http.Header      // sent with every request (the API key among them)
	Secret   string           // redacted from every message
	Timeout  time.Duration    // per attempt; 0: DefaultTimeout
	Retries  int              // after the first attempt; 0: DefaultMaxRetries, negative: none
	Base     time.Duration    // first backoff delay; 0: DefaultRetryBase
	HTTP     *http.Client     // nil: http.DefaultClient (Timeout applies per attempt)
	Hint     func(int) string // what to check for a status, or ""
	// OnRetry, when set, hears of each retry before its backoff: the
	// attempt that failed (1 for the first), why, and the wait.
	OnRetry func(attempt int, reason string, wait time.Duration)
}

// Post sends body and hands the reply of the first attempt that succeeds
// to decode; a reply decode refuses is an error, not retried. A done ctx ends it at once with ctx.Err(), even during a
// backoff. Errors are model_failed with the key redacted.
func (c *Client) Post(ctx context.Context, body []byte, decode func([]byte) error) error {
	delay := c.base()
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		aerr := c.attempt(ctx, body, decode)
		if aerr == nil {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if !aerr.retry || attempt >= c.retries() {
			if aerr.retry && attempt > 0 {
				aerr.msg = fmt.Sprintf("gave up after %d attempts: %s", attempt+1, aerr.msg)
			}
			return c.fail(aerr)
		}
		wait := delay
		if aerr.retryAfter >= 0 {
			wait = aerr.retryAfter // the server knows best when it will have room
		}
		delay = min(2*delay, max(maxBackoff, c.base()))
		if c.OnRetry != nil {
			c.OnRetry(attempt+1, aerr.msg, wait)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}

func (c *Client) timeout() time.Duration {
	if c.Timeout <= 0 {
		return DefaultTimeout
	}
	return c.Timeout
}

func (c *Client) retries() int {
	switch {
	case c.Retries == 0:
		return DefaultMaxRetries
	case c.Retries < 0:
		return 0
	}
	return c.Retries
}

func (c *Client) base() time.Duration {
	if c.Base <= 0 {
		return DefaultRetryBase
	}
	return c.Base
}

// attemptError is one failed attempt: what to say, and whether to retry.
type attemptError struct {
	msg        string
	retry      bool
	retryAfter time.Duration // -1: no Retry-After header
}

func (c *Client) fail(a *attemptError) error {
	msg := c.Name + ": POST " + c.Endpoint + ": " + a.msg
	if c.Secret != "" {
		msg = strings.ReplaceAll(msg, c.Secret, "[redacted]")
	}
	return &errs.Error{Code: errs.ModelFailed, Msg: msg}
}

func (c *Client) attempt(ctx context.Context, body []byte, decode func([]byte) error) *attemptError {
	actx, cancel := context.WithTimeout(ctx, c.timeout())
	defer cancel()
	hreq, err := http.NewRequestWithContext(actx, http.MethodPost, c.Endpoint, bytes.NewReader(body))
	if err != nil {
		return &attemptError{msg: err.Error(), retryAfter: -1}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("User-Agent", "awaken-lua")
	for k, vs := range c.Header {
		hreq.Header[k] = vs
	}
	client := c.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	hresp, err := client.Do(hreq)
	if err != nil {
		msg := err.Error()
		var uerr *url.Error
		if errors.As(err, &uerr) {
			msg = uerr.Err.Error() // the URL is already in the message
		}
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			msg = "no reply within " + c.timeout().String()
		}
		return &attemptError{msg: msg, retry: true, retryAfter: -1}
	}
	defer hresp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(hresp.Body, MaxBody+1))
	if err != nil {
		return &attemptError{msg: "reading the reply: " + err.Error(), retry: true, retryAfter: -1}
	}
	if hresp.StatusCode/100 != 2 {
		hint := ""
		if c.Hint != nil {
			hint = c.Hint(hresp.StatusCode)
		}
		return &attemptError{
			msg: hresp.Status + errorDetail(data) + hint,
			// 529 is Anthropic's "overloaded".
			retry:      hresp.StatusCode == http.StatusTooManyRequests || hresp.StatusCode == http.StatusRequestTimeout || hresp.StatusCode >= 500,
			retryAfter: retryAfter(hresp.Header.Get("Retry-After")),
		}
	}
	if len(data) > MaxBody {
		return &attemptError{msg: fmt.Sprintf("the reply is larger than %d bytes", MaxBody), retryAfter: -1}
	}
	if err := decode(data); err != nil {
		return &attemptError{msg: err.Error(), retryAfter: -1}
	}
	return nil
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
	return ": " + errs.Clip(s, 300)
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
