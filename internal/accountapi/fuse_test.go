package accountapi_test

import (
	"fmt"
	"maps"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/ratelimit"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// newFusedEnv is newEnv with the real rate limiting of serve (the per-instance fuse and an
// in-process limiter) instead of the fake pacer.
func newFusedEnv(t *testing.T, db *sqlstore.DB) *env {
	e := &env{clock: &clock{t: t0}}
	adm := ratelimit.NewAdmission(ratelimit.NewMemory(ratelimit.MemoryOptions{Clock: e.clock.Now}), ratelimit.AdmissionOptions{})
	return e.build(t, db, "deployment-secret", httpapi.Admission{Adm: adm, Now: e.clock.Now})
}

// TestORD05_ForgedSecretsSpendNoFuseOfTheRealKey: the fuse (check 5) counts per key before the
// key is looked up, and a key's public id is public. Requests with the id and a made-up secret
// (each answered invalid_api_key) spend a counter of their own: the key's owner is not locked
// out, on the generate bucket (3 a second) or the read bucket (30).
func TestORD05_ForgedSecretsSpendNoFuseOfTheRealKey(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newFusedEnv(t, db)
		storetest.NewAccount(t, db, "acct_victim", auth.Pro, 5000)
		key := e.mint(auth.MintParams{AccountID: "acct_victim"}).Key
		fake := storetest.ForgedSecret(key)
		if fake == key || fake[:len(auth.DefaultPrefix)+12] != key[:len(auth.DefaultPrefix)+12] {
			t.Fatalf("forged %q from %q", fake, key)
		}
		forgedTries := func(path, method string, n int) {
			t.Helper()
			for i := range n {
				a := e.do(method, path, bearer(fake)...)
				// The first ones are looked up and refused; past the fuse's figure the forged key's own
				// counter refuses it before any lookup.
				if a.status != 401 && !(a.status == 429 && a.body["reason"] == "instance_fuse") {
					t.Fatalf("forged key, try %d: %d %s", i, a.status, a.raw)
				}
			}
		}
		forgedTries("/probe/generate", "POST", 5)
		if a := e.do("POST", "/probe/generate", bearer(key)...); a.status != 200 {
			t.Fatalf("the owner's submit after forged ones: %d %s", a.status, a.raw)
		}
		forgedTries("/v1/me", "GET", 31)
		if a := e.do("GET", "/v1/me", bearer(key)...); a.status != 200 {
			t.Fatalf("the owner's read after forged ones: %d %s", a.status, a.raw)
		}
		// The fuse still holds the real key to its figures.
		var last answer
		for range 4 {
			last = e.do("POST", "/probe/generate", bearer(key)...)
		}
		e.refused(last, 429, "rate_limited")
		if last.body["reason"] != "instance_fuse" {
			t.Fatalf("fourth submit in a second: %s", last.raw)
		}
	})
}

// TestRL11_FreePlanGenerateIsNeverRefused429: a free key has no generate bucket (capacity 0):
// every submit, however many a second, is 403 plan_has_no_api_generate, never the fuse's 429
// (whose retry_after would say the refusal clears in a second).
func TestRL11_FreePlanGenerateIsNeverRefused429(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newFusedEnv(t, db)
		storetest.NewAccount(t, db, "acct_free", auth.Free, 0)
		key := e.mint(auth.MintParams{AccountID: "acct_free"}).Key
		for i := range 8 {
			a := e.do("POST", "/probe/generate", bearer(key)...)
			e.refused(a, 403, "plan_has_no_api_generate")
			if a.header.Get("Retry-After") != "" {
				t.Fatalf("submit %d: Retry-After %q on a refusal that never clears", i, a.header.Get("Retry-After"))
			}
		}
	})
}

// TestKEY16_KeylessRoutesRefuseBrowserCalls: the routes that take no key (probes, error pages)
// refuse a request carrying Origin like every other route (spec 02, key format and transport
// #4; DESIGN 23), with the error body and no Access-Control-* header.
func TestKEY16_KeylessRoutesRefuseBrowserCalls(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newFusedEnv(t, db)
		for _, p := range []string{"/healthz", "/readyz", "/docs/errors", "/docs/errors/rate_limited"} {
			if a := e.do("GET", p); a.status != 200 {
				t.Fatalf("%s without Origin: %d", p, a.status)
			}
			a := e.do("GET", p, "Origin", "https://evil.example")
			e.refused(a, 403, "browser_origin_refused")
			if a.header.Get("RateLimit-Limit") == "" {
				t.Errorf("%s: a refusal without rate headers", p)
			}
		}
	})
}

