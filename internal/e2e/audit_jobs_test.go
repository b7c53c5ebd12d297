package e2e_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/plans"
)

// TestJOB02_StatusDocumentFields: the submit answer of each product names the job the way
// the catalogue does: request_id minted at submit, in its three URLs and distinct from the
// HTTP X-Request-Id (an error body's request_id is the HTTP one); product, model address,
// engine (string), attribution (null where none), expected_seconds and give_up_after_seconds
// as published; provider_job_id the id the job runs under once handed to its model; timed_out
// false when no wait was asked; credits_remaining the balance after the job.
// Proves JOB-02, JOB-06, JOB-07, JOB-08, JOB-09, JOB-10, JOB-15, JOB-16, JOB-17, JOB-20, JOB-22.
func TestJOB02_StatusDocumentFields(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		for _, c := range []struct {
			slug, product, engine string
			expected, giveUp      int64
		}{
			{"image-4b", "photo", "image-4b@1", 8, 300},
			{"music-turbo", "music", "music-turbo@1", 30, 600},
			{"image-9b-kv", "external", "image-9b-kv@1", 6, 300},
		} {
			before := h.balance()
			r := h.submit(c.slug, "", `{"positivePrompt":"ok"}`)
			if r.Code != http.StatusOK {
				t.Fatalf("%s: %d %s", c.slug, r.Code, r.Raw)
			}
			id := r.str("request_id")
			if id == "" || id == r.Header.Get("X-Request-Id") {
				t.Errorf("%s: request_id %q vs X-Request-Id %q", c.slug, id, r.Header.Get("X-Request-Id"))
			}
			base := h.queue.URL + "/svc-serverless/" + c.slug + "/requests/" + id
			if r.str("status_url") != base+"/status" || r.str("response_url") != base || r.str("cancel_url") != base+"/cancel" {
				t.Errorf("%s: urls %s %s %s", c.slug, r.str("status_url"), r.str("response_url"), r.str("cancel_url"))
			}
			if r.str("product") != c.product || r.str("model") != "svc-serverless/"+c.slug || r.str("engine") != c.engine {
				t.Errorf("%s: product/model/engine: %s", c.slug, r.Raw)
			}
			if v, ok := r.Body["attribution"]; !ok || v != nil {
				t.Errorf("%s: attribution %v (present %v), want null", c.slug, v, ok)
			}
			if r.num("expected_seconds") != c.expected || r.num("give_up_after_seconds") != c.giveUp {
				t.Errorf("%s: expected_seconds %v give_up_after_seconds %v", c.slug, r.Body["expected_seconds"], r.Body["give_up_after_seconds"])
			}
			if v, ok := r.Body["timed_out"]; !ok || v != false {
				t.Errorf("%s: timed_out %v (present %v) without wait", c.slug, v, ok)
			}
			if _, ok := r.Body["waited"]; ok {
				t.Errorf("%s: waited present without wait", c.slug)
			}
			// Handed to its model at once (the model refuses a queue): the provider id is set.
			if p, _ := r.Body["provider_job_id"].(string); p == "" || r.str("status") == "IN_QUEUE" {
				t.Errorf("%s: provider_job_id %v status %s", c.slug, r.Body["provider_job_id"], r.str("status"))
			}
			q := r.num("credits_quoted")
			if r.num("credits_charged") != q || r.num("credits_remaining") != before-q {
				t.Errorf("%s: charged %d remaining %d, quote %d, balance before %d", c.slug, r.num("credits_charged"), r.num("credits_remaining"), q, before)
			}
			h.waitSettled(id)
			st := h.status(r, false)
			if st.str("request_id") != id || st.Header.Get("X-Request-Id") == id {
				t.Errorf("%s: status read request_id %q header %q", c.slug, st.str("request_id"), st.Header.Get("X-Request-Id"))
			}
		}
		// An error body's request_id is the HTTP request's (DESIGN 6).
		e := h.submit("image-4b", "wait=0", `{"positivePrompt":"ok"}`)
		if e.str("request_id") == "" || e.str("request_id") != e.Header.Get("X-Request-Id") {
			t.Errorf("error body request_id %q, X-Request-Id %q", e.str("request_id"), e.Header.Get("X-Request-Id"))
		}
	})
}

