package e2e_test

import (
	"net/http"
	"testing"

	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestERR55_ServiceBusyWhenAdmissionCannotRun proves ERR-55's second half and ERR-92 over
// HTTP: a submit whose admission check cannot run (the database fails the hold of the
// accounts, with their jobs in flight) answers 503 service_busy with Retry-After, nothing
// charged and no job written, on the queue and synchronous hosts; a submit whose charge cannot be written answers 500
// credit_reserve_failed, nothing charged. Once the store answers, the same idempotency key
// runs and is charged once.
func TestERR55_ServiceBusyWhenAdmissionCannotRun(t *testing.T) {
	var faults *storetest.AdmissionFaults
	wrap := func(s jobs.Store) jobs.Store {
		faults = &storetest.AdmissionFaults{Store: s}
		return faults
	}
	each(t, options{store: wrap}, func(t *testing.T, h *harness) {
		failCount, failCharge := &faults.FailHold, &faults.FailCharge
		before, n := h.balance(), h.countJobs()
		body := `{"positivePrompt":"ok","idempotency_key":"admit-1"}`
		failCount.Store(true)
		for _, u := range []string{h.queue.URL, h.sync.URL} {
			r := h.call(http.MethodPost, u+"/svc-serverless/"+mFast, body)
			if r.Code != http.StatusServiceUnavailable || r.str("error") != "service_busy" || r.str("charged") != "no" ||
				r.Header.Get("Retry-After") == "" || r.str("retry") != "same_key" {
				t.Fatalf("%s: submit while the admission check cannot run: %d %v %s", u, r.Code, r.Header, r.Raw)
			}
			noServerWords(t, "service_busy", r.Raw)
		}
		failCount.Store(false)
		failCharge.Store(true)
		r := h.submit(mFast, "", body)
		failCharge.Store(false)
		if r.Code != http.StatusInternalServerError || r.str("error") != "credit_reserve_failed" || r.str("charged") != "no" {
			t.Fatalf("submit while the charge cannot be written: %d %s", r.Code, r.Raw)
		}
		if h.balance() != before || h.countJobs() != n {
			t.Fatalf("balance %d (want %d), %d jobs (want %d)", h.balance(), before, h.countJobs(), n)
		}
		ok := h.submit(mFast, "", body)
		if ok.Code != http.StatusOK {
			t.Fatalf("resend once the store answers: %d %s", ok.Code, ok.Raw)
		}
		h.waitSettled(ok.str("request_id"))
		if again := h.submit(mFast, "", body); again.Body["replayed"] != true {
			t.Fatalf("second resend: %s", again.Raw)
		}
	})
}
