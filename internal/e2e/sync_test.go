package e2e_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/plans"
)

func (h *harness) run(slug, body string, hdr ...string) resp {
	h.t.Helper()
	return h.call(http.MethodPost, h.sync.URL+"/svc-serverless/"+slug, body, hdr...)
}

// TestSYNC01_SyncHost: the synchronous host answers the model's output and charges the quote;
// a model slower than the wait ceiling is refused before any charge; a run that failed answers
// its error class, refunded. Proves SYNC-01, SYNC-02, SYNC-08, PRICE-23 (model_not_synchronous).
func TestSYNC01_SyncHost(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		before := h.balance()
		r := h.run(mFast, `{"positivePrompt":"ok"}`)
		if r.Code != 200 || r.str("prompt") != "ok" || r.Header.Get("X-Svc-Request-Id") == "" {
			t.Fatalf("sync run: %d %s", r.Code, r.Raw)
		}
		j := h.job(r.Header.Get("X-Svc-Request-Id"))
		if j.Outcome != jobs.Succeeded || h.balance() != before-j.Quoted {
			t.Fatalf("sync job %+v balance %d", j, h.balance())
		}
		before, n := h.balance(), h.countJobs()
		r = h.run(mSlow, `{"positivePrompt":"ok"}`)
		expectRefusal(t, h, r, 400, "model_not_synchronous", before, n)
		if r.num("expected_seconds") != 120 || r.num("wait_ceiling_seconds") != 60 {
			t.Errorf("model_not_synchronous fields: %s", r.Raw)
		}
		r = h.run(mDescribed, `{"positivePrompt":"ok"}`)
		expectRefusal(t, h, r, 501, "model_not_connected", before, n)
		r = h.run(mFast, `{"positivePrompt":"refuse"}`)
		if r.Code != 422 || r.str("error") != "content_policy" || r.Body["detail"] == nil {
			t.Errorf("sync refused: %d %s", r.Code, r.Raw)
		}
		r = h.run(mFast, `{"positivePrompt":"fail"}`)
		if r.Code < 500 || r.str("error") != "run_failed" {
			t.Errorf("sync failed: %d %s", r.Code, r.Raw)
		}
		if h.balance() != before {
			t.Errorf("failed sync runs not refunded: balance %d want %d", h.balance(), before)
		}
	})
}

// TestSYNC03_RunTimedOut: past the wait ceiling the answer is 504 run_timed_out with
// X-Svc-Request-Timeout-Type: user and charged true; the job keeps running (QST-10); a resend
// with the same key is handed the same request and its output, charged once.
// Proves SYNC-03, SYNC-04, SYNC-05, QST-10, JOB-30.
func TestSYNC03_RunTimedOut(t *testing.T) {
	each(t, options{waitCeiling: time.Second}, func(t *testing.T, h *harness) {
		before := h.balance()
		r := h.run(mFast, `{"positivePrompt":"block"}`, "Idempotency-Key", "sync-1")
		if r.Code != 504 || r.str("error") != "run_timed_out" || r.Header.Get("X-Svc-Request-Timeout-Type") != "user" {
			t.Fatalf("timed out: %d %v %s", r.Code, r.Header, r.Raw)
		}
		// fal's client retries a 504 (each retry a new job, charged again) unless its own
		// spelling says the timeout was the user's.
		if r.Header.Get("X-Fal-Request-Timeout-Type") != "user" {
			t.Fatalf("run_timed_out without X-Fal-Request-Timeout-Type: %v", r.Header)
		}
		if r.Body["charged"] != true && r.Body["charged"] != "yes" {
			t.Errorf("run_timed_out charged = %v, want true for a running job", r.Body["charged"])
		}
		// The body's request_id is the HTTP request's (every error body carries it); the job's
		// request id is in status_url.
		su := strings.TrimSuffix(r.str("status_url"), "/status")
		id := su[strings.LastIndex(su, "/")+1:]
		if r.str("idempotency_key") != "sync-1" {
			t.Errorf("run_timed_out idempotency_key: %s", r.Raw)
		}
		j := h.job(id)
		if j.Status != jobs.InProgress || h.balance() != before-j.Quoted {
			t.Fatalf("after run_timed_out: %s, balance %d", j.Status, h.balance())
		}
		if st := h.call(http.MethodGet, r.str("status_url"), ""); st.str("status") != "IN_PROGRESS" {
			t.Errorf("status_url after run_timed_out: %s", st.Raw)
		}
		h.runner.Release()
		r2 := h.run(mFast, `{"positivePrompt":"block"}`, "Idempotency-Key", "sync-1")
		if r2.Code != 200 || r2.Header.Get("X-Svc-Request-Id") != id {
			t.Fatalf("resend: %d %s", r2.Code, r2.Raw)
		}
		if h.balance() != before-j.Quoted || h.countJobs() != 1 {
			t.Errorf("resend charged again: balance %d jobs %d", h.balance(), h.countJobs())
		}
	})
}

