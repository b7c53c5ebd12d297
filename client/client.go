package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Default addresses: those `modelexec serve` listens on when given no flags.
const (
	DefaultAPIURL   = "http://127.0.0.1:8080"
	DefaultQueueURL = "http://127.0.0.1:8081"
)

// Client talks to one deployment with one API key. It is safe for concurrent use.
type Client struct {
	key      string
	apiURL   string
	queueURL string
	http     *http.Client
	poll     time.Duration
	sleep    func(context.Context, time.Duration) error // sleepCtx; tests replace it
}

// Option configures a Client.
type Option func(*Client)

// WithAPIURL sets the base URL of the account API (uploads, models, JWKS).
func WithAPIURL(u string) Option { return func(c *Client) { c.apiURL = strings.TrimRight(u, "/") } }

// WithQueueURL sets the base URL of the queue host (submit, status, result, cancel).
func WithQueueURL(u string) Option { return func(c *Client) { c.queueURL = strings.TrimRight(u, "/") } }

// WithHTTPClient replaces http.DefaultClient (for timeouts, proxies, tests).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithPollInterval sets how soon Wait reads the status when the status stream is cut or
// declined (default one second); later reads are spaced further apart.
func WithPollInterval(d time.Duration) Option { return func(c *Client) { c.poll = d } }

// New returns a client using key (the service's secret key, sent as a Bearer token).
func New(key string, opts ...Option) *Client {
	c := &Client{key: key, apiURL: DefaultAPIURL, queueURL: DefaultQueueURL, http: http.DefaultClient, poll: time.Second, sleep: sleepCtx}
	for _, o := range opts {
		o(c)
	}
	return c
}

// SubmitOptions are the per-request options of a submit; the zero value asks for none.
type SubmitOptions struct {
	// IdempotencyKey names the request: the same key sent again answers the first job and does
	// not charge again. [A-Za-z0-9._-], 1 to 64 characters.
	IdempotencyKey string
	// Webhook is a URL the service calls when the job settles.
	Webhook string
	// Priority is "normal" or "low" on models with a queue.
	Priority string
	// Wait holds the connection up to this many seconds (1 to 300) for the job to settle.
	Wait int
}

// Job is the job status document the queue host answers on submit and status reads. Fields a
// submit alone carries are zero on a status read.
type Job struct {
	Status         string    `json:"status"` // IN_QUEUE, IN_PROGRESS, COMPLETED
	RequestID      string    `json:"request_id"`
	QueuePosition  *int      `json:"queue_position,omitempty"`
	Logs           []LogLine `json:"logs,omitempty"`
	Model          string    `json:"model,omitempty"`
	Product        string    `json:"product,omitempty"`
	CreditsCharged int64     `json:"credits_charged"`
	CreditsQuoted  int64     `json:"credits_quoted"`
	CreditsLeft    int64     `json:"credits_remaining"`
	Replayed       bool      `json:"replayed,omitempty"`
	TimedOut       bool      `json:"timed_out,omitempty"`
	StatusURL      string    `json:"status_url,omitempty"`
	ResponseURL    string    `json:"response_url,omitempty"`
	CancelURL      string    `json:"cancel_url,omitempty"`
	// Raw is the document as it came; a status stream's event carries only the log lines
	// new since the last one, where Logs (from Wait) holds every line so far.
	Raw json.RawMessage `json:"-"`
}

// LogLine is one entry of a job's logs (asked for with logs=1).
type LogLine struct {
	Message   string `json:"message"`
	Level     string `json:"level,omitempty"`
	Timestamp string `json:"timestamp,omitempty"`
}

// Done reports whether the job has settled (its result, or its error, is readable).
func (j *Job) Done() bool { return j.Status == "COMPLETED" }

// Submit sends input to model ("svc-serverless/<slug>", or just the slug) on the queue host.
func (c *Client) Submit(ctx context.Context, model string, input any, o SubmitOptions) (*Job, error) {
	body, err := json.Marshal(input)
	if err != nil {
		return nil, fmt.Errorf("encoding the input: %w", err)
	}
	q := url.Values{}
	if o.Webhook != "" {
		q.Set("webhook", o.Webhook)
	}
	if o.Wait > 0 {
		q.Set("wait", strconv.Itoa(o.Wait))
	}
	u := c.queueURL + "/" + address(model)
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	h := http.Header{"Content-Type": {"application/json"}}
	if o.IdempotencyKey != "" {
		h.Set("Idempotency-Key", o.IdempotencyKey)
	}
	if o.Priority != "" {
		h.Set("X-Svc-Priority", o.Priority)
	}
	var j Job
	return &j, c.do(ctx, http.MethodPost, u, h, bytes.NewReader(body), &j)
}

