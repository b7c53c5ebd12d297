package apierr

import (
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
)

// Code is an error code of the catalogue; clients match on it, never on the message.
type Code string

// Retry is the advice a client gets on whether resending can help.
type Retry string

const (
	RetrySameKey         Retry = "same_key"
	RetryAfterRetryAfter Retry = "after_retry_after"
	RetryNewKey          Retry = "new_key"
	RetryPollFirst       Retry = "poll_first"
	RetryNever           Retry = "never"
)

// Charged says what happened to the credits of a refused request.
type Charged string

const (
	ChargedNo       Charged = "no"
	ChargedRefunded Charged = "refunded"
	ChargedStands   Charged = "stands"
	ChargedUnknown  Charged = "unknown"
	// ChargedBool marks codes whose body carries a boolean `charged` (true = stands, false = no).
	ChargedBool Charged = "bool"
)

// Entry is one row of the catalogue.
type Entry struct {
	Code    Code
	Status  int
	Type    string // error_type
	Retry   Retry
	Charged Charged
	// Request marks a refusal of what the request says (option, header, body, field) decided
	// before any charge: queue and synchronous hosts answer it 422 with `detail`.
	Request bool
	Carries []string // fields the body carries besides the common ones
	Message string   // default human message
	// WhyUnreachable, when set, says why this service never answers the code although the
	// spec catalogues it (rendered in docs/errors.md). Every other row is emitted somewhere.
	WhyUnreachable string
}

// Violation is one element of `detail`, the queue-protocol validation shape.
type Violation struct {
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
	Type string `json:"type"`
}

// Error is a catalogued refusal ready to be written by the HTTP layer.
type Error struct {
	Code    Code
	Message string
	// Fields are the code's carried fields (`required`, `balance`, `limit`, ...).
	Fields map[string]any
	// Detail is the queue-protocol list of violations; on queue hosts a request refusal
	// without detail gets [{loc: [body], ...}].
	Detail []Violation
	// DetailOmitted counts violations found beyond the MaxDetail listed in Detail.
	DetailOmitted int
	// RetryAfter, when positive, is sent as the Retry-After header (whole seconds).
	RetryAfter int
	// Headers are extra response headers (e.g. X-Svc-Request-Timeout-Type).
	Headers map[string]string
	// Charged overrides the catalogue's charged value where the outcome is known
	// (e.g. a boolean for wait_capacity and run_timed_out).
	Charged any
	// Status overrides the catalogue status where the spec gives two (e.g. service_busy 429/503).
	Status int
	// Retry overrides the catalogue's retry where the outcome is known: the read of a job that
	// failed with a code the catalogue advises resending under the same key answers new_key,
	// because the same key replays the failed job (spec 01, idempotency_key).
	Retry Retry
	cause error
}

// New returns a catalogued error with the code's default message.
func New(code Code, fields ...any) *Error {
	e := &Error{Code: code}
	if len(fields)%2 != 0 {
		panic("apierr.New: odd number of field arguments")
	}
	for i := 0; i < len(fields); i += 2 {
		e.With(fields[i].(string), fields[i+1])
	}
	return e
}

// Newf returns a catalogued error with its own message.
func Newf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// With sets one carried field and returns e.
func (e *Error) With(name string, v any) *Error {
	if e.Fields == nil {
		e.Fields = map[string]any{}
	}
	e.Fields[name] = v
	return e
}

// MaxDetail is the most entries a refusal's `detail` lists. Beyond it the list ends with one
// entry of type DetailTruncatedType saying how many more were found, and the body carries
// `detail_truncated` (that count): a refusal stays a small answer whatever the request holds.
const MaxDetail = 50

// DetailTruncatedType is the `type` of the final `detail` entry of a truncated list.
const DetailTruncatedType = "too_many_violations"

// WithDetail appends violations up to MaxDetail, counting the rest in DetailOmitted, and
// returns e.
func (e *Error) WithDetail(v ...Violation) *Error {
	for _, x := range v {
		if len(e.Detail) >= MaxDetail {
			e.DetailOmitted++
			continue
		}
		e.Detail = append(e.Detail, x)
	}
	return e
}

// WithOmitted adds n violations found but not listed (a validator that stopped collecting at
// its own cap) and returns e.
func (e *Error) WithOmitted(n int) *Error {
	if n > 0 {
		e.DetailOmitted += n
	}
	return e
}