// TestRL10_ZeroCapacityOtherBucketIsTooLarge: an operator's plan table may give a read,
// write or egress bucket capacity 0. A request there asks more than the bucket can ever
// hold: 413 request_too_large naming the bucket with limit 0, not 403
// plan_has_no_api_generate (which the spec keeps for generate and interactive, and which
// told a caller who had generated that the plan has no API generate).
func TestRL10_ZeroCapacityOtherBucketIsTooLarge(t *testing.T) {
	table := ratelimit.Table{}
	for plan, buckets := range ratelimit.Plans {
		table[plan] = maps.Clone(buckets)
	}
	table[string(auth.Pro)][ratelimit.Egress] = ratelimit.Rate{Period: 24 * time.Hour}
	table[string(auth.Pro)][ratelimit.Write] = ratelimit.Rate{Period: time.Minute}
	e := &env{clock: &clock{t: t0}}
	adm := ratelimit.NewAdmission(ratelimit.NewMemory(ratelimit.MemoryOptions{Clock: e.clock.Now, Plans: table}), ratelimit.AdmissionOptions{})
	e.build(t, storetest.OpenSQLite(t), "deployment-secret", httpapi.Admission{Adm: adm, Now: e.clock.Now})
	storetest.NewAccount(t, e.db, "acct_zero", auth.Pro, 5000)
	key := e.mint(auth.MintParams{AccountID: "acct_zero"}).Key
	for _, c := range []struct{ method, path, bucket string }{{"GET", "/probe/egress", "egress"}, {"POST", "/probe/write", "write"}} {
		a := e.do(c.method, c.path, bearer(key)...)
		e.refused(a, 413, "request_too_large")
		if a.body["bucket"] != c.bucket || a.body["limit"] != float64(0) || a.body["plan"] != "pro" {
			t.Errorf("%s: %s", c.path, a.raw)
		}
	}
	if a := e.do("POST", "/probe/generate", bearer(key)...); a.status != 200 {
		t.Fatalf("generate, whose bucket has capacity: %d %s", a.status, a.raw)
	}
}

// TestCAT05_PausedProductShowsPaused: while the operator pauses a product (--disable-product),
// its addresses read paused on GET /v1/catalogue, GET /v1/models and GET /v1/models/{address}
// (they read connected while every submit was refused 503 api_disabled); other products'
// addresses keep their state, and lifting the pause shows them connected again.
func TestCAT05_PausedProductShowsPaused(t *testing.T) {
	e := newEnv(t, storetest.OpenSQLite(t), "deployment-secret")
	storetest.NewAccount(t, e.db, "acct_cat", auth.Pro, 100)
	key := e.mint(auth.MintParams{AccountID: "acct_cat"}).Key
	states := func() (map[string]any, map[string]string, map[string]string) {
		t.Helper()
		cat := e.do("GET", "/v1/catalogue")
		list := e.do("GET", "/v1/models", bearer(key)...)
		if cat.status != 200 || list.status != 200 {
			t.Fatalf("catalogue %d, models %d", cat.status, list.status)
		}
		rows, products := map[string]string{}, map[string]string{}
		for _, r := range list.body["data"].([]any) {
			row := r.(map[string]any)
			rows[row["id"].(string)], products[row["id"].(string)] = row["state"].(string), row["product"].(string)
		}
		return cat.body["addresses"].(map[string]any), rows, products
	}
	before, _, products := states()
	e.switches.DisabledProducts.Store(&map[string]bool{"music": true})
	addrs, rows, _ := states()
	paused := 0
	for addr, product := range products {
		want := before[addr]
		if product == "music" {
			want, paused = "paused", paused+1
			one := e.do("GET", "/v1/models/"+addr, bearer(key)...)
			if one.body["state"] != "paused" {
				t.Errorf("GET /v1/models/%s: state %v", addr, one.body["state"])
			}
		}
		if addrs[addr] != want || rows[addr] != want {
			t.Errorf("%s (%s): catalogue %v, models %v, want %v", addr, product, addrs[addr], rows[addr], want)
		}
	}
	if paused == 0 {
		t.Fatal("the catalogue holds no music model")
	}
	e.switches.DisabledProducts.Store(nil)
	if addrs, _, _ := states(); fmt.Sprint(addrs) != fmt.Sprint(before) {
		t.Errorf("after the pause: %v, want %v", addrs, before)
	}
}