// Status reads the job's status document; logs asks for its log lines too. model is the job's
// own model (Job.Model of its submit answer): after a replayed submit it may not be the model
// submitted to, so StatusJob, WaitJob, ResultJob and CancelJob, which read it from the job,
// are the safer calls.
func (c *Client) Status(ctx context.Context, model, id string, logs bool) (*Job, error) {
	u := c.requestURL(model, id) + "/status"
	if logs {
		u += "?logs=1"
	}
	var j Job
	return &j, c.do(ctx, http.MethodGet, u, nil, nil, &j)
}

// Wait follows the job until it settles and returns its last status document. It reads the
// status stream (server-sent events, with logs) and calls onProgress, when not nil, with every
// new document, its Logs every line so far. When the stream cannot be opened (no seat is free,
// stream_declined; the key's read bucket is spent; a 5xx; a broken connection) or is cut before
// the job settles, it falls back to status reads: the first after the poll interval, each next
// one half as far again up to ten intervals apart, and after a refusal that can pass (a 429, a
// 5xx) no sooner than its Retry-After. Only the caller's context, a refusal that cannot pass
// (a 404, a 401) or several 5xx answers in a row end it early.
func (c *Client) Wait(ctx context.Context, model, id string, onProgress func(*Job)) (*Job, error) {
	j, err := c.stream(ctx, model, id, onProgress)
	switch {
	case err == nil && j.Done():
		return j, nil
	case err != nil && !passing(ctx, err):
		return nil, err
	}
	return c.pollStatus(ctx, model, id, onProgress, err)
}

// pollStatus reads the job's status until it settles. prev is the refusal of the stream, if any: a
// spent read bucket's Retry-After is waited out before the first read.
func (c *Client) pollStatus(ctx context.Context, model, id string, onProgress func(*Job), prev error) (*Job, error) {
	interval, most := c.poll, 10*c.poll
	var wait time.Duration // the first read at once: the stream's seat is not the read's
	if IsCode(prev, "rate_limited") {
		wait = retryAfter(prev)
	}
	failures := 0
	for {
		if wait > 0 {
			if err := c.sleep(ctx, wait); err != nil {
				return nil, err
			}
		}
		j, err := c.Status(ctx, model, id, true)
		if err != nil {
			if !passing(ctx, err) {
				return nil, err
			}
			// A spent read bucket refills: waiting it out is always right. Anything else
			// (a 5xx, a broken connection) is given a few more tries.
			if !IsCode(err, "rate_limited") {
				if failures++; failures > maxPollFailures {
					return nil, err
				}
			}
			interval = min(interval*3/2+1, most)
			wait = max(interval, retryAfter(err))
			continue
		}
		failures = 0
		if onProgress != nil {
			onProgress(j)
		}
		if j.Done() {
			return j, nil
		}
		interval = min(interval*3/2+1, most)
		wait = interval
	}
}

// maxPollFailures is how many status reads in a row Wait lets fail (5xx, broken connections)
// before it returns the last refusal.
const maxPollFailures = 8

// passing reports whether err may pass if the same read is made again later: a 429, a 5xx
// (stream_declined among them) or a broken connection, unless the service said
// x-should-retry: false. The caller's own context ending is not.
func passing(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	var e *Error
	if !errors.As(err, &e) {
		return true // the request never got an answer: a cut, a reset, a refused connection
	}
	if e.ShouldRetry != nil && !*e.ShouldRetry {
		return false
	}
	return e.StatusCode == http.StatusTooManyRequests || e.StatusCode >= 500
}

func retryAfter(err error) time.Duration {
	var e *Error
	if errors.As(err, &e) {
		return e.RetryAfter
	}
	return 0
}