// TestQST06_QueueDeadlines walks the waiting rows of the queue table on a model that offers a
// queue (one runner seat, product queue deadline 600 s): a job queued with no
// X-Svc-Request-Timeout fails request_timeout once the product deadline passes, refunded (it
// was never charged) with one event; give_up_after_seconds is the job's own wait bound plus
// the run; X-Svc-Request-Timeout bounds the time to start only, never a started run.
// Proves QST-06, QST-11, SUB-17, JOB-17.
func TestQST06_QueueDeadlines(t *testing.T) {
	each(t, options{cfg: func(c *jobs.Config) { c.Concurrency = map[string]int{mQueue: 1} }}, func(t *testing.T, h *harness) {
		a := h.submit(mQueue, "", `{"positivePrompt":"block-a"}`)
		if a.Code != 200 || a.str("status") != "IN_PROGRESS" || a.num("give_up_after_seconds") != 900 {
			t.Fatalf("a: %d %s", a.Code, a.Raw)
		}
		h.waitStarted(1)
		afterA := h.balance()
		b := h.submit(mQueue, "", `{"positivePrompt":"block-b"}`)
		c := h.submit(mQueue, "", `{"positivePrompt":"hold-c"}`, "X-Svc-Request-Timeout", "700")
		if b.str("status") != "IN_QUEUE" || b.num("give_up_after_seconds") != 600+300 {
			t.Fatalf("b: %s", b.Raw)
		}
		if c.str("status") != "IN_QUEUE" || c.num("give_up_after_seconds") != 600+300 {
			t.Fatalf("c (a timeout longer than the deadline changes nothing): %s", c.Raw)
		}
		d := h.submit(mQueue, "", `{"positivePrompt":"hold-d"}`, "X-Svc-Request-Timeout", "30")
		if d.str("status") != "IN_QUEUE" || d.num("give_up_after_seconds") != 30+300 {
			t.Fatalf("d: %s", d.Raw)
		}
		// Past d's 30 s only d fails; past the product's 600 s deadline b and c fail too.
		h.clock.Advance(31 * time.Second)
		h.jobs.Sweep(t.Context())
		if j := h.waitSettled(d.str("request_id")); j.ErrorCode != "request_timeout" || j.Charged != 0 {
			t.Fatalf("d: %+v", j)
		}
		if j := h.job(b.str("request_id")); j.Status != jobs.InQueue {
			t.Fatalf("b settled before the product deadline: %+v", j)
		}
		h.clock.Advance(600 * time.Second)
		h.jobs.Sweep(t.Context())
		for _, x := range []resp{b, c} {
			j := h.waitSettled(x.str("request_id"))
			if j.Outcome != jobs.Failed || j.ErrorCode != "request_timeout" || j.Charged != 0 || j.Reserved != 0 {
				t.Fatalf("past the product deadline: %+v", j)
			}
			// 503 CapacityError: a pair spec 02 lists (408 is not on its list, and reads as a
			// client too slow to send, where this job waited for a seat).
			if rr := h.call(http.MethodGet, x.str("response_url"), ""); rr.Code != http.StatusServiceUnavailable ||
				rr.str("error") != "request_timeout" || rr.str("error_type") != "CapacityError" {
				t.Errorf("result of a timed-out job: %d %s", rr.Code, rr.Raw)
			}
		}
		if h.balance() != afterA {
			t.Fatalf("balance %d, want %d: waiting jobs cost nothing", h.balance(), afterA)
		}

		// A job that started is never stopped by its request timeout.
		e := h.submit(mQueue, "", `{"positivePrompt":"hold-e"}`, "X-Alt-Request-Timeout", "5")
		if e.str("status") != "IN_QUEUE" {
			t.Fatalf("e: %s", e.Raw)
		}
		h.runner.Release()
		h.waitSettled(a.str("request_id"))
		h.waitStarted(1)
		if j := h.job(e.str("request_id")); j.Status != jobs.InProgress || j.Charged != j.Quoted {
			t.Fatalf("e did not start charged: %+v", j)
		}
		h.clock.Advance(6 * time.Second)
		h.jobs.Sweep(t.Context())
		if j := h.job(e.str("request_id")); j.Status != jobs.InProgress {
			t.Fatalf("a started job was stopped by its request timeout: %+v", j)
		}
		cn := h.call(http.MethodPut, e.str("cancel_url"), "")
		if cn.Code != 200 || cn.str("status") != "CANCELLED" {
			t.Fatalf("cancel e: %d %s", cn.Code, cn.Raw)
		}
	})
}

