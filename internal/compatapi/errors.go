package compatapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/chat"
	"github.com/modelexec/modelexec/internal/httpapi"
)

// compatError is a catalogued error as the protocol shows it.
type compatError struct {
	status  int
	message string
	typ     string // the protocol's error type
	param   string
	code    string
	noRetry bool
	e       *apierr.Error
}

// translate applies the surface's status mapping (spec 02 "Error body").
func translate(err error) (compatError, bool) {
	var parser *chat.ParserRefusal
	isParser := errors.As(err, &parser)
	e, ok := apierr.As(err)
	if !ok {
		return compatError{}, false
	}
	en, status, msg := e.Entry(), e.HTTPStatus(), e.Text()
	c := compatError{status: status, message: msg, code: string(e.Code), noRetry: apierr.ShouldNotRetry(en.Retry), e: e}
	switch {
	case e.Code == apierr.InsufficientCredits || e.Code == apierr.KeyCreditCeiling:
		c.status, c.code, c.typ, c.noRetry = http.StatusTooManyRequests, string(apierr.InsufficientQuota), "insufficient_quota", true
		if e.Code == apierr.InsufficientCredits {
			c.message = "You exceeded your current quota: the account's credits do not cover this request (" + msg + ")."
		} else {
			c.message = "You exceeded your current quota: this key's monthly credit ceiling does not cover this request (" + msg + ")."
		}
	case status == http.StatusPaymentRequired:
		c.status, c.noRetry = http.StatusTooManyRequests, true
	case e.Code == apierr.OutputLimitReached:
		c.status = http.StatusBadRequest
	case isParser:
		c.status = http.StatusUnprocessableEntity // without detail
	case e.Code == apierr.ContentPolicy:
		c.status = http.StatusBadRequest // the model's refusal of the request as written
	case e.Code == apierr.PlanHasNoAPIGenerate && e.Fields["bucket"] == "interactive", e.Code == apierr.PlanHasNoChat:
		c.code, c.message = string(apierr.PlanHasNoChat), planMessage(e.Fields["plan"])
	case e.Code == apierr.InsufficientScope:
		c.message = scopeMessage(msg, e.Fields)
	}
	if c.typ == "" {
		c.typ = typeOf(c.status)
	}
	c.param = paramOf(e.Code)
	if p, ok := e.Fields["param"].(string); ok {
		c.param = p // the field a refusal of the body's shape names
	}
	return c, true
}

// The protocol's envelope holds message, type, param and code only: what a refusal's own
// fields tell a person (spec 02 §Scopes item 4: the scope needed; the plan without chat) is
// said in its message instead.

// planMessage names the plan without chat.
func planMessage(plan any) string {
	if plan == nil || plan == "" {
		return "This account's plan has no chat or language-model calls."
	}
	return fmt.Sprintf("The %v plan has no chat or language-model calls.", plan)
}

// scopeMessage names the scope the route needs, the other names it also takes, and the
// scopes the key holds.
func scopeMessage(msg string, f map[string]any) string {
	required, _ := f["required"].(string)
	if required == "" {
		return msg
	}
	var also []string
	for _, s := range stringsOf(f["accepted"]) {
		if s != required {
			also = append(also, s)
		}
	}
	need := "required: " + required
	if len(also) > 0 {
		need += " (also accepted: " + strings.Join(also, ", ") + ")"
	}
	held := "this key holds no scope"
	if scopes := stringsOf(f["scopes"]); len(scopes) > 0 {
		held = "this key holds " + strings.Join(scopes, ", ")
	}
	return strings.TrimSuffix(msg, ".") + "; " + need + "; " + held + "."
}

// stringsOf reads a field holding a list of strings.
func stringsOf(v any) []string {
	switch l := v.(type) {
	case []string:
		return l
	case []any:
		out := make([]string, 0, len(l))
		for _, s := range l {
			out = append(out, fmt.Sprint(s))
		}
		return out
	}
	return nil
}

func typeOf(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

func paramOf(code apierr.Code) string {
	switch code {
	case apierr.UnknownModel:
		return "model"
	case apierr.InputInvalid, apierr.InputRequired, apierr.InputTooLong, apierr.InputTooMany:
		return "input"
	case apierr.OutputLimitReached:
		return "max_tokens"
	case apierr.TextTooLong:
		return "messages" // a message names its own messages[i].content (checkMessage)
	case apierr.PromptRequired:
		return "prompt"
	case apierr.UnknownEffort:
		return "reasoning_effort"
	case apierr.InvalidIdempotencyKey:
		return "Idempotency-Key"
	}
	return ""
}

// writeError renders err in the protocol's envelope. Unknown errors are logged and answered
// as server errors, never echoed.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	c, ok := translate(err)
	if !ok {
		if errors.Is(err, context.Canceled) && r.Context().Err() != nil {
			return
		}
		log.Error("internal error", "err", err, "request_id", httpapi.RequestID(r), "path", r.URL.Path)
		writeEnvelope(w, r, http.StatusInternalServerError, "The server had an error while processing the request.", "server_error", "", string(apierr.Internal), false)
		return
	}
	h := w.Header()
	for k, v := range c.e.Headers {
		h.Set(k, v)
	}
	if c.noRetry && retryHelps(c.e, r) {
		c.noRetry = false
	}
	if c.e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(c.e.RetryAfter))
	} else if c.e.Entry().Retry == apierr.RetryAfterRetryAfter {
		h.Set("Retry-After", "1")
	}
	writeEnvelope(w, r, c.status, c.message, c.typ, c.param, c.code, c.noRetry)
}

// retryHelps reports whether the protocol's client may resend a request that failed though
// the catalogue advises a new key: the model server was busy and said when to come back
// (RetryAfter, chat.FailureError), nothing was charged, and the request sent no
// Idempotency-Key, so a resend is a new call under a key of its own. With a key sent, a resend
// replays this failure: it cannot help, and x-should-retry stays false.
func retryHelps(e *apierr.Error, r *http.Request) bool {
	return e.Code == apierr.ChatStartFailed && e.RetryAfter > 0 && r.Header.Get("Idempotency-Key") == ""
}

// envelope is the body of an error (also the `error` of a streamed error event).
func envelope(message, typ, param, code string) map[string]any {
	var p any
	if param != "" {
		p = param
	}
	return map[string]any{"error": map[string]any{"message": message, "type": typ, "param": p, "code": code}}
}

func writeEnvelope(w http.ResponseWriter, r *http.Request, status int, message, typ, param, code string, noRetry bool) {
	if noRetry {
		w.Header().Set("x-should-retry", "false")
	}
	httpapi.WriteJSON(w, r, status, envelope(message, typ, param, code))
}

// streamedError is the error event of a stream already answered 200.
func streamedError(err error) map[string]any {
	c, ok := translate(err)
	if !ok {
		return envelope("The server had an error while processing the request.", "server_error", "", string(apierr.Internal))
	}
	return envelope(c.message, c.typ, c.param, c.code)
}
