package jobs_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// twiceStore runs every transaction's function twice: the first run succeeds and is rolled
// back, as when a store retries a transaction whose COMMIT failed after its function returned
// (PostgreSQL retries serialization failures).
type twiceStore struct{ sqlstore.Jobs }

var errRetried = errors.New("the commit failed: run the transaction again")

func (s twiceStore) InTx(ctx context.Context, fn func(jobs.Tx) error) error {
	err := s.Jobs.InTx(ctx, func(tx jobs.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return errRetried
	})
	if !errors.Is(err, errRetried) {
		return err
	}
	return s.Jobs.InTx(ctx, fn)
}

// JOB-05 (issue 10): a submit whose transaction the store runs a second time keeps one runner
// slot, not two. The retried run gives back the slot its first run took; before, the slot
// leaked, and with one slot per model every later submit of that model was refused
// service_busy. The retried settlement, too, charges and records each job once.
func TestRetriedSubmitKeepsOneSlot(t *testing.T) {
	ctx := context.Background()
	db := storetest.OpenSQLite(t)
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, _ := cat.Model("image-4b")
	if m.Lifecycle.Queue == catalog.QueueOffers {
		t.Fatal("image-4b offers a queue: the test needs a model that starts at once or refuses")
	}
	reg := runners.Registry{}
	for _, m := range cat.Models() {
		reg[m.Slug] = doneRunner{}
	}
	fixed := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { return fixed }
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := jobs.DefaultConfig()
	cfg.Concurrency = map[string]int{"image-4b": 1}
	env := func(j jobs.Job, rep runners.Reporter) runners.Env { return runners.Env{Report: rep} }
	js := jobs.New(twiceStore{sqlstore.Jobs{DB: db}}, cat, reg, env, jobs.NewSeats(8, 8, 8), now, log, cfg)
	storetest.NewAccount(t, db, "acct_r", auth.Pro, 10_000)
	as := auth.NewService(db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher("retry-test-secret"), now, log)
	minted, err := as.Mint(ctx, auth.MintParams{AccountID: "acct_r"})
	if err != nil {
		t.Fatal(err)
	}
	var quoted int64
	for i := range 3 {
		a, _ := db.Account(ctx, "acct_r")
		k, _ := db.Key(ctx, minted.Record.ID)
		res, err := js.Submit(ctx, jobs.SubmitRequest{Principal: &auth.Principal{Account: a, Key: k}, Model: m, Body: []byte(`{"positivePrompt":"a cat"}`)})
		if e, ok := apierr.As(err); ok && e.Code == apierr.ServiceBusy {
			t.Fatalf("submit %d: service_busy: a slot taken by a retried transaction was never given back", i+1)
		} else if err != nil {
			t.Fatalf("submit %d: %v", i+1, err)
		}
		js.Drain()
		got, err := js.GetByID(ctx, "acct_r", res.Job.ID)
		if err != nil || !got.Settled() || got.Outcome != jobs.Succeeded || got.Charged != res.Job.Quoted {
			t.Fatalf("job %d: %+v %v: want succeeded, charged its quote once", i+1, got, err)
		}
		quoted += res.Job.Quoted
	}
	a, _ := db.Account(ctx, "acct_r")
	sum, _ := db.LedgerSum(ctx, "acct_r")
	if a.Balance != 10_000-quoted || sum != a.Balance {
		t.Fatalf("balance %d, ledger sum %d: want %d for three jobs charged once each", a.Balance, sum, 10_000-quoted)
	}
}
