package cog

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelexec/modelexec/internal/runners"
)

// Config holds the connection settings of one Cog model server.
type Config struct {
	BaseURL string // e.g. http://gpu-1:5000
	// MapURLs replaces each url input of a job's input by what its function returns (the
	// model's catalogue entry, catalog.Model.MapURLs). The runner fetches every url input
	// itself, through Env.Inputs (the SSRF-safe fetcher), and sends it as a data: URL: the
	// model server never dials an address a user chose. Required.
	MapURLs           func(raw []byte, fn func(loc []string, url string) (string, error)) ([]byte, error)
	WebhookURL        string        // absolute URL of our webhook route; "": poll only
	HTTPClient        *http.Client  // nil: a client with RequestTimeout
	RequestTimeout    time.Duration // each HTTP call; default 10s
	HealthTimeout     time.Duration // longest wait for READY; default 2m
	HealthInterval    time.Duration // between health checks; default 1s
	PollInterval      time.Duration // between polls of the prediction; default 2s
	PredictionTimeout time.Duration // longest run of one prediction; default 10m
	MaxResubmits      int           // PUTs again after the server lost the prediction; default 2
	MaxOutputBytes    int64         // largest data: URL output; default 64 MiB
	// CancelUnsupported marks a server whose Cog version has no POST /predictions/{id}/cancel:
	// a running job on it cannot be stopped, and a cancel answers cancel_unsupported.
	CancelUnsupported bool
}

func (c *Config) defaults() {
	if c.RequestTimeout <= 0 {
		c.RequestTimeout = 10 * time.Second
	}
	if c.HealthTimeout <= 0 {
		c.HealthTimeout = 2 * time.Minute
	}
	if c.HealthInterval <= 0 {
		c.HealthInterval = time.Second
	}
	if c.PollInterval <= 0 {
		c.PollInterval = 2 * time.Second
	}
	if c.PredictionTimeout <= 0 {
		c.PredictionTimeout = 10 * time.Minute
	}
	if c.MaxResubmits <= 0 {
		c.MaxResubmits = 2
	}
	if c.MaxOutputBytes <= 0 {
		c.MaxOutputBytes = 64 << 20
	}
	if c.HTTPClient == nil {
		c.HTTPClient = &http.Client{Timeout: c.RequestTimeout}
	}
}

// Errors of Complete.
var (
	ErrUnknownPrediction = errors.New("cog: no run waits for this prediction")
	ErrBadToken          = errors.New("cog: webhook token does not match")
)

// Runner runs jobs on one Cog server. It is safe for concurrent use.
type Runner struct {
	cfg  Config
	base string

	mu      sync.Mutex
	waiters map[string]*waiter
}

var _ runners.Runner = (*Runner)(nil)

type waiter struct {
	token string
	ch    chan prediction // capacity 1: the latest state
}

// CanCancel reports whether a running prediction can be stopped (runners.Canceller): not
// when the server's Cog version has no cancel route (Config.CancelUnsupported).
func (r *Runner) CanCancel(string) bool { return !r.cfg.CancelUnsupported }

var _ runners.Canceller = (*Runner)(nil)

// New returns a Runner for cfg.
func New(cfg Config) (*Runner, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("cog: base URL %q is not an absolute http(s) URL", cfg.BaseURL)
	}
	if cfg.WebhookURL != "" {
		if w, err := url.Parse(cfg.WebhookURL); err != nil || w.Host == "" {
			return nil, fmt.Errorf("cog: webhook URL %q is not absolute", cfg.WebhookURL)
		}
	}
	if cfg.MapURLs == nil {
		return nil, errors.New("cog: no MapURLs: the runner must fetch url inputs itself")
	}
	cfg.defaults()
	return &Runner{cfg: cfg, base: strings.TrimRight(cfg.BaseURL, "/"), waiters: map[string]*waiter{}}, nil
}

// prediction is Cog's prediction response (the fields we read).
type prediction struct {
	ID      string          `json:"id"`
	Status  string          `json:"status"` // starting, processing, succeeded, failed, canceled
	Output  json.RawMessage `json:"output"`
	Error   any             `json:"error"`
	Logs    string          `json:"logs"`
	Metrics map[string]any  `json:"metrics"`
}

