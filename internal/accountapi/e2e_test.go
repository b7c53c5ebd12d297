package accountapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"hash/crc32"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/accountapi"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/ratelimit"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// fakePacer is the rate-limit seam: a fuse that can be closed and a limiter whose answer is set.
type fakePacer struct {
	mu       sync.Mutex
	fuseShut bool
	refusal  ratelimit.Refusal
	down     bool
	fuseKeys []string
}

func (p *fakePacer) set(f func(p *fakePacer)) { p.mu.Lock(); f(p); p.mu.Unlock() }

func (*fakePacer) NoCapacity(string, ratelimit.Bucket) bool { return false }

func (p *fakePacer) Fuse(key string, b ratelimit.Bucket, now time.Time) (ratelimit.Decision, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.fuseKeys = append(p.fuseKeys, key)
	return ratelimit.Decision{Limit: 5, ResetAfter: time.Second}, !p.fuseShut
}

func (p *fakePacer) Admit(ctx context.Context, r ratelimit.Request) (ratelimit.Decision, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	ok := ratelimit.Decision{Allowed: true, Limit: 60, Remaining: 59, ResetAfter: time.Second}
	if strings.HasPrefix(r.Key, "addr:") {
		return ok, nil
	}
	if p.down {
		return ratelimit.Decision{}, errors.New("redis: connection refused")
	}
	if p.refusal != "" {
		return ratelimit.Decision{Refusal: p.refusal, Limit: 5, RetryAfter: 2500 * time.Millisecond, ResetAfter: 10 * time.Second}, nil
	}
	return ok, nil
}

type env struct {
	t        *testing.T
	db       *sqlstore.DB
	clock    *clock
	svc      *auth.Service
	switches *httpapi.Switches
	pacer    *fakePacer
	srv      *httptest.Server
}

// newEnv builds the account API the way cmd/modelexec/serve.go does (Gate + auth.Service over the
// store + accountapi.Handler), plus probe routes that take a write bucket and a product scope so
// every step of the check order can be reached.
func newEnv(t *testing.T, db *sqlstore.DB, secret string) *env {
	e := &env{pacer: &fakePacer{}}
	return e.build(t, db, secret, e.pacer)
}

// build is newEnv with pacer as the rate-limit seam (the fake one, or serve's real one).
func (e *env) build(t *testing.T, db *sqlstore.DB, secret string, pacer httpapi.Pacer) *env {
	e.t, e.db, e.switches = t, db, &httpapi.Switches{}
	if e.clock == nil {
		e.clock = &clock{t: t0}
	}
	log := slog.New(slog.DiscardHandler)
	e.svc = auth.NewService(db, auth.Format{Prefix: auth.DefaultPrefix}, auth.NewHasher(secret), e.clock.Now, log)
	gate := &httpapi.Gate{Auth: e.svc, Pacer: pacer, Switches: e.switches, Now: e.clock.Now, Log: log}
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	h := &accountapi.Handler{Gate: gate, Auth: e.svc, Catalog: cat, Ready: []accountapi.Pinger{db}, Now: e.clock.Now, Log: log, OpenAPI: accountapi.Document(cat)}
	ok := httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		httpapi.WriteJSON(w, r, 200, map[string]any{"ok": true})
		return nil
	})
	mux := http.NewServeMux()
	photo := func(*http.Request) string { return "photo" }
	scope := func(*http.Request) (auth.Requirement, error) { return auth.ProductRequirement("photo"), nil }
	mux.Handle("POST /probe/generate", httpapi.Wrap(httpapi.QueueSurface, log,
		gate.Protect(httpapi.Route{Bucket: ratelimit.Generate, Product: photo, Scope: scope}, ok)))
	mux.Handle("POST /probe/write", httpapi.Wrap(httpapi.AccountSurface, log,
		gate.Protect(httpapi.Route{Bucket: ratelimit.Write, Scope: func(*http.Request) (auth.Requirement, error) {
			return auth.Need(auth.WebhooksWrite), nil
		}}, ok)))
	mux.Handle("GET /probe/egress", httpapi.Wrap(httpapi.AccountSurface, log,
		gate.Protect(httpapi.Route{Bucket: ratelimit.Egress, Scope: func(*http.Request) (auth.Requirement, error) {
			return auth.Need(auth.AssetsRead), nil
		}}, ok)))
	mux.Handle("/", h.Routes())
	e.srv = httptest.NewServer(mux)
	t.Cleanup(e.srv.Close)
	return e
}

