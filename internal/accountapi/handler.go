package accountapi

import (
	"context"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/chat"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/jobview"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/studio"
	"github.com/modelexec/modelexec/internal/webhooks"
)

// Pinger reports whether a dependency answers (readiness).
type Pinger interface {
	Ping(ctx context.Context) error
}

// Handler serves the account API. Every dependency is a field set by the caller (cmd/modelexec).
type Handler struct {
	Gate    *httpapi.Gate
	Auth    *auth.Service
	Jobs    *jobs.Service
	Catalog *catalog.Catalog
	URLs    jobview.URLs
	Signer  blobs.URLSigner
	Files   http.Handler    // serves and accepts the signed /files/ links
	Uploads *blobs.Uploader // POST /v1/uploads and fal's storage upload; nil: not_configured
	Ready   []Pinger
	Now     func() time.Time
	Log     *slog.Logger
	OpenAPI []byte // the whole contract, built once at start
	// RetainOutputs is how long output files are kept after their job finished (0: forever);
	// the assets of an older job answer 410 expired.
	RetainOutputs time.Duration

	Webhooks *webhooks.Service // the webhooks routes; nil: not registered
	KeyRing  *webhooks.KeyRing // GET /.well-known/jwks.json
	Usage    *ledger.Usage     // GET /v1/usage and its export; nil: not_configured
	Studio   *studio.Service   // studio document routes; nil: not registered
	// Tickets signs the live route's browser tickets and TicketClaims makes each single-use;
	// nil: no tickets are minted or taken.
	Tickets       *studio.Tickets
	TicketClaims  studio.TicketClaimer
	StudioOrigins []string      // origins whose pages may open the live route with a ticket
	StudioRecheck time.Duration // how often live connections re-read their key (0: a second)

	Chat   *chat.Service // /v1/chat, /v1/chat/conversations, /v1/embeddings; nil: not registered
	Compat http.Handler  // /compat/v1 on this host; nil: not registered
}

func (h *Handler) me() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		// The gate's principal may come from the key cache (valid for key checks only): the
		// balance and the key's spend are read fresh, so a charge shows at once.
		p, err := h.Auth.Fresh(r.Context(), *httpapi.Principal(r))
		if err != nil {
			return err
		}
		now := h.Now()
		httpapi.WriteJSON(w, r, http.StatusOK, meBody(&p, now))
		return nil
	})
}

// meBody is the account record of spec 01 "Account record".
func meBody(p *auth.Principal, now time.Time) map[string]any {
	return map[string]any{
		"object": "account",
		"id":     p.Account.ID,
		"plan":   string(p.Account.Plan),
		"credits": map[string]any{
			"balance":           p.Account.Balance,
			"monthly_allowance": p.Account.MonthlyAllowance,
			"period":            auth.Period(now),
		},
		"key": map[string]any{
			"id":                   p.Key.ID,
			"scopes":               auth.Strings(p.Key.Scopes),
			"credit_ceiling":       p.Key.Ceiling.Effective(p.Account.MonthlyAllowance),
			"credits_spent_period": p.Key.SpentIn(now),
		},
	}
}

func (h *Handler) openapi() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "public, max-age=300")
		_, _ = w.Write(h.OpenAPI)
	})
}

// ReadyDraining is the name /readyz gives a process that is stopping: expected, not a fault.
const ReadyDraining = "draining"

// readyz answers 200 when every dependency answers, and 503 with a Retry-After naming the first
// that does not (a Pinger names itself with ReadyName; "dependency" otherwise), so a load
// balancer stops sending work to a process whose database or storage cannot take it, or that
// is stopping.
func (h *Handler) readyz() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		for _, p := range h.Ready {
			if err := p.Ping(ctx); err != nil {
				name := "dependency"
				if n, ok := p.(interface{ ReadyName() string }); ok {
					name = n.ReadyName()
				}
				if name == ReadyDraining {
					h.Log.Debug("not ready", "check", name) // the drain itself is logged once
				} else {
					h.Log.Warn("not ready", "check", name, "err", err)
				}
				w.Header().Set("Retry-After", strconv.Itoa(readyRetrySeconds))
				httpapi.WriteJSON(w, r, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "unavailable": name})
				return
			}
		}
		httpapi.WriteJSON(w, r, http.StatusOK, map[string]string{"status": "ready"})
	})
}

// readyRetrySeconds is the Retry-After of a 503 from /readyz: how soon asking again is useful.
const readyRetrySeconds = 10
