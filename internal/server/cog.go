package server

import (
	"errors"
	"io"
	"net/http"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/runners/cog"
)

// Bounds of a Cog prediction webhook's body: what a prediction's state can weigh (outputs may
// travel inline as data URLs), and how long its sender may take to send it.
const (
	cogMaxBody     = 64 << 20
	cogBodyTimeout = 30 * time.Second
)

// withCogHooks mounts the Cog prediction webhook in front of the account API. The per-run
// token in the URL is the credential (Cog signs nothing): it is checked before the body is
// read, so no one without it makes this process read or hold a byte; the body is then bounded
// in size and in time. Refusals are in the error format.
func withCogHooks(api http.Handler, cogs map[string]*cog.Runner) http.Handler {
	if len(cogs) == 0 {
		return api
	}
	mux := http.NewServeMux()
	mux.Handle("/", api)
	mux.HandleFunc("POST /internal/cog/{slug}", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		rn, ok := cogs[r.PathValue("slug")]
		if !ok || rn.Verify(q.Get("id"), q.Get("token")) != nil {
			httpapi.WriteError(w, r, apierr.New(apierr.NotFound))
			return
		}
		if r.ContentLength > cogMaxBody {
			httpapi.WriteError(w, r, apierr.New(apierr.BodyTooLarge, "limit_bytes", cogMaxBody))
			return
		}
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(cogBodyTimeout))
		body, err := io.ReadAll(io.LimitReader(r.Body, cogMaxBody+1))
		switch {
		case err != nil:
			httpapi.WriteError(w, r, apierr.Newf(apierr.InvalidBody, "The webhook's body did not arrive whole in time.").Wrap(err))
			return
		case len(body) > cogMaxBody:
			httpapi.WriteError(w, r, apierr.New(apierr.BodyTooLarge, "limit_bytes", cogMaxBody))
			return
		}
		if err := rn.Complete(q.Get("id"), q.Get("token"), body); err != nil {
			if errors.Is(err, cog.ErrUnknownPrediction) || errors.Is(err, cog.ErrBadToken) {
				httpapi.WriteError(w, r, apierr.New(apierr.NotFound)) // the run ended meanwhile
				return
			}
			httpapi.WriteError(w, r, apierr.Newf(apierr.InvalidBody, "The webhook's body is not a Cog prediction.").Wrap(err))
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}
