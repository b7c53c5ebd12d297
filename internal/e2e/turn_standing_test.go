package e2e_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/jobs"
)

// TestKEY25_QueuedJobAtItsTurnAfterRevocation: on a model that offers a queue, a job that
// waits while its key is revoked, or while its account is limited, is not charged at its turn:
// it fails with key_revoked or account_limited, charged nothing (it never was), reads
// COMPLETED on the queue protocol with that code on its result read, and sends its one event.
// Before, the turn judged only who pays, so a revoked key or a limited account (which cannot
// even cancel the job) paid for a run after the fact. Proves KEY-25 and ERR-27 at a turn.
func TestKEY25_QueuedJobAtItsTurnAfterRevocation(t *testing.T) {
	each(t, options{cfg: func(c *jobs.Config) { c.Concurrency = map[string]int{mQueue: 1} }}, func(t *testing.T, h *harness) {
		ctx := context.Background()
		start := h.balance()
		a := h.submit(mQueue, "", `{"positivePrompt":"block-a"}`)
		if a.Code != 200 || a.str("status") != "IN_PROGRESS" {
			t.Fatalf("a: %d %s", a.Code, a.Raw)
		}
		h.waitStarted(1)
		q := a.num("credits_quoted")
		revoked := h.submit(mQueue, "", `{"positivePrompt":"ok-revoked"}`)
		limitedAcct, limitedKey := h.newAccount("acct_limited", auth.Pro, 1000, nil)
		limited := h.callKey(limitedKey, http.MethodPost, h.queue.URL+"/svc-serverless/"+mQueue, `{"positivePrompt":"ok-limited"}`)
		for _, r := range []resp{revoked, limited} {
			if r.Code != 200 || r.str("status") != "IN_QUEUE" || r.num("credits_charged") != 0 {
				t.Fatalf("queued: %d %s", r.Code, r.Raw)
			}
		}

		// While they wait: the first's key is revoked (another key of the account reads it
		// back), the second's account limited.
		other, err := h.auth.Mint(ctx, auth.MintParams{AccountID: h.account})
		if err != nil {
			t.Fatal(err)
		}
		pk, err := h.auth.Parse(h.key)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := h.auth.Revoke(ctx, pk.ID); err != nil {
			t.Fatal(err)
		}
		if err := h.db.SetAccountStatus(ctx, limitedAcct, auth.Limited); err != nil {
			t.Fatal(err)
		}
		h.runner.Release()
		for _, c := range []struct {
			r       resp
			key     string
			account string
			code    string
			balance int64
		}{
			{revoked, other.Key, h.account, "key_revoked", start - q},
			{limited, limitedKey, limitedAcct, "account_limited", 1000},
		} {
			j := h.waitSettled(c.r.str("request_id"))
			if j.Outcome != jobs.Failed || j.ErrorCode != c.code || j.Charged != 0 || j.Reserved != 0 {
				t.Errorf("%s at its turn: %s %s charged %d reserved %d, want failed %s, never charged", c.code, j.Outcome, j.ErrorCode, j.Charged, j.Reserved, c.code)
			}
			if got := h.balanceOf(c.account); got != c.balance {
				t.Errorf("%s: balance %d, want %d (nothing charged at the turn)", c.code, got, c.balance)
			}
			if st := h.callKey(c.key, http.MethodGet, c.r.str("status_url"), ""); st.Code != 200 || st.str("status") != "COMPLETED" {
				t.Errorf("%s: status %d %s, want COMPLETED", c.code, st.Code, st.Raw)
			}
			if rr := h.callKey(c.key, http.MethodGet, c.r.str("response_url"), ""); rr.str("error") != c.code || rr.Body["charged"] != "no" {
				t.Errorf("%s: result %d %s, want the code, charged no", c.code, rr.Code, rr.Raw)
			}
		}
		if j := h.waitSettled(a.str("request_id")); j.Outcome != jobs.Succeeded || j.Charged != q {
			t.Errorf("the running job: %+v, want succeeded, charged %d (it started before the revocation)", j, q)
		}
	})
}
