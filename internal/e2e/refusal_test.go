package e2e_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/jobs"
)

// TestPRICE23_RefusalsChargeNothing sends every submit refusal of issue 4 items 1-4 and checks
// the answer, its carried fields, and that the balance and the job table are unchanged.
// Proves PRICE-09, PRICE-22, PRICE-23, SUB-02, SUB-05, SUB-09, SUB-13, SUB-16, SUB-21, SUB-24,
// SUB-25, JOB-26, JOB-27, QST-14; an empty body reads as {} (SUB-02 names what it lacks).
func TestPRICE23_RefusalsChargeNothing(t *testing.T) {
	each(t, options{cfg: func(c *jobs.Config) { c.Concurrency = map[string]int{mSlow: 0} }}, func(t *testing.T, h *harness) {
		ok := `{"positivePrompt":"ok"}`
		cases := []struct {
			name, slug, query, body string
			hdr                     []string
			code                    int
			err                     string
			check                   func(t *testing.T, r resp)
		}{
			{"conflicting idempotency", mFast, "", `{"positivePrompt":"ok","idempotency_key":"a"}`, []string{"Idempotency-Key", "b"}, 422, "conflicting_options",
				func(t *testing.T, r resp) {
					if r.Body["options"] == nil || r.str("option") == "" {
						t.Errorf("conflicting_options lacks options/option: %s", r.Raw)
					}
				}},
			{"conflicting webhook", mFast, "webhook=https://a.example.com/h&alt_webhook=https://b.example.com/h", ok, nil, 422, "conflicting_options", nil},
			{"conflicting priority", mQueue, "", ok, []string{"X-Svc-Priority", "low", "X-Alt-Queue-Priority", "normal"}, 422, "conflicting_options", nil},
			{"conflicting timeout", mQueue, "", ok, []string{"X-Svc-Request-Timeout", "5", "X-Alt-Request-Timeout", "6"}, 422, "conflicting_options", nil},
			{"max_queue_length on a refusing model", mFast, "max_queue_length=3", ok, nil, 422, "queue_not_offered",
				func(t *testing.T, r resp) {
					if r.str("option") != "max_queue_length" {
						t.Errorf("option %q", r.str("option"))
					}
				}},
			{"alt_max_queue_length on a refusing model", mFast, "alt_max_queue_length=3", ok, nil, 422, "queue_not_offered",
				func(t *testing.T, r resp) {
					if r.str("option") != "alt_max_queue_length" {
						t.Errorf("option %q", r.str("option"))
					}
				}},
			{"priority on a refusing model", mFast, "", ok, []string{"X-Svc-Priority", "low"}, 422, "queue_not_offered", nil},
			{"alt priority on a refusing model", mFast, "", ok, []string{"X-Alt-Queue-Priority", "normal"}, 422, "queue_not_offered",
				func(t *testing.T, r resp) {
					if r.str("option") != "X-Alt-Queue-Priority" {
						t.Errorf("option %q", r.str("option"))
					}
				}},
			{"wait 0", mFast, "wait=0", ok, nil, 0, "invalid_wait", func(t *testing.T, r resp) {
				if r.num("max") != 300 {
					t.Errorf("invalid_wait max %v", r.Body["max"])
				}
			}},
			{"wait 301", mFast, "wait=301", ok, nil, 0, "invalid_wait", nil},
			{"idempotency key in body", mFast, "", `{"positivePrompt":"ok","idempotency_key":"no spaces!"}`, nil, 422, "invalid_idempotency_key", nil},
			{"idempotency key too long", mFast, "", ok, []string{"Idempotency-Key", strings.Repeat("k", 65)}, 422, "invalid_idempotency_key", nil},
			{"not json", mFast, "", `{"positivePrompt":`, nil, 422, "invalid_json", nil},
			{"not an object", mFast, "", `[1,2]`, nil, 422, "invalid_body", nil},
			{"invalid input", mFast, "", `{"positivePrompt":"ok","num_inference_steps":"many"}`, nil, 422, "invalid_input", func(t *testing.T, r resp) {
				d, _ := r.Body["detail"].([]any)
				if len(d) == 0 {
					t.Fatalf("invalid_input without detail: %s", r.Raw)
				}
				loc, _ := d[0].(map[string]any)["loc"].([]any)
				if len(loc) < 2 || loc[0] != "body" {
					t.Errorf("detail loc %v", loc)
				}
			}},
			{"missing field", mFast, "", `{}`, nil, 422, "invalid_input", func(t *testing.T, r resp) {
				d, _ := r.Body["detail"].([]any)
				if len(d) == 0 || !strings.Contains(r.Raw, `"loc":["body","positivePrompt"]`) {
					t.Errorf("detail %s", r.Raw)
				}
			}},
			{"no body", mFast, "", ``, nil, 422, "invalid_input", func(t *testing.T, r resp) {
				if !strings.Contains(r.Raw, `"loc":["body","positivePrompt"]`) {
					t.Errorf("an empty body should read as {} and name the missing field: %s", r.Raw)
				}
			}},
			{"blank body", mFast, "", " \n", nil, 422, "invalid_input", func(t *testing.T, r resp) {
				if !strings.Contains(r.Raw, `"loc":["body","positivePrompt"]`) {
					t.Errorf("a blank body should read as {} and name the missing field: %s", r.Raw)
				}
			}},
			{"band not priced", "image-lite", "", `{"positivePrompt":"ok","width":1280,"height":768}`, nil, 422, "band_not_priced", func(t *testing.T, r resp) {
				if r.str("message") == "" {
					t.Errorf("band_not_priced without message")
				}
			}},
			{"described model", mDescribed, "", ok, nil, 501, "model_not_connected", nil},
			{"paused model", mPaused, "", ok, nil, 503, "model_disabled", nil},
			{"covered only, no pass", mFast, "", ok, []string{"X-Svc-Covered-Only", "true"}, 409, "not_covered", nil},
			{"service busy", mSlow, "", ok, nil, 429, "service_busy", nil},
			{"webhook not https", mFast, "webhook=http://example.com/h", ok, nil, 0, "invalid_url", nil},
			{"webhook loopback", mFast, "webhook=https://127.0.0.1/h", ok, nil, 0, "invalid_url", nil},
			{"bad priority value", mQueue, "", ok, []string{"X-Svc-Priority", "urgent"}, 422, "invalid_input", nil},
			{"bad timeout value", mQueue, "", ok, []string{"X-Svc-Request-Timeout", "0.5"}, 422, "invalid_input", nil},
			{"unknown model", "no-such-model", "", ok, nil, 404, "not_found", nil},
		}
		before, n := h.balance(), h.countJobs()
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				r := h.submit(c.slug, c.query, c.body, c.hdr...)
				code := c.code
				if code == 0 {
					code = r.Code // the catalogue row decides; only the code name is checked
					if code < 400 {
						t.Fatalf("want %s, got %d %s", c.err, r.Code, r.Raw)
					}
				}
				expectRefusal(t, h, r, code, c.err, before, n)
				if c.check != nil {
					c.check(t, r)
				}
			})
		}
		// A Covered-Only value other than 1/true reads as no header; a request timeout on a
		// model that does not queue is accepted (SUB-18, SUB-20).
		r := h.submit(mFast, "wait=10", ok, "X-Svc-Covered-Only", "yes", "X-Svc-Request-Timeout", "30")
		if r.Code != 200 || r.str("status") != "COMPLETED" {
			t.Fatalf("covered-only=yes / request timeout on a refusing model: %d %s", r.Code, r.Raw)
		}
		// One option under two spellings with the same value however written is one option,
		// not a conflict (SUB-24: only different values conflict).
		r = h.submit(mQueue, "max_queue_length=03&alt_max_queue_length=3", ok, "X-Svc-Request-Timeout", "10", "X-Alt-Request-Timeout", "10.0")
		if r.Code >= 300 || r.str("request_id") == "" {
			t.Fatalf("the same values under two spellings: %d %s", r.Code, r.Raw)
		}
	})
}

