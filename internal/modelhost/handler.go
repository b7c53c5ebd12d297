package modelhost

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/jobview"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/webhooks"
)

// Queue serves the queue host.
type Queue struct {
	Gate   *httpapi.Gate
	Jobs   *jobs.Service
	URLs   jobview.URLs
	Signer jobview.Signer
	Now    func() time.Time
	Log    *slog.Logger
	// StreamLimit bounds one status stream connection (five minutes).
	StreamLimit time.Duration
	// Webhooks is the policy a submit's webhook URL is checked under (zero: public hosts
	// only; the operator's --webhook-allow-private ranges otherwise).
	Webhooks webhooks.URLPolicy
	// RetainOutputs is how long output files are kept after their job finished (0: forever);
	// the result of an older job answers 410 expired.
	RetainOutputs time.Duration
}

// ModelOf resolves the {slug} path value to a catalogued model, or not_found.
func ModelOf(cat *catalog.Catalog, r *http.Request) (*catalog.Model, error) {
	if m, ok := r.Context().Value(modelKey{}).(*catalog.Model); ok {
		return m, nil
	}
	m, ok := cat.Model(r.PathValue("slug"))
	if !ok {
		return nil, apierr.Newf(apierr.NotFound, "No model at svc-serverless/%s.", r.PathValue("slug"))
	}
	return m, nil
}

type modelKey struct{}

// withModel looks the {slug} model up once per request and keeps it on the request: the gate's
// product and scope checks and the handler read it from there (ModelOf).
func withModel(cat *catalog.Catalog, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if m, ok := cat.Model(r.PathValue("slug")); ok {
			r = r.WithContext(context.WithValue(r.Context(), modelKey{}, m))
		}
		next.ServeHTTP(w, r)
	})
}

// ModelScope is the scope requirement of the model in the path.
func ModelScope(cat *catalog.Catalog) func(r *http.Request) (auth.Requirement, error) {
	return func(r *http.Request) (auth.Requirement, error) {
		m, err := ModelOf(cat, r)
		if err != nil {
			return auth.Requirement{}, err
		}
		req := auth.Requirement{Required: auth.Scope(m.Scope.Required)}
		for _, s := range m.Scope.Accepted {
			req.Accepted = append(req.Accepted, auth.Scope(s))
		}
		return req, nil
	}
}

// ModelProduct names the product of the model in the path (api_disabled per product).
func ModelProduct(cat *catalog.Catalog) func(r *http.Request) string {
	return func(r *http.Request) string {
		if m, err := ModelOf(cat, r); err == nil {
			return m.Product
		}
		return ""
	}
}

// AdmitModel refuses addresses that are described (501) or paused (503), before any charge.
func AdmitModel(m *catalog.Model) error {
	err := m.Admit()
	if err == nil {
		return nil
	}
	var se *catalog.StateError
	if errors.As(err, &se) {
		return apierr.Newf(apierr.Code(se.Code), "%s", se.Error())
	}
	return err
}

func (h *Queue) submit() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		p := httpapi.Principal(r)
		m, err := ModelOf(h.Jobs.Catalog(), r)
		if err != nil {
			return err
		}
		if err := AdmitModel(m); err != nil {
			return err
		}
		o, err := ParseOptionsUnder(r, m, h.Webhooks)
		if err != nil {
			return err
		}
		body, err := ReadBody(r, &o)
		if err != nil {
			return err
		}
		res, err := h.Jobs.Submit(r.Context(), jobs.SubmitRequest{Principal: p, Model: m, Body: body, IdempotencyKey: o.IdempotencyKey,
			Priority: o.Priority, MaxQueueLength: o.MaxQueueLength, RequestTimeout: o.RequestTimeout, CoveredOnly: o.CoveredOnly, Webhook: o.Webhook})
		if err != nil {
			return err
		}
		confirmed(p)
		Warn(w, m, res.Warnings)
		f := jobview.SubmitFields{Replayed: res.Replayed, Balance: res.Balance, Model: m}
		j := res.Job
		if res.Replayed {
			f.Balance = h.balance(r, p)
			// The key answered an earlier request (DESIGN 25): say so, as Stripe does. Its
			// document is that job's, whichever model's path the key came back on.
			w.Header().Set("Idempotent-Replayed", "true")
			if jm, ok := h.Jobs.Catalog().Model(j.Model); ok {
				f.Model, m = jm, jm
			}
		}
		if o.Wait > 0 && !res.Unresolved {
			f.Wait = true
			release, declined := h.Jobs.Seats().Acquire(p.Account.ID, m.Product)
			if declined != "" {
				f.WaitDeclined = declined
			} else {
				j, f.TimedOut, err = h.Jobs.Wait(r.Context(), p.Account.ID, j.RequestID, time.Duration(o.Wait)*time.Second)
				release()
				if err != nil && r.Context().Err() == nil {
					return err
				}
				if j.Settled() && j.BalanceAfter != nil {
					f.Balance = *j.BalanceAfter // the settlement of this process said it: no read
				} else {
					f.Balance = h.balance(r, p)
				}
			}
		}
		pos := 0
		if j.Status == jobs.InQueue {
			pos = h.Jobs.QueuePosition(r.Context(), j)
		}
		doc := h.URLs.Submit(j, pos, o.Logs, f)
		doc.Warnings = res.Warnings
		if res.Unresolved {
			e := apierr.Lookup(apierr.DispatchUnresolved)
			doc.Error, doc.Message, doc.Docs = string(apierr.DispatchUnresolved), e.Message, apierr.DocsURL(apierr.DispatchUnresolved)
			doc.Retry, doc.Charged = string(e.Retry), string(e.Charged)
			w.Header().Set("x-should-retry", "false")
			httpapi.WriteJSON(w, r, http.StatusAccepted, doc)
			return nil
		}
		httpapi.WriteJSON(w, r, http.StatusOK, doc)
		return nil
	})
}