func (p prediction) terminal() bool {
	return p.Status == "succeeded" || p.Status == "failed" || p.Status == "canceled"
}

// Complete hands a webhook delivery of prediction id to the run waiting for it. token is
// the one the run put in its webhook URL (query "token"); the route passes the query's id
// and token and the raw body. Intermediate events (start, logs, output) update the run.
func (r *Runner) Complete(id, token string, body []byte) error {
	w, err := r.waiter(id, token)
	if err != nil {
		return err
	}
	var p prediction
	if err := json.Unmarshal(body, &p); err != nil {
		return fmt.Errorf("cog: webhook body: %w", err)
	}
	if p.ID != "" && p.ID != id {
		return fmt.Errorf("cog: webhook body is for prediction %q", p.ID)
	}
	deliver(w.ch, p)
	return nil
}

// Verify reports whether id names a prediction this runner waits for and token is its own
// (ErrUnknownPrediction, ErrBadToken): the webhook's caller is checked before its body is read.
func (r *Runner) Verify(id, token string) error {
	_, err := r.waiter(id, token)
	return err
}

func (r *Runner) waiter(id, token string) (*waiter, error) {
	r.mu.Lock()
	w := r.waiters[id]
	r.mu.Unlock()
	if w == nil {
		return nil, ErrUnknownPrediction
	}
	if subtle.ConstantTimeCompare([]byte(token), []byte(w.token)) != 1 {
		return nil, ErrBadToken
	}
	return w, nil
}

// deliver replaces whatever state waits in ch by p, unless a terminal state is waiting.
func deliver(ch chan prediction, p prediction) {
	select {
	case old := <-ch:
		if old.terminal() && !p.terminal() {
			p = old
		}
	default:
	}
	select {
	case ch <- p:
	default:
	}
}

var idUnsafe = regexp.MustCompile(`[^A-Za-z0-9._-]`)

func predictionID(job runners.Job) string {
	id := job.RequestID
	if id == "" {
		id = job.ID
	}
	return idUnsafe.ReplaceAllString(id, "_")
}

func randomToken() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func busy(msg string) error {
	return &runners.Failure{Code: "upstream_busy", Message: msg, Retryable: true}
}

// Run sends job to the server and waits for its prediction.
func (r *Runner) Run(ctx context.Context, job runners.Job, env runners.Env) (runners.Result, error) {
	rep := env.Report
	if rep == nil {
		rep = nopReporter{}
	}
	id := predictionID(job)
	w := &waiter{token: randomToken(), ch: make(chan prediction, 1)}
	r.mu.Lock()
	if _, dup := r.waiters[id]; dup {
		r.mu.Unlock()
		return runners.Result{}, busy("prediction " + id + " is already running")
	}
	r.waiters[id] = w
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		delete(r.waiters, id)
		r.mu.Unlock()
	}()

	run := &run{r: r, id: id, job: job, env: env, rep: rep, w: w}
	input, err := run.fetchInputs(ctx)
	if err != nil {
		return runners.Result{}, err
	}
	run.input = input
	return run.do(ctx)
}

// fetchInputs is the job's input as the model server gets it: each url input fetched here,
// through Env.Inputs, and sent as a data: URL. A file that cannot be fetched refuses the
// job at its field, as the built-in runners do.
func (x *run) fetchInputs(ctx context.Context) ([]byte, error) {
	return x.r.cfg.MapURLs(x.job.Input, func(loc []string, u string) (string, error) {
		if x.env.Inputs == nil {
			return "", &runners.Failure{Code: "runner_failed", Message: "No fetcher is configured for input files."}
		}
		data, ct, err := x.env.Inputs.Fetch(ctx, u)
		if err != nil {
			var ref *runners.Refusal
			var fail *runners.Failure
			switch {
			case errors.As(err, &ref), errors.As(err, &fail):
				return "", err
			case ctx.Err() != nil:
				return "", ctx.Err()
			}
			msg := "the file could not be fetched"
			var d interface{ Describe() string }
			if errors.As(err, &d) {
				msg = "the file at " + d.Describe()
			}
			return "", &runners.Refusal{Code: "image_unreadable", Detail: []runners.Violation{{Loc: loc, Msg: msg, Type: "value_error"}}}
		}
		if ct == "" {
			ct = http.DetectContentType(data)
		}
		return "data:" + ct + ";base64," + base64.StdEncoding.EncodeToString(data), nil
	})
}