// TestSYNC07_SeatsFull: with no held-connection seat the synchronous host answers 429
// wait_capacity with Retry-After and charged false, nothing held; a queue submit with wait
// runs anyway with wait_declined; a status stream is 503 stream_declined.
// Proves SYNC-06, SYNC-07, JOB-21, JOB-31, SUB-06, READ-05, PRICE-23 (wait_capacity).
func TestSYNC07_SeatsFull(t *testing.T) {
	each(t, options{seats: &plans.Seats{PerAccount: 0, PerProduct: 200, Platform: 1000}}, func(t *testing.T, h *harness) {
		before := h.balance()
		r := h.run(mFast, `{"positivePrompt":"ok"}`, "Idempotency-Key", "full-1")
		expectRefusal(t, h, r, 429, "wait_capacity", before, 0)
		if r.Header.Get("Retry-After") == "" || (r.Body["charged"] != false && r.Body["charged"] != "no") {
			t.Errorf("wait_capacity: %v %s", r.Header, r.Raw)
		}
		q := h.submit(mFast, "wait=5", `{"positivePrompt":"ok"}`)
		if q.Code != 200 || q.str("wait_declined") != "account_busy" || q.Body["waited"] != false {
			t.Fatalf("wait with no seat: %d %s", q.Code, q.Raw)
		}
		h.waitSettled(q.str("request_id"))
		st := h.call(http.MethodGet, q.str("status_url")+"/stream", "")
		if st.Code != 503 || st.str("error") != "stream_declined" || st.str("declined") != "account_busy" {
			t.Errorf("stream with no seat: %d %s", st.Code, st.Raw)
		}
	})
}

// TestJOB13_Coverage: a pass pays (coverage.by pass, credits_charged 0, balance unchanged,
// covered-only accepted); a pass for other models misses by door, one too small by shape, and
// the job is charged; a promotion pays before a pass. Proves JOB-13, JOB-14, SUB-21.
func TestJOB13_Coverage(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		ctx := context.Background()
		if err := h.db.AddPass(ctx, ledger.Pass{ID: "pass_door", AccountID: h.account, Name: "studio", Models: []string{"image-4b"}, UsesLeft: -1}); err != nil {
			t.Fatal(err)
		}
		before := h.balance()
		r := h.submit(mFast, "wait=10", `{"positivePrompt":"ok"}`)
		cov, _ := r.Body["coverage"].(map[string]any)
		miss, _ := cov["miss"].(map[string]any)
		if cov == nil || cov["by"] != nil || miss["why"] != "door" || miss["pass"] != "studio" || r.num("credits_charged") != r.num("credits_quoted") {
			t.Fatalf("door miss: %s", r.Raw)
		}
		before -= r.num("credits_charged")
		r = h.submit(mFast, "", `{"positivePrompt":"ok"}`, "X-Svc-Covered-Only", "1")
		expectRefusal(t, h, r, 409, "not_covered", before, 1)

		if err := h.db.AddPass(ctx, ledger.Pass{ID: "pass_shape", AccountID: h.account, Name: "small", MaxCredits: 1, UsesLeft: -1}); err != nil {
			t.Fatal(err)
		}
		if err := h.db.AddPass(ctx, ledger.Pass{ID: "pass_all", AccountID: h.account, Name: "gold", Models: []string{mFast}, UsesLeft: 1}); err != nil {
			t.Fatal(err)
		}
		r = h.submit(mFast, "wait=10", `{"positivePrompt":"ok"}`, "X-Svc-Covered-Only", "true")
		cov, _ = r.Body["coverage"].(map[string]any)
		if r.Code != 200 || cov["by"] != "pass" || cov["pass"] != "gold" || r.num("credits_charged") != 0 || h.balance() != before {
			t.Fatalf("covered by pass: %d %s, balance %d want %d", r.Code, r.Raw, h.balance(), before)
		}
		// The pass had one use: the next request misses (the shape pass is too small).
		r = h.submit(mFast, "wait=10", `{"positivePrompt":"ok"}`)
		cov, _ = r.Body["coverage"].(map[string]any)
		miss, _ = cov["miss"].(map[string]any)
		if cov == nil || cov["by"] != nil || miss == nil || r.num("credits_charged") == 0 {
			t.Fatalf("after the pass ran out: %s", r.Raw)
		}
		before -= r.num("credits_charged")
		if err := h.db.AddPass(ctx, ledger.Pass{ID: "promo", AccountID: h.account, Name: "launch", Promotion: true, UsesLeft: -1}); err != nil {
			t.Fatal(err)
		}
		r = h.submit(mFast, "wait=10", `{"positivePrompt":"ok"}`)
		cov, _ = r.Body["coverage"].(map[string]any)
		if cov["by"] != "promotion" || r.num("credits_charged") != 0 || h.balance() != before {
			t.Fatalf("promotion: %s balance %d", r.Raw, h.balance())
		}
	})
}

// TestSUB04_WaitTimesOut: a wait that runs out answers 200 with the status document, waited
// true and timed_out true; the job keeps running and settles later. Proves SUB-04, JOB-19, JOB-20.
func TestSUB04_WaitTimesOut(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		r := h.submit(mFast, "wait=1", `{"positivePrompt":"block"}`)
		if r.Code != 200 || r.str("status") != "IN_PROGRESS" || r.Body["waited"] != true || r.Body["timed_out"] != true {
			t.Fatalf("wait ran out: %d %s", r.Code, r.Raw)
		}
		h.runner.Release()
		if j := h.waitSettled(r.str("request_id")); j.Outcome != jobs.Succeeded {
			t.Fatalf("after the wait: %+v", j)
		}
	})
}