type answer struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (e *env) do(method, path string, hdr ...string) answer {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	a := answer{status: res.StatusCode, header: res.Header, raw: string(b)}
	_ = json.Unmarshal(b, &a.body)
	// KEY-17 and ERR-06 hold for every answer.
	for k := range res.Header {
		if strings.HasPrefix(strings.ToLower(k), "access-control-") {
			e.t.Errorf("%s %s answered with %s", method, path, k)
		}
	}
	id := res.Header.Get("X-Request-Id")
	if id == "" {
		e.t.Errorf("%s %s: no X-Request-Id", method, path)
	}
	if a.body != nil && path != "/v1/openapi.json" && a.body["request_id"] != id {
		e.t.Errorf("%s %s: body request_id %v, header %s", method, path, a.body["request_id"], id)
	}
	return a
}

func (e *env) refused(a answer, status int, code string) {
	e.t.Helper()
	if a.status != status || a.body["error"] != code {
		e.t.Fatalf("got %d %s, want %d %s", a.status, a.raw, status, code)
	}
	for _, k := range []string{"error", "error_type", "message", "retry", "charged", "docs", "request_id"} {
		if _, ok := a.body[k]; !ok {
			e.t.Fatalf("%s body lacks %s", code, k)
		}
	}
}

func (e *env) mint(p auth.MintParams) auth.Minted {
	e.t.Helper()
	m, err := e.svc.Mint(context.Background(), p)
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

func bearer(key string) []string { return []string{"Authorization", "Bearer " + key} }

// TestORD_CheckOrderEndToEnd walks every refusal of spec 02 "Order of checks" over HTTP, on SQLite
// and PostgreSQL. It proves ORD-01..ORD-10, KEY-01..KEY-03, KEY-07..KEY-09, KEY-11, KEY-16, KEY-17,
// KEY-19, KEY-20, KEY-25, KEY-26, ERR-01, ERR-04, ERR-05, ERR-06, ERR-26..ERR-31, ERR-35, ERR-36,
// ERR-38, ERR-39, SCP-28, SCP-29, VER-01 (/api → 404), VER-02 and ORD-09 (openapi without a key).
func TestORD_CheckOrderEndToEnd(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newEnv(t, db, "deployment-secret")
		a := storetest.NewAccount(t, db, "acct_pro", auth.Pro, 5000)
		storetest.NewAccount(t, db, "acct_free", auth.Free, 0)
		key := e.mint(auth.MintParams{AccountID: a.ID})
		narrow := e.mint(auth.MintParams{AccountID: a.ID, Scopes: []auth.Scope{auth.StudioRead}})
		other, _, _ := auth.Format{Prefix: auth.DefaultPrefix}.Mint() // well formed, unknown

		// Transport schemes (KEY-01..03).
		for _, h := range []string{"Bearer " + key.Key, key.Key, "Key " + key.Key} {
			if got := e.do("GET", "/v1/me", "Authorization", h); got.status != 200 {
				t.Fatalf("Authorization %q: %d %s", h[:10], got.status, got.raw)
			}
		}
		// ORD-09 / VER-02: openapi without a key, before any key check.
		doc := e.do("GET", "/v1/openapi.json")
		if doc.status != 200 || doc.body["openapi"] != "3.1.0" {
			t.Fatalf("openapi: %d %s", doc.status, doc.raw[:min(len(doc.raw), 200)])
		}
		if got := e.do("GET", "/v1/openapi.json", "Authorization", "garbage"); got.status != 200 {
			t.Fatalf("openapi with a bad key: %d", got.status)
		}

		// 1. api_disabled before everything, even a browser call without a key (ORD-01).
		e.switches.APIDisabled.Store(true)
		e.refused(e.do("GET", "/v1/me", "Origin", "https://evil.example"), 503, "api_disabled")
		e.refused(e.do("GET", "/v1/me", bearer(key.Key)...), 503, "api_disabled")
		e.switches.APIDisabled.Store(false)
		e.switches.DisabledProducts.Store(&map[string]bool{"photo": true})
		e.refused(e.do("POST", "/probe/generate", "Origin", "x"), 503, "api_disabled")
		if got := e.do("GET", "/v1/me", bearer(key.Key)...); got.status != 200 {
			t.Fatalf("another product's pause stopped /v1/me: %d", got.status)
		}
		e.switches.DisabledProducts.Store(nil)

		// 2. Origin before the key is read, whatever the key (ORD-02, KEY-16), on every route.
		for _, hdr := range [][]string{{}, bearer(key.Key), bearer("malformed"), {"Authorization", ""}} {
			h := append([]string{"Origin", "https://app.example"}, hdr...)
			e.refused(e.do("GET", "/v1/me", h...), 403, "browser_origin_refused")
			e.refused(e.do("POST", "/probe/generate", h...), 403, "browser_origin_refused")
		}
		e.refused(e.do("GET", "/v1/openapi.json", "Origin", "null"), 403, "browser_origin_refused")
		e.refused(e.do("GET", "/api/v1/me", "Origin", "x"), 403, "browser_origin_refused")
		// KEY-17: a CORS preflight gets no Access-Control-* header either (checked in do).
		e.do("OPTIONS", "/v1/me", "Origin", "https://app.example", "Access-Control-Request-Method", "GET")
		e.do("OPTIONS", "/v1/me")

		// 3. missing_authorization (ORD-03).
		got := e.do("GET", "/v1/me")
		e.refused(got, 401, "missing_authorization")
		if got.header.Get("x-should-retry") != "false" || got.body["retry"] != "never" || got.body["charged"] != "no" {
			t.Fatalf("missing_authorization: %v %v", got.header, got.body)
		}
		if got.header.Get("RateLimit-Limit") == "" || got.header.Get("X-RateLimit-Reset") == "" {
			t.Fatal("a keyless answer lacks rate headers")
		}

		// 4. malformed → invalid_api_key, before the fuse (ORD-04, KEY-07, KEY-08).
		e.pacer.set(func(p *fakePacer) { p.fuseShut = true; p.fuseKeys = nil })
		pk, _ := e.svc.Parse(key.Key)
		for _, bad := range []string{"x", pk.ID, auth.DefaultPrefix + pk.ID, key.Key[:68], key.Key + "A", "Bearer"} {
			e.refused(e.do("GET", "/v1/me", "Authorization", "Bearer "+bad), 401, "invalid_api_key")
		}
		if len(e.pacer.fuseKeys) != 0 {
			t.Fatalf("malformed keys reached the fuse: %v", e.pacer.fuseKeys)
		}
		// 5. The fuse before the key is looked up: an unknown but well-formed key is rate_limited (ORD-05).
		got = e.do("GET", "/v1/me", bearer(other)...)
		e.refused(got, 429, "rate_limited")
		if got.body["reason"] != "instance_fuse" || got.header.Get("Retry-After") != "1" || got.body["retry_after"] != float64(1) || got.body["bucket"] != "read" {
			t.Fatalf("fuse: %v %s", got.header, got.raw)
		}
		if got.header.Get("x-should-retry") != "" {
			t.Fatal("after_retry_after must not say x-should-retry: false")
		}
		e.pacer.set(func(p *fakePacer) { p.fuseShut = false })

		// KEY-09: unknown key and wrong secret answer the same.
		u, w := e.do("GET", "/v1/me", bearer(other)...), e.do("GET", "/v1/me", bearer(spliced(t, key.Key, other))...)
		e.refused(u, 401, "invalid_api_key")
		e.refused(w, 401, "invalid_api_key")
		delete(u.body, "request_id")
		delete(w.body, "request_id")
		if !jsonEqual(u.body, w.body) {
			t.Fatalf("unknown %v vs wrong secret %v", u.body, w.body)
		}

		// 6. Limiter answers, in order, and all before scope (ORD-06, ORD-07, ORD-08).
		for _, c := range []struct {
			refusal ratelimit.Refusal
			status  int
			code    string
		}{
			{ratelimit.PlanHasNoAPIGenerate, 403, "plan_has_no_api_generate"},
			{ratelimit.RequestTooLarge, 413, "request_too_large"},
			{ratelimit.BucketSpent, 429, "rate_limited"},
		} {
			e.pacer.set(func(p *fakePacer) { p.refusal = c.refusal })
			got := e.do("POST", "/probe/generate", bearer(narrow.Key)...) // narrow lacks image:write
			e.refused(got, c.status, c.code)
			switch c.code {
			case "plan_has_no_api_generate":
				if got.body["plan"] != "pro" || got.body["bucket"] != "generate" {
					t.Fatal(got.raw)
				}
			case "request_too_large":
				if got.body["limit"] != float64(5) || got.body["bucket"] != "generate" {
					t.Fatal(got.raw)
				}
			case "rate_limited":
				if got.body["reason"] != "bucket_spent" || got.header.Get("Retry-After") != "3" {
					t.Fatal(got.header.Get("Retry-After"), got.raw)
				}
			}
		}
		e.pacer.set(func(p *fakePacer) { p.refusal = ""; p.down = true })
		got = e.do("POST", "/probe/generate", bearer(narrow.Key)...)
		e.refused(got, 503, "limiter_unavailable")
		if got.header.Get("Retry-After") != "5" || got.body["retry"] != "after_retry_after" {
			t.Fatal(got.header, got.raw)
		}
		e.pacer.set(func(p *fakePacer) { p.down = false })

		// 7. Scope last (SCP-29): required, accepted, scopes.
		got = e.do("POST", "/probe/generate", bearer(narrow.Key)...)
		e.refused(got, 403, "insufficient_scope")
		if got.body["required"] != "image:write" || !strEq(got.body["accepted"], "image:write", "photo:write") ||
			!strEq(got.body["scopes"], "jobs:read", "assets:read", "studio:read") {
			t.Fatal(got.raw)
		}
		if got := e.do("POST", "/probe/generate", bearer(key.Key)...); got.status != 200 {
			t.Fatalf("default key on a photo route: %d %s", got.status, got.raw)
		}
		// SCP-28: /v1/me checks no scope.
		if got := e.do("GET", "/v1/me", bearer(narrow.Key)...); got.status != 200 {
			t.Fatal(got.raw)
		}

		// Account status (ORD-06, ERR-26, ERR-27), each before the key's own status.
		revoked := e.mint(auth.MintParams{AccountID: a.ID})
		if _, err := e.svc.Revoke(context.Background(), revoked.Record.ID); err != nil {
			t.Fatal(err)
		}
		e.refused(e.do("POST", "/probe/write", bearer(revoked.Key)...), 401, "key_revoked")
		for _, c := range []struct {
			status auth.Status
			code   string
		}{{auth.Banned, "account_banned"}, {auth.Suspended, "account_suspended"}} {
			setStatus(t, db, a.ID, c.status)
			e.clock.Add(2 * time.Second)
			for _, k := range []string{key.Key, revoked.Key} {
				e.refused(e.do("GET", "/v1/me", bearer(k)...), 403, c.code)
				e.refused(e.do("POST", "/probe/write", bearer(k)...), 403, c.code)
			}
		}
		// The ban revoked every key the account held (spec 02): a limited account reads with a
		// key minted after it.
		setStatus(t, db, a.ID, auth.Limited)
		e.clock.Add(2 * time.Second)
		key = e.mint(auth.MintParams{AccountID: a.ID})
		if got := e.do("GET", "/v1/me", bearer(key.Key)...); got.status != 200 {
			t.Fatalf("limited account read: %d %s", got.status, got.raw)
		}
		for path, bucket := range map[string]string{"/probe/write": "write", "/probe/generate": "generate", "/probe/egress": "egress"} {
			method := "POST"
			if path == "/probe/egress" {
				method = "GET"
			}
			for _, k := range []string{key.Key, revoked.Key} {
				got := e.do(method, path, bearer(k)...)
				e.refused(got, 403, "account_limited")
				if got.body["bucket"] != bucket {
					t.Fatalf("account_limited bucket %v, want %s", got.body["bucket"], bucket)
				}
			}
		}
		setStatus(t, db, a.ID, auth.Live)
		e.clock.Add(2 * time.Second)

		// KEY-25 / KEY-26 over HTTP: revoked by another process (the console): writes at once,
		// reads within 2 seconds.
		rk := e.mint(auth.MintParams{AccountID: a.ID})
		if got := e.do("GET", "/v1/me", bearer(rk.Key)...); got.status != 200 {
			t.Fatal(got.raw)
		}
		console := auth.NewService(db, auth.Format{Prefix: auth.DefaultPrefix}, auth.NewHasher("deployment-secret"), e.clock.Now, slog.New(slog.DiscardHandler))
		if _, err := console.Revoke(context.Background(), rk.Record.ID); err != nil {
			t.Fatal(err)
		}
		e.refused(e.do("POST", "/probe/write", bearer(rk.Key)...), 401, "key_revoked")
		e.refused(e.do("GET", "/probe/egress", bearer(rk.Key)...), 401, "key_revoked")
		e.clock.Add(2 * time.Second)
		e.refused(e.do("GET", "/v1/me", bearer(rk.Key)...), 401, "key_revoked")

		// GET /v1/me: exactly the account record (spec 01), costing nothing.
		me := e.do("GET", "/v1/me", bearer(key.Key)...)
		if me.status != 200 {
			t.Fatal(me.raw)
		}
		if ks := keys(me.body); !slices.Equal(ks, []string{"credits", "id", "key", "object", "plan", "request_id"}) {
			t.Fatalf("account record fields %v", ks)
		}
		cr, _ := me.body["credits"].(map[string]any)
		kr, _ := me.body["key"].(map[string]any)
		if ks := keys(cr); !slices.Equal(ks, []string{"balance", "monthly_allowance", "period"}) {
			t.Fatalf("credits fields %v", ks)
		}
		if ks := keys(kr); !slices.Equal(ks, []string{"credit_ceiling", "credits_spent_period", "id", "scopes"}) {
			t.Fatalf("key fields %v", ks)
		}
		if me.body["object"] != "account" || me.body["id"] != a.ID || me.body["plan"] != "pro" || cr["balance"] != float64(5000) ||
			cr["monthly_allowance"] != float64(2000) || cr["period"] != "2026-11" || kr["id"] != key.Record.ID ||
			kr["credit_ceiling"] != float64(2000) || kr["credits_spent_period"] != float64(0) ||
			!strEq(kr["scopes"], auth.Strings(auth.DefaultScopes())...) {
			t.Fatalf("account record %s", me.raw)
		}
		if strings.Contains(me.raw, key.Key[len(auth.DefaultPrefix)+13:]) {
			t.Fatal("the secret is echoed (KEY-12)")
		}
		// VER-01: the old /api prefix answers 404, even with a good key.
		e.refused(e.do("GET", "/api/v1/me", bearer(key.Key)...), 404, "not_found")
		e.refused(e.do("GET", "/api/v1/openapi.json"), 404, "not_found")
		if got := e.do("GET", "/healthz"); got.status != 200 {
			t.Fatal(got.status)
		}
		if got := e.do("GET", "/readyz"); got.status != 200 {
			t.Fatal(got.status)
		}

		// KEY-19: expiry, last so the clock jump does not disturb the rest.
		short := e.mint(auth.MintParams{AccountID: "acct_free", LifetimeDays: 30})
		e.clock.Add(30 * 24 * time.Hour)
		e.refused(e.do("GET", "/v1/me", bearer(short.Key)...), 401, "key_expired")
		e.refused(e.do("POST", "/probe/write", bearer(short.Key)...), 401, "key_expired")

		// ORD-10: no refusal charged anything.
		acct, err := db.Account(context.Background(), a.ID)
		if err != nil || acct.Balance != 5000 {
			t.Fatalf("balance after refusals %d %v", acct.Balance, err)
		}
	})
}

