package e2e_test

import (
	"context"
	"log/slog"
	"net/http"
	"testing"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
)

// TestKEY25_SubmitSeesStandingChangedElsewhere proves KEY-25 on the queue host with the gate's
// principal cache warm: a submit lets the cached key through unconfirmed and its charge's
// transaction confirms it, so a revocation, ban, suspension or limit made by another process
// (the console, the CLI: this process's cache is not told) is refused at once, nothing
// charged, with the spec's code, and before any later check (spec 02 order of checks): a bad
// body, a missing scope or an idempotent replay all answer the standing's refusal. A refusal is
// never older than the request: an account set live again is served at once.
func TestKEY25_SubmitSeesStandingChangedElsewhere(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		ctx := context.Background()
		// Another process over the same database: its revocations do not reach h.auth's cache.
		console := auth.NewService(h.db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher(secret), h.clock.Now, slog.New(slog.DiscardHandler))
		keyID := func(key string) string { return key[len("svc_sk_") : len("svc_sk_")+12] }
		refused := func(key, code string, r resp, account string, before int64, jobsBefore int) {
			t.Helper()
			if r.Code != apierr.Lookup(apierr.Code(code)).Status || r.str("error") != code {
				t.Fatalf("want %s, got %d %s", code, r.Code, r.Raw)
			}
			if b := h.balanceOf(account); b != before {
				t.Fatalf("%s: balance %d, want %d (nothing charged)", code, b, before)
			}
			if n := h.countJobs(); n != jobsBefore {
				t.Fatalf("%s: %d jobs, want %d", code, n, jobsBefore)
			}
		}
		// Every way a submit can be answered before or without a charge.
		tries := func(key, code, account string) {
			t.Helper()
			before, jobsBefore := h.balanceOf(account), h.countJobs()
			refused(key, code, h.callKey(key, http.MethodPost, h.queue.URL+"/svc-serverless/"+mFast+"?wait=10", `{"positivePrompt":"ok"}`), account, before, jobsBefore)
			refused(key, code, h.callKey(key, http.MethodPost, h.queue.URL+"/svc-serverless/"+mFast, `{"positivePrompt":5}`), account, before, jobsBefore)
			refused(key, code, h.callKey(key, http.MethodPost, h.queue.URL+"/svc-serverless/"+mFast, `{"positivePrompt":"ok"}`, "Idempotency-Key", "warm-"+account), account, before, jobsBefore)
			refused(key, code, h.callKey(key, http.MethodPost, h.queue.URL+"/svc-serverless/music-turbo", `{"prompt":"ok"}`), account, before, jobsBefore)
		}
		warm := func(account string, scopes ...auth.Scope) string {
			t.Helper()
			m, err := h.auth.Mint(ctx, auth.MintParams{AccountID: account, Scopes: scopes})
			if err != nil {
				t.Fatal(err)
			}
			r := h.callKey(m.Key, http.MethodPost, h.queue.URL+"/svc-serverless/"+mFast+"?wait=10", `{"positivePrompt":"ok"}`, "Idempotency-Key", "warm-"+account)
			if r.Code != 200 || r.str("status") != "COMPLETED" {
				t.Fatalf("warm-up submit: %d %s", r.Code, r.Raw)
			}
			return m.Key
		}

		// A key revoked elsewhere. It holds only the photo scope, so the music submit would be
		// insufficient_scope (check 7) if the revocation were not seen first (check 6).
		key := warm(h.account, auth.PhotoWrite)
		if _, err := console.Revoke(ctx, keyID(key)); err != nil {
			t.Fatal(err)
		}
		tries(key, "key_revoked", h.account)

		// An account banned, suspended or limited elsewhere; then live again.
		for _, c := range []struct {
			status auth.Status
			code   string
		}{{auth.Suspended, "account_suspended"}, {auth.Limited, "account_limited"}, {auth.Banned, "account_banned"}} {
			account, _ := h.newAccount("acct_"+string(c.status), auth.Pro, 1000, nil)
			key := warm(account, auth.PhotoWrite)
			if err := h.db.SetAccountStatus(ctx, account, c.status); err != nil {
				t.Fatal(err)
			}
			tries(key, c.code, account)
			if c.status == auth.Limited {
				r := h.callKey(key, http.MethodPost, h.queue.URL+"/svc-serverless/"+mFast, `{"positivePrompt":"ok"}`)
				if b, _ := r.Body["bucket"].(string); b != "generate" {
					t.Fatalf("account_limited names bucket %q, want generate: %s", b, r.Raw)
				}
			}
			if c.status != auth.Banned { // a ban revoked the keys; the others come back
				if err := h.db.SetAccountStatus(ctx, account, auth.Live); err != nil {
					t.Fatal(err)
				}
				if r := h.callKey(key, http.MethodPost, h.queue.URL+"/svc-serverless/"+mFast+"?wait=10", `{"positivePrompt":"ok"}`); r.Code != 200 {
					t.Fatalf("%s then live: %d %s", c.status, r.Code, r.Raw)
				}
			}
		}
	})
}