// TestPRICE22_InsufficientCreditsAndCeiling: a balance below the quote is 402 with required
// and balance; a key whose ceiling the quote passes is key_credit_ceiling; nothing charged.
// Proves PRICE-22, PRICE-23.
func TestPRICE22_InsufficientCreditsAndCeiling(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		poor, poorKey := h.newAccount("acct_poor", auth.Pro, 3, nil)
		r := h.callKey(poorKey, http.MethodPost, h.queue.URL+"/svc-serverless/"+mFast, `{"positivePrompt":"ok"}`)
		if r.Code != 402 || r.str("error") != "insufficient_credits" || r.num("balance") != 3 || r.num("required") <= 3 {
			t.Fatalf("insufficient: %d %s", r.Code, r.Raw)
		}
		if h.balanceOf(poor) != 3 || h.countJobs() != 0 {
			t.Fatalf("charged on refusal: balance %d jobs %d", h.balanceOf(poor), h.countJobs())
		}
		capped, cappedKey := h.newAccount("acct_capped", auth.Pro, 1000, &auth.CeilingRequest{Amount: 5})
		r = h.callKey(cappedKey, http.MethodPost, h.queue.URL+"/svc-serverless/"+mFast, `{"positivePrompt":"ok"}`)
		if r.str("error") != "key_credit_ceiling" {
			t.Fatalf("ceiling: %d %s", r.Code, r.Raw)
		}
		if h.balanceOf(capped) != 1000 || h.countJobs() != 0 {
			t.Fatalf("charged on ceiling refusal: balance %d jobs %d", h.balanceOf(capped), h.countJobs())
		}
		// The same key with a cheap model under its cap runs (the ceiling counts spend).
		r = h.callKey(cappedKey, http.MethodPost, h.queue.URL+"/svc-serverless/image-4b?wait=10", `{"positivePrompt":"ok"}`)
		if r.Code != 200 || r.num("credits_charged") > 5 {
			t.Fatalf("under the cap: %d %s", r.Code, r.Raw)
		}
	})
}

