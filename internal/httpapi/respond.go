package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/modelexec/modelexec/internal/apierr"
)

// Surface is which host a request arrived on; queue and synchronous hosts answer refusals of
// what the request says with 422 and detail (spec 02 "Error body").
type Surface int

const (
	AccountSurface Surface = iota
	QueueSurface
	SyncSurface
	// ConsoleSurface is the web console (HTML pages on the account API host).
	ConsoleSurface
)

type ctxKey int

const (
	requestIDKey ctxKey = iota
	surfaceKey
	principalKey
	keyIDKey
	confirmKey
)

// keyIDSlot is filled by the gate once a presented key's public id is known, so the access
// log line written by Wrap names it (KEY-13), refusals after step 4 included. Until the key's
// secret was checked the id is only claimed: anyone may write a key with a public id and a
// made-up secret, and the log must not put that request on the real key.
type keyIDSlot struct {
	id       string
	verified bool
}

func noteKeyID(r *http.Request, id string) {
	if s, ok := r.Context().Value(keyIDKey).(*keyIDSlot); ok {
		s.id = id
	}
}

// noteKeyVerified marks the noted key id as the request's own: its secret was checked.
func noteKeyVerified(r *http.Request) {
	if s, ok := r.Context().Value(keyIDKey).(*keyIDSlot); ok {
		s.verified = true
	}
}

// logAttr is the access log's field for the key: key_id once verified, claimed_key_id before.
func (s *keyIDSlot) logAttr() string {
	if s.verified {
		return "key_id"
	}
	return "claimed_key_id"
}

// RequestID returns the id of the HTTP request (X-Request-Id).
func RequestID(r *http.Request) string {
	if v, ok := r.Context().Value(requestIDKey).(string); ok {
		return v
	}
	return ""
}

// SurfaceOf returns the surface the request arrived on.
func SurfaceOf(r *http.Request) Surface {
	s, _ := r.Context().Value(surfaceKey).(Surface)
	return s
}

// NewRequestID mints a request id.
func NewRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("req_%x", b)
}

// Func is a handler that returns an error; Func.ServeHTTP writes it with WriteError.
type Func func(w http.ResponseWriter, r *http.Request) error

func (f Func) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if err := f(w, r); err != nil {
		WriteError(w, r, err)
	}
}

// loggerKey carries the surface's logger.
type loggerKey struct{}

func logger(r *http.Request) *slog.Logger {
	if l, ok := r.Context().Value(loggerKey{}).(*slog.Logger); ok {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

// WriteJSON writes v as JSON with request_id, the HTTP request's id, added to the top-level
// object, unless the document carries its own: only the queue protocol's submit, status and
// cancel documents do, naming the job's request id (an account-API document never does; a job
// record names the job's in queue_request_id). That is decided on the value, before
// encoding: the body is never parsed again.
func WriteJSON(w http.ResponseWriter, r *http.Request, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		WriteError(w, r, fmt.Errorf("encode response: %w", err))
		return
	}
	b := bytes.TrimRight(buf.Bytes(), "\n")
	if !hasRequestID(v) {
		b = withRequestID(b, RequestID(r))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// OwnRequestID is a typed document that may carry its own top-level request_id: WriteJSON
// adds none when HasRequestID says so.
type OwnRequestID interface{ HasRequestID() bool }

// hasRequestID reports whether the document v names its own top-level request_id.
func hasRequestID(v any) bool {
	switch d := v.(type) {
	case map[string]any:
		_, ok := d["request_id"]
		return ok
	case map[string]string:
		_, ok := d["request_id"]
		return ok
	case OwnRequestID:
		return d.HasRequestID()
	}
	return false
}

// withRequestID splices "request_id" into the JSON object b (nothing when b is not an object).
func withRequestID(b []byte, id string) []byte {
	if len(b) < 2 || b[0] != '{' || id == "" {
		return b
	}
	tail := `,"request_id":` + strconv.Quote(id) + `}`
	if bytes.Equal(bytes.TrimSpace(b), []byte("{}")) {
		tail = tail[1:]
	}
	out := make([]byte, 0, len(b)+len(tail))
	out = append(out, b[:len(b)-1]...)
	return append(out, tail...)
}

// WriteError is the one place an error becomes a response (STYLE.md convention 1). A
// catalogued error is written with its row; anything else is logged and answered internal,
// never echoed.
func WriteError(w http.ResponseWriter, r *http.Request, err error) {
	if c, ok := r.Context().Value(confirmKey).(confirmer); ok && r.Context().Err() == nil {
		// The caller's principal came from the gate's cache and no charge confirmed it: a
		// revoked key or a closed account is refused as such, before any later refusal.
		err = c(w, r, err)
	}
	e, ok := apierr.As(err)
	if !ok {
		if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
			return // the client went away
		}
		logger(r).Error("internal error", "err", err, "request_id", RequestID(r), "path", r.URL.Path)
		e = apierr.New(apierr.Internal)
	} else if e.Unwrap() != nil {
		logger(r).Warn("refusal with cause", "code", e.Code, "err", e.Unwrap(), "request_id", RequestID(r))
	}
	status, body := ErrorBody(e, SurfaceOf(r))
	h := w.Header()
	for k, v := range e.Headers {
		h.Set(k, v)
	}
	switch {
	case e.RetryAfter > 0:
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	case e.Advice() == apierr.RetryAfterRetryAfter:
		// The advice names a header: never leave it out, even where the caller set no figure (ERR-05).
		h.Set("Retry-After", "1")
	}
	if apierr.ShouldNotRetry(e.Advice()) {
		h.Set("x-should-retry", "false")
	}
	WriteJSON(w, r, status, body)
}

// ErrorBody renders e as spec 02's error body for a surface.
func ErrorBody(e *apierr.Error, s Surface) (int, map[string]any) {
	en := e.Entry()
	status, msg := e.HTTPStatus(), e.Text()
	body := map[string]any{}
	for k, v := range e.Fields {
		body[k] = v
	}
	var charged any = string(en.Charged)
	if en.Charged == apierr.ChargedBool {
		charged = false
	}
	if e.Charged != nil {
		charged = e.Charged
	}
	body["error"] = string(e.Code)
	body["error_type"] = en.Type
	body["message"] = msg
	body["retry"] = string(e.Advice())
	body["charged"] = charged
	body["docs"] = apierr.DocsURL(e.Code)
	detail, omitted := e.ListedDetail()
	if (s == QueueSurface || s == SyncSurface) && en.Request && e.Code != apierr.ModelNotSynchronous {
		status = http.StatusUnprocessableEntity
		if en.Type != "ValidationError" && en.Type != "ContentPolicyError" {
			body["error_type"] = "ValidationError" // 422 carries only these two (spec 02)
		}
		if len(detail) == 0 {
			detail = []apierr.Violation{{Loc: []any{"body"}, Msg: msg, Type: string(e.Code)}}
		}
	}
	if len(detail) > 0 {
		body["detail"] = detail
	}
	if omitted > 0 {
		body["detail_truncated"] = omitted
	}
	if s == SyncSurface && status == http.StatusInternalServerError && en.Type == "ConfigurationError" {
		body["error_type"] = "ExecutionError"
	}
	if s != SyncSurface && en.Type == "ExecutionError" {
		body["error_type"] = "InternalError" // ExecutionError is the synchronous host's 500 only
	}
	return status, body
}

// Healthz answers liveness on every surface: 200 {"status":"ok","request_id":…}. It checks
// nothing beyond the process answering (readiness is /readyz on the account API).
func Healthz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, r, http.StatusOK, map[string]string{"status": "ok"})
	})
}
