package jobs_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// sweptStore is the store that tells the test when a sweep looked for lost jobs (Stale),
// which the sweep does after it failed the overdue ones.
type sweptStore struct {
	jobs.Store
	swept chan struct{}
}

func (s sweptStore) Stale(ctx context.Context, now time.Time, limit int) ([]jobs.Job, error) {
	select {
	case s.swept <- struct{}{}:
	default:
	}
	return s.Store.Stale(ctx, now, limit)
}

// QST-06: a queued job that waited past its X-Svc-Request-Timeout is never started. When a
// slot frees before the overdue sweep comes (it runs every second), the job at the head of the
// queue is not charged and run but fails request_timeout, refunded, as the sweep would have
// failed it.
func TestQST06_OverdueJobIsNotStartedWhenASlotFreesBeforeTheSweep(t *testing.T) {
	storetest.Each(t, testQST06OverdueJobIsNotStarted)
}

func testQST06OverdueJobIsNotStarted(t *testing.T, db *sqlstore.DB) {
	ctx, cancel := context.WithCancel(context.Background())
	clock := &fakeClock{t: time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)}
	cat := queueCatalog(t)
	gate := gateRunner{release: make(chan struct{})}
	reg := runners.Registry{}
	for _, m := range cat.Models() {
		reg[m.Slug] = gate
	}
	cfg := jobs.DefaultConfig()
	cfg.Concurrency = map[string]int{"image-4b": 1}
	cfg.SweepEvery = time.Hour // no periodic sweep during the test: only Run's first one
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	env := func(j jobs.Job, rep runners.Reporter) runners.Env { return runners.Env{Report: rep} }
	store := sweptStore{Store: sqlstore.Jobs{DB: db}, swept: make(chan struct{}, 1)}
	js := jobs.New(jobs.Deps{Store: store, Ledger: ledger.New(db, clock.Now), Catalog: cat, Runners: reg, Env: env,
		Seats: jobs.NewSeats(8, 8, 8), Now: clock.Now, Log: log}, cfg)
	storetest.NewAccount(t, db, "acct_o", auth.Pro, 10_000)
	as := auth.NewService(db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher("overdue-secret"), clock.Now, log)
	minted, err := as.Mint(ctx, auth.MintParams{AccountID: "acct_o"})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { js.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	<-store.swept // Run's first sweep failed the overdue jobs (none yet); no other comes

	m, _ := cat.Model("image-4b")
	submit := func(timeout time.Duration) jobs.Job {
		t.Helper()
		a, _ := db.Account(ctx, "acct_o")
		res, err := js.Submit(ctx, jobs.SubmitRequest{Principal: &auth.Principal{Account: a, Key: minted.Record}, Model: m,
			Body: []byte(`{"positivePrompt":"a cat"}`), RequestTimeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		return res.Job
	}
	first, second := submit(0), submit(2*time.Second)
	if first.Status != jobs.InProgress || second.Status != jobs.InQueue {
		t.Fatalf("first %s, second %s: want one running, one queued", first.Status, second.Status)
	}
	clock.Add(10 * time.Second) // the second has waited past its 2 s
	close(gate.release)         // the first ends; its slot frees and wakes the look for queued jobs
	got, timedOut, err := js.Wait(ctx, "acct_o", second.RequestID, 30*time.Second)
	if err != nil || timedOut {
		t.Fatalf("the overdue job did not settle: %+v %v %v", got, timedOut, err)
	}
	js.Drain()
	if got.Outcome != jobs.Failed || got.ErrorCode != string(apierr.RequestTimeout) || got.Charged != 0 || got.StartedAt != nil {
		t.Fatalf("job 10 s into its 2 s request timeout when a slot freed: %s %q charged %d started %v; want failed request_timeout, never started, charged 0",
			got.Outcome, got.ErrorCode, got.Charged, got.StartedAt)
	}
	a, _ := db.Account(ctx, "acct_o")
	sum, _ := db.LedgerSum(ctx, "acct_o")
	if q := first.Quoted; a.Balance != 10_000-q || sum != a.Balance {
		t.Fatalf("balance %d (ledger %d): want %d, the first job's charge only", a.Balance, sum, 10_000-q)
	}
	var events int
	if err := db.SQL().QueryRow(`SELECT count(*) FROM events WHERE job_id = $1`, second.ID).Scan(&events); err != nil || events != 1 {
		t.Fatalf("%d events (%v), want 1", events, err)
	}
}
