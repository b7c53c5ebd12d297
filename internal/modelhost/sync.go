package modelhost

import (
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/jobview"
	"github.com/modelexec/modelexec/internal/ratelimit"
)

// Sync serves the synchronous host.
type Sync struct {
	Gate        *httpapi.Gate
	Jobs        *jobs.Service
	URLs        jobview.URLs
	Signer      jobview.Signer
	WaitCeiling time.Duration // longest a run may hold its connection (60 s as shipped)
	// RetainOutputs is how long output files are kept after their job finished (0: forever):
	// a replay of an older run answers 410 output_expired, as its result read does.
	RetainOutputs time.Duration
	Now           func() time.Time
	Log           *slog.Logger
}

// Routes lists the whole synchronous host.
func (h *Sync) Routes() http.Handler {
	mux := http.NewServeMux()
	cat := h.Jobs.Catalog()
	run := httpapi.Route{Bucket: ratelimit.Generate, Product: ModelProduct(cat), Scope: ModelScope(cat)}
	mux.Handle("POST /svc-serverless/{slug}", withModel(cat, h.Gate.Protect(run, h.run())))
	mux.Handle("POST /svc-serverless/{slug}/{$}", withModel(cat, h.Gate.Protect(run, h.run())))
	mux.Handle("GET /healthz", h.Gate.Keyless(httpapi.Healthz()))
	return httpapi.Wrap(httpapi.SyncSurface, h.Log, h.Gate.Serve(mux))
}

func (h *Sync) run() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		p := httpapi.Principal(r)
		m, err := ModelOf(h.Jobs.Catalog(), r)
		if err != nil {
			return err
		}
		if err := AdmitModel(m); err != nil {
			return err
		}
		ceiling := int(h.WaitCeiling / time.Second)
		if m.ExpectedSeconds > ceiling {
			return apierr.New(apierr.ModelNotSynchronous, "expected_seconds", m.ExpectedSeconds, "wait_ceiling_seconds", ceiling)
		}
		if asksWebhook(r) {
			// This host answers on the held connection: it delivers no per-request webhook
			// (spec 01 "Submit": webhook_unsupported, 422 with detail here, DESIGN 12), whatever
			// the URL: it is refused as unsupported before it could be judged as an address.
			return apierr.Newf(apierr.WebhookUnsupported, "The synchronous host answers on this connection and calls no webhook; submit on the queue host to be called back.").
				WithDetail(apierr.Violation{Loc: []any{"query", "webhook"}, Msg: "this host delivers no per-request webhook; use the queue host", Type: string(apierr.WebhookUnsupported)})
		}
		o, err := ParseOptions(r, m)
		if err != nil {
			return err
		}
		body, err := ReadBody(r, &o)
		if err != nil {
			return err
		}
		// The output's first megabyte of egress, before the run is charged: a spent bucket
		// refuses here, where a resend is safe (the rest is taken when the output goes out).
		if err := h.Gate.AdmitEgress(w, r, p, httpapi.PrepaidEgress*ratelimit.MB); err != nil {
			return err
		}
		release, declined := h.Jobs.Seats().Acquire(p.Account.ID, m.Product)
		if declined != "" {
			return apierr.New(apierr.WaitCapacity, "wait_declined", declined).WithRetryAfter(1)
		}
		defer release()
		res, err := h.Jobs.Submit(r.Context(), jobs.SubmitRequest{Principal: p, Model: m, Body: body, IdempotencyKey: o.IdempotencyKey,
			Priority: o.Priority, MaxQueueLength: o.MaxQueueLength, RequestTimeout: o.RequestTimeout, CoveredOnly: o.CoveredOnly, Webhook: o.Webhook})
		if err != nil {
			return err
		}
		confirmed(p)
		Warn(w, m, res.Warnings)
		if res.Replayed { // the key answered an earlier request (DESIGN 25)
			w.Header().Set("Idempotent-Replayed", "true")
		}
		j, timedOut, err := h.Jobs.Wait(r.Context(), p.Account.ID, res.Job.RequestID, h.WaitCeiling)
		if err != nil && r.Context().Err() == nil {
			return err
		}
		if timedOut || !j.Settled() {
			urls := h.URLs.Status(j, 0, false)
			return apierr.New(apierr.RunTimedOut, "status_url", urls.StatusURL, "response_url", urls.ResponseURL,
				"idempotency_key", j.IdempotencyKey).WithCharged(charged(j)).WithHeader("X-Svc-Request-Timeout-Type", "user").
				WithHeader("X-Fal-Request-Timeout-Type", "user") // fal's client retries a 504 without it: a new job each time
		}
		w.Header().Set("X-Svc-Request-Id", j.RequestID)
		w.Header().Set("x-fal-request-id", j.RequestID) // fal clients read the request id from here
		doc, err := settledResult(w, r, h.Gate, h.Signer, j, h.RetainOutputs, h.Now(), true)
		if late := (*egressRefused)(nil); errors.As(err, &late) {
			return ranButNotSent(late, h.URLs.Status(j, 0, false))
		}
		if err != nil {
			return err
		}
		if _, own := doc["warnings"]; len(res.Warnings) > 0 && !own {
			// The rules the request broke, beside the output, as the queue host's answer
			// lists them (DESIGN 17): the Deprecation header alone does not say which. A
			// model's own field of that name is left as it wrote it.
			doc["warnings"] = res.Warnings
		}
		httpapi.WriteJSON(w, r, http.StatusOK, doc)
		return nil
	})
}

// ranButNotSent is the answer of a run whose output may not go out (its key revoked or its
// account limited while it ran; the egress bucket itself never refuses a paid run's output): the
// run happened and its charge stands, so the refusal says so (charged stands, retry poll_first,
// x-should-retry: false) and names where the output is read once the bucket allows, never
// inviting a resend that would run and pay again (a resend under the same key replays it).
func ranButNotSent(late *egressRefused, urls jobview.StatusDoc) error {
	e, ok := apierr.As(late.err)
	if !ok {
		return late.err
	}
	e.Retry = apierr.RetryPollFirst
	return e.WithCharged(string(apierr.ChargedStands)).With("status_url", urls.StatusURL).With("response_url", urls.ResponseURL)
}

// charged is run_timed_out's `charged`: true once the job is running (charged, or paid by the
// pass or promotion that covers it) or its charge stands while dispatch is unresolved; false
// while it waits to start (spec 01 "Run synchronously" #2).
func charged(j jobs.Job) bool {
	return j.Reserved > 0 || j.Status == jobs.InProgress
}

// asksWebhook reports whether the query names a per-request webhook in any of its spellings,
// whatever its value (even one that cannot be decoded).
func asksWebhook(r *http.Request) bool {
	for pair := range strings.SplitSeq(r.URL.RawQuery, "&") {
		key, _, _ := strings.Cut(pair, "=")
		if k, err := url.QueryUnescape(key); err == nil {
			key = k
		}
		switch key {
		case "webhook", "alt_webhook", "fal_webhook":
			return true
		}
	}
	return false
}