// TestREAD09_CancelRaced: a run that completes just as its cancellation arrives has
// succeeded: the cancel answers 409 cancel_raced with the status, the job keeps its output
// (result read 200) and the charge is the quote, once. Proves READ-09 (cancel_raced), QST-11.
func TestREAD09_CancelRaced(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		before := h.balance()
		r := h.submit(mFast, "", `{"positivePrompt":"stubborn"}`)
		if r.Code != 200 || r.str("status") != "IN_PROGRESS" {
			t.Fatalf("submit: %d %s", r.Code, r.Raw)
		}
		h.waitStarted(1)
		cn := h.call(http.MethodPut, r.str("cancel_url"), "")
		if cn.Code != http.StatusConflict || cn.str("error") != "cancel_raced" || cn.str("status") != "succeeded" {
			t.Fatalf("cancel of a run that completed: %d %s", cn.Code, cn.Raw)
		}
		j := h.job(r.str("request_id"))
		if j.Outcome != jobs.Succeeded || j.Charged != j.Quoted || h.balance() != before-j.Quoted {
			t.Fatalf("job %+v, balance %d", j, h.balance())
		}
		if res := h.call(http.MethodGet, r.str("response_url"), ""); res.Code != 200 || res.str("prompt") != "stubborn" {
			t.Fatalf("result: %d %s", res.Code, res.Raw)
		}
	})
}

// TestREAD07_RefusalWithoutDetail: the model's refusal of the request as written answers 422
// with detail on the result read and on the synchronous host, refunded, even when the runner
// named no field (the detail then names the body) and its code's own row is not 422.
// Proves READ-07, QST-12, SYNC-08.
func TestREAD07_RefusalWithoutDetail(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		before := h.balance()
		r := h.submit(mFast, "wait=10", `{"positivePrompt":"bare-refuse"}`)
		if r.str("status") != "COMPLETED" {
			t.Fatalf("refused: %s", r.Raw)
		}
		check := func(where string, rr resp) {
			t.Helper()
			d, _ := rr.Body["detail"].([]any)
			if rr.Code != 422 || rr.str("error") != "image_unreadable" || len(d) == 0 || rr.str("charged") != "refunded" {
				t.Fatalf("%s: %d %s", where, rr.Code, rr.Raw)
			}
			loc, _ := d[0].(map[string]any)["loc"].([]any)
			if len(loc) == 0 || loc[0] != "body" {
				t.Errorf("%s: detail loc %v", where, loc)
			}
		}
		check("result read", h.call(http.MethodGet, r.str("response_url"), ""))
		check("sync host", h.run(mFast, `{"positivePrompt":"bare-refuse"}`))
		if h.balance() != before {
			t.Fatalf("balance %d, want refunded to %d", h.balance(), before)
		}
	})
}