type run struct {
	r        *Runner
	id       string
	job      runners.Job
	env      runners.Env
	rep      runners.Reporter
	w        *waiter
	input    []byte // the job's input with its url inputs fetched (fetchInputs)
	logsSeen int
	progress float64
}

func (x *run) do(ctx context.Context) (runners.Result, error) {
	cfg := x.r.cfg
	deadline := time.Now().Add(cfg.PredictionTimeout)
	if err := x.r.waitReady(ctx); err != nil {
		return runners.Result{}, err
	}
	p, err := x.submit(ctx)
	if err != nil {
		return runners.Result{}, err
	}
	x.rep.Log("info", fmt.Sprintf("cog: prediction %s submitted to %s", x.id, x.r.base))
	resubmits := 0
	timeout := time.NewTimer(time.Until(deadline))
	defer timeout.Stop()
	poll := time.NewTicker(cfg.PollInterval)
	defer poll.Stop()
	for {
		x.observe(p)
		if p.terminal() {
			return x.finish(ctx, p)
		}
		select {
		case <-ctx.Done():
			x.cancel()
			x.rep.Log("warn", "cog: cancelled; cancel sent to the model server")
			return runners.Result{Done: x.doneOnCancel()}, ctx.Err()
		case <-timeout.C:
			x.cancel()
			return runners.Result{}, &runners.Failure{Code: "run_timed_out", Message: fmt.Sprintf("The model gave no result within %s.", cfg.PredictionTimeout)}
		case np := <-x.w.ch:
			p = np
		case <-poll.C:
			np, status, err := x.r.get(ctx, x.id)
			switch {
			case err != nil:
				// Connection refused or reset: the server may be restarting; keep polling.
				continue
			case status == http.StatusNotFound:
				// The server does not know the prediction (it restarted and lost it).
				if resubmits >= cfg.MaxResubmits {
					// upstream_lost (410, refunded): the model lost the job and resubmitting did
					// not bring it back.
					return runners.Result{}, &runners.Failure{Code: "upstream_lost",
						Message: fmt.Sprintf("The model server lost this job %d times; it was stopped and refunded.", resubmits+1)}
				}
				resubmits++
				x.rep.Log("warn", fmt.Sprintf("cog: server lost prediction %s; resubmitting (%d/%d)", x.id, resubmits, cfg.MaxResubmits))
				if err := x.r.waitReady(ctx); err != nil {
					return runners.Result{}, err
				}
				if p, err = x.submit(ctx); err != nil {
					return runners.Result{}, err
				}
			case status == http.StatusOK:
				p = np
			}
		}
	}
}

// doneOnCancel is the fraction of work a cancelled run reports: the last progress the
// model logged, or 1 when it never said (the full quote stands, DESIGN decision 29).
func (x *run) doneOnCancel() float64 {
	if x.progress > 0 {
		return x.progress
	}
	return 1
}

// observe reports new log lines and progress of p.
func (x *run) observe(p prediction) {
	if len(p.Logs) > x.logsSeen {
		for _, line := range strings.Split(strings.TrimRight(p.Logs[x.logsSeen:], "\n"), "\n") {
			if line = strings.TrimSpace(line); line != "" {
				x.rep.Log("info", line)
			}
		}
		x.logsSeen = len(p.Logs)
	}
	if m := progressRE.FindAllStringSubmatch(p.Logs, -1); len(m) > 0 {
		if pct, err := strconv.Atoi(m[len(m)-1][1]); err == nil && pct >= 0 && pct <= 100 {
			if f := float64(pct) / 100; f > x.progress {
				x.progress = f
				x.rep.Progress(f)
			}
		}
	}
}