// sleepCtx waits d, or until ctx ends.
func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// stream reads the status stream until it ends; it returns the last document seen (an empty,
// unsettled one when none came).
func (c *Client) stream(ctx context.Context, model, id string, onProgress func(*Job)) (*Job, error) {
	resp, err := c.send(ctx, http.MethodGet, c.requestURL(model, id)+"/status/stream?logs=1", http.Header{"Accept": {"text/event-stream"}}, nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	last := &Job{}
	var logs []LogLine // each event carries the lines new since the last: added up here
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 8<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data:")
		if !ok {
			continue
		}
		var j Job
		if json.Unmarshal([]byte(strings.TrimSpace(data)), &j) != nil {
			continue
		}
		j.Raw = json.RawMessage(strings.TrimSpace(data))
		logs = append(logs, j.Logs...)
		j.Logs = slices.Clone(logs)
		last = &j
		if onProgress != nil {
			onProgress(last)
		}
		if last.Done() {
			break
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return last, nil
}

// Result reads the settled job's output: the model's JSON answer. A job that failed or was
// cancelled answers with an *Error.
func (c *Client) Result(ctx context.Context, model, id string) (json.RawMessage, error) {
	var out json.RawMessage
	return out, c.do(ctx, http.MethodGet, c.requestURL(model, id), nil, nil, &out)
}

// Cancellation is the answer to a cancel: CANCELLED with what the job was charged and
// refunded (a queued job is refunded in full), or CANCELLATION_REQUESTED while a running job
// is being stopped (its charge is then read from its status or job record).
type Cancellation struct {
	Status          string `json:"status"` // CANCELLED or CANCELLATION_REQUESTED
	RequestID       string `json:"request_id"`
	CreditsCharged  *int64 `json:"credits_charged,omitempty"`
	CreditsRefunded *int64 `json:"credits_refunded,omitempty"`
	// Raw is the answer as it came.
	Raw json.RawMessage `json:"-"`
}

// Cancel asks the service to cancel the job and returns its answer.
func (c *Client) Cancel(ctx context.Context, model, id string) (*Cancellation, error) {
	var raw json.RawMessage
	if err := c.do(ctx, http.MethodPut, c.requestURL(model, id)+"/cancel", nil, nil, &raw); err != nil {
		return nil, err
	}
	cn := &Cancellation{Raw: raw}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, cn); err != nil {
			return nil, fmt.Errorf("unexpected answer to a cancel: %w", err)
		}
	}
	return cn, nil
}

// WaitJob is Wait on the job a submit answered, by the job's own model: on a replay (the
// idempotency key was first used on another model) that is the first job's model, not the one
// submitted to, whose URLs would answer 404.
func (c *Client) WaitJob(ctx context.Context, j *Job, onProgress func(*Job)) (*Job, error) {
	return c.Wait(ctx, j.address(), j.RequestID, onProgress)
}

// StatusJob is Status on the job a submit answered, by the job's own model (see WaitJob).
func (c *Client) StatusJob(ctx context.Context, j *Job, logs bool) (*Job, error) {
	return c.Status(ctx, j.address(), j.RequestID, logs)
}

// ResultJob is Result on the job a submit answered, by the job's own model (see WaitJob).
func (c *Client) ResultJob(ctx context.Context, j *Job) (json.RawMessage, error) {
	return c.Result(ctx, j.address(), j.RequestID)
}

// CancelJob is Cancel on the job a submit answered, by the job's own model (see WaitJob).
func (c *Client) CancelJob(ctx context.Context, j *Job) (*Cancellation, error) {
	return c.Cancel(ctx, j.address(), j.RequestID)
}

// address is the model the job runs on: its model field (every submit answer carries it), or
// else the model named in its response_url (…/svc-serverless/<slug>/requests/<id>). The URLs'
// host is not followed: the key goes only to the queue host the client was given.
func (j *Job) address() string {
	if j.Model != "" {
		return j.Model
	}
	for _, raw := range []string{j.ResponseURL, j.StatusURL, j.CancelURL} {
		u, err := url.Parse(raw)
		if err != nil {
			continue
		}
		if before, _, ok := strings.Cut(u.Path, "/requests/"); ok {
			if i := strings.Index(before, "svc-serverless/"); i >= 0 {
				return before[i:]
			}
		}
	}
	return ""
}

