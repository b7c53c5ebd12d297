package accountapi

import (
	"net/http"

	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/ratelimit"
)

// Routes lists the whole account API surface.
func (h *Handler) Routes() http.Handler {
	mux := http.NewServeMux()
	g := h.Gate
	read := httpapi.Route{Bucket: ratelimit.Read}
	public := httpapi.Route{Public: true, Bucket: ratelimit.Read}

	mux.Handle("GET /healthz", g.Keyless(httpapi.Healthz()))
	mux.Handle("GET /readyz", g.Keyless(h.readyz()))
	mux.Handle("GET /v1/openapi.json", g.Protect(public, h.openapi()))
	mux.Handle("GET /v1/me", g.Protect(read, h.me()))
	if h.Files != nil {
		mux.Handle("/files/", g.Signed(h.Files)) // signed links: the signature is the credential
	}
	h.catalogRoutes(mux)
	h.jobRoutes(mux)
	h.uploadRoutes(mux)
	h.falStorageRoutes(mux)
	h.webhookRoutes(mux)
	h.studioRoutes(mux)
	h.chatRoutes(mux)
	h.docsRoutes(mux)

	return httpapi.Wrap(httpapi.AccountSurface, h.Log, g.Serve(mux))
}
