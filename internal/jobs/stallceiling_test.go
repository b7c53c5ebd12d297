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
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// QST-08 / JOB-17: the stall ceiling counts from a job's first start, so that no takeover
// stretches it past give_up_after_seconds. A job whose process stopped and whose ceiling passed
// before another process took it over is not run again: it settles stalled, refunded, with its
// one event, and the first process's late finish settles nothing more. A job taken over with
// part of its ceiling left runs for that part only, then is stopped stalled and refunded.
func TestQST08_TakenOverJobKeepsTheStallCeilingOfItsFirstStart(t *testing.T) {
	storetest.Each(t, testQST08TakenOverJobKeepsTheStallCeiling)
}

func testQST08TakenOverJobKeepsTheStallCeiling(t *testing.T, db *sqlstore.DB) {
	ctx := context.Background()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}
	storetest.NewAccount(t, db, "acct_s", auth.Pro, 1000)
	as := auth.NewService(db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher("stall-secret"), clock.Now, slog.New(slog.NewTextHandler(io.Discard, nil)))
	minted, err := as.Mint(ctx, auth.MintParams{AccountID: "acct_s"})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := cat.Model("image-4b")
	ceiling := time.Duration(m.Lifecycle.StallCeilingSeconds) * time.Second
	// startOn submits on a process whose run never ends by itself; it stops when the test
	// lets it (its lease then runs out on the fake clock).
	startOn := func(owner string) (jobs.Job, *jobs.Service, gateRunner) {
		t.Helper()
		gate := gateRunner{release: make(chan struct{})}
		p := process(db, cat, owner, gate, clock)
		acct, _ := db.Account(ctx, "acct_s")
		res, err := p.Submit(ctx, jobs.SubmitRequest{Principal: &auth.Principal{Account: acct, Key: minted.Record}, Model: m, Body: []byte(`{"positivePrompt":"a cat"}`)})
		if err != nil || res.Job.Status != jobs.InProgress {
			t.Fatalf("submit: %s %v; want IN_PROGRESS", res.Job.Status, err)
		}
		return res.Job, p, gate
	}
	refunded := func(j jobs.Job, attempts int) {
		t.Helper()
		if !j.Settled() || j.Outcome != jobs.Failed || j.ErrorCode != string(apierr.Stalled) || j.Charged != 0 || j.Attempts != attempts {
			t.Fatalf("job %s %q charged %d attempts %d, finished %v after submit; want failed stalled, charged 0, %d attempts",
				j.Outcome, j.ErrorCode, j.Charged, j.Attempts, finishedAfter(j), attempts)
		}
		a, _ := db.Account(ctx, "acct_s")
		sum, _ := db.LedgerSum(ctx, "acct_s")
		var events int
		if err := db.SQL().QueryRow(`SELECT count(*) FROM events WHERE job_id = $1`, j.ID).Scan(&events); err != nil || events != 1 {
			t.Fatalf("%d events (%v), want 1", events, err)
		}
		if a.Balance != 1000 || sum != a.Balance {
			t.Fatalf("balance %d (ledger %d): want 1000, refunded in full", a.Balance, sum)
		}
	}

	// The first process stops just before its stall timer fires; its lease runs out; the
	// ceiling has passed when the second process's sweep finds the job.
	j, a, gate := startOn("proc_a")
	clock.Add(ceiling + jobs.DefaultConfig().LeaseTTL)
	b := process(db, cat, "proc_b", doneRunner{}, clock)
	b.Sweep(ctx)
	b.Drain()
	got, err := b.GetByID(ctx, "acct_s", j.ID)
	if err != nil {
		t.Fatal(err)
	}
	refunded(got, 1)
	close(gate.release) // the first process finishes late: the job is settled already
	a.Drain()
	got, _ = b.GetByID(ctx, "acct_s", j.ID)
	refunded(got, 1)

	// Taken over with 50 ms of its ceiling left, on a process whose run would go on: the run
	// is stopped when those 50 ms pass, not a whole ceiling later.
	j, _, gate = startOn("proc_c")
	defer close(gate.release)
	clock.Add(ceiling - 50*time.Millisecond)
	d := process(db, cat, "proc_d", gateRunner{release: make(chan struct{})}, clock)
	d.Sweep(ctx)
	drained := make(chan struct{})
	go func() { d.Drain(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(10 * time.Second): // a guard only: the run ends within 50 ms
		t.Fatalf("the job taken over with 50 ms of its stall ceiling left was still running 10 s later")
	}
	got, _ = d.GetByID(ctx, "acct_s", j.ID)
	refunded(got, 2)
}

// finishedAfter is how long after its submit j settled, or 0 while it has not.
func finishedAfter(j jobs.Job) time.Duration {
	if j.FinishedAt == nil {
		return 0
	}
	return j.FinishedAt.Sub(j.CreatedAt)
}
