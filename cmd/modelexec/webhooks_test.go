package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/server"

	"github.com/modelexec/modelexec/internal/webhooks"
)

// buildServe builds the service the way `modelexec serve` does, over a fresh data directory.
func buildServe(t *testing.T, secret, roles, scheme string) *server.Server {
	t.Helper()
	c := &ServeCmd{Roles: roles, APIAddr: "127.0.0.1:0", QueueAddr: "127.0.0.1:0", SyncAddr: "127.0.0.1:0"}
	c.Data, c.Secret, c.WebhookScheme = migratedData(t), secret, scheme
	a, err := serveWith(t, c)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// serveWith opens c's store and builds the service from c as `modelexec serve` does.
func serveWith(t *testing.T, c *ServeCmd) (*server.Server, error) {
	t.Helper()
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	db, err := c.open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	svc, err := c.authService(db, false, log, utcNow)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := c.buildWith(ctx, db, svc, log, lowCost)
	if srv != nil {
		t.Cleanup(func() { _ = srv.Close() })
	}
	return srv, err
}

func get(h http.Handler, method, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec
}

// TestWH37_ServeWiresWebhooks: `serve` with a deployment secret (short ones are stretched with
// SHA-256) serves the JWKS without a key and the webhook routes behind the key check, and runs
// the delivery engine and the outbox relay only under the webhooks role. Proves WH-37 on the
// wired service and the role split.
func TestWH37_ServeWiresWebhooks(t *testing.T) {
	a := buildServe(t, "a-20-byte-secret-xyz", "api,webhooks", "")
	api := a.Handler(server.RoleAPI)
	rec := get(api, "GET", webhooks.JWKSPath)
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &set) != nil || len(set.Keys) != 1 || set.Keys[0]["kty"] != "OKP" {
		t.Fatalf("jwks %d %s", rec.Code, rec.Body)
	}
	for _, r := range [][2]string{{"POST", "/v1/webhooks"}, {"GET", "/v1/webhooks"}, {"POST", "/v1/webhooks/wh_x"}, {"DELETE", "/v1/webhooks/wh_x"}} {
		if rec := get(api, r[0], r[1]); rec.Code != 401 {
			t.Fatalf("%s %s: %d %s", r[0], r[1], rec.Code, rec.Body)
		}
	}
	// The webhooks engine and the relay, and (as every serving process) the jobs engine's
	// Run (batchers, notices from the other processes) and the keys' last-use writer.
	if a.Workers() != 4 {
		t.Fatalf("webhooks role runs %d workers, want the webhooks engine, the relay, the jobs engine and the last-use writer", a.Workers())
	}
	if a := buildServe(t, "a-20-byte-secret-xyz", "api", "hmac"); a.Workers() != 2 {
		t.Fatalf("api role alone runs %d workers, want the jobs engine and the last-use writer", a.Workers())
	}
	// Without a deployment secret nothing is wired: the whole service runs only the worker
	// role's two (jobs and allowances) and the last-use writer, and a process of only some
	// roles refuses to start.
	a = buildServe(t, "", "api,queue,sync,worker,webhooks", "")
	if rec := get(a.Handler(server.RoleAPI), "GET", webhooks.JWKSPath); rec.Code != 404 || a.Workers() != 3 {
		t.Fatalf("unconfigured: jwks %d, %d workers", rec.Code, a.Workers())
	}
	c := &ServeCmd{Roles: "api,webhooks", APIAddr: "127.0.0.1:0", QueueAddr: "127.0.0.1:0", SyncAddr: "127.0.0.1:0"}
	c.Data = migratedData(t)
	if _, err := serveWith(t, c); err == nil || !strings.Contains(err.Error(), "deployment secret") {
		t.Fatalf("split roles without a secret: %v", err)
	}
}

func TestWH43_WebhookSchemeFlag(t *testing.T) {
	for in, want := range map[string]webhooks.Scheme{"": webhooks.SchemeEd25519, "ed25519": webhooks.SchemeEd25519, "hmac": webhooks.SchemeHMAC} {
		if got, err := server.ParseWebhookScheme(in); err != nil || got != want {
			t.Fatalf("%q: %v %v", in, got, err)
		}
	}
	if _, err := server.ParseWebhookScheme("rsa"); err == nil {
		t.Fatal("unknown scheme accepted")
	}
}
