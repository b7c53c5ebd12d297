package client

import (
	"encoding/json"
	"fmt"
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
func parseError(status int, body []byte) *Error {
	e := &Error{}
	if json.Unmarshal(body, e) != nil {
		e = &Error{}
	}
	e.StatusCode, e.Body = status, append(json.RawMessage(nil), body...)
	return e
}

func trim(s string) string {
	if len(s) > 200 {
		return s[:200] + "…"
	}
	return s
}
