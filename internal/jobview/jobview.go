// Package jobview renders jobs for the HTTP surfaces: the queue status document (spec 01
// "Job status document"), the job record of the account API, and the result document with
// its stored files turned into signed links. The queue host, the synchronous host and the
// account API share it so a job reads the same everywhere.
package jobview

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/ledger"
)

// Signer turns a stored file's key into a signed read link.
type Signer interface {
	SignGet(ctx context.Context, key string) (string, time.Time, error)
}

// URLs builds a job's queue URLs under the public queue base.
type URLs struct{ Queue string }

func (u URLs) base(j jobs.Job) string {
	return u.Queue + "/svc-serverless/" + j.Model + "/requests/" + j.RequestID
}

// StatusDoc is the status document of a status read (spec 01 "Job status document"):
// status, request_id, the three URLs, queue_position while queued, logs when asked, metrics.
type StatusDoc struct {
	Status        string             `json:"status"`
	RequestID     string             `json:"request_id"`
	StatusURL     string             `json:"status_url"`
	ResponseURL   string             `json:"response_url"`
	CancelURL     string             `json:"cancel_url"`
	QueuePosition *int               `json:"queue_position,omitempty"`
	Logs          *[]jobs.LogLine    `json:"logs,omitempty"`
	Metrics       map[string]float64 `json:"metrics"`
}

// HasRequestID says the document carries its own request_id (the job's), so that no
// other is added to it when it is written.
func (StatusDoc) HasRequestID() bool { return true }

// Status is the status document of j; position is its place in the queue while it waits.
func (u URLs) Status(j jobs.Job, position int, withLogs bool) StatusDoc {
	base := u.base(j)
	d := StatusDoc{
		Status:      string(j.Status),
		RequestID:   j.RequestID,
		StatusURL:   base + "/status",
		ResponseURL: base,
		CancelURL:   base + "/cancel",
		Metrics:     metrics(j),
	}
	if j.Status == jobs.InQueue {
		d.QueuePosition = &position
	}
	if withLogs {
		l := logs(j)
		d.Logs = &l
	}
	return d
}

// SubmitFields are the facts a submit answer adds.
type SubmitFields struct {
	Replayed     bool
	Balance      int64
	Wait         bool
	TimedOut     bool
	WaitDeclined string
	Model        *catalog.Model
}

// SubmitDoc is the status document of a submit (spec 01, every field of the table). A
// submit whose dispatch could not be confirmed carries the catalogue's error fields too.
type SubmitDoc struct {
	StatusDoc
	Product            string           `json:"product"`
	ProviderJobID      *string          `json:"provider_job_id"`
	Model              string           `json:"model"`
	Engine             *string          `json:"engine"`
	Attribution        *string          `json:"attribution"`
	CreditsCharged     int64            `json:"credits_charged"`
	CreditsQuoted      int64            `json:"credits_quoted"`
	Coverage           *ledger.Coverage `json:"coverage,omitempty"`
	CreditsRemaining   int64            `json:"credits_remaining"`
	ExpectedSeconds    int              `json:"expected_seconds"`
	GiveUpAfterSeconds int              `json:"give_up_after_seconds"`
	Replayed           bool             `json:"replayed"`
	// timed_out is a field of every submit answer (false when no wait ran out); waited and
	// wait_declined only answer a wait that was asked for.
	TimedOut     bool              `json:"timed_out"`
	Waited       *bool             `json:"waited,omitempty"`
	WaitDeclined string            `json:"wait_declined,omitempty"`
	Warnings     []catalog.Warning `json:"warnings,omitempty"`

	Error   string `json:"error,omitempty"`
	Message string `json:"message,omitempty"`
	Docs    string `json:"docs,omitempty"`
	Retry   string `json:"retry,omitempty"`
	Charged string `json:"charged,omitempty"`
}

// Submit is the status document of a submit.
func (u URLs) Submit(j jobs.Job, position int, withLogs bool, f SubmitFields) SubmitDoc {
	m := f.Model
	charged := j.Charged
	if f.Replayed {
		charged = 0
	}
	d := SubmitDoc{
		StatusDoc:          u.Status(j, position, withLogs),
		Product:            j.Product,
		ProviderJobID:      nullable(j.ProviderJobID),
		Model:              "svc-serverless/" + j.Model,
		Engine:             m.Engine,
		Attribution:        m.Attribution,
		CreditsCharged:     charged,
		CreditsQuoted:      j.Quoted,
		Coverage:           j.Coverage,
		CreditsRemaining:   f.Balance,
		ExpectedSeconds:    m.ExpectedSeconds,
		GiveUpAfterSeconds: GiveUpAfterSeconds(j, m),
		Replayed:           f.Replayed,
		TimedOut:           f.Wait && f.TimedOut,
	}
	if f.Wait {
		waited := f.WaitDeclined == ""
		d.Waited, d.WaitDeclined = &waited, f.WaitDeclined
	}
	return d
}

