package accountapi_test

import (
	"log/slog"
	"net/http/httptest"
	"testing"

	"github.com/modelexec/modelexec/internal/accountapi"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
	"github.com/modelexec/modelexec/internal/webhooks"
)

// TestWH37_NoSigningCredential proves the no_signing_credential row of spec 02 where it arises:
// a deployment whose stored signing keys were sealed under another deployment secret cannot
// sign or publish, so the JWKS and a webhook registration answer 503 no_signing_credential
// (error body of every route, a message for the operator) instead of 500 internal.
func TestWH37_NoSigningCredential(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newWHEnv(t, db, nil)
		storetest.NewAccount(t, db, "acct_a", auth.Pro, 1000)
		key := e.mint("acct_a")
		e.want(e.do("GET", webhooks.JWKSPath, "", nil), 200, "") // the first key, sealed under the first secret

		// The same store under another deployment secret.
		lg := slog.New(slog.DiscardHandler)
		ring, err := webhooks.NewKeyRing(webhooks.KeyRingConfig{Store: sqlstore.WebhookKeys{DB: db}, Secret: []byte("another-deployment-secret-9876"), Clock: e.clock})
		if err != nil {
			t.Fatal(err)
		}
		hooks, err := webhooks.NewService(webhooks.Config{Store: sqlstore.Webhooks{DB: db}, Keys: ring, Clock: e.clock,
			PublicBaseURL: e.base, Logger: lg})
		if err != nil {
			t.Fatal(err)
		}
		h := &accountapi.Handler{Gate: e.gate, Auth: e.auth, Now: e.clock.Now, Log: lg, KeyRing: ring, Webhooks: hooks}
		srv := httptest.NewServer(h.Routes())
		t.Cleanup(srv.Close)
		e.base = srv.URL

		a := e.do("GET", webhooks.JWKSPath, "", nil)
		e.want(a, 503, "no_signing_credential")
		if a.body["error_type"] != "ConfigurationError" || a.body["request_id"] == nil {
			t.Fatalf("jwks: %s", a.raw)
		}
		a = e.do("POST", "/v1/webhooks", key, map[string]any{"url": "https://hooks.example.com/x"})
		e.want(a, 503, "no_signing_credential")
	})
}
