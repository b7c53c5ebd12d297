package e2e_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// TestQST04_DispatchUnresolved: a submit accepted and charged while its process is stopping
// cannot be handed to a runner there: it answers 202 dispatch_unresolved (never 502) with the
// status document, IN_QUEUE, the charge standing and x-should-retry: false. Resending with the
// same key is answered from the job without a second charge; another process takes the job
// over when its lease runs out and settles it once, with one event.
// Proves QST-04, ERR-17, ERR-52, SUB-03.
func TestQST04_DispatchUnresolved(t *testing.T) {
	// The process begins to stop between the submit's transaction (charged, the job inserted
	// under this process's lease) and handing the job to a runner.
	var stopAfterCommit atomic.Pointer[func()]
	wrap := func(s jobs.Store) jobs.Store { return &commitHook{Store: s, after: &stopAfterCommit} }
	each(t, options{store: wrap}, func(t *testing.T, h *harness) {
		before := h.balance()
		stop := h.beginStop
		stopAfterCommit.Store(&stop)
		body := `{"positivePrompt":"ok","idempotency_key":"unresolved-1"}`
		r := h.submit(mFast, "", body)
		stopAfterCommit.Store(nil)
		if r.Code != http.StatusAccepted {
			t.Fatalf("submit during shutdown: %d %s", r.Code, r.Raw)
		}
		q := r.num("credits_quoted")
		if r.str("error") != "dispatch_unresolved" || r.str("status") != "IN_QUEUE" || r.str("charged") != "stands" ||
			r.num("credits_charged") != q || r.str("status_url") == "" || r.str("request_id") == "" {
			t.Fatalf("202 body: %s", prettyBody(r.Body))
		}
		if got := r.Header.Get("x-should-retry"); got != "false" {
			t.Errorf("x-should-retry = %q, want false", got)
		}
		if h.balance() != before-q {
			t.Fatalf("balance %d, want %d: the charge stands", h.balance(), before-q)
		}

		// The caller resends under the same key: answered from the job, charged nothing more.
		again := h.submit(mFast, "", body)
		if again.Code/100 != 2 || again.Body["replayed"] != true || again.num("credits_charged") != 0 || again.str("request_id") != r.str("request_id") {
			t.Fatalf("resend with the same key: %d %s", again.Code, again.Raw)
		}
		if h.balance() != before-q {
			t.Fatalf("balance %d after the resend, want %d", h.balance(), before-q)
		}

		// Another process over the same database takes the job over once its lease runs out.
		cfg := jobs.DefaultConfig()
		cfg.SweepEvery = 20 * time.Millisecond
		next := h.newJobs(sqlstore.Jobs{DB: h.db}, cfg)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = next.Run(ctx) }()
		defer func() { cancel(); <-done; next.Drain() }()
		h.clock.Advance(cfg.LeaseTTL + time.Second)

		j := h.waitSettled(r.str("request_id"))
		if j.Outcome != jobs.Succeeded || j.Charged != q {
			t.Fatalf("taken-over job: %+v", j)
		}
		if h.balance() != before-q {
			t.Fatalf("balance %d after settling, want %d", h.balance(), before-q)
		}
		st := h.status(r, false)
		if st.Code != http.StatusOK || st.str("status") != "COMPLETED" {
			t.Fatalf("status after take-over: %d %s", st.Code, st.Raw)
		}
	})
}

// commitHook runs *after (once) when a transaction that inserted a job commits: that is a
// submit's, never one of the worker's (whose goroutine stopping the worker would wait on).
type commitHook struct {
	jobs.Store
	after *atomic.Pointer[func()]
}

// InOneStatement goes through InTx: the hook sees every transaction.
func (c *commitHook) InOneStatement(ctx context.Context, fn func(jobs.Tx) error) error {
	return c.InTx(ctx, fn)
}

func (c *commitHook) InTx(ctx context.Context, fn func(jobs.Tx) error) error {
	var inserted bool
	err := c.Store.InTx(ctx, func(tx jobs.Tx) error {
		inserted = false
		return fn(insertSpy{Tx: tx, inserted: &inserted})
	})
	if err == nil && inserted {
		if f := c.after.Swap(nil); f != nil {
			(*f)()
		}
	}
	return err
}

type insertSpy struct {
	jobs.Tx
	inserted *bool
}

func (s insertSpy) InsertJobs(ctx context.Context, js []jobs.Job) error {
	*s.inserted = true
	return s.Tx.InsertJobs(ctx, js)
}