// GiveUpAfterSeconds is the longest the job may take from submit: its maximum wait to start
// plus the model's maximum run. A queued job's wait is its own bound (the product's queue
// deadline, or X-Svc-Request-Timeout when that is shorter); otherwise the model's.
func GiveUpAfterSeconds(j jobs.Job, m *catalog.Model) int {
	lc := m.Lifecycle
	if j.StartBy == nil {
		return lc.GiveUpAfterSeconds()
	}
	wait := int(math.Ceil(j.StartBy.Sub(j.CreatedAt).Seconds()))
	return max(wait, 0) + lc.StallCeilingSeconds
}

// nullable is s, or JSON's null for "".
func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func metrics(j jobs.Job) map[string]float64 {
	m := make(map[string]float64, len(j.Metrics)+2)
	for k, v := range j.Metrics {
		m[k] = v
	}
	if j.StartedAt != nil {
		end := time.Now()
		if j.FinishedAt != nil {
			end = *j.FinishedAt
		}
		m["inference_time"] = end.Sub(*j.StartedAt).Seconds()
	}
	if j.Status == jobs.InProgress {
		m["progress"] = j.Progress
	}
	return m
}

func logs(j jobs.Job) []jobs.LogLine {
	if j.Logs == nil {
		return []jobs.LogLine{}
	}
	return j.Logs
}

// Record is the job record of the account API: id, object, product, status (queued and
// running jobs read queued / running), error_code, credits_charged, credits_reserved, and for
// reads poll_after_seconds and coverage. The job's queue request id (the id in its queue URLs)
// is queue_request_id: request_id on an account-API answer is that HTTP request's id
// (X-Request-Id), which the writer adds. The job's queue-host links (status_url, response_url)
// are left out for a language model's job: the model has no address on the queue host, where
// they would answer 404.
func Record(j jobs.Job, u URLs) map[string]any {
	status := string(j.Outcome)
	poll := 0
	switch j.Status {
	case jobs.InQueue:
		status, poll = "queued", 2
	case jobs.InProgress:
		status, poll = "running", 1
	}
	d := map[string]any{
		"id":                 j.ID,
		"object":             "job",
		"product":            j.Product,
		"status":             status,
		"error_code":         orNull(j.ErrorCode),
		"credits_charged":    j.Charged,
		"credits_reserved":   j.Reserved,
		"credits_quoted":     j.Quoted,
		"model":              "svc-serverless/" + j.Model,
		"queue_request_id":   j.RequestID,
		"idempotency_key":    j.IdempotencyKey,
		"created_at":         j.CreatedAt.UTC().Format(TimeLayout),
		"started_at":         timeOrNil(j.StartedAt),
		"finished_at":        timeOrNil(j.FinishedAt),
		"poll_after_seconds": poll,
		"coverage":           j.Coverage,
	}
	if !j.OfLanguageModel() {
		d["status_url"], d["response_url"] = u.base(j)+"/status", u.base(j)
	}
	return d
}

// orNull is s, or nil (JSON's null) for "".
func orNull(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// TimeLayout writes a job record's times: RFC 3339 in UTC with the microseconds the store
// keeps, the same for created_at, started_at and finished_at, so that the differences a client
// takes (the wait before the start, the run) are never negative or off by a second.
const TimeLayout = "2006-01-02T15:04:05.000000Z07:00"

func timeOrNil(t *time.Time) any {
	if t == nil {
		return nil
	}
	return t.UTC().Format(TimeLayout)
}

// Result renders the output document of a succeeded job with signed links (valid 15
// minutes) in place of storage keys.
func Result(ctx context.Context, j jobs.Job, s Signer) (map[string]any, error) {
	if j.Result == nil {
		return map[string]any{}, nil
	}
	out, err := signTree(ctx, j.Result.Document, s)
	if err != nil {
		return nil, err
	}
	m, _ := out.(map[string]any)
	if m == nil {
		m = map[string]any{}
	}
	return m, nil
}

func signTree(ctx context.Context, v any, s Signer) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, val := range t {
			if k == "storage_key" {
				key, _ := val.(string)
				link, _, err := s.SignGet(ctx, key)
				if err != nil {
					return nil, err
				}
				out["url"] = link
				continue
			}
			sv, err := signTree(ctx, val, s)
			if err != nil {
				return nil, err
			}
			out[k] = sv
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, val := range t {
			sv, err := signTree(ctx, val, s)
			if err != nil {
				return nil, err
			}
			out[i] = sv
		}
		return out, nil
	}
	return v, nil
}

