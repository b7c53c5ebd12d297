package server

import (
	"log/slog"
	"net/http"
	"strings"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/console"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/jobview"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// wireConsole builds the web console for the account API host. Without a deployment secret
// there is none: sessions and CSRF tokens would be keyed with nothing.
func (s *Server) wireConsole(d Deps, cat *catalog.Catalog, signer jobview.Signer, gate *httpapi.Gate) *console.Handler {
	if s.cfg.Secret == "" {
		s.log.Warn("no deployment secret: the web console is not served; set --secret or MODELEXEC_SECRET")
		return nil
	}
	sw := gate.Switches
	sessions := auth.NewSessions(auth.SessionsConfig{Store: d.DB, APIPrefix: d.Auth.Format().Prefix,
		Hasher: auth.NewHasher(s.cfg.Secret), Now: d.Now, Cost: s.cfg.PasswordCost})
	return &console.Handler{Sessions: sessions, LastUsed: s.lastUsed, Auth: d.Auth, Ledger: s.ledger, Catalog: cat,
		Secret: []byte("console " + s.cfg.Secret), Secure: strings.HasPrefix(s.urls.API, "https://"), APIBase: s.urls.API,
		Webhooks: s.account.Webhooks, Directory: d.DB, KeysUsed: d.DB, Usage: s.usage, Now: d.Now, Log: s.log, Jobs: s.jobs, Signer: signer,
		Deliveries: sqlstore.Webhooks{DB: d.DB}, JobCount: sqlstore.Jobs{DB: d.DB}, SignIns: d.DB, Proxies: gate.Proxies,
		Paused:  func(product string) bool { return sw.APIDisabled.Load() || sw.ProductDisabled(product) },
		Tickets: s.account.Tickets, Egress: gate.AdmitEgress}
}

// withConsole serves /console and everything under it from the console, the rest from api.
func withConsole(api http.Handler, c *console.Handler, log *slog.Logger) http.Handler {
	if c == nil {
		return api
	}
	pages := httpapi.Wrap(httpapi.ConsoleSurface, log, c.Routes())
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/console" || strings.HasPrefix(r.URL.Path, "/console/") {
			pages.ServeHTTP(w, r)
			return
		}
		api.ServeHTTP(w, r)
	})
}
