package e2e_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/modelexec/modelexec/internal/jobs"
)

// TestQST02_SubmitWaitCompletes walks (none) → IN_PROGRESS → COMPLETED with wait: 200, the
// status document carries every field, the charge is the quote and settles at it, status and
// result reads answer, logs only when asked.
// Proves QST-02, QST-09, JOB-01..JOB-22 (fields), SUB-04, SUB-07, READ-01, READ-02, READ-06,
// JOB-04, JOB-29, PRICE-01 (quoted at submit, charged the quote, never above: checkBooks), PRICE-02.
func TestQST02_SubmitWaitCompletes(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		before := h.balance()
		r := h.submit(mFast, "wait=10", `{"positivePrompt":"ok"}`)
		if r.Code != http.StatusOK {
			t.Fatalf("submit: %d %s", r.Code, r.Raw)
		}
		q := r.num("credits_quoted")
		if r.str("status") != "COMPLETED" || q <= 0 || r.num("credits_charged") != q || r.Body["waited"] != true || r.Body["timed_out"] != false {
			t.Fatalf("submit doc: %s", prettyBody(r.Body))
		}
		if r.num("credits_remaining") != before-q || h.balance() != before-q {
			t.Fatalf("credits_remaining %d, balance %d, want %d", r.num("credits_remaining"), h.balance(), before-q)
		}
		for _, k := range []string{"request_id", "product", "provider_job_id", "model", "engine", "attribution", "credits_charged", "credits_quoted",
			"credits_remaining", "expected_seconds", "give_up_after_seconds", "replayed", "status_url", "response_url", "cancel_url", "metrics"} {
			if _, ok := r.Body[k]; !ok {
				t.Errorf("submit doc lacks %q", k)
			}
		}
		if _, ok := r.Body["logs"]; ok {
			t.Error("logs present without logs=1")
		}
		if r.str("model") != "svc-serverless/"+mFast || r.str("product") != "photo" || r.Body["replayed"] != false {
			t.Errorf("doc: %s", prettyBody(r.Body))
		}
		st := h.status(r, false)
		if st.Code != http.StatusOK || st.str("status") != "COMPLETED" || st.str("request_id") != r.str("request_id") {
			t.Fatalf("status: %d %s", st.Code, st.Raw)
		}
		if _, ok := st.Body["logs"]; ok {
			t.Error("status logs present without logs=1")
		}
		st = h.status(r, true)
		if logs, _ := st.Body["logs"].([]any); len(logs) == 0 {
			t.Errorf("status with logs=1 has no log lines: %s", st.Raw)
		}
		res := h.call(http.MethodGet, r.str("response_url"), "")
		if res.Code != http.StatusOK || res.str("prompt") != "ok" {
			t.Fatalf("result: %d %s", res.Code, res.Raw)
		}
		// Trailing-slash forms fal's Python client sends.
		if s := h.call(http.MethodGet, r.str("status_url")+"/", ""); s.Code != http.StatusOK {
			t.Errorf("status with trailing slash: %d", s.Code)
		}
		j := h.job(r.str("request_id"))
		if j.Outcome != jobs.Succeeded || j.Charged != q || !strings.HasPrefix(j.ID, "photo_k") {
			t.Errorf("job record: %+v", j)
		}
	})
}

// TestJOB28_ReplaySameKey: the same key (body, then header) answers the first request,
// replayed, credits_charged 0, charged once, also through another model's path. Proves JOB-18,
// JOB-23 (alias), JOB-26, JOB-28, SUB-23.
func TestJOB28_ReplaySameKey(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		before := h.balance()
		first := h.submit(mFast, "wait=10", `{"positivePrompt":"ok","idempotency_key":"order-1"}`)
		if first.Code != 200 || first.Body["replayed"] != false {
			t.Fatalf("first: %d %s", first.Code, first.Raw)
		}
		q := first.num("credits_quoted")
		for _, r := range []resp{
			h.submit(mFast, "", `{"positivePrompt":"ok","idempotency_key":"order-1"}`),
			h.submit(mFast, "", `{"positivePrompt":"something else"}`, "Idempotency-Key", "order-1"),
		} {
			if r.Code != 200 || r.Body["replayed"] != true || r.num("credits_charged") != 0 || r.str("request_id") != first.str("request_id") {
				t.Fatalf("replay: %d %s", r.Code, r.Raw)
			}
			if r.num("credits_remaining") != before-q {
				t.Errorf("replay credits_remaining %d, want %d", r.num("credits_remaining"), before-q)
			}
		}
		// Through another model's path the key answers the same job, every field of it that
		// job's (not engine and timings of the model in the path).
		other := h.submit(mQueue, "", `{"positivePrompt":"ok"}`, "Idempotency-Key", "order-1")
		if other.Code != 200 || other.Body["replayed"] != true || other.str("request_id") != first.str("request_id") {
			t.Fatalf("replay through %s: %d %s", mQueue, other.Code, other.Raw)
		}
		for _, k := range []string{"model", "product", "engine", "expected_seconds", "give_up_after_seconds", "status_url", "credits_quoted"} {
			if fmt.Sprint(other.Body[k]) != fmt.Sprint(first.Body[k]) {
				t.Errorf("replay through %s: %s = %v, the job's is %v", mQueue, k, other.Body[k], first.Body[k])
			}
		}
		if h.balance() != before-q || h.countJobs() != 1 {
			t.Fatalf("balance %d jobs %d: want %d and 1", h.balance(), h.countJobs(), before-q)
		}
		// The id is fresh, never the key (DESIGN 37).
		j := h.job(first.str("request_id"))
		if !strings.HasPrefix(j.ID, "photo_") || strings.Contains(j.ID, "order-1") {
			t.Errorf("job id %q, want a fresh photo_ id", j.ID)
		}
	})
}

