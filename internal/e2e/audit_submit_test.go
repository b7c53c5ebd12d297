package e2e_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestSUB08_WebhookAndWaitRefusals: a per-request webhook (webhook or its alias alt_webhook)
// that passes the URL policy is stored on the job; one that does not (not https, user-info,
// loopback or private host, over 2,000 characters) and a wait outside 1 to 300 are refused on
// the queue host 422 with detail before any charge (DESIGN 12), invalid_url carrying reason
// and invalid_wait carrying max. Proves SUB-05, SUB-08, SUB-09, SUB-25.
func TestSUB08_WebhookAndWaitRefusals(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		ok := `{"positivePrompt":"ok"}`
		before := h.balance()
		long := "https://hooks.example.com/" + strings.Repeat("a", 2000)
		for _, c := range []struct{ query, code string }{
			{"wait=0", "invalid_wait"},
			{"wait=301", "invalid_wait"},
			{"wait=ten", "invalid_wait"},
			{"webhook=" + url.QueryEscape("http://hooks.example.com/h"), "invalid_url"},
			{"webhook=" + url.QueryEscape("https://user:pw@hooks.example.com/h"), "invalid_url"},
			{"alt_webhook=" + url.QueryEscape("https://localhost/h"), "invalid_url"},
			{"webhook=" + url.QueryEscape("https://10.0.0.7/h"), "invalid_url"},
			{"webhook=" + url.QueryEscape(long), "invalid_url"},
		} {
			r := h.submit(mFast, c.query, ok)
			expectRefusal(t, h, r, http.StatusUnprocessableEntity, c.code, before, 0)
			if d, _ := r.Body["detail"].([]any); len(d) == 0 {
				t.Errorf("%s: no detail: %s", c.query, r.Raw)
			}
			switch c.code {
			case "invalid_wait":
				if r.num("max") != 300 {
					t.Errorf("%s: max %v", c.query, r.Body["max"])
				}
			case "invalid_url":
				if r.str("reason") == "" {
					t.Errorf("%s: no reason: %s", c.query, r.Raw)
				}
			}
		}
		for _, q := range []string{"webhook=", "alt_webhook="} {
			hook := "https://hooks.example.com/" + q[:len(q)-1]
			r := h.submit(mFast, q+url.QueryEscape(hook), ok)
			if r.Code != http.StatusOK {
				t.Fatalf("%s: %d %s", q, r.Code, r.Raw)
			}
			if j := h.job(r.str("request_id")); j.Webhook != hook {
				t.Errorf("%s: stored webhook %q, want %q", q, j.Webhook, hook)
			}
		}
		// The same address under both spellings is one option, not a conflict.
		same := url.QueryEscape("https://hooks.example.com/same")
		if r := h.submit(mFast, "webhook="+same+"&alt_webhook="+same, ok); r.Code != http.StatusOK {
			t.Errorf("same webhook twice: %d %s", r.Code, r.Raw)
		}
	})
}

// TestREAD02_ResultBeforeCompleted: until the job is COMPLETED its status read answers the
// status document (200: a 202 is dispatch_unresolved's, with message and docs) and its result
// read 409 not_ready carrying the queue status; once COMPLETED the result read answers the
// output. Proves READ-01, READ-02, JOB-23.
func TestREAD02_ResultBeforeCompleted(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		r := h.submit(mFast, "", `{"positivePrompt":"block"}`)
		h.waitStarted(1)
		if st := h.status(r, false); st.Code != http.StatusOK || st.str("status") != "IN_PROGRESS" || st.str("request_id") != r.str("request_id") {
			t.Fatalf("status while running: %d %s", st.Code, st.Raw)
		}
		res := h.call(http.MethodGet, r.str("response_url"), "")
		if res.Code != http.StatusConflict || res.str("error") != "not_ready" || res.str("status") != "IN_PROGRESS" {
			t.Fatalf("result while running: %d %s", res.Code, res.Raw)
		}
		h.runner.Release()
		h.waitSettled(r.str("request_id"))
		if res := h.call(http.MethodGet, r.str("response_url"), ""); res.Code != http.StatusOK || res.str("prompt") != "block" {
			t.Fatalf("result once completed: %d %s", res.Code, res.Raw)
		}
	})
}