// TestREAD08_JobsReadReads: a key holding only the always-on scopes (jobs:read, assets:read)
// reads its account's job: status, result and stream; submitting and cancelling need the
// model's write scope. Proves READ-08, READ-01, READ-02, READ-04.
func TestREAD08_JobsReadReads(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		m, err := h.auth.Mint(context.Background(), auth.MintParams{AccountID: h.account, Scopes: []auth.Scope{auth.JobsRead}})
		if err != nil {
			t.Fatal(err)
		}
		reader := m.Key
		r := h.submit(mFast, "wait=10", `{"positivePrompt":"ok"}`)
		if r.str("status") != "COMPLETED" {
			t.Fatalf("submit: %s", r.Raw)
		}
		if st := h.callKey(reader, http.MethodGet, r.str("status_url"), ""); st.Code != 200 || st.str("status") != "COMPLETED" {
			t.Errorf("status with jobs:read: %d %s", st.Code, st.Raw)
		}
		if res := h.callKey(reader, http.MethodGet, r.str("response_url"), ""); res.Code != 200 || res.str("prompt") != "ok" {
			t.Errorf("result with jobs:read: %d %s", res.Code, res.Raw)
		}
		if s := h.callKey(reader, http.MethodGet, r.str("status_url")+"/stream", ""); s.Code != 200 || !strings.Contains(s.Raw, `"status":"COMPLETED"`) {
			t.Errorf("stream with jobs:read: %d %s", s.Code, s.Raw)
		}
		before := h.balance()
		sub := h.callKey(reader, http.MethodPost, h.queue.URL+"/svc-serverless/"+mFast, `{"positivePrompt":"ok"}`)
		expectRefusal(t, h, sub, 403, "insufficient_scope", before, 1)
		if c := h.callKey(reader, http.MethodPut, r.str("cancel_url"), ""); c.Code != 403 || c.str("error") != "insufficient_scope" {
			t.Errorf("cancel with jobs:read: %d %s", c.Code, c.Raw)
		}
	})
}

// TestREAD04_StreamHeldAtMostItsLimit: a status stream of a job that does not settle closes
// once its limit passes (five minutes as shipped; shortened here), having sent the document.
// Proves READ-04.
func TestREAD04_StreamHeldAtMostItsLimit(t *testing.T) {
	each(t, options{streamLimit: 300 * time.Millisecond}, func(t *testing.T, h *harness) {
		r := h.submit(mFast, "", `{"positivePrompt":"hold"}`)
		h.waitStarted(1)
		req, _ := http.NewRequest(http.MethodGet, r.str("status_url")+"/stream", nil)
		req.Header.Set("Authorization", "Bearer "+h.key)
		started := time.Now()
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var last map[string]any
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, "data: ") {
				_ = json.Unmarshal([]byte(line[6:]), &last)
			}
		}
		if took := time.Since(started); took > 5*time.Second {
			t.Fatalf("stream held %v past its limit", took)
		}
		if last == nil || last["status"] != "IN_PROGRESS" || last["request_id"] != r.str("request_id") {
			t.Fatalf("last event %v", last)
		}
		if h.job(r.str("request_id")).Status != jobs.InProgress {
			t.Fatal("closing the stream touched the job")
		}
		if cn := h.call(http.MethodPut, r.str("cancel_url"), ""); cn.Code != 200 {
			t.Fatalf("cancel: %d %s", cn.Code, cn.Raw)
		}
	})
}

// TestJOB31_ResendWhileSeatsFull: a synchronous resend of an existing job's idempotency key
// while every held-connection seat is taken is refused 429 wait_capacity (charged false,
// Retry-After), not answered from the job; nothing more is charged. Proves JOB-31, SYNC-07.
func TestJOB31_ResendWhileSeatsFull(t *testing.T) {
	each(t, options{seats: &plans.Seats{PerAccount: 0, PerProduct: 200, Platform: 1000}}, func(t *testing.T, h *harness) {
		first := h.submit(mFast, "", `{"positivePrompt":"ok","idempotency_key":"resend-1"}`)
		if first.Code != 200 {
			t.Fatalf("first: %d %s", first.Code, first.Raw)
		}
		h.waitSettled(first.str("request_id"))
		before := h.balance()
		r := h.run(mFast, `{"positivePrompt":"ok"}`, "Idempotency-Key", "resend-1")
		expectRefusal(t, h, r, 429, "wait_capacity", before, 1)
		if r.Body["charged"] != false || r.Header.Get("Retry-After") == "" || r.str("wait_declined") != "account_busy" {
			t.Errorf("wait_capacity: %v %s", r.Header, r.Raw)
		}
	})
}

