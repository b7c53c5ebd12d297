package e2e_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// pauseAfterCount holds, once armed, the submit transaction that counts a model's waiting jobs
// right after its count, until the test lets it go: another process's submit then runs while
// this one has counted and not yet committed.
type pauseAfterCount struct {
	jobs.Store
	armed   atomic.Bool
	counted chan struct{}
	proceed chan struct{}
}

func (p *pauseAfterCount) InTx(ctx context.Context, fn func(jobs.Tx) error) error {
	return p.Store.InTx(ctx, func(tx jobs.Tx) error { return fn(pausedTx{Tx: tx, p: p}) })
}

type pausedTx struct {
	jobs.Tx
	p *pauseAfterCount
}

func (t pausedTx) CountQueuedOf(ctx context.Context, models, lock []string) (map[string]jobs.Waiting, error) {
	w, err := t.Tx.CountQueuedOf(ctx, models, lock)
	if err == nil && t.p.armed.CompareAndSwap(true, false) {
		close(t.p.counted)
		<-t.p.proceed
	}
	return w, err
}

// TestQST14_FrontsTogetherHandOffNoMoreThanOneWorkerRuns: two front processes (roles
// api,queue,sync, no worker) over one PostgreSQL database hand off a model that refuses a queue
// only while fewer of its hand-offs wait than one worker runs at once (its concurrency, 4),
// together: with three waiting, a submit on each front at the same moment (the first has
// counted three and not committed when the second counts) hands off one, and the other answers
// 429 service_busy, charged nothing; every later submit on either front is service_busy too.
// Proves QST-14 and the README's scale-out rule for processes that run no worker.
func TestQST14_FrontsTogetherHandOffNoMoreThanOneWorkerRuns(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		if h.db.Dialect() != sqlstore.Postgres {
			t.Skip("front processes share a PostgreSQL database (MODELEXEC_TEST_POSTGRES); SQLite serves one process")
		}
		h.stopWorker() // only the two fronts serve; no worker runs
		roles, err := server.ParseRoles("api,queue,sync")
		if err != nil {
			t.Fatal(err)
		}
		pause := &pauseAfterCount{counted: make(chan struct{}), proceed: make(chan struct{})}
		front := func(store func(jobs.Store) jobs.Store) string {
			var queueH http.Handler
			api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { queueH.ServeHTTP(w, r) }))
			t.Cleanup(api.Close)
			srv := h.newServer(server.Config{Roles: roles, PublicURLQueue: api.URL, PublicURLSync: api.URL}, nil, nil, store)
			queueH = srv.Handler(server.RoleQueue)
			return api.URL
		}
		a := front(func(s jobs.Store) jobs.Store { pause.Store = s; return pause })
		b := front(nil)
		submit := func(url string, i int) resp {
			return h.call(http.MethodPost, url+"/svc-serverless/"+mFast, fmt.Sprintf(`{"positivePrompt":"ok %d"}`, i))
		}
		before := h.balance()
		var quoted int64
		for i, url := range []string{a, b, a} {
			r := submit(url, i)
			if r.Code != http.StatusOK || r.str("status") != "IN_QUEUE" {
				t.Fatalf("hand-off %d: %d %s", i, r.Code, r.Raw)
			}
			quoted = h.job(r.str("request_id")).Quoted
		}

		// The fourth place, asked for on both fronts at once.
		pause.armed.Store(true)
		onA, onB := make(chan resp, 1), make(chan resp, 1)
		go func() { onA <- submit(a, 3) }()
		<-pause.counted
		go func() { onB <- submit(b, 4) }()
		var rb resp
		answered := false
		for !answered && !waitingOnLock(t, h.db) { // B answers, or waits for A's commit
			select {
			case rb = <-onB:
				answered = true
			case <-time.After(5 * time.Millisecond):
			}
		}
		close(pause.proceed)
		ra := <-onA
		if !answered {
			rb = <-onB
		}
		placed, busy := 0, 0
		for _, r := range []resp{ra, rb} {
			switch {
			case r.Code == http.StatusOK && r.str("status") == "IN_QUEUE":
				placed++
			case r.Code == http.StatusTooManyRequests && r.str("error") == "service_busy":
				busy++
			default:
				t.Fatalf("racing hand-off: %d %s", r.Code, r.Raw)
			}
		}
		if placed != 1 || busy != 1 {
			t.Fatalf("two fronts racing for the last place: %d handed off, %d service_busy; want 1 and 1 (front A %d %s; front B %d %s)",
				placed, busy, ra.Code, ra.Raw, rb.Code, rb.Raw)
		}

		// Full: every submit on either front, at once, is service_busy.
		answers := make(chan resp, 6)
		for i := range 6 {
			go func() { answers <- submit([]string{a, b}[i%2], 10+i) }()
		}
		for range 6 {
			if r := <-answers; r.Code != http.StatusTooManyRequests || r.str("error") != "service_busy" {
				t.Fatalf("submit with four hand-offs waiting: %d %s", r.Code, r.Raw)
			}
		}
		if n := h.countJobs(); n != 4 {
			t.Fatalf("%d jobs recorded, want the 4 handed off", n)
		}
		if got := h.balance(); got != before-4*quoted {
			t.Fatalf("balance %d, want %d: the four hand-offs charged, service_busy nothing", got, before-4*quoted)
		}
	})
}

// waitingOnLock reports whether a transaction of this database waits for an advisory lock.
func waitingOnLock(t *testing.T, db *sqlstore.DB) bool {
	t.Helper()
	var n int
	if err := db.SQL().QueryRow(`SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted
 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}