// ListedDetail is the `detail` list as written: at most MaxDetail violations, then, when any
// were left out, one entry saying how many, and that count (0 when nothing was left out).
func (e *Error) ListedDetail() ([]Violation, int) {
	d, omitted := e.Detail, e.DetailOmitted
	if len(d) > MaxDetail {
		omitted += len(d) - MaxDetail
		d = d[:MaxDetail]
	}
	if omitted == 0 {
		return d, 0
	}
	out := make([]Violation, len(d), len(d)+1)
	copy(out, d)
	return append(out, Violation{Loc: []any{"body"}, Type: DetailTruncatedType,
		Msg: fmt.Sprintf("%d more violations were found and are not listed; fix the ones above and send again.", omitted)}), omitted
}

// Wrap records the underlying cause (logged, never echoed).
func (e *Error) Wrap(err error) *Error { e.cause = err; return e }

func (e *Error) Unwrap() error { return e.cause }

func (e *Error) Error() string {
	msg := e.Message
	if msg == "" {
		msg = Lookup(e.Code).Message
	}
	if e.cause != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, msg, e.cause)
	}
	return fmt.Sprintf("%s: %s", e.Code, msg)
}

// HTTPStatus is the status e is answered with: its override, else the catalogue's.
func (e *Error) HTTPStatus() int {
	if e.Status != 0 {
		return e.Status
	}
	return e.Entry().Status
}

// Text is the message for a person: e's own, else the catalogue's default.
func (e *Error) Text() string {
	if e.Message != "" {
		return e.Message
	}
	return e.Entry().Message
}

// Entry returns the catalogue row of e.
func (e *Error) Entry() Entry { return Lookup(e.Code) }

// Advice is the retry the answer carries: the override when set, the catalogue's otherwise.
func (e *Error) Advice() Retry {
	if e.Retry != "" {
		return e.Retry
	}
	return e.Entry().Retry
}

// As reports whether err is (or wraps) a catalogued error and returns it.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// Is reports whether err is a catalogued error with code.
func Is(err error, code Code) bool {
	e, ok := As(err)
	return ok && e.Code == code
}

// Lookup returns the row for code; an unknown code reads as Internal.
func Lookup(code Code) Entry {
	if en, ok := catalogue[code]; ok {
		return en
	}
	return catalogue[Internal]
}

// Known reports whether code has a row.
func Known(code Code) bool { _, ok := catalogue[code]; return ok }

// Codes lists every catalogued code, sorted.
func Codes() []Code {
	out := make([]Code, 0, len(catalogue))
	for c := range catalogue {
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// DocsPath is the account API path of the page documenting code (served from this catalogue).
func DocsPath(code Code) string { return "/docs/errors/" + string(code) }

// docsBase is the account API's public base URL. It is process-wide rather than passed along
// because every host of every process renders error bodies, and a deployment has exactly one
// public account API URL, fixed at start (SetDocsBase).
var docsBase atomic.Pointer[string]

// SetDocsBase makes every `docs` link absolute under the account API's public base URL
// (e.g. https://api.example.com): the queue and synchronous hosts' refusals then point at the
// page the account API serves. Called once at start; before it, links are paths.
func SetDocsBase(apiURL string) {
	base := strings.TrimRight(apiURL, "/")
	docsBase.Store(&base)
}

// DocsURL is the link to code's documentation page: the `docs` field of every error body.
func DocsURL(code Code) string {
	if b := docsBase.Load(); b != nil {
		return *b + DocsPath(code)
	}
	return DocsPath(code)
}

// ShouldNotRetry reports whether a response with this advice carries x-should-retry: false:
// a retry cannot help, or may pay twice.
func ShouldNotRetry(r Retry) bool {
	return r == RetryNever || r == RetryNewKey || r == RetryPollFirst
}

// WithRetryAfter sets the Retry-After seconds and returns e.
func (e *Error) WithRetryAfter(seconds int) *Error { e.RetryAfter = seconds; return e }

// WithStatus sets the status where the spec gives a code two (service_busy 429 or 503) and
// returns e.
func (e *Error) WithStatus(status int) *Error { e.Status = status; return e }

// WithCharged sets the body's charged value where the outcome is known and returns e.
func (e *Error) WithCharged(v any) *Error { e.Charged = v; return e }

// WithHeader sets one extra response header and returns e.
func (e *Error) WithHeader(name, value string) *Error {
	if e.Headers == nil {
		e.Headers = map[string]string{}
	}
	e.Headers[name] = value
	return e
}
