package server

import (
	"io"
	"net/http"

	"github.com/modelexec/modelexec/internal/runners/cog"
)

// withCogHooks mounts the Cog prediction webhook in front of the account API. The per-run
// token in the URL is the credential (Cog signs nothing).
func withCogHooks(api http.Handler, cogs map[string]*cog.Runner) http.Handler {
	if len(cogs) == 0 {
		return api
	}
	mux := http.NewServeMux()
	mux.Handle("/", api)
	mux.HandleFunc("POST /internal/cog/{slug}", func(w http.ResponseWriter, r *http.Request) {
		rn, ok := cogs[r.PathValue("slug")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			http.Error(w, "read error", http.StatusBadRequest)
			return
		}
		q := r.URL.Query()
		if err := rn.Complete(q.Get("id"), q.Get("token"), body); err != nil {
			http.Error(w, "unknown prediction", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}
