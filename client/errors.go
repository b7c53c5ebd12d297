package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Error is a refusal from the service, carrying its error body. Every refusal of the service
// uses one body (code, message, retry, charged, request id); Error keeps all of it so a caller
// can decide on Retry and see whether it was charged.
type Error struct {
	// StatusCode is the HTTP status of the answer.
	StatusCode int
	// Code is the error code (the body's "error"), e.g. "insufficient_credits".
	Code string `json:"error"`
	// Type is the body's error_type.
	Type string `json:"error_type"`
	// Message is written for a person.
	Message string `json:"message"`
	// Retry says whether and when a retry can succeed (e.g. "no", "after_delay").
	Retry string `json:"retry"`
	// Charged is false, true, or a word such as "maybe" (the spec's per-code value).
	Charged any `json:"charged"`
	// RequestID names the request in the service's logs.
	RequestID string `json:"request_id"`
	// Docs links the page that explains the code.
	Docs string `json:"docs"`
	// RetryAfter is the answer's Retry-After (whole seconds, or an HTTP date), zero when absent.
	RetryAfter time.Duration `json:"-"`
	// ShouldRetry is the answer's x-should-retry: false on a refusal a retry cannot help or
	// that may pay twice; nil when the header is absent.
	ShouldRetry *bool `json:"-"`
	// Body is the whole error body as received.
	Body json.RawMessage `json:"-"`
}

func (e *Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("modelexec: HTTP %d: %s", e.StatusCode, trim(string(e.Body)))
	}
	s := fmt.Sprintf("modelexec: %s (HTTP %d): %s", e.Code, e.StatusCode, e.Message)
	if e.RequestID != "" {
		s += " [request " + e.RequestID + "]"
	}
	return s
}

// parseError makes an *Error of a non-2xx answer's body. A body that is not the service's
// error body (a proxy's page, say) is kept whole in Body.
func parseError(resp *http.Response, body []byte) *Error {
	e := &Error{}
	if json.Unmarshal(body, e) != nil {
		e = &Error{}
	}
	e.StatusCode, e.Body = resp.StatusCode, append(json.RawMessage(nil), body...)
	e.RetryAfter = parseRetryAfter(resp.Header.Get("Retry-After"), time.Now())
	if v, err := strconv.ParseBool(strings.TrimSpace(resp.Header.Get("X-Should-Retry"))); err == nil {
		e.ShouldRetry = &v
	}
	return e
}

// parseRetryAfter reads a Retry-After value: delay seconds or an HTTP date (RFC 9110 10.2.3).
func parseRetryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if n, err := strconv.ParseInt(v, 10, 64); err == nil {
		if n < 0 {
			return 0
		}
		return time.Duration(min(n, 24*3600)) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}

func trim(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
