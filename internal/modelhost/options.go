package modelhost

import (
	"errors"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/webhooks"
)

// Options are the query parameters and headers of a submit (spec 01 "Submit to a model").
type Options struct {
	Wait           int // seconds; 0 when not asked
	Logs           bool
	Webhook        string
	MaxQueueLength *int
	Priority       jobs.Priority
	RequestTimeout time.Duration
	CoveredOnly    bool
	IdempotencyKey string
}

// pick reads one option sent under two spellings; values that are not the same are
// conflicting_options.
func pick(a, b string, nameA, nameB string, va, vb string, okA, okB bool, same func(x, y string) bool) (string, bool, error) {
	switch {
	case okA && okB && !same(va, vb):
		return "", false, apierr.New(apierr.ConflictingOptions, "options", []string{nameA, nameB}, "option", nameA).
			WithDetail(apierr.Violation{Loc: []any{a, nameA}, Msg: nameA + " and " + nameB + " disagree", Type: "conflicting_options"})
	case okA:
		return va, true, nil
	case okB:
		return vb, true, nil
	}
	return "", false, nil
}

// spelled reads one option that has several spellings (ours first, then aliases such as
// alt_webhook and fal's fal_webhook); two spellings sent with values that are not the same
// are conflicting_options. It answers the value and the spelling it came under.
func spelled(r *http.Request, get func(*http.Request, string) (string, bool), where string, same func(x, y string) bool, names ...string) (string, string, bool, error) {
	val, name, found := "", "", false
	for _, n := range names {
		v, ok := get(r, n)
		if !ok {
			continue
		}
		if found && !same(v, val) {
			return "", "", false, apierr.New(apierr.ConflictingOptions, "options", []string{name, n}, "option", name).
				WithDetail(apierr.Violation{Loc: []any{where, name}, Msg: name + " and " + n + " disagree", Type: "conflicting_options"})
		}
		if !found {
			val, name, found = v, n, true
		}
	}
	return val, name, found, nil
}

// sameText says two spellings of a text option agree: the same text.
func sameText(x, y string) bool { return x == y }

// sameNumber says two spellings of a numeric option agree: the same number however written
// (10 and 10.0, 3 and 03), or the same text when either is not a number.
func sameNumber(x, y string) bool {
	fx, errX := strconv.ParseFloat(x, 64)
	fy, errY := strconv.ParseFloat(y, 64)
	return x == y || (errX == nil && errY == nil && fx == fy)
}

// sameInteger says two spellings of an integer option agree: the same integer however
// written (3 and 03), or the same text when either is not an integer.
func sameInteger(x, y string) bool {
	nx, errX := strconv.ParseInt(x, 10, 64)
	ny, errY := strconv.ParseInt(y, 10, 64)
	return x == y || (errX == nil && errY == nil && nx == ny)
}

// falPriorityHeader is fal's spelling of X-Svc-Priority. fal's client sends it on every
// queue submit, "normal" unless asked otherwise, so "normal" under this spelling asks for
// nothing and is not refused on a model that does not queue (SUB-16 refuses a priority
// someone chose; "low" here still is).
const falPriorityHeader = "X-Fal-Queue-Priority"

// queryOf answers a reader of r's query string, which it parses once (each parse of the
// string allocates all of its values afresh). It refuses a query it cannot read whole (a
// malformed %-escape, a ';'), whose pairs URL.Query would drop without a word, and one of the
// single-valued options named given again with another value; a repeat that agrees is the
// same request.
func queryOf(r *http.Request, single ...string) (func(*http.Request, string) (string, bool), error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, unreadableQuery(r.URL.RawQuery)
	}
	for _, name := range single {
		if err := httpapi.Repeated("query", name, q[name], sameText); err != nil {
			return nil, err
		}
	}
	return func(_ *http.Request, name string) (string, bool) {
		v, ok := q[name]
		if !ok || len(v) == 0 {
			return "", false
		}
		return v[0], true
	}, nil
}

