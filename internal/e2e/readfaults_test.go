package e2e_test

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelexec/modelexec/internal/jobs"
)

// readFaults fails, while its flags are up, the reads of one job (by request id, by
// idempotency key) or the update a cancel writes, as a database that stopped answering.
type readFaults struct {
	jobs.Store
	failRead, failUpdate *atomic.Bool
}

func (f *readFaults) JobByRequest(ctx context.Context, requestID string) (jobs.Job, error) {
	if f.failRead.Load() {
		return jobs.Job{}, errInjected
	}
	return f.Store.JobByRequest(ctx, requestID)
}

func (f *readFaults) JobByIdempotencyKey(ctx context.Context, accountID, key string) (jobs.Job, error) {
	if f.failRead.Load() {
		return jobs.Job{}, errInjected
	}
	return f.Store.JobByIdempotencyKey(ctx, accountID, key)
}

func (f *readFaults) InOneStatement(ctx context.Context, fn func(jobs.Tx) error) error {
	return f.InTx(ctx, fn)
}

func (f *readFaults) InTx(ctx context.Context, fn func(jobs.Tx) error) error {
	return f.Store.InTx(ctx, func(tx jobs.Tx) error { return fn(readFaultTx{Tx: tx, f: f}) })
}

type readFaultTx struct {
	jobs.Tx
	f *readFaults
}

func (t readFaultTx) UpdateJob(ctx context.Context, j jobs.Job) error {
	if t.f.failUpdate.Load() && j.CancelAsked {
		return errInjected
	}
	return t.Tx.UpdateJob(ctx, j)
}

// TestERR83_91_CancelFailedAndJobReadFailed proves ERR-83's cancel_failed (READ-09) and
// ERR-91's job_read_failed over HTTP: a cancel of a running job whose request cannot be
// written answers 502 cancel_failed and the job runs on, so a later cancel stops it; a status
// read and an idempotent resend while the job cannot be read answer 500 job_read_failed,
// carrying neither the store's error nor a charge.
func TestERR83_91_CancelFailedAndJobReadFailed(t *testing.T) {
	var failRead, failUpdate atomic.Bool
	wrap := func(s jobs.Store) jobs.Store {
		return &readFaults{Store: s, failRead: &failRead, failUpdate: &failUpdate}
	}
	each(t, options{store: wrap}, func(t *testing.T, h *harness) {
		r := h.submit(mFast, "", `{"positivePrompt":"block","idempotency_key":"rf-1"}`)
		if r.Code != http.StatusOK {
			t.Fatalf("submit: %d %s", r.Code, r.Raw)
		}
		h.waitStarted(1)
		failUpdate.Store(true)
		c := h.call(http.MethodPut, r.str("cancel_url"), "")
		failUpdate.Store(false)
		if c.Code != http.StatusBadGateway || c.str("error") != "cancel_failed" || strings.Contains(c.Raw, "injected") {
			t.Fatalf("cancel while it cannot be written: %d %s", c.Code, c.Raw)
		}
		if j := h.job(r.str("request_id")); j.Settled() || j.CancelAsked {
			t.Fatalf("a failed cancel changed the job: %+v", j)
		}
		if c := h.call(http.MethodPut, r.str("cancel_url"), ""); c.Code/100 != 2 {
			t.Fatalf("second cancel: %d %s", c.Code, c.Raw)
		}
		h.waitSettled(r.str("request_id"))

		before := h.balance()
		failRead.Store(true)
		for name, a := range map[string]resp{
			"status read": h.call(http.MethodGet, h.queue.URL+"/svc-serverless/"+mFast+"/requests/never-seen/status", ""),
			"resend":      h.submit(mFast, "", `{"positivePrompt":"block","idempotency_key":"rf-1"}`),
		} {
			if a.Code != http.StatusInternalServerError || a.str("error") != "job_read_failed" || strings.Contains(a.Raw, "injected") {
				t.Errorf("%s while jobs cannot be read: %d %s", name, a.Code, a.Raw)
			}
		}
		failRead.Store(false)
		if h.balance() != before {
			t.Fatalf("balance moved: %d → %d", before, h.balance())
		}
	})
}
