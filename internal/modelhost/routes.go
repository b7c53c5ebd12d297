package modelhost

import (
	"net/http"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/ratelimit"
)

// Routes lists the whole queue host. The trailing-slash forms are the ones fal's Python
// client sends.
func (h *Queue) Routes() http.Handler {
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

	route := func(pattern string, rt httpapi.Route, h http.Handler) {
		mux.Handle(pattern, withModel(cat, g.Protect(rt, h)))
	}
	route("POST /svc-serverless/{slug}", submit, h.submit())
	route("POST /svc-serverless/{slug}/{$}", submit, h.submit())
	for _, suffix := range []string{"", "/{$}"} {
		route("GET /svc-serverless/{slug}/requests/{id}/status"+suffix, read, h.status())
		route("GET /svc-serverless/{slug}/requests/{id}/status/stream"+suffix, read, h.stream())
		route("GET /svc-serverless/{slug}/requests/{id}"+suffix, read, h.result())
		route("PUT /svc-serverless/{slug}/requests/{id}/cancel"+suffix, write, h.cancel())
	}
	mux.Handle("GET /healthz", h.Gate.Keyless(httpapi.Healthz()))
	return httpapi.Wrap(httpapi.QueueSurface, h.Log, g.Serve(mux))
}
