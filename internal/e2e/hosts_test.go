package e2e_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestORD02_PathsInAnyFormAreChecked: a path the router would rewrite to its clean form (a
// doubled slash, a "." or ".." segment) is answered like any path no route serves: the Origin
// refusal first, then 404 not_found in the error body with its request id, with a key or
// without, on every host, and nothing runs; it used to be a 307 redirect that no check had
// seen. Proves ORD-02 and KEY-16 ("whatever the key", on every route) for such paths.
func TestORD02_PathsInAnyFormAreChecked(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		h := newModelsHarness(t, db)
		noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		do := func(method, url string, hdr ...string) (int, map[string]any, http.Header) {
			t.Helper()
			req, err := http.NewRequest(method, url, strings.NewReader(`{"positivePrompt":"a cat"}`))
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i+1 < len(hdr); i += 2 {
				req.Header.Set(hdr[i], hdr[i+1])
			}
			res, err := noRedirect.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			raw, _ := io.ReadAll(res.Body)
			var body map[string]any
			_ = json.Unmarshal(raw, &body)
			return res.StatusCode, body, res.Header
		}
		paths := []struct{ method, url string }{
			{"GET", h.api.URL + "//v1/me"},
			{"GET", h.api.URL + "/v1/./me"},
			{"GET", h.api.URL + "/v1/jobs/../me"},
			{"POST", h.queue.URL + "//svc-serverless/image-turbo"},
			{"PUT", h.queue.URL + "/svc-serverless/image-turbo/requests/x//cancel"},
			{"POST", h.sync.URL + "/svc-serverless/./image-turbo"},
		}
		before := h.balance()
		for _, p := range paths {
			for _, c := range []struct {
				hdr  []string
				code int
				err  string
			}{
				{[]string{"Origin", "https://evil.example", "Authorization", "Bearer " + h.key}, 403, "browser_origin_refused"},
				{nil, 404, "not_found"},
				{[]string{"Authorization", "Bearer " + h.key}, 404, "not_found"},
			} {
				code, body, hdr := do(p.method, p.url, c.hdr...)
				if code != c.code || body["error"] != c.err {
					t.Errorf("%s %s %v: %d %v, want %d %s", p.method, p.url, c.hdr, code, body, c.code, c.err)
					continue
				}
				if hdr.Get("Location") != "" || body["request_id"] != hdr.Get("X-Request-Id") || hdr.Get("Allow") != "" {
					t.Errorf("%s %s: Location %q, Allow %q, request_id %v / %s", p.method, p.url,
						hdr.Get("Location"), hdr.Get("Allow"), body["request_id"], hdr.Get("X-Request-Id"))
				}
			}
		}
		if h.balance() != before || h.countJobs() != 0 {
			t.Errorf("a refused path ran something: balance %d (was %d), %d jobs", h.balance(), before, h.countJobs())
		}
	})
}

// TestRL09_ResultReadAdmitsEgress: the queue host's result read signs links to the job's files,
// so it is admitted as a download, like the asset list: a limited account reads the status
// but not the result (403 account_limited, bucket egress), and a revoked key gets nothing at
// once, past the read cache. Before, the result read handed such callers signed links.
// Proves RL-09 and ERR's account_limited (bucket egress) on the result read.
func TestRL09_ResultReadAdmitsEgress(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		h := newModelsHarness(t, db)
		r := h.submit("image-turbo", "wait=30", `{"positivePrompt":"a cat","width":128,"height":128}`)
		if r.Code != 200 || r.str("status") != "COMPLETED" {
			t.Fatalf("submit: %d %s", r.Code, r.Raw)
		}
		if res := h.call(http.MethodGet, r.str("response_url"), ""); res.Code != 200 || !strings.Contains(res.Raw, "/files/") {
			t.Fatalf("result read: %d %s", res.Code, res.Raw)
		}
		if err := db.SetAccountStatus(context.Background(), h.account, auth.Limited); err != nil {
			t.Fatal(err)
		}
		if st := h.status(r, false); st.Code != 200 {
			t.Fatalf("a limited account's status read: %d %s", st.Code, st.Raw)
		}
		res := h.call(http.MethodGet, r.str("response_url"), "")
		if res.Code != 403 || res.str("error") != "account_limited" || res.str("bucket") != "egress" || strings.Contains(res.Raw, "/files/") {
			t.Fatalf("a limited account's result read: %d %s", res.Code, res.Raw)
		}
		if err := db.SetAccountStatus(context.Background(), h.account, auth.Live); err != nil {
			t.Fatal(err)
		}
		if res := h.call(http.MethodGet, r.str("response_url"), ""); res.Code != 200 {
			t.Fatalf("result read once live again: %d %s", res.Code, res.Raw)
		}
		pk, err := h.auth.Parse(h.key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.auth.Revoke(context.Background(), pk.ID); err != nil {
			t.Fatal(err)
		}
		if res := h.call(http.MethodGet, r.str("response_url"), ""); res.Code != 401 || res.str("error") != "key_revoked" {
			t.Fatalf("a revoked key's result read: %d %s", res.Code, res.Raw)
		}
	})
}

// TestERR55_KeyUncheckableIsServiceBusy: when the key and its account cannot be read (the
// database is gone), a keyed request is answered 503 service_busy, nothing charged, with a
// Retry-After, on the account API and the queue host: never 500 internal with charged
// "unknown", which would send the caller to poll a database that is down. Proves ERR-55.
func TestERR55_KeyUncheckableIsServiceBusy(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		h := newModelsHarness(t, db)
		// A key of the account never used: nothing of it is in any cache.
		fresh, err := h.auth.Mint(context.Background(), auth.MintParams{AccountID: h.account})
		if err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct{ method, url string }{
			{http.MethodGet, h.api.URL + "/v1/me"},
			{http.MethodPost, h.queue.URL + "/svc-serverless/image-turbo"},
		} {
			r := h.callKey(fresh.Key, c.method, c.url, `{"positivePrompt":"a cat"}`)
			if r.Code != 503 || r.str("error") != "service_busy" || r.Body["charged"] != "no" || r.Header.Get("Retry-After") == "" {
				t.Errorf("%s %s with the database gone: %d %s (Retry-After %q)", c.method, c.url, r.Code, r.Raw, r.Header.Get("Retry-After"))
			}
		}
	})
}