// Warn sets the Deprecation signal for cross-field rules broken before enforcement.
// confirmed marks the request's principal as confirmed once its submit succeeded: the charge's
// transaction judged its key and account (a replay read them), so what the request answers
// afterwards (a run's outcome, links the egress bucket refused, whose charge stands) is answered
// as it is, not replaced by a revocation made since (httpapi.Gate.Protect confirms only an
// unconfirmed principal). The principal is this request's own, made by the gate.
func confirmed(p *auth.Principal) { p.Unconfirmed = false }

func Warn(w http.ResponseWriter, m *catalog.Model, ws []catalog.Warning) {
	if len(ws) == 0 {
		return
	}
	w.Header().Set("Deprecation", fmt.Sprintf("@%d", m.EnforcementDate().Unix()))
	w.Header().Set("Sunset", m.EnforcementDate().UTC().Format(http.TimeFormat))
}

func (h *Queue) balance(r *http.Request, p *auth.Principal) int64 {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 2*time.Second)
	defer cancel()
	if a, err := h.Gate.Auth.Account(ctx, p.Account.ID); err == nil {
		return a.Balance
	}
	return p.Account.Balance
}

func wantLogs(r *http.Request) (bool, error) {
	query, err := queryOf(r, "logs")
	if err != nil {
		return false, err
	}
	v, ok := query(r, "logs")
	if !ok {
		return false, nil
	}
	return logsOption(v)
}

// job reads the job of the path for the caller; a job of another model's path is not found.
func (h *Queue) job(r *http.Request) (jobs.Job, error) {
	p := httpapi.Principal(r)
	j, err := h.Jobs.Get(r.Context(), p.Account.ID, r.PathValue("id"))
	if err != nil {
		return j, err
	}
	if j.Model != r.PathValue("slug") {
		return jobs.Job{}, apierr.New(apierr.NotFound)
	}
	return j, nil
}

func (h *Queue) status() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		logs, err := wantLogs(r)
		if err != nil {
			return err
		}
		j, err := h.job(r)
		if err != nil {
			return err
		}
		pos := 0
		if j.Status == jobs.InQueue {
			pos = h.Jobs.QueuePosition(r.Context(), j)
		}
		// 200 in every state: the outcome is in `status`. A 202 is the spec's dispatch_unresolved,
		// which carries message and docs; fal's clients take any 2xx here.
		httpapi.WriteJSON(w, r, http.StatusOK, h.URLs.Status(j, pos, logs))
		return nil
	})
}

func (h *Queue) result() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		j, err := h.job(r)
		if err != nil {
			return err
		}
		w.Header().Set("x-fal-request-id", j.RequestID) // fal clients read the request id from here
		if !j.Settled() {
			return apierr.New(apierr.NotReady, "status", string(j.Status))
		}
		doc, err := settledResult(w, r, h.Gate, h.Signer, j, h.RetainOutputs, h.Now(), false)
		if err != nil {
			return err
		}
		httpapi.WriteJSON(w, r, http.StatusOK, doc)
		return nil
	})
}

// settledResult is the answer to a settled job's result, on the queue host's result read and
// the synchronous host's run alike (spec 01: the run answers "the same document the result URL
// would answer"): the job's failure; 410 output_expired once its outputs passed retention; else
// its output document with freshly signed links, admitted as a download first (the egress
// bucket takes the files' size, a limited account is refused), as the asset list is. A
// synchronous run's output (paid) is admitted by Gate.AdmitPaidEgress: the run took
// PrepaidEgress before it ran and its links go out whatever the bucket holds now.
func settledResult(w http.ResponseWriter, r *http.Request, gate *httpapi.Gate, signer jobview.Signer, j jobs.Job, retain time.Duration, now time.Time, paid bool) (map[string]any, error) {
	if j.Outcome != jobs.Succeeded {
		return nil, jobview.Failure(j)
	}
	if e := jobview.OutputsExpired(j, retain, now); e != nil {
		return nil, e
	}
	if j.Result != nil && len(j.Result.Files) > 0 {
		admit := gate.AdmitEgress
		if paid {
			admit = gate.AdmitPaidEgress
		}
		if err := admit(w, r, httpapi.Principal(r), runners.FilesBytes(j.Result.Files)); err != nil {
			return nil, &egressRefused{err}
		}
	}
	return jobview.Result(r.Context(), j, signer)
}

// egressRefused is a settled job's links refused as a download (the egress bucket, a revoked
// key, a limited account): the job ran and its charge stands whatever this answer says (the
// synchronous host says so, stands).
type egressRefused struct{ err error }

func (e *egressRefused) Error() string { return e.err.Error() }
func (e *egressRefused) Unwrap() error { return e.err }

func (h *Queue) cancel() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		if _, err := h.job(r); err != nil {
			return err
		}
		p := httpapi.Principal(r)
		j, pending, err := h.Jobs.Cancel(r.Context(), p.Account.ID, r.PathValue("id"))
		if err != nil {
			return err
		}
		if pending {
			httpapi.WriteJSON(w, r, http.StatusAccepted, map[string]any{"status": "CANCELLATION_REQUESTED", "request_id": j.RequestID})
			return nil
		}
		httpapi.WriteJSON(w, r, http.StatusOK, map[string]any{"status": "CANCELLED", "request_id": j.RequestID,
			"credits_charged": j.Charged, "credits_refunded": j.Reserved - j.Charged})
		return nil
	})
}
