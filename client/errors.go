package client

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Error is a refusal from the service, carrying its error body (spec 02 "Error body"): every
// refusal of the service uses one body (error, message, retry, charged, request id, and on a
// queue host's 422 a detail list); Error keeps all of it, and the answer's Retry-After and
// x-should-retry, so a caller can decide on Retry and see whether it was charged.
type Error struct {
	// StatusCode is the HTTP status of the answer.
	StatusCode int
	// Code is the error code (the body's "error"), e.g. "insufficient_credits". Match on it,
	// never on Message.
	Code string `json:"error"`
	// Type is the body's error_type, e.g. "ValidationError".
	Type string `json:"error_type"`
	// Message is written for a person.
	Message string `json:"message"`
	// Retry says whether and when a retry can succeed: "same_key" (the identical request may
	// succeed later), "after_retry_after" (the same, after RetryAfter), "new_key" (the
	// idempotency key is spent: retrying is a new charge), "poll_first" (a job may exist and be
	// charged: read it before resending) or "never".
	Retry string `json:"retry"`
	// Charged is "no", "refunded", "stands" or "unknown"; a few codes give a boolean instead
	// (true is "stands", false is "no").
	Charged any `json:"charged"`
	// RequestID names the request in the service's logs: the body's request_id, or the
	// answer's X-Request-Id when the body has none.
	RequestID string `json:"request_id"`
	// Docs links the page that explains the code.
	Docs string `json:"docs"`
	// Detail lists each problem of the request on a queue host's 422 (one per field).
	Detail []DetailEntry `json:"-"`
	// RetryAfter is the answer's Retry-After (whole seconds, or an HTTP date), zero when absent.
	RetryAfter time.Duration `json:"-"`
	// ShouldRetry is the answer's x-should-retry: false on a refusal a retry cannot help or
	// that may pay twice; nil when the header is absent.
	ShouldRetry *bool `json:"-"`
	// Header is the answer's header.
	Header http.Header `json:"-"`
	// Body is the whole error body as received (the code's own fields, such as bucket or
	// declined, are read from it).
	Body json.RawMessage `json:"-"`
}

// DetailEntry is one problem of a refused request: where (Loc, e.g. ["body","width"]; ["body"]
// when no field is named), what (Msg, written for a person) and its kind (Type).
type DetailEntry struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
}

// Field is the entry's field as a dotted path (inputs.image), without the leading "body"; ""
// when the entry names the whole body.
func (d DetailEntry) Field() string {
	var parts []string
	for i, p := range d.Loc {
		if i == 0 && p == "body" {
			continue
		}
		parts = append(parts, fmt.Sprint(p))
	}
	return strings.Join(parts, ".")
}

// Error says the code, the status, the message, each detail entry (field: message) and the
// request id. It has no "modelexec:" prefix: the caller says what failed.
func (e *Error) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("HTTP %d: %s", e.StatusCode, trim(string(e.Body)))
	}
	s := fmt.Sprintf("%s (HTTP %d)", e.Code, e.StatusCode)
	// A 422's message repeats its first detail entry: the entries alone then say it all.
	if len(e.Detail) == 0 || !strings.Contains(e.Message, e.Detail[0].Msg) {
		s += ": " + e.Message
	} else {
		s += ":"
	}
	for i, d := range e.Detail {
		if i > 0 || s[len(s)-1] != ':' {
			s += ";"
		}
		if f := d.Field(); f != "" {
			s += " " + f + ": " + d.Msg
		} else {
			s += " " + d.Msg
		}
	}
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
	var detail struct {
		Detail []DetailEntry `json:"detail"`
	}
	if json.Unmarshal(body, &detail) == nil { // detail is a list only on a 422; a string elsewhere is not one
		e.Detail = detail.Detail
	}
	e.StatusCode, e.Body, e.Header = resp.StatusCode, append(json.RawMessage(nil), body...), resp.Header
	if e.RequestID == "" {
		e.RequestID = resp.Header.Get("X-Request-Id")
	}
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
