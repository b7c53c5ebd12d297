package e2e_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/runners"
)

// TestERR_VendorBudgetAdviceAgreesWithReplay proves issue 30 item 8 against spec 01's
// idempotency rule (the same key answers the first request): a job that failed
// vendor_budget_exhausted is read back with retry new_key (its key replays the failure),
// charged refunded and x-should-retry false, on the queue host's result read and on the
// synchronous host; resending under the same key does replay it, and a new key runs again.
func TestERR_VendorBudgetAdviceAgreesWithReplay(t *testing.T) {
	each(t, options{runner: func(r runners.Runner) runners.Runner { return noCancel{r} }}, func(t *testing.T, h *harness) {
		before := h.balance()
		body := `{"positivePrompt":"budget gone","idempotency_key":"vb-1"}`
		r := h.submit(mFast, "", body)
		if r.Code != http.StatusOK {
			t.Fatalf("submit: %d %s", r.Code, r.Raw)
		}
		h.waitSettled(r.str("request_id"))
		res := h.call(http.MethodGet, r.str("response_url"), "")
		syncRes := h.call(http.MethodPost, h.sync.URL+"/svc-serverless/"+mFast, body)
		for name, a := range map[string]resp{"result read": res, "sync host": syncRes} {
			if a.Code != http.StatusServiceUnavailable || a.str("error") != "vendor_budget_exhausted" || a.str("retry") != "new_key" ||
				a.str("charged") != "refunded" || a.Header.Get("x-should-retry") != "false" || !strings.Contains(a.str("message"), "new idempotency key") {
				t.Fatalf("%s: %d %v %s", name, a.Code, a.Header, a.Raw)
			}
			if strings.Contains(a.str("message"), "same idempotency key") {
				t.Fatalf("%s: the message still advises the same key: %s", name, a.Raw)
			}
		}
		again := h.submit(mFast, "", body)
		if again.Body["replayed"] != true || again.str("request_id") != r.str("request_id") {
			t.Fatalf("resend under the same key: %s", again.Raw)
		}
		fresh := h.submit(mFast, "", `{"positivePrompt":"budget gone","idempotency_key":"vb-2"}`)
		if fresh.Code != http.StatusOK || fresh.Body["replayed"] == true || fresh.str("request_id") == r.str("request_id") {
			t.Fatalf("resend under a new key: %s", fresh.Raw)
		}
		h.waitSettled(fresh.str("request_id"))
		if h.balance() != before {
			t.Fatalf("balance %d → %d", before, h.balance())
		}
	})
}
