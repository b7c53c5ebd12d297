package accountapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

var rateHeaders = []string{"RateLimit-Limit", "RateLimit-Remaining", "RateLimit-Reset", "X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset"}

// TestRL15_KeylessRoutesCarryRateHeaders proves RL-15 (every response carries the six rate-limit
// headers) on the routes that take no key: /healthz, /readyz and the signed /files/ links, from
// the per-client-address read bucket (DESIGN 23); and ERR-01/ERR-02 there: a refused file link
// answers the error body of every other route (error_type, docs, request_id) with a catalogued
// code: not_found for a link whose signature does not hold, expired (reason link_expired) for
// one past its 15 minutes, method_not_allowed for a method it was not signed for.
func TestRL15_KeylessRoutesCarryRateHeaders(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newAccEnv(t, db)
		signer, err := blobs.NewSigner([]byte("blob-signing-secret-0123456789abcdef"), e.srv.URL+"/files", e.clock.Now)
		if err != nil {
			t.Fatal(err)
		}
		link, _, err := signer.SignGet(context.Background(), "uploads/acct/none.png")
		if err != nil {
			t.Fatal(err)
		}
		put, _, err := signer.SignPut(context.Background(), "uploads/acct/new.png", "image/png", 64)
		if err != nil {
			t.Fatal(err)
		}
		check := func(what string, a accAnswer) {
			t.Helper()
			for _, h := range rateHeaders {
				if a.header.Get(h) == "" {
					t.Errorf("%s: no %s header (%d %s)", what, h, a.status, a.raw)
				}
			}
		}
		for _, p := range []string{"/healthz", "/readyz"} {
			a := e.get(p, "")
			e.want(a, 200, "")
			check(p, a)
		}
		for _, c := range []struct {
			what, method, url string
			status            int
			code              apierr.Code
		}{
			{"bad signature", "GET", strings.Replace(link, "sig=", "sig=x", 1), 404, apierr.NotFound},
			{"unsigned", "GET", e.srv.URL + "/files/uploads/acct/none.png", 404, apierr.NotFound},
			{"missing file", "GET", link, 404, apierr.NotFound},
			{"wrong method", "GET", put, 405, apierr.MethodNotAllowed},
			{"DELETE", "DELETE", link, 405, apierr.MethodNotAllowed},
		} {
			a := e.call(c.method, c.url, "", nil)
			check(c.what, a)
			e.want(a, c.status, string(c.code))
			for _, k := range []string{"error_type", "message", "retry", "charged", "docs", "request_id"} {
				if _, ok := a.body[k]; !ok {
					t.Errorf("%s: body lacks %s: %s", c.what, k, a.raw)
				}
			}
			if a.body["request_id"] != a.header.Get("X-Request-Id") {
				t.Errorf("%s: request_id %v, header %s", c.what, a.body["request_id"], a.header.Get("X-Request-Id"))
			}
		}
		e.clock.Add(16 * time.Minute)
		a := e.get(link, "")
		check("expired link", a)
		e.want(a, 410, "expired")
		if a.body["reason"] != "link_expired" || a.body["error_type"] == nil || a.body["docs"] == nil {
			t.Fatalf("expired link: %s", a.raw)
		}
	})
}

// TestACC14_ACC16_NotConfigured proves the not_configured row of spec 02 where it arises: a
// deployment started without a file store or a usage reader still serves POST /v1/uploads and
// GET /v1/usage (they are in its contract) and answers 503 not_configured saying what is
// missing, after the key and scope checks, instead of a 404 for a documented route.
func TestACC14_ACC16_NotConfigured(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newEnv(t, db, "deployment-secret")
		storetest.NewAccount(t, db, "acct_nc", auth.Pro, 100)
		key := e.mint(auth.MintParams{AccountID: "acct_nc"})
		for _, c := range []struct{ method, path, says string }{
			{"POST", "/v1/uploads", "Uploads"},
			{"GET", "/v1/usage", "Usage"},
		} {
			a := e.do(c.method, c.path, bearer(key.Key)...)
			e.refused(a, 503, "not_configured")
			if msg, _ := a.body["message"].(string); !strings.Contains(msg, c.says) {
				t.Fatalf("%s %s: %q", c.method, c.path, msg)
			}
		}
		e.refused(e.do("GET", "/v1/usage"), 401, "missing_authorization")
	})
}