// unreadableQuery is the refusal of a query url.ParseQuery cannot read, naming its first
// parameter that does not parse (as sent when its name is unreadable too), under that
// parameter's code: invalid_url for a webhook, invalid_wait for wait, invalid_input otherwise.
func unreadableQuery(raw string) *apierr.Error {
	name := "query"
	for pair := range strings.SplitSeq(raw, "&") {
		if _, err := url.ParseQuery(pair); err == nil {
			continue
		}
		key, _, _ := strings.Cut(pair, "=")
		if k, err := url.QueryUnescape(key); err == nil {
			key = k
		}
		if len(key) > 64 {
			key = key[:64]
		}
		name = strings.ToValidUTF8(key, "\uFFFD")
		break
	}
	const how = " could not be read from the query: a % starts a two-digit hex escape (send % itself as %25) and parameters are separated by & alone (send ; as %3B)."
	loc := []any{"query", name}
	switch name {
	case "webhook", "alt_webhook", "fal_webhook":
		refused := &webhooks.URLError{Reason: webhooks.ReasonUnreadable}
		msg := refused.Message()
		return apierr.Newf(apierr.InvalidURL, "%s", msg).With("reason", string(refused.Reason)).
			WithDetail(apierr.Violation{Loc: loc, Msg: msg, Type: "invalid_url"})
	case "wait":
		msg := "wait" + how
		return apierr.Newf(apierr.InvalidWait, "%s", msg).With("max", 300).
			WithDetail(apierr.Violation{Loc: loc, Msg: msg, Type: "invalid_wait"})
	}
	msg := name + how
	return apierr.Newf(apierr.InvalidInput, "%s", msg).WithDetail(apierr.Violation{Loc: loc, Msg: msg, Type: "unreadable"})
}

func header(r *http.Request, name string) (string, bool) {
	v, ok := r.Header[http.CanonicalHeaderKey(name)]
	if !ok || len(v) == 0 {
		return "", false
	}
	return strings.TrimSpace(v[0]), true
}

// headersAgree refuses a single-valued option header sent on several lines that disagree.
func headersAgree(r *http.Request, same func(x, y string) bool, names ...string) error {
	for _, name := range names {
		if _, _, err := httpapi.OneHeader(r, name, same); err != nil {
			return err
		}
	}
	return nil
}

func invalid(where, name, msg, typ string) *apierr.Error {
	return apierr.Newf(apierr.InvalidInput, "%s: %s", name, msg).WithDetail(apierr.Violation{Loc: []any{where, name}, Msg: msg, Type: typ})
}

// logsOption reads the logs query option of a submit, a status read or a status stream: 1 or
// true, 0 or false.
func logsOption(v string) (bool, error) {
	switch v {
	case "1", "true":
		return true, nil
	case "0", "false":
		return false, nil
	}
	return false, invalid("query", "logs", "logs is one of 1, 0, true, false", "enum")
}

// ParseOptions reads and checks a submit's options against the model (before any charge).
// sync is true on the synchronous host, where wait and webhooks do not apply in the same way.
func ParseOptions(r *http.Request, m *catalog.Model) (Options, error) {
	return ParseOptionsUnder(r, m, webhooks.URLPolicy{})
}

