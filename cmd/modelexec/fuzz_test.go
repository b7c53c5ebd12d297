package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/plans"
	"github.com/modelexec/modelexec/internal/server"
)

// fuzzPaths are the routes each surface serves (and a few it does not); the fuzzer picks one
// with its own selector (every path on every surface, with every method) and may append to it.
var fuzzPaths = []string{
	"/v1/me", "/v1/jobs", "/v1/jobs/photo_x", "/v1/jobs/photo_x/assets", "/v1/usage?window=month", "/v1/uploads",
	"/v1/webhooks", "/v1/webhooks/wh_x", "/v1/models", "/v1/models/svc-serverless/image-lite", "/v1/models?expand=openapi",
	"/v1/catalogue", "/healthz", "/readyz", "/files/uploads/a.png?method=GET&expires=1&sig=x", "/api/v1/me",
	"/svc-serverless/image-lite", "/svc-serverless/image-lite?wait=5&webhook=https%3A%2F%2Fexample.com%2Fh",
	"/svc-serverless/image-lite/requests/r_x/status", "/svc-serverless/image-lite/requests/r_x",
	"/svc-serverless/image-lite/requests/r_x/cancel", "/svc-serverless/nope",
}

var fuzzMethods = []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, http.MethodHead}

// FuzzSurfaces posts arbitrary bodies, paths, query strings and a header to the three surfaces
// built the way `modelexec serve` builds them, in process. Whatever arrives: no panic, no 500
// (a panic is recovered by httpapi.Wrap into a 500, so both show here), and no refusal more than
// a few times larger than the request that caused it (len(answer) <= 4*len(request) + 8 KiB):
// a refusal must never amplify what was sent. Successful reads of the catalogue and its
// OpenAPI documents are large by design and are not held to that bound.
func FuzzSurfaces(f *testing.F) {
	if len(fuzzPaths) > 256 {
		f.Fatal("fuzzPaths outgrows its uint8 selector: some paths would never be sent")
	}
	surfaces, key := fuzzSurfaces(f)
	ctx := context.Background()
	for _, s := range []struct {
		sel, route  uint8
		suffix, hdr string
		body        []byte
	}{
		{0, 0, "", "", nil},
		{1, 16, "", "Content-Type: application/json", []byte(`{"positivePrompt":"a cat"}`)},
		{2, 17, "?wait=0", "Idempotency-Key: k1", []byte(`{"positivePrompt":"a cat","zz":1}`)},
		{3, 6, "", "Origin: https://x.example", []byte(`{"url":"https://127.0.0.1/h"}`)},
		{4, 20, "/x", "X-Svc-Priority: low", []byte(`[1,2,3]`)},
		{5, 4, "?window=bogus", "", []byte(`{"a":{"b":{"c":[` + strings.Repeat(`{"d":1},`, 50) + `{}]}}}`)},
	} {
		f.Add(s.sel, s.route, s.suffix, s.hdr, s.body)
	}
	// One seed per path, each on another surface and method, so a plain test run sends them all.
	for route := range fuzzPaths {
		f.Add(uint8(route*5), uint8(route), "", "Content-Type: application/json", []byte(`{}`))
	}
	f.Fuzz(func(t *testing.T, sel, route uint8, suffix, hdr string, body []byte) {
		surface := surfaces[int(sel)%len(surfaces)]
		method := fuzzMethods[int(sel/4)%len(fuzzMethods)]
		base := fuzzPaths[int(route)%len(fuzzPaths)] + suffix
		u, err := url.Parse(base)
		if err != nil || u.Path == "" || u.Path[0] != '/' {
			u = &url.URL{Path: "/" + url.PathEscape(base)}
		}
		req := (&http.Request{Method: method, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Header: http.Header{},
			Host: "fuzz.test", RemoteAddr: "192.0.2.1:1234", RequestURI: u.RequestURI(),
			Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}).WithContext(ctx)
		if sel&2 == 0 {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		if k, v, ok := strings.Cut(hdr, ":"); ok && validHeader(k, v) {
			req.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
		}
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		rec := httptest.NewRecorder()
		surface.ServeHTTP(rec, req.WithContext(rctx))
		if rec.Code >= 500 && rec.Code != http.StatusServiceUnavailable {
			t.Fatalf("%s %s (%d-byte body) answered %d: %.500s", method, u, len(body), rec.Code, rec.Body)
		}
		sent := len(u.String()) + len(hdr) + len(body) + len(key)
		if rec.Code >= 300 && rec.Body.Len() > 4*sent+8<<10 {
			t.Fatalf("%s %s: a %d-byte request answered %d with %d bytes", method, u, sent, rec.Code, rec.Body.Len())
		}
	})
}

// fuzzSurfaces builds the three surfaces the way `modelexec serve` builds them, in process, and
// mints a key of an account with no credits (nothing fuzzed ever runs a model) and no
// new-account limits.
func fuzzSurfaces(f *testing.F) ([]http.Handler, string) {
	c := &ServeCmd{Roles: "api,queue,sync", APIAddr: "127.0.0.1:0", QueueAddr: "127.0.0.1:0", SyncAddr: "127.0.0.1:0"}
	c.Data, c.Secret = migratedData(f), "fuzz-deployment-secret-0123456789"
	c.Plans = unlimitedPlans(f, c.Data)
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	db, err := c.open(ctx)
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { db.Close() })
	svc, err := c.authService(db, false, log, utcNow)
	if err != nil {
		f.Fatal(err)
	}
	a, err := c.buildWith(ctx, db, svc, log, lowCost)
	if err != nil {
		f.Fatal(err)
	}
	// An account with no credits (nothing fuzzed ever runs a model) and no new-account limits.
	if err := db.CreateAccount(ctx, auth.Account{ID: "acct_fuzz", Plan: auth.Ultimate, Status: auth.Live,
		AllowancePeriod: "9999-12", CreatedAt: utcNow().Add(-72 * time.Hour)}); err != nil {
		f.Fatal(err)
	}
	m, err := svc.Mint(ctx, auth.MintParams{AccountID: "acct_fuzz"})
	if err != nil {
		f.Fatal(err)
	}
	return []http.Handler{a.Handler(server.RoleAPI), a.Handler(server.RoleQueue), a.Handler(server.RoleSync)}, m.Key

}