var progressRE = regexp.MustCompile(`(\d{1,3})%\|`)

func (r *Runner) url(path string) string { return r.base + path }

// waitReady polls /health-check until READY.
func (r *Runner) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(r.cfg.HealthTimeout)
	last := "unreachable"
	for {
		status, err := r.health(ctx)
		switch {
		case err == nil && status == "READY":
			return nil
		case err == nil && status == "BUSY":
			return busy("the model server is busy")
		case err == nil && (status == "SETUP_FAILED" || status == "DEFUNCT"):
			return &runners.Failure{Code: "runner_unavailable", Message: "The model server is not available (" + strings.ToLower(status) + ")."}
		case err == nil:
			last = strings.ToLower(status)
		default:
			last = "unreachable" // the connection error names internal hosts: not for the caller
		}
		if time.Now().After(deadline) {
			return &runners.Failure{Code: "runner_unavailable", Message: "The model server did not become ready in time (" + last + ").", Retryable: true}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(r.cfg.HealthInterval):
		}
	}
}

func (r *Runner) health(ctx context.Context) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url("/health-check"), nil)
	if err != nil {
		return "", err
	}
	resp, err := r.cfg.HTTPClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var h struct {
		Status string `json:"status"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&h); err != nil {
		return "", fmt.Errorf("health-check %d: %w", resp.StatusCode, err)
	}
	return h.Status, nil
}

// submit PUTs the prediction; PUT is idempotent by id, so a repeat returns the same one.
func (x *run) submit(ctx context.Context) (prediction, error) {
	body := map[string]any{"id": x.id, "input": json.RawMessage(x.input)}
	if wh := x.r.cfg.WebhookURL; wh != "" {
		sep := "?"
		if strings.Contains(wh, "?") {
			sep = "&"
		}
		body["webhook"] = wh + sep + url.Values{"id": {x.id}, "token": {x.w.token}}.Encode()
		body["webhook_events_filter"] = []string{"start", "output", "logs", "completed"}
	}
	raw, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, x.r.url("/predictions/"+url.PathEscape(x.id)), bytes.NewReader(raw))
	if err != nil {
		return prediction{}, &runners.Failure{Code: "runner_failed", Message: "The job could not be sent to the model server."}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Prefer", "respond-async")
	resp, err := x.r.cfg.HTTPClient.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return prediction{}, ctx.Err()
		}
		return prediction{}, &runners.Failure{Code: "runner_unavailable", Message: "The model server could not be reached.", Retryable: true}
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(io.LimitReader(resp.Body, x.r.cfg.MaxOutputBytes))
	switch {
	case resp.StatusCode == http.StatusConflict:
		return prediction{}, busy("the model server is busy (409)")
	case resp.StatusCode == http.StatusPaymentRequired:
		// A model server (or the vendor behind it) out of budget or quota answers 402:
		// vendor_budget_exhausted, the model at capacity until its budget is topped up.
		return prediction{}, &runners.Failure{Code: "vendor_budget_exhausted",
			Message: "The model's provider is out of budget for now; the job was refunded.", Retryable: true}
	case resp.StatusCode == http.StatusUnprocessableEntity:
		return prediction{}, refusal(data)
	case resp.StatusCode >= 200 && resp.StatusCode < 300:
		var p prediction
		if len(bytes.TrimSpace(data)) > 0 {
			if err := json.Unmarshal(data, &p); err != nil {
				return prediction{}, &runners.Failure{Code: "runner_failed", Message: "The model server's answer to the job could not be read."}
			}
		}
		if p.Status == "" {
			p.Status = "starting"
		}
		return p, nil
	case resp.StatusCode >= 500:
		return prediction{}, &runners.Failure{Code: "runner_unavailable", Message: fmt.Sprintf("The model server failed to take the job (status %d).", resp.StatusCode), Retryable: true}
	default:
		return prediction{}, &runners.Failure{Code: "runner_failed", Message: fmt.Sprintf("The model server refused the job (status %d).", resp.StatusCode)}
	}
}

// refusal turns Cog's 422 body ({"detail": [{"loc", "msg", "type"}]}) into the model's
// refusal of the request as written.
func refusal(body []byte) error {
	var v struct {
		Detail json.RawMessage `json:"detail"`
	}
	_ = json.Unmarshal(body, &v)
	var detail []runners.Violation
	if err := json.Unmarshal(v.Detail, &detail); err != nil || len(detail) == 0 {
		var msg string
		if json.Unmarshal(v.Detail, &msg) != nil || msg == "" {
			msg = truncate(string(body), 300)
		}
		detail = []runners.Violation{{Loc: []string{"body"}, Msg: msg, Type: "value_error"}}
	}
	for i := range detail {
		if len(detail[i].Loc) == 0 {
			detail[i].Loc = []string{"body"}
		}
		if detail[i].Type == "" {
			detail[i].Type = "value_error"
		}
	}
	return &runners.Refusal{Code: "invalid_input", Detail: detail}
}

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func (r *Runner) get(ctx context.Context, id string) (prediction, int, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.url("/predictions/"+url.PathEscape(id)), nil)
	if err != nil {
		return prediction{}, 0, err
	}
	resp, err := r.cfg.HTTPClient.Do(req)
	if err != nil {
		return prediction{}, 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		return prediction{}, resp.StatusCode, nil
	}
	var p prediction
	if err := json.NewDecoder(io.LimitReader(resp.Body, r.cfg.MaxOutputBytes)).Decode(&p); err != nil {
		return prediction{}, 0, err
	}
	return p, http.StatusOK, nil
}

// cancel asks the server to stop the prediction; it runs past the run's own ctx.
func (x *run) cancel() {
	ctx, done := context.WithTimeout(context.Background(), x.r.cfg.RequestTimeout)
	defer done()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, x.r.url("/predictions/"+url.PathEscape(x.id)+"/cancel"), nil)
	if err != nil {
		return
	}
	if resp, err := x.r.cfg.HTTPClient.Do(req); err == nil {
		resp.Body.Close()
	}
}

func (x *run) finish(ctx context.Context, p prediction) (runners.Result, error) {
	switch p.Status {
	case "failed":
		msg := "prediction failed"
		if p.Error != nil {
			msg = fmt.Sprint(p.Error)
		}
		return runners.Result{}, &runners.Failure{Code: "runner_failed", Message: truncate(msg, 1000)}
	case "canceled":
		if ctx.Err() != nil {
			return runners.Result{Done: x.doneOnCancel()}, ctx.Err()
		}
		return runners.Result{}, &runners.Failure{Code: "runner_failed", Message: "The model server cancelled the prediction.", Retryable: true}
	}
	var out any
	if len(p.Output) > 0 {
		dec := json.NewDecoder(bytes.NewReader(p.Output))
		dec.UseNumber()
		if err := dec.Decode(&out); err != nil {
			return runners.Result{}, &runners.Failure{Code: "runner_failed", Message: "The model's output could not be read."}
		}
	}
	conv := &converter{run: x}
	out, err := conv.walk(ctx, out)
	if err != nil {
		return runners.Result{}, err
	}
	doc, ok := out.(map[string]any)
	if !ok {
		doc = map[string]any{"output": out}
	}
	metrics := map[string]float64{}
	for k, v := range p.Metrics {
		if f, ok := v.(float64); ok {
			metrics[k] = f
		}
	}
	x.rep.Progress(1)
	return runners.Result{Document: doc, Files: conv.files, Metrics: metrics, Done: 1}, nil
}

// converter replaces file outputs (data: URLs, http(s) URLs) by stored files.
type converter struct {
	run   *run
	files []runners.File
}

func (c *converter) walk(ctx context.Context, v any) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		var file map[string]any
		for k, e := range t {
			n, err := c.walk(ctx, e)
			if err != nil {
				return nil, err
			}
			if f, ok := n.(map[string]any); ok && k == "url" && isString(e) {
				file = f // merged below, not while t is ranged over
				continue
			}
			t[k] = n
		}
		if file != nil {
			// A file given as an object's url (fal's image shape, {"url": …, "width": …}): the
			// object is the file, and its url the signed link, a string where it was.
			delete(t, "url")
			for fk, fv := range file {
				if _, has := t[fk]; !has || fk == "storage_key" {
					t[fk] = fv
				}
			}
		}
		return t, nil
	case []any:
		for i, e := range t {
			n, err := c.walk(ctx, e)
			if err != nil {
				return nil, err
			}
			t[i] = n
		}
		return t, nil
	case string:
		switch {
		case strings.HasPrefix(t, "data:"):
			ct, data, err := decodeDataURL(t)
			if err != nil {
				return nil, &runners.Failure{Code: "runner_failed", Message: "The model's output file could not be decoded."}
			}
			if int64(len(data)) > c.run.r.cfg.MaxOutputBytes {
				return nil, &runners.Failure{Code: "runner_failed", Message: "The model's output file is larger than this service accepts."}
			}
			return c.store(ctx, ct, data)
		case strings.HasPrefix(t, "https://") || strings.HasPrefix(t, "http://"):
			if c.run.env.Inputs == nil {
				return nil, &runners.Failure{Code: "runner_failed", Message: "No fetcher is configured for the model's url outputs."}
			}
			data, ct, err := c.run.env.Inputs.Fetch(ctx, t)
			if err != nil {
				if ctx.Err() != nil {
					return nil, ctx.Err()
				}
				return nil, &runners.Failure{Code: "runner_failed", Message: "The model's output file could not be fetched.", Retryable: true}
			}
			return c.store(ctx, ct, data)
		}
	}
	return v, nil
}

func isString(v any) bool { _, ok := v.(string); return ok }

func (c *converter) store(ctx context.Context, ct string, data []byte) (any, error) {
	if c.run.env.Outputs == nil {
		return nil, &runners.Failure{Code: "runner_failed", Message: "No output store is configured for the model's files."}
	}
	if ct == "" {
		ct = http.DetectContentType(data)
	}
	name := fmt.Sprintf("output-%d%s", len(c.files), extension(ct))
	key, err := c.run.env.Outputs.Put(ctx, name, ct, data)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, runners.OutputNotStored(err)
	}
	c.files = append(c.files, runners.File{Key: key, ContentType: ct, Bytes: int64(len(data))})
	return map[string]any{"storage_key": key, "content_type": ct, "file_size": len(data)}, nil
}

var extensions = map[string]string{
	"image/png": ".png", "image/jpeg": ".jpg", "image/webp": ".webp", "image/gif": ".gif",
	"audio/mpeg": ".mp3", "audio/wav": ".wav", "audio/x-wav": ".wav", "audio/flac": ".flac",
	"audio/ogg": ".ogg", "video/mp4": ".mp4", "application/json": ".json", "text/plain": ".txt",
}

func extension(ct string) string {
	mt, _, _ := mime.ParseMediaType(ct)
	if e, ok := extensions[mt]; ok {
		return e
	}
	return ".bin"
}

// decodeDataURL reads data:[<type>][;base64],<data> (RFC 2397).
func decodeDataURL(s string) (string, []byte, error) {
	head, payload, ok := strings.Cut(strings.TrimPrefix(s, "data:"), ",")
	if !ok {
		return "", nil, errors.New("no comma")
	}
	isB64 := strings.HasSuffix(head, ";base64")
	ct := strings.TrimSuffix(head, ";base64")
	if ct == "" {
		ct = "text/plain;charset=US-ASCII"
	}
	if isB64 {
		data, err := base64.StdEncoding.DecodeString(payload)
		if err != nil {
			data, err = base64.RawStdEncoding.DecodeString(payload)
		}
		return ct, data, err
	}
	data, err := url.PathUnescape(payload)
	return ct, []byte(data), err
}

type nopReporter struct{}

func (nopReporter) Log(string, string) {}
func (nopReporter) Progress(float64)   {}
