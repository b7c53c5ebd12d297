package jobs_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/jobview"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// frontOf is a process over db that runs no job (serve --roles api,queue,sync): its submits
// are handed off to the workers.
func frontOf(db *sqlstore.DB, cat *catalog.Catalog, clock *fakeClock) *jobs.Service {
	cfg := jobs.DefaultConfig()
	cfg.Owner, cfg.Runs = "front", false
	env := func(j jobs.Job, rep runners.Reporter) runners.Env { return runners.Env{Report: rep} }
	return jobs.New(jobs.Deps{Store: sqlstore.Jobs{DB: db}, Ledger: ledger.New(db, clock.Now), Catalog: cat, Runners: runners.Registry{},
		Env: env, Seats: jobs.NewSeats(8, 8, 8), Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, cfg)
}

// SUB-18 / JOB-17: X-Svc-Request-Timeout has nothing to bound on a model that does not queue.
// A front hands such a submit off to the workers, and the hand-off waits the documented 30 s
// for one (README §Roles) whatever the caller's timeout: a worker that starts it 5 s later
// runs it, although the caller said 2 s. give_up_after_seconds counts that wait; on a model
// that queues, the caller's timeout still bounds the wait, and the answer says so.
func TestSUB18_RequestTimeoutLeavesTheHandOffWaitOfAModelThatDoesNotQueue(t *testing.T) {
	storetest.Each(t, testSUB18RequestTimeoutLeavesTheHandOffWait)
}

func testSUB18RequestTimeoutLeavesTheHandOffWait(t *testing.T, db *sqlstore.DB) {
	ctx := context.Background()
	clock := &fakeClock{t: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}
	storetest.NewAccount(t, db, "acct_h", auth.Pro, 10_000)
	as := auth.NewService(db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher("handoff-secret"), clock.Now, slog.New(slog.NewTextHandler(io.Discard, nil)))
	minted, err := as.Mint(ctx, auth.MintParams{AccountID: "acct_h"})
	if err != nil {
		t.Fatal(err)
	}
	submit := func(front *jobs.Service, m *catalog.Model) jobs.Job {
		t.Helper()
		a, _ := db.Account(ctx, "acct_h")
		res, err := front.Submit(ctx, jobs.SubmitRequest{Principal: &auth.Principal{Account: a, Key: minted.Record}, Model: m,
			Body: []byte(`{"positivePrompt":"a cat"}`), RequestTimeout: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return res.Job
	}

	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, _ := cat.Model("image-4b")
	if m.Lifecycle.Queue == catalog.QueueOffers {
		t.Fatal("image-4b offers a queue in the shipped catalogue; this test needs a model that refuses one")
	}
	handOffWait := jobs.DefaultConfig().HandOffWait
	j := submit(frontOf(db, cat, clock), m)
	if j.Status != jobs.InQueue || j.StartBy == nil || !j.StartBy.Equal(j.CreatedAt.Add(handOffWait)) {
		t.Errorf("hand-off %s start_by %v (created %v): want IN_QUEUE, start-by %v after submit", j.Status, j.StartBy, j.CreatedAt, handOffWait)
	}
	if got, want := jobview.GiveUpAfterSeconds(j, m), int(handOffWait.Seconds())+m.Lifecycle.StallCeilingSeconds; got != want {
		t.Errorf("give_up_after_seconds %d, want %d (the hand-off wait plus the stall ceiling)", got, want)
	}
	clock.Add(5 * time.Second) // a worker gets to it inside the hand-off wait, past the caller's 2 s
	worker := process(db, cat, "worker", doneRunner{}, clock)
	worker.Sweep(ctx)
	worker.Drain()
	got, err := worker.GetByID(ctx, "acct_h", j.ID)
	if err != nil || got.Outcome != jobs.Succeeded || got.Charged != got.Quoted {
		t.Fatalf("hand-off started 5 s after submit: %s %q charged %d (%v); want succeeded, charged %d", got.Outcome, got.ErrorCode, got.Charged, err, got.Quoted)
	}

	// A model that queues: the caller's timeout is its wait, and the overdue sweep fails it.
	qcat := queueCatalog(t)
	qm, _ := qcat.Model("image-4b")
	q := submit(frontOf(db, qcat, clock), qm)
	if q.StartBy == nil || !q.StartBy.Equal(q.CreatedAt.Add(2*time.Second)) {
		t.Fatalf("queued start_by %v (created %v): want 2 s after submit", q.StartBy, q.CreatedAt)
	}
	if got, want := jobview.GiveUpAfterSeconds(q, qm), 2+qm.Lifecycle.StallCeilingSeconds; got != want {
		t.Errorf("give_up_after_seconds %d, want %d (the request timeout plus the stall ceiling)", got, want)
	}
	clock.Add(3 * time.Second)
	process(db, qcat, "worker_q", doneRunner{}, clock).Sweep(ctx)
	if got, _ := worker.GetByID(ctx, "acct_h", q.ID); got.ErrorCode != string(apierr.RequestTimeout) || got.Charged != 0 {
		t.Fatalf("queued job 3 s past its 2 s timeout: %s %q charged %d; want failed request_timeout, charged 0", got.Outcome, got.ErrorCode, got.Charged)
	}
}
