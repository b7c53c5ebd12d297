package queueapi

import (
	"net/http"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/ratelimit"
)

// Routes lists the whole queue host. The trailing-slash forms are the ones fal's Python
// client sends.
func (h *Handler) Routes() http.Handler {
	mux := http.NewServeMux()
	g, cat := h.Gate, h.Jobs.Catalog()
	product := ModelProduct(cat)
	submit := httpapi.Route{Bucket: ratelimit.Generate, Product: product, Scope: ModelScope(cat)}
	read := httpapi.Route{Bucket: ratelimit.Read, Product: product, Scope: func(r *http.Request) (auth.Requirement, error) {
		if _, err := ModelOf(cat, r); err != nil {
			return auth.Requirement{}, err
		}
		return auth.Need(auth.JobsRead), nil
	}}
	write := httpapi.Route{Bucket: ratelimit.Write, Product: product, Scope: ModelScope(cat)}

	mux.Handle("POST /svc-serverless/{slug}", g.Protect(submit, h.submit()))
	mux.Handle("POST /svc-serverless/{slug}/{$}", g.Protect(submit, h.submit()))
	for _, suffix := range []string{"", "/{$}"} {
		mux.Handle("GET /svc-serverless/{slug}/requests/{id}/status"+suffix, g.Protect(read, h.status()))
		mux.Handle("GET /svc-serverless/{slug}/requests/{id}/status/stream"+suffix, g.Protect(read, h.stream()))
		mux.Handle("GET /svc-serverless/{slug}/requests/{id}"+suffix, g.Protect(read, h.result()))
		mux.Handle("PUT /svc-serverless/{slug}/requests/{id}/cancel"+suffix, g.Protect(write, h.cancel()))
	}
	mux.Handle("GET /healthz", h.Gate.Keyless(httpapi.Healthz()))
	mux.Handle("/", g.Fallback(mux))
	return httpapi.Wrap(httpapi.QueueSurface, h.Log, mux)
}