// TestQST10_SyncDeadlineLeavesStateUnchanged: a synchronous run past its deadline answers 504
// run_timed_out and leaves the job as it was: one still waiting to start stays IN_QUEUE and
// uncharged (charged false), then starts and is charged when a seat frees; one running on a
// pass stays running and reads charged true. Proves QST-10, SYNC-03, SYNC-04, SYNC-05.
func TestQST10_SyncDeadlineLeavesStateUnchanged(t *testing.T) {
	each(t, options{waitCeiling: time.Second, cfg: func(c *jobs.Config) { c.Concurrency = map[string]int{mQueueFast: 1} }},
		func(t *testing.T, h *harness) {
			a := h.submit(mQueueFast, "", `{"positivePrompt":"block-a"}`)
			if a.str("status") != "IN_PROGRESS" {
				t.Fatalf("a: %s", a.Raw)
			}
			h.waitStarted(1)
			afterA := h.balance()
			r := h.run(mQueueFast, `{"positivePrompt":"block-s"}`, "Idempotency-Key", "sync-q")
			if r.Code != 504 || r.str("error") != "run_timed_out" || r.Body["charged"] != false ||
				r.Header.Get("X-Svc-Request-Timeout-Type") != "user" {
				t.Fatalf("queued run past its deadline: %d %v %s", r.Code, r.Header, r.Raw)
			}
			st := h.call(http.MethodGet, r.str("status_url"), "")
			if st.str("status") != "IN_QUEUE" || h.balance() != afterA {
				t.Fatalf("after run_timed_out: %s, balance %d want %d", st.Raw, h.balance(), afterA)
			}
			h.runner.Release()
			su := strings.TrimSuffix(r.str("status_url"), "/status")
			h.waitSettled(su[strings.LastIndex(su, "/")+1:])
			again := h.run(mQueueFast, `{"positivePrompt":"block-s"}`, "Idempotency-Key", "sync-q")
			if again.Code != 200 || again.str("prompt") != "block-s" {
				t.Fatalf("resend: %d %s", again.Code, again.Raw)
			}
			j := h.job(again.Header.Get("X-Svc-Request-Id"))
			if j.Outcome != jobs.Succeeded || j.Charged != j.Quoted || h.balance() != afterA-j.Quoted {
				t.Fatalf("resend job %+v, balance %d", j, h.balance())
			}

			// Running on a pass: nothing is taken from the balance, but the job runs: charged true.
			if err := h.db.AddPass(context.Background(), ledger.Pass{ID: "pass_sync", AccountID: h.account, Name: "gold", Models: []string{mFast}, UsesLeft: -1}); err != nil {
				t.Fatal(err)
			}
			before := h.balance()
			p := h.run(mFast, `{"positivePrompt":"hold"}`)
			if p.Code != 504 || p.Body["charged"] != true {
				t.Fatalf("covered run past its deadline: %d %s", p.Code, p.Raw)
			}
			if st := h.call(http.MethodGet, p.str("status_url"), ""); st.str("status") != "IN_PROGRESS" || h.balance() != before {
				t.Fatalf("covered job after run_timed_out: %s, balance %d", st.Raw, h.balance())
			}
			if cn := h.call(http.MethodPut, p.str("response_url")+"/cancel", ""); cn.Code != 200 {
				t.Fatalf("cancel: %d %s", cn.Code, cn.Raw)
			}
		})
}
