package compatapi

import (
	"crypto/sha256"
	"encoding/hex"
	"github.com/modelexec/modelexec/internal/apierr"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/chat"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/ratelimit"
)

// Prefix is where the surface is mounted on the account API host.
const Prefix = "/compat/v1"

// Handler serves /compat/v1. Every dependency is a field set by the caller.
type Handler struct {
	Gate *httpapi.Gate
	Chat *chat.Service
	Now  func() time.Time
	Log  *slog.Logger
}

// Routes lists the whole compatibility surface.
func (h *Handler) Routes() http.Handler {
	mux := http.NewServeMux()
	read := httpapi.Route{Bucket: ratelimit.Read}
	// Every call of these routes is a charged job: its charge confirms a cached caller.
	text := httpapi.Route{Bucket: ratelimit.Interactive, Scope: need(auth.TextWrite, auth.ChatWrite), Spends: true}
	embed := httpapi.Route{Bucket: ratelimit.Interactive, Scope: need(auth.EmbeddingsWrite), Spends: true}

	mux.Handle("GET "+Prefix+"/models", h.protect(read, h.ready("", h.listModels())))
	mux.Handle("GET "+Prefix+"/models/{model}", h.protect(read, h.ready("", h.getModel())))
	mux.Handle("POST "+Prefix+"/chat/completions", h.protect(text, h.ready(catalog.KindChat, h.chatCompletions())))
	mux.Handle("POST "+Prefix+"/completions", h.protect(text, h.ready(catalog.KindChat, h.completions())))
	mux.Handle("POST "+Prefix+"/responses", h.protect(text, h.ready(catalog.KindChat, h.responses())))
	mux.Handle("POST "+Prefix+"/embeddings", h.protect(embed, h.ready(catalog.KindEmbeddings, h.embeddings())))
	mux.Handle("/", h.fallback(mux))
	return mux
}

func need(s auth.Scope, also ...auth.Scope) func(*http.Request) (auth.Requirement, error) {
	return func(*http.Request) (auth.Requirement, error) { return auth.Need(s, also...), nil }
}

// ready refuses a route whose kind of model ("": any) answers nowhere on this deployment:
// 503 chat_not_configured before the body is read, nothing charged (DESIGN 36).
func (h *Handler) ready(kind string, fn handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request, p *auth.Principal) error {
		if err := h.Chat.Ready(kind); err != nil {
			return err
		}
		return fn(w, r, p)
	}
}

// handlerFunc is a compat handler: it returns an error, rendered in the protocol's envelope.
type handlerFunc func(w http.ResponseWriter, r *http.Request, p *auth.Principal) error

// protect runs the order of checks, then the handler; both render errors here. An error the
// handler answers for a caller the gate took from its cache is confirmed first: a revoked key
// or a banned account is answered as such, before any later check's refusal.
func (h *Handler) protect(route httpapi.Route, fn handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := h.Gate.Check(w, r, route)
		if err == nil {
			if err = fn(w, r, p); err != nil {
				err = h.Gate.Confirm(w, r, p, route, err)
			}
		}
		if err != nil {
			writeError(w, r, h.Log, err)
		}
	})
}

// fallback answers what no route claims after checks 1 and 2, like every route (spec 02 order
// of checks: api_disabled, then the Origin refusal, whatever the path and method): 405 with
// an Allow header naming every method served on a path served under others, 404 otherwise, in
// the protocol's envelope, with the rate-limit headers every response carries.
func (h *Handler) fallback(mux *http.ServeMux) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, err := h.Gate.Check(w, r, httpapi.Route{Public: true}); err != nil {
			writeError(w, r, h.Log, err)
			return
		}
		if allow := httpapi.AllowedMethods(mux, r, "/"); len(allow) > 0 {
			list := strings.Join(allow, ", ")
			w.Header().Set("Allow", list)
			writeEnvelope(w, r, http.StatusMethodNotAllowed, apierr.Excerpt(r.Method)+" is not allowed on "+apierr.Excerpt(r.URL.Path)+"; use "+list+".", "invalid_request_error", "", "method_not_allowed", false)
			return
		}
		writeEnvelope(w, r, http.StatusNotFound, "Unknown path "+apierr.Excerpt(r.URL.Path)+" on the compatibility surface.", "not_found_error", "", "not_found", false)
	})
}

// idempotencyKey reads the Idempotency-Key header, all of its lines (to HTTP, lines are one
// value joined by commas: none is dropped). A key outside [A-Za-z0-9._-]{1,64} is folded
// into the set (spec 02): the same key always folds the same way.
func idempotencyKey(r *http.Request) string {
	k := strings.Join(r.Header.Values("Idempotency-Key"), ", ")
	if k == "" || jobs.ValidIdempotencyKey(k) {
		return k
	}
	sum := sha256.Sum256([]byte(k))
	return "f." + hex.EncodeToString(sum[:24])
}

// created is the protocol's `created` of a job.
func created(j jobs.Job) int64 { return j.CreatedAt.Unix() }

// chatModels are the models of a kind that answer on this deployment.
func (h *Handler) models(kind string) []*catalog.Model { return h.Chat.Catalog.LanguageModels(kind) }