// TestJOB28_ConcurrentSameKey: many concurrent submits with one key make one job and one
// charge; every answer names the same request. Proves JOB-28 under concurrency.
func TestJOB28_ConcurrentSameKey(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		before := h.balance()
		out := h.atOnce(16, mFast, `{"positivePrompt":"ok"}`, "same-key")
		fresh := 0
		for _, r := range out {
			if r.Code != 200 {
				t.Fatalf("concurrent submit: %d %s", r.Code, r.Raw)
			}
			if r.str("request_id") != out[0].str("request_id") {
				t.Fatalf("two request ids for one key: %s / %s", r.str("request_id"), out[0].str("request_id"))
			}
			if r.Body["replayed"] == false {
				fresh++
			}
		}
		if fresh != 1 {
			t.Errorf("%d answers not replayed, want 1", fresh)
		}
		j := h.waitSettled(out[0].str("request_id"))
		if h.countJobs() != 1 || h.balance() != before-j.Quoted {
			t.Fatalf("jobs %d balance %d, want 1 and %d", h.countJobs(), h.balance(), before-j.Quoted)
		}
	})
}

// TestJOB28_ConcurrentSameKeyAtCapacity: concurrent submits under one key of a model whose one
// slot the first of them takes are all answered by that first request, replayed, never
// service_busy: the key's request was placed, and a refusal judged on the slot it took is not
// the key's answer. Proves JOB-28 at capacity.
func TestJOB28_ConcurrentSameKeyAtCapacity(t *testing.T) {
	each(t, options{cfg: func(c *jobs.Config) { c.ModelConcurrency = 1 }}, func(t *testing.T, h *harness) {
		out := h.atOnce(12, mFast, `{"positivePrompt":"block"}`, "busy-key")
		h.runner.Release()
		for _, r := range out {
			if r.Code != 200 || r.str("request_id") != out[0].str("request_id") {
				t.Fatalf("concurrent submit under one key at capacity: %d %s", r.Code, r.Raw)
			}
		}
		h.waitSettled(out[0].str("request_id"))
		if h.countJobs() != 1 {
			t.Fatalf("%d jobs for one key", h.countJobs())
		}
		h.checkBooks()
	})
}

// atOnce sends n submits of body to slug under one idempotency key, all at once, and returns
// their answers.
func (h *harness) atOnce(n int, slug, body, key string) []resp {
	out := make([]resp, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { out[i] = h.submit(slug, "", body, "Idempotency-Key", key) })
	}
	wg.Wait()
	return out
}

// expectRefusal checks an error answer and that nothing was charged or stored.
func expectRefusal(t *testing.T, h *harness, r resp, code int, errCode string, before int64, jobsBefore int) {
	t.Helper()
	if r.Code != code || r.str("error") != errCode {
		t.Fatalf("want %d %s, got %d %s", code, errCode, r.Code, r.Raw)
	}
	if b := h.balance(); b != before {
		t.Errorf("%s: balance %d, want unchanged %d", errCode, b, before)
	}
	if n := h.countJobs(); n != jobsBefore {
		t.Errorf("%s: %d jobs, want %d", errCode, n, jobsBefore)
	}
}

var _ = fmt.Sprint

// TestJOB29_MintedKeyReplays: a submit sent without a key gets one minted, "k" and its request
// id, and the job id <product>_<minted key>; the minted key sent again (body or header) answers
// the first request, replayed and not charged again, as a key the caller chose would. Proves
// JOB-29 and JOB-28 for a minted key.
func TestJOB29_MintedKeyReplays(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		before := h.balance()
		first := h.submit(mFast, "wait=10", `{"positivePrompt":"ok"}`)
		if first.Code != http.StatusOK || first.Body["replayed"] != false {
			t.Fatalf("first: %d %s", first.Code, first.Raw)
		}
		q := first.num("credits_quoted")
		j := h.job(first.str("request_id"))
		key := "k" + first.str("request_id")
		if j.IdempotencyKey != key || j.ID != "photo_"+key {
			t.Fatalf("minted key %q and id %q, want %q and photo_%s", j.IdempotencyKey, j.ID, key, key)
		}
		for _, r := range []resp{
			h.submit(mFast, "", `{"positivePrompt":"ok","idempotency_key":"`+key+`"}`),
			h.submit(mFast, "", `{"positivePrompt":"else"}`, "Idempotency-Key", key),
		} {
			if r.Code != http.StatusOK || r.Body["replayed"] != true || r.num("credits_charged") != 0 || r.str("request_id") != first.str("request_id") {
				t.Fatalf("replay by the minted key: %d %s", r.Code, r.Raw)
			}
		}
		if h.balance() != before-q || h.countJobs() != 1 {
			t.Fatalf("balance %d jobs %d: want %d and 1", h.balance(), h.countJobs(), before-q)
		}
	})
}
