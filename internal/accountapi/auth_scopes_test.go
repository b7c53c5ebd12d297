package accountapi_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// legacyKey stores a key with exactly these scopes, bypassing minting (which always adds
// jobs:read and assets:read): the only way to hold a key without the always-on reads, as a key
// imported from before they were always on would be.
func legacyKey(t *testing.T, db *sqlstore.DB, secret, account string, scopes ...auth.Scope) string {
	t.Helper()
	f := auth.Format{Prefix: auth.DefaultPrefix}
	key, id, err := f.Mint()
	if err != nil {
		t.Fatal(err)
	}
	pk, err := f.Parse(key)
	if err != nil {
		t.Fatal(err)
	}
	rec := auth.KeyRecord{ID: id, AccountID: account, SecretHash: auth.NewHasher(secret).Hash(pk.Secret), Scopes: scopes,
		CreatedAt: t0, ExpiresAt: t0.AddDate(0, 0, 90), Ceiling: auth.Ceiling{Mode: auth.FollowPlan}, SpentPeriod: auth.Period(t0)}
	if err := db.InsertKey(context.Background(), rec, 25, t0); err != nil {
		t.Fatal(err)
	}
	return key
}

// scopeRefused checks a 403 insufficient_scope naming required and accepted.
func scopeRefused(t *testing.T, what string, status int, body map[string]any, raw string, required string, accepted ...string) {
	t.Helper()
	if status != 403 || body["error"] != "insufficient_scope" || body["required"] != required || !strEq(body["accepted"], accepted...) {
		t.Errorf("%s: got %d %s, want 403 insufficient_scope required %s accepted %v", what, status, raw, required, accepted)
	}
	if _, ok := body["scopes"].([]any); !ok {
		t.Errorf("%s: no scopes list: %s", what, raw)
	}
}

// notScopeRefused checks the route let the key through the scope check (whatever it answered then).
func notScopeRefused(t *testing.T, what string, status int, body map[string]any, raw string) {
	t.Helper()
	if status == 401 || status == 403 {
		t.Errorf("%s: refused %d %s", what, status, raw)
	}
}

// TestSCP23_27_RouteScopes proves the scope of every built account route over HTTP, on SQLite
// and PostgreSQL: SCP-23 (GET /v1/jobs, /v1/jobs/{id}, /v1/usage and its export, /v1/webhooks need jobs:read,
// not webhooks:write), SCP-24 (GET /v1/jobs/{id}/assets needs assets:read), SCP-25 and SCP-09
// (creating, re-challenging and deleting webhook endpoints need webhooks:write), SCP-27 and
// SCP-05/SCP-06 (POST /v1/uploads takes the write scope of the product the upload is for),
// SCP-02/SCP-03 (a key minted with nothing ticked still reads jobs and assets), SCP-15/SCP-21 and
// VER-07 (older names keep working on the uploads of their own kind), SCP-28 (GET /v1/me checks
// no scope).
func TestSCP23_27_RouteScopes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newAccEnv(t, db)
		const secret = "test-secret-0123456789abcdef"
		full := e.account("acct_scp")
		mint := func(scopes ...auth.Scope) string {
			m, err := e.svc.Mint(context.Background(), auth.MintParams{AccountID: "acct_scp", Scopes: scopes})
			if err != nil {
				t.Fatal(err)
			}
			return m.Key
		}
		readOnly := mint(auth.JobsRead) // jobs:read and assets:read only (SCP-02, SCP-03)
		audio := mint(auth.AudioWrite)  // music uploads only
		noReads := legacyKey(t, db, secret, "acct_scp", auth.ImageWrite, auth.WebhooksWrite)
		photo := legacyKey(t, db, secret, "acct_scp", auth.PhotoWrite) // an older name
		j := e.settle(e.submit(full, "image-lite", `{"positivePrompt":"scopes"}`, "scp1"))

		// SCP-23 / SCP-24: reads take jobs:read, asset links assets:read.
		for _, path := range []string{"/v1/jobs", "/v1/jobs/" + j.ID, "/v1/usage", "/v1/usage/export"} {
			a := e.get(path, noReads)
			scopeRefused(t, "GET "+path, a.status, a.body, string(a.raw), "jobs:read", "jobs:read")
			a = e.get(path, readOnly)
			e.want(a, 200, "")
		}
		a := e.get("/v1/jobs/"+j.ID+"/assets", noReads)
		scopeRefused(t, "assets", a.status, a.body, string(a.raw), "assets:read", "assets:read")
		e.want(e.get("/v1/jobs/"+j.ID+"/assets", readOnly), 200, "")
		// SCP-28: /v1/me checks no scope, even for a key with no read at all.
		e.want(e.get("/v1/me", noReads), 200, "")

		// SCP-27, SCP-05, SCP-06: the product's write scope; older names reach their own kind (SCP-15, VER-07).
		upload := func(key, product string) accAnswer {
			return e.call("POST", "/v1/uploads", key, []byte(`{"content_type":"image/png","product":"`+product+`"}`))
		}
		for _, c := range []struct {
			key, product, required string
			accepted               []string
		}{
			{readOnly, "photo", "image:write", []string{"image:write", "photo:write"}},
			{audio, "photo", "image:write", []string{"image:write", "photo:write"}},
			{noReads, "music", "audio:write", []string{"audio:write", "music:write"}},
			{photo, "music", "audio:write", []string{"audio:write", "music:write"}},
			{audio, "threed", "3d:write", []string{"3d:write", "threed:write"}},
		} {
			a := upload(c.key, c.product)
			scopeRefused(t, "upload "+c.product, a.status, a.body, string(a.raw), c.required, c.accepted...)
		}
		for _, c := range []struct{ key, product string }{{full, "photo"}, {noReads, "photo"}, {photo, "photo"}, {audio, "music"}, {full, "threed"}} {
			a := upload(c.key, c.product)
			if a.status != 201 {
				t.Errorf("upload %s: %d %s", c.product, a.status, a.raw)
			}
		}
	})
}