// unlimitedPlans writes, under dir, the shipped plans with every rate bucket and fuse raised
// out of reach, so that a fuzzer's thousands of requests reach the routes behind them.
func unlimitedPlans(f *testing.F, dir string) string {
	var doc map[string]any
	if err := json.Unmarshal(plans.Default().JSON(), &doc); err != nil {
		f.Fatal(err)
	}
	var raise func(v any)
	raise = func(v any) {
		m, _ := v.(map[string]any)
		for k, e := range m {
			if _, isNum := e.(float64); isNum && (k == "burst" || k == "refill") {
				m[k] = 1_000_000
			}
			raise(e)
		}
	}
	raise(doc)
	if fuse, ok := doc["instance_fuse"].(map[string]any); ok {
		for k := range fuse {
			fuse[k] = 1_000_000
		}
	}
	b, err := json.Marshal(doc)
	if err != nil {
		f.Fatal(err)
	}
	path := filepath.Join(dir, "plans.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		f.Fatal(err)
	}
	return path
}

// validHeader reports whether k: v can be set on a request as a client could send it.
func validHeader(k, v string) bool {
	k, v = strings.TrimSpace(k), strings.TrimSpace(v)
	if k == "" || len(k) > 100 || len(v) > 4096 {
		return false
	}
	for _, r := range k {
		if r <= ' ' || r >= 0x7f || strings.ContainsRune("()<>@,;:\\\"/[]?={}", r) {
			return false
		}
	}
	for _, r := range v {
		if (r < ' ' && r != '\t') || r == 0x7f {
			return false
		}
	}
	return true
}
