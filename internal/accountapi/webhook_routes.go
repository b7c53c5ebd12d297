package accountapi

import (
	"errors"
	"net/http"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/ratelimit"
	"github.com/modelexec/modelexec/internal/webhooks"
)

// webhookRoutes registers the webhook routes of the account API (spec 01 webhooks routes)
// and the public key set. Nothing is registered when the Handler has no webhooks service.
func (h *Handler) webhookRoutes(mux *http.ServeMux) {
	g := h.Gate
	if h.KeyRing != nil {
		mux.Handle("GET "+webhooks.JWKSPath, g.Protect(httpapi.Route{Public: true, Bucket: ratelimit.Read}, h.jwks()))
	}
	if h.Webhooks == nil {
		return
	}
	write := httpapi.Route{Bucket: ratelimit.Write, Scope: webhookScope(auth.WebhooksWrite)}
	read := httpapi.Route{Bucket: ratelimit.Read, Scope: webhookScope(auth.JobsRead)}
	mux.Handle("POST /v1/webhooks", g.Protect(write, h.createWebhook()))
	mux.Handle("GET /v1/webhooks", g.Protect(read, h.listWebhooks()))
	mux.Handle("POST /v1/webhooks/{id}", g.Protect(write, h.rechallengeWebhook()))
	mux.Handle("DELETE /v1/webhooks/{id}", g.Protect(write, h.deleteWebhook()))
}

// webhookScope is a route's fixed scope requirement.
func webhookScope(s auth.Scope) func(*http.Request) (auth.Requirement, error) {
	req := auth.Need(s)
	return func(*http.Request) (auth.Requirement, error) { return req, nil }
}

// webhookBody is the body of POST /v1/webhooks.
type webhookBody struct {
	URL      string   `json:"url"`
	Products []string `json:"products"`
}

// urlRefusal is invalid_url carrying reason: 400 on a URL the caller sent, 409 (the
// catalogue's status) on the stored URL of a re-challenge.
func urlRefusal(e *webhooks.URLError, status int) error {
	ae := apierr.Newf(apierr.InvalidURL, "%s", e.Message()).With("reason", string(e.Reason))
	ae.Status = status
	return ae
}

func (h *Handler) createWebhook() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		var body webhookBody
		if err := httpapi.DecodeInto(r, &body); err != nil {
			return err
		}
		p := httpapi.Principal(r)
		reg, err := h.Webhooks.Register(r.Context(), webhooks.RegisterParams{Account: p.Account.ID, URL: body.URL, Products: body.Products})
		var ue *webhooks.URLError
		var pe *webhooks.ProductsError
		switch {
		case err == nil:
		case errors.As(err, &ue):
			return urlRefusal(ue, http.StatusBadRequest)
		case errors.As(err, &pe):
			return apierr.New(apierr.InvalidProducts, "allowed", pe.Allowed)
		case errors.Is(err, webhooks.ErrTooManyWebhooks):
			return apierr.New(apierr.TooManyWebhooks, "limit", h.Webhooks.MaxEndpoints())
		case webhooks.NoSigningCredential(err):
			return noSigningCredential(err)
		default:
			return apierr.New(apierr.WebhookNotCreated).Wrap(err)
		}
		httpapi.WriteJSON(w, r, http.StatusCreated, h.Webhooks.RegistrationRecord(reg))
		return nil
	})
}

// webhookList is the answer of GET /v1/webhooks.
type webhookList struct {
	Object string            `json:"object"`
	Data   []webhooks.Record `json:"data"`
}

func (h *Handler) listWebhooks() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		eps, err := h.Webhooks.List(r.Context(), httpapi.Principal(r).Account.ID)
		if err != nil {
			return apierr.New(apierr.WebhookReadFailed).Wrap(err)
		}
		out := webhookList{Object: "list", Data: make([]webhooks.Record, 0, len(eps))}
		for _, ep := range eps {
			out.Data = append(out.Data, h.Webhooks.Record(ep))
		}
		httpapi.WriteJSON(w, r, http.StatusOK, out)
		return nil
	})
}

func (h *Handler) rechallengeWebhook() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		reg, err := h.Webhooks.Rechallenge(r.Context(), httpapi.Principal(r).Account.ID, r.PathValue("id"))
		var ue *webhooks.URLError
		switch {
		case err == nil:
		case errors.Is(err, webhooks.ErrNotFound):
			return apierr.Newf(apierr.NotFound, "No webhook endpoint %s.", r.PathValue("id"))
		case errors.As(err, &ue):
			return urlRefusal(ue, http.StatusConflict)
		case errors.Is(err, webhooks.ErrTooManyWebhooks): // a dead endpoint passing would make one too many
			return apierr.New(apierr.TooManyWebhooks, "limit", h.Webhooks.MaxEndpoints())
		default:
			return apierr.New(apierr.WebhookReadFailed).Wrap(err)
		}
		httpapi.WriteJSON(w, r, http.StatusOK, h.Webhooks.RegistrationRecord(reg))
		return nil
	})
}

// webhookDeleted is the answer of DELETE /v1/webhooks/{id}.
type webhookDeleted struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Deleted bool   `json:"deleted"`
	Existed bool   `json:"existed"`
}

func (h *Handler) deleteWebhook() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		id := r.PathValue("id")
		existed, err := h.Webhooks.Delete(r.Context(), httpapi.Principal(r).Account.ID, id)
		if err != nil {
			return apierr.New(apierr.WebhookDeleteFailed).Wrap(err)
		}
		httpapi.WriteJSON(w, r, http.StatusOK, webhookDeleted{ID: id, Object: "webhook", Deleted: true, Existed: existed})
		return nil
	})
}

// jwks serves the published signing keys (no key needed). A deployment whose delivery sweep
// has not run yet makes its first key here, so the set is never empty once asked for. A
// deployment holding no key it can open answers 503 no_signing_credential.
func (h *Handler) jwks() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		ctx, now := r.Context(), h.Now()
		keys, err := h.KeyRing.Published(ctx, now)
		if err == nil && len(keys) == 0 {
			err = h.KeyRing.Maintain(ctx, now)
		}
		var b []byte
		if err == nil {
			b, err = h.KeyRing.JWKS(ctx, now)
		}
		if webhooks.NoSigningCredential(err) {
			return noSigningCredential(err)
		}
		if err != nil {
			return err
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(b)
		return nil
	})
}

// noSigningCredential is 503 no_signing_credential: the deployment holds no signing key it can
// open (its secret changed since the keys were sealed), so nothing can be signed or published.
func noSigningCredential(err error) error {
	return apierr.Newf(apierr.NoSigningCredential, "Webhook signing is unavailable: this deployment holds no signing key it can use. The operator must restore the deployment secret the keys were sealed under.").Wrap(err)
}