// TestSCP23_25_WebhookRouteScopes proves SCP-23 (listing endpoints needs jobs:read, not
// webhooks:write) and SCP-25 / SCP-09 (create, re-challenge and delete need webhooks:write),
// on SQLite and PostgreSQL.
func TestSCP23_25_WebhookRouteScopes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newWHEnv(t, db, nil)
		storetest.NewAccount(t, db, "acct_whscp", auth.Pro, 100)
		readOnly := e.mint("acct_whscp", auth.JobsRead)
		writer := legacyKey(t, db, "deployment-secret", "acct_whscp", auth.WebhooksWrite) // no jobs:read
		a := e.do("GET", "/v1/webhooks", writer, nil)
		scopeRefused(t, "GET /v1/webhooks", a.status, a.body, a.raw, "jobs:read", "jobs:read")
		e.want(e.do("GET", "/v1/webhooks", readOnly, nil), 200, "")
		for _, c := range []struct {
			method, path string
			body         any
		}{
			{"POST", "/v1/webhooks", map[string]any{"url": "http://example.com/hook"}},
			{"POST", "/v1/webhooks/wh_missing", nil},
			{"DELETE", "/v1/webhooks/wh_missing", nil},
		} {
			a := e.do(c.method, c.path, readOnly, c.body)
			scopeRefused(t, c.method+" "+c.path, a.status, a.body, a.raw, "webhooks:write", "webhooks:write")
			a = e.do(c.method, c.path, writer, c.body)
			notScopeRefused(t, c.method+" "+c.path, a.status, a.body, a.raw)
		}
	})
}

// TestKEY14_NoRouteMintsKeys proves KEY-14 on the HTTP side: no account route and no scope mints
// keys. Every plausible key-issuing path answers 404 (or 405 on a path served under another
// method) to a key holding every mintable scope, and the whole contract lists no such path.
func TestKEY14_NoRouteMintsKeys(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newAccEnv(t, db)
		storetest.NewAccount(t, db, "acct_k14", auth.Pro, 100)
		m, err := e.svc.Mint(context.Background(), auth.MintParams{AccountID: "acct_k14", Scopes: auth.Current})
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range []string{"/v1/keys", "/v1/api-keys", "/v1/api_keys", "/v1/me/keys", "/v1/tokens", "/v1/sessions", "/v1/auth/keys"} {
			for _, method := range []string{"POST", "PUT"} {
				a := e.call(method, path, m.Key, []byte(`{"scopes":["image:write"]}`))
				if a.status != 404 || a.body["error"] != "not_found" || strings.Contains(string(a.raw), auth.DefaultPrefix) {
					t.Errorf("%s %s: %d %s", method, path, a.status, a.raw)
				}
			}
		}
		a := e.call("POST", "/v1/me", m.Key, nil)
		if a.status != 405 || a.body["error"] != "method_not_allowed" || strings.Contains(string(a.raw), auth.DefaultPrefix) {
			t.Errorf("POST /v1/me: %d %s", a.status, a.raw)
		}
		doc := e.get("/v1/openapi.json", "")
		e.want(doc, 200, "")
		var whole struct {
			Paths map[string]map[string]any `json:"paths"`
		}
		if err := json.Unmarshal(doc.raw, &whole); err != nil || len(whole.Paths) == 0 {
			t.Fatalf("openapi paths: %v", err)
		}
		for path, ops := range whole.Paths {
			if strings.HasPrefix(path, "/files/") {
				continue // signed blob links: {key} is the blob's path
			}
			if strings.Contains(path, "key") || strings.Contains(path, "token") || strings.Contains(path, "session") {
				t.Errorf("the contract lists %s %v", path, slices.Collect(maps.Keys(ops)))
			}
		}
	})
}

// TestVER08_DeprecatedUploadBuckets: the `product: external` upload and the withdrawn
// `product: video` bucket remain only for keys that used them: external:write and
// svc-ai-video:write reach them (SCP-19, SCP-16); today's image:write and video:write do not,
// and the refusal names a scope nobody can mint (SCP-30). Proves VER-08, SCP-16, SCP-19.
func TestVER08_DeprecatedUploadBuckets(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newAccEnv(t, db)
		const secret = "test-secret-0123456789abcdef"
		e.account("acct_ver8")
		upload := func(key, product string) accAnswer {
			return e.call("POST", "/v1/uploads", key, []byte(`{"content_type":"image/png","product":"`+product+`"}`))
		}
		current := legacyKey(t, db, secret, "acct_ver8", auth.ImageWrite, auth.VideoWrite, auth.PhotoWrite)
		external := legacyKey(t, db, secret, "acct_ver8", auth.ExternalWrite)
		oldVideo := legacyKey(t, db, secret, "acct_ver8", auth.SvcVideoWrite)
		a := upload(current, "external")
		scopeRefused(t, "external upload, image:write", a.status, a.body, string(a.raw), "external:write", "external:write")
		a = upload(current, "video")
		scopeRefused(t, "video upload, video:write", a.status, a.body, string(a.raw), "svc-ai-video:write", "svc-ai-video:write")
		a = upload(oldVideo, "external")
		scopeRefused(t, "external upload, svc-ai-video:write", a.status, a.body, string(a.raw), "external:write", "external:write")
		for _, c := range []struct{ key, product string }{{external, "external"}, {oldVideo, "video"}} {
			if a := upload(c.key, c.product); a.status != 201 {
				t.Errorf("upload %s with its own older scope: %d %s", c.product, a.status, a.raw)
			}
		}
	})
}