// ParseOptionsUnder is ParseOptions with the webhook URL checked under policy.
func ParseOptionsUnder(r *http.Request, m *catalog.Model, policy webhooks.URLPolicy) (Options, error) {
	var o Options
	query, err := queryOf(r, "wait", "logs", "webhook", "alt_webhook", "fal_webhook", "max_queue_length", "alt_max_queue_length")
	if err != nil {
		return o, err
	}
	if v, ok := query(r, "wait"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 300 {
			return o, apierr.New(apierr.InvalidWait, "max", 300).WithDetail(apierr.Violation{Loc: []any{"query", "wait"}, Msg: "wait is an integer from 1 to 300", Type: "invalid_wait"})
		}
		o.Wait = n
	}
	if v, ok := query(r, "logs"); ok {
		var err error
		if o.Logs, err = logsOption(v); err != nil {
			return o, err
		}
	}
	hook, hookName, ok, err := spelled(r, query, "query", sameText, "webhook", "alt_webhook", "fal_webhook")
	if err != nil {
		return o, err
	}
	if ok {
		if err := policy.Validate(hook); err != nil {
			reason, msg := "invalid", "The webhook URL is not an acceptable webhook address."
			var ue *webhooks.URLError
			if errors.As(err, &ue) {
				reason, msg = string(ue.Reason), ue.Message() // words for the caller, not the error chain
			}
			return o, apierr.Newf(apierr.InvalidURL, "%s", msg).With("reason", reason).
				WithDetail(apierr.Violation{Loc: []any{"query", hookName}, Msg: msg, Type: "invalid_url"})
		}
		o.Webhook = hook
	}
	ma, mqlA := query(r, "max_queue_length")
	mb, mqlB := query(r, "alt_max_queue_length")
	mql, ok, err := pick("query", "query", "max_queue_length", "alt_max_queue_length", ma, mb, mqlA, mqlB, sameInteger)
	if err != nil {
		return o, err
	}
	if ok {
		n, err := strconv.ParseInt(mql, 10, 64)
		if err != nil || n < 0 || n > 2147483647 {
			return o, invalid("query", "max_queue_length", "max_queue_length is an integer from 0 to 2147483647", "range")
		}
		v := int(n)
		o.MaxQueueLength = &v
	}
	if err := headersAgree(r, sameText, "X-Svc-Priority", "X-Alt-Queue-Priority", falPriorityHeader, "X-Svc-Covered-Only"); err != nil {
		return o, err
	}
	if err := headersAgree(r, sameNumber, "X-Svc-Request-Timeout", "X-Alt-Request-Timeout", "X-Fal-Request-Timeout"); err != nil {
		return o, err
	}
	prio, prioName, ok, err := spelled(r, header, "header", sameText, "X-Svc-Priority", "X-Alt-Queue-Priority", falPriorityHeader)
	if err != nil {
		return o, err
	}
	if ok {
		if prio != "normal" && prio != "low" {
			return o, invalid("header", prioName, "priority is normal or low", "enum")
		}
		o.Priority = jobs.Priority(prio)
	}
	to, toName, ok, err := spelled(r, header, "header", sameNumber, "X-Svc-Request-Timeout", "X-Alt-Request-Timeout", "X-Fal-Request-Timeout")
	if err != nil {
		return o, err
	}
	if ok {
		f, err := strconv.ParseFloat(to, 64)
		if err != nil || math.IsNaN(f) || f < 1 || f > 86400 {
			return o, invalid("header", toName, "a number of seconds from 1 to 86400", "range")
		}
		o.RequestTimeout = time.Duration(f * float64(time.Second))
	}
	if v, ok := header(r, "X-Svc-Covered-Only"); ok && (v == "1" || v == "true") {
		o.CoveredOnly = true
	}
	// Queue-only options on a model that starts at once or refuses at once.
	if m.Lifecycle.Queue != catalog.QueueOffers {
		if o.MaxQueueLength != nil {
			name := "max_queue_length"
			if !mqlA && mqlB {
				name = "alt_max_queue_length"
			}
			return o, apierr.New(apierr.QueueNotOffered, "option", name).WithDetail(apierr.Violation{Loc: []any{"query", name}, Msg: "this model does not queue", Type: "queue_not_offered"})
		}
		if prioName == falPriorityHeader && o.Priority == jobs.Normal {
			o.Priority = "" // the fal client's default, not a request
		}
		if o.Priority != "" {
			name := prioName
			return o, apierr.New(apierr.QueueNotOffered, "option", name).WithDetail(apierr.Violation{Loc: []any{"header", name}, Msg: "this model does not queue", Type: "queue_not_offered"})
		}
	}
	return o, nil
}

// ReadBody reads the submit body and the idempotency key from the body or its header alias.
func ReadBody(r *http.Request, o *Options) ([]byte, error) {
	b, err := httpapi.ReadBody(r)
	if err != nil {
		return nil, err
	}
	raw, inBody, err := httpapi.ObjectMember(b, "idempotency_key") // no map of every key: bounded memory
	if err != nil {
		return nil, err
	}
	var bodyKey string
	if inBody {
		k, err := strconv.Unquote(string(raw))
		if err != nil || !jobs.ValidIdempotencyKey(k) {
			return nil, apierr.New(apierr.InvalidIdempotencyKey).WithDetail(apierr.Violation{Loc: []any{"body", "idempotency_key"}, Msg: "must match [A-Za-z0-9._-]{1,64}", Type: "invalid_idempotency_key"})
		}
		bodyKey = k
	}
	if err := headersAgree(r, sameText, "Idempotency-Key"); err != nil {
		return nil, err
	}
	hk, inHeader := header(r, "Idempotency-Key")
	if inHeader && !jobs.ValidIdempotencyKey(hk) {
		return nil, apierr.New(apierr.InvalidIdempotencyKey).WithDetail(apierr.Violation{Loc: []any{"header", "Idempotency-Key"}, Msg: "must match [A-Za-z0-9._-]{1,64}", Type: "invalid_idempotency_key"})
	}
	key, _, err := pick("body", "header", "idempotency_key", "Idempotency-Key", bodyKey, hk, inBody, inHeader, sameText)
	if err != nil {
		return nil, err
	}
	o.IdempotencyKey = key
	return b, nil
}