// Upload is a file the service holds for a job's url inputs.
type Upload struct {
	Path      string `json:"path"`
	ReadURL   string `json:"read_url"` // a signed GET link any url input accepts
	ExpiresAt string `json:"expires_at"`
}

// Upload stores r's bytes (contentType image/png, image/jpeg or image/webp) and returns its
// signed read link: first POST /v1/uploads for a slot, then one PUT of the bytes to the slot's
// signed link.
func (c *Client) Upload(ctx context.Context, contentType string, r io.Reader) (*Upload, error) {
	req, _ := json.Marshal(map[string]string{"content_type": contentType})
	var slot struct {
		Upload
		UploadURL string            `json:"upload_url"`
		Method    string            `json:"method"`
		Headers   map[string]string `json:"headers"`
	}
	if err := c.do(ctx, http.MethodPost, c.apiURL+"/v1/uploads", http.Header{"Content-Type": {"application/json"}}, bytes.NewReader(req), &slot); err != nil {
		return nil, err
	}
	method := slot.Method
	if method == "" {
		method = http.MethodPut
	}
	put, err := http.NewRequestWithContext(ctx, method, slot.UploadURL, r)
	if err != nil {
		return nil, fmt.Errorf("upload link: %w", err)
	}
	put.Header.Set("Content-Type", contentType)
	for k, v := range slot.Headers {
		put.Header.Set(k, v)
	}
	resp, err := c.http.Do(put) // the link is signed: no key travels with the bytes
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, parseError(resp, b)
	}
	return &slot.Upload, nil
}

// Price is a model's published price rule (the catalogue's model row). The service quotes
// the exact price of a request only at submit (credits_quoted); this is the rule it applies.
type Price struct {
	Kind    string `json:"kind"`
	Metered bool   `json:"metered"`
	Rule    struct {
		Unit     string `json:"unit"`
		Counting string `json:"counting"`
		Bands    []struct {
			When           *string      `json:"when"`
			CreditsPerUnit json.Number  `json:"credits_per_unit"`
			MinUnits       *json.Number `json:"min_units"`
			MaxUnits       *json.Number `json:"max_units"`
		} `json:"bands"`
	} `json:"rule"`
}

// Model is a model's row in the catalogue.
type Model struct {
	ID              string `json:"id"` // the address, svc-serverless/<slug>
	Slug            string `json:"slug"`
	ExpectedSeconds int    `json:"expected_seconds"`
	Price           Price  `json:"price"`
}

// Quote reads the model's published price rule from the account API. The service has no
// read that prices one request without submitting it, so Quote computes nothing: the price of
// a request is the rule applied to its size, and a submit answers it as credits_quoted.
func (c *Client) Quote(ctx context.Context, model string) (*Model, error) {
	var m Model
	return &m, c.do(ctx, http.MethodGet, c.apiURL+"/v1/models/"+address(model), nil, nil, &m)
}

func address(model string) string {
	if strings.Contains(model, "/") {
		return model
	}
	return "svc-serverless/" + model
}

func (c *Client) requestURL(model, id string) string {
	return c.queueURL + "/" + address(model) + "/requests/" + url.PathEscape(id)
}

// send makes the request with the key and returns a 2xx answer, or the error body as *Error.
func (c *Client) send(ctx context.Context, method, u string, h http.Header, body io.Reader) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return nil, fmt.Errorf("request to the service: %w", err)
	}
	for k, v := range h {
		req.Header[k] = v
	}
	req.Header.Set("Authorization", "Bearer "+c.key)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return nil, parseError(resp, b)
	}
	return resp, nil
}

// do sends the request and decodes the JSON answer into out (when not nil).
func (c *Client) do(ctx context.Context, method, u string, h http.Header, body io.Reader, out any) error {
	resp, err := c.send(ctx, method, u, h, body)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if out == nil {
		return nil
	}
	if raw, ok := out.(*json.RawMessage); ok {
		*raw = append(json.RawMessage(nil), b...)
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("unexpected answer from %s: %w", u, err)
	}
	if j, ok := out.(*Job); ok {
		j.Raw = append(json.RawMessage(nil), b...)
	}
	return nil
}

// IsCode reports whether err is a refusal with the given error code.
func IsCode(err error, code string) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == code
}