// TestQST14_TooManyJobs: an account with its plan's limit in flight is refused too_many_jobs,
// nothing charged. Proves issue 4 item 4 (too_many_jobs), PRICE-23.
func TestQST14_TooManyJobs(t *testing.T) {
	each(t, options{cfg: func(c *jobs.Config) { c.InFlight[auth.Pro] = 1 }}, func(t *testing.T, h *harness) {
		r := h.submit(mFast, "", `{"positivePrompt":"block"}`)
		if r.Code != 200 || r.str("status") != "IN_PROGRESS" {
			t.Fatalf("first: %d %s", r.Code, r.Raw)
		}
		before := h.balance()
		r2 := h.submit(mFast, "", `{"positivePrompt":"ok"}`)
		expectRefusal(t, h, r2, 429, "too_many_jobs", before, 1)
		h.runner.Release()
		h.waitSettled(r.str("request_id"))
		if r3 := h.submit(mFast, "wait=10", `{"positivePrompt":"ok"}`); r3.Code != 200 {
			t.Fatalf("after the first settled: %d %s", r3.Code, r3.Raw)
		}
	})
}

// TestERR07_MethodNotAllowedOnModelHosts: on the queue and synchronous hosts a known path under
// another method answers 405 method_not_allowed with Allow, an unknown path 404 not_found;
// neither charges or creates anything. Proves ERR-07 on the model hosts.
func TestERR07_MethodNotAllowedOnModelHosts(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		before, n := h.balance(), h.countJobs()
		for _, c := range []struct {
			method, url, allow string
			code               int
			err                string
		}{
			{http.MethodGet, h.queue.URL + "/svc-serverless/" + mFast, "POST", 405, "method_not_allowed"},
			{http.MethodDelete, h.sync.URL + "/svc-serverless/" + mFast, "POST", 405, "method_not_allowed"},
			{http.MethodPost, h.queue.URL + "/svc-serverless/" + mFast + "/requests/req_x/cancel", "PUT", 405, "method_not_allowed"},
			{http.MethodGet, h.queue.URL + "/nowhere", "", 404, "not_found"},
			{http.MethodGet, h.sync.URL + "/api/svc-serverless/" + mFast, "", 404, "not_found"},
		} {
			r := h.call(c.method, c.url, "")
			if r.Code != c.code || r.str("error") != c.err || r.Header.Get("Allow") != c.allow {
				t.Errorf("%s %s: %d Allow %q %s; want %d %s Allow %q", c.method, c.url, r.Code, r.Header.Get("Allow"), r.Raw, c.code, c.err, c.allow)
			}
		}
		if h.balance() != before || h.countJobs() != n {
			t.Fatalf("balance %d jobs %d, want %d and %d", h.balance(), h.countJobs(), before, n)
		}
	})
}
