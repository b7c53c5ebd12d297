package jobs_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// fakeClock is a clock the test moves; nothing sleeps.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func process(db *sqlstore.DB, cat *catalog.Catalog, owner string, r runners.Runner, clock *fakeClock) *jobs.Service {
	reg := runners.Registry{}
	for _, m := range cat.Models() {
		reg[m.Slug] = r
	}
	cfg := jobs.DefaultConfig()
	cfg.Owner = owner
	env := func(j jobs.Job, rep runners.Reporter) runners.Env { return runners.Env{Report: rep} }
	return jobs.New(jobs.Deps{Store: sqlstore.Jobs{DB: db}, Ledger: ledger.New(db, clock.Now), Catalog: cat, Runners: reg, Env: env, Seats: jobs.NewSeats(8, 8, 8), Now: clock.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}, cfg)
}

// JOB (crash recovery, issue 10): a process whose lease on a running job ran out loses it to
// another process's sweep, which runs it again and settles it; the first process's late finish
// settles nothing more. The job is charged once, the balance equals the ledger, and the job
// emits one event. The lease runs out on a fake clock, not by sleeping.
func TestStaleLeaseTakenOverChargedOnce(t *testing.T) {
	ctx := context.Background()
	db := storetest.OpenSQLite(t)
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}
	stuck := gateRunner{release: make(chan struct{})}
	a := process(db, cat, "proc_a", stuck, clock)
	b := process(db, cat, "proc_b", doneRunner{}, clock)
	storetest.NewAccount(t, db, "acct_t", auth.Pro, 1000)
	as := auth.NewService(db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher("takeover-secret"), clock.Now, slog.New(slog.NewTextHandler(io.Discard, nil)))
	minted, err := as.Mint(ctx, auth.MintParams{AccountID: "acct_t"})
	if err != nil {
		t.Fatal(err)
	}
	acct, _ := db.Account(ctx, "acct_t")
	m, _ := cat.Model("image-4b")
	res, err := a.Submit(ctx, jobs.SubmitRequest{Principal: &auth.Principal{Account: acct, Key: minted.Record}, Model: m, Body: []byte(`{"positivePrompt":"a cat"}`)})
	if err != nil {
		t.Fatal(err)
	}
	b.Sweep(ctx) // the lease holds: nothing to take over
	if j, _ := b.GetByID(ctx, "acct_t", res.Job.ID); j.Attempts != 1 || j.LeaseOwner != "proc_a" {
		t.Fatalf("taken over while the lease held: %+v", j)
	}
	clock.Add(jobs.DefaultConfig().LeaseTTL + time.Second)
	b.Sweep(ctx)
	b.Drain()
	j, err := b.GetByID(ctx, "acct_t", res.Job.ID)
	if err != nil || !j.Settled() || j.Outcome != jobs.Succeeded || j.Attempts != 2 {
		t.Fatalf("after the takeover: %+v %v", j, err)
	}
	close(stuck.release) // the first process finishes late: the job is settled already
	a.Drain()
	after, _ := db.Account(ctx, "acct_t")
	sum, _ := db.LedgerSum(ctx, "acct_t")
	if after.Balance != 1000-j.Quoted || sum != after.Balance || j.Charged != j.Quoted {
		t.Fatalf("balance %d ledger %d charged %d: want %d, equal, %d", after.Balance, sum, j.Charged, 1000-j.Quoted, j.Quoted)
	}
	var events int
	if err := db.SQL().QueryRow(`SELECT count(*) FROM events WHERE job_id = $1`, j.ID).Scan(&events); err != nil || events != 1 {
		t.Fatalf("%d events (%v), want 1", events, err)
	}
}