// TestKEY11_KeysNotConfigured proves KEY-11 / ERR-31 over HTTP: with no deployment secret a keyed
// request answers 503 keys_not_configured at step 4; steps 1-3 still come first.
func TestKEY11_KeysNotConfigured(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newEnv(t, db, "")
		k, _, _ := auth.Format{Prefix: auth.DefaultPrefix}.Mint()
		got := e.do("GET", "/v1/me", bearer(k)...)
		e.refused(got, 503, "keys_not_configured")
		if got.header.Get("x-should-retry") != "false" {
			t.Fatal("keys_not_configured is retry never")
		}
		e.refused(e.do("GET", "/v1/me"), 401, "missing_authorization")
		e.refused(e.do("GET", "/v1/me", append([]string{"Origin", "x"}, bearer(k)...)...), 403, "browser_origin_refused")
		if got := e.do("GET", "/v1/openapi.json"); got.status != 200 {
			t.Fatal(got.status)
		}
	})
}

// spliced returns key's id with other's secret and a valid checksum: a known id, a wrong secret.
func spliced(t *testing.T, key, other string) string {
	f := auth.Format{Prefix: auth.DefaultPrefix}
	pk, _ := f.Parse(key)
	opk, _ := f.Parse(other)
	for _, cand := range candidates(pk.ID, opk.Secret) {
		if _, err := f.Parse(cand); err == nil {
			return cand
		}
	}
	t.Fatal("could not build a wrong-secret key")
	return ""
}

// candidates computes the checksum the documented way (KEY-06): base62 of CRC32 of everything
// before it, zero-padded to 6.
func candidates(id, secret string) []string {
	head := auth.DefaultPrefix + id + "_" + secret
	const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	v := crc32.ChecksumIEEE([]byte(head))
	sum := make([]byte, 6)
	for i := 5; i >= 0; i-- {
		sum[i] = base62[v%62]
		v /= 62
	}
	return []string{head + string(sum)}
}

func setStatus(t *testing.T, db *sqlstore.DB, id string, s auth.Status) {
	t.Helper()
	if err := db.SetAccountStatus(context.Background(), id, s); err != nil {
		t.Fatal(err)
	}
}

func keys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func strEq(v any, want ...string) bool {
	arr, ok := v.([]any)
	if !ok || len(arr) != len(want) {
		return false
	}
	for i := range arr {
		if arr[i] != want[i] {
			return false
		}
	}
	return true
}

func jsonEqual(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