// sentence ends s with a full stop unless it ends a sentence already (or is empty).
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" || strings.HasSuffix(s, ".") || strings.HasSuffix(s, "!") || strings.HasSuffix(s, "?") {
		return s
	}
	return s + "."
}

// Failure is the catalogued error a settled, unsuccessful job answers on a result read (and
// on the synchronous host): the model's refusal as written is 422 with detail; others keep
// their catalogue row; a cancelled job is gone.
func Failure(j jobs.Job) *apierr.Error {
	if j.Outcome == jobs.Cancelled {
		// `charged` says what stands for this job, not the catalogue row's default: a job
		// cancelled after it started keeps what it was charged (stands); one whose reserve was
		// given back reads refunded; one never charged reads no.
		switch {
		case j.Charged > 0:
			return apierr.Newf(apierr.Expired, "The job was cancelled after it started; it has no result and the %d credits charged stand.", j.Charged).
				With("reason", "cancelled").WithCharged("stands")
		case j.Reserved > 0:
			return apierr.Newf(apierr.Expired, "The job was cancelled; it has no result and its credits were given back.").
				With("reason", "cancelled").WithCharged("refunded")
		}
		return apierr.Newf(apierr.Expired, "The job was cancelled before it was charged; it has no result.").With("reason", "cancelled")
	}
	code := apierr.Code(j.ErrorCode)
	if code == "" {
		code = apierr.RunFailed
	}
	e := &apierr.Error{Code: code, Message: j.ErrorMessage}
	for k, v := range j.ErrorFields {
		e.With(k, v) // a refusal at the job's turn answers what the same refusal of a submit carries
	}
	if r := e.Entry().Retry; r != apierr.RetryNever && r != apierr.RetryPollFirst {
		// The code says a resend may succeed, but the same key replays this failed job:
		// the advice is a new key, said in the message too (nothing stands: a failed job is
		// refunded, or was never charged).
		e.Retry = apierr.RetryNewKey
		e.Message = strings.TrimSpace(sentence(j.ErrorMessage) + " Resend under a new idempotency key: this one replays the failed job.")
		e.Charged = j.ChargedState() // given back, or never charged (a job that waited and never started)
	}
	if !apierr.Known(code) || len(j.ErrorDetail) > 0 {
		e.Code = code
		e.Status = 422
		if !apierr.Known(code) {
			e.Code = apierr.ContentPolicy
		}
		for _, v := range j.ErrorDetail {
			loc := make([]any, len(v.Loc))
			for i, l := range v.Loc {
				loc[i] = l
			}
			e.Detail = append(e.Detail, apierr.Violation{Loc: loc, Msg: v.Msg, Type: v.Type})
		}
		if len(e.Detail) == 0 {
			e.Detail = []apierr.Violation{{Loc: []any{"body"}, Msg: j.ErrorMessage, Type: j.ErrorCode}}
		}
		e.Charged = "refunded"
	}
	return e
}

// OutputsExpired is the answer for the result of a job whose output files the retention
// deleted (keep after it finished; 0 keeps them forever): 410 expired, reason output_expired.
// The job's record stays readable; nil while its files are kept, or when it has none.
func OutputsExpired(j jobs.Job, keep time.Duration, now time.Time) *apierr.Error {
	if keep <= 0 || j.FinishedAt == nil || j.Result == nil || len(j.Result.Files) == 0 || now.Sub(*j.FinishedAt) < keep {
		return nil
	}
	return apierr.Newf(apierr.Expired, "This job's output files were deleted: outputs are kept %s after the job finished. The job's record stays readable.", keepText(keep)).
		With("reason", "output_expired")
}

// keepText says a retention in days when it is whole days ("30 days"), as a duration otherwise.
func keepText(d time.Duration) string {
	if d >= 24*time.Hour && d%(24*time.Hour) == 0 {
		if n := int(d / (24 * time.Hour)); n != 1 {
			return fmt.Sprintf("%d days", n)
		}
		return "1 day"
	}
	return d.String()
}
