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
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// CEIL-01: a refund is given back to the key's spend of the month its charge was taken in.
// A process without the worker role hands off a job charged at 23:59:50 on November 30; a
// job charged in December follows; a worker that comes in December gives the first up
// (request_timeout, refunded whole) and runs the second. December's spend stays what December charged, so a fixed cap of 5 still
// refuses a December job of 10 (it used to give November's charge back to December, leaving
// December's spend negative and the cap exceeded). The usage read per month stays equal to
// the ledger's entries of that month: the refund counts in the month it was given.
func TestCEIL01_RefundGivenBackInTheMonthOfItsCharge(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		ctx := context.Background()
		cat, err := catalog.Default()
		if err != nil {
			t.Fatal(err)
		}
		clock := &fakeClock{t: time.Date(2026, 11, 30, 23, 59, 50, 0, time.UTC)}
		cfg := jobs.DefaultConfig()
		cfg.Owner, cfg.Runs = "front", false
		env := func(j jobs.Job, rep runners.Reporter) runners.Env { return runners.Env{Report: rep} }
		log := slog.New(slog.NewTextHandler(io.Discard, nil))
		front := jobs.New(jobs.Deps{Store: sqlstore.Jobs{DB: db}, Ledger: ledger.New(db, clock.Now), Catalog: cat, Runners: runners.Registry{},
			Env: env, Seats: jobs.NewSeats(8, 8, 8), Now: clock.Now, Log: log}, cfg)
		storetest.NewAccount(t, db, "acct_t", auth.Pro, 1000)
		as := auth.NewService(db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher("refund-month-secret"), clock.Now, log)
		minted, err := as.Mint(ctx, auth.MintParams{AccountID: "acct_t"})
		if err != nil {
			t.Fatal(err)
		}
		m, _ := cat.Model("image-4b")
		submit := func(body string) (jobs.Job, error) {
			t.Helper()
			a, _ := db.Account(ctx, "acct_t")
			k, _ := db.Key(ctx, minted.Record.ID)
			res, err := front.Submit(ctx, jobs.SubmitRequest{Principal: &auth.Principal{Account: a, Key: k}, Model: m, Body: []byte(body)})
			return res.Job, err
		}
		spent := func() int64 {
			k, err := db.Key(ctx, minted.Record.ID)
			if err != nil {
				t.Fatal(err)
			}
			return k.SpentIn(clock.Now())
		}
		big, err := submit(`{"positivePrompt":"a cat","width":2048,"height":2048,"steps":50}`)
		if err != nil || big.Reserved < 6 {
			t.Fatalf("November's hand-off: %+v %v, want charged at least 6", big, err)
		}
		clock.Add(15 * time.Second) // 2026-12-01 00:00:05
		small, err := submit(`{"positivePrompt":"a dog","width":768,"height":1024}`)
		if err != nil || small.Reserved == 0 || small.Reserved >= 5 {
			t.Fatalf("December's hand-off: %+v %v, want charged less than 5", small, err)
		}
		// A worker comes past November's job's hand-off wait: it gives that job up and runs
		// December's.
		clock.Add(20 * time.Second)
		worker := process(db, cat, "worker", doneRunner{}, clock)
		worker.Sweep(ctx)
		worker.Drain()
		if j, _ := worker.GetByID(ctx, "acct_t", big.ID); j.ErrorCode != "request_timeout" || j.Charged != 0 {
			t.Fatalf("November's job after its wait: %+v, want request_timeout, refunded", j)
		}
		if j, _ := worker.GetByID(ctx, "acct_t", small.ID); j.Outcome != jobs.Succeeded || j.Charged != small.Reserved {
			t.Fatalf("December's job: %+v, want succeeded, charged %d", j, small.Reserved)
		}
		if got := spent(); got != small.Reserved {
			t.Fatalf("December's spend after November's refund: %d, want %d (December's charge alone)", got, small.Reserved)
		}
		if _, err := as.SetCeiling(ctx, minted.Record.ID, auth.CeilingRequest{Amount: 5}); err != nil {
			t.Fatal(err)
		}
		_, err = submit(`{"positivePrompt":"a bird","width":2048,"height":2048,"steps":50}`)
		var ae *apierr.Error
		if !errors.As(err, &ae) || ae.Code != apierr.KeyCreditCeiling {
			t.Fatalf("a December job of %d past a cap of 5 with %d spent: %v, want key_credit_ceiling", big.Quoted, small.Reserved, err)
		}

		// The usage per month is the ledger's entries of that month.
		u := ledger.NewUsage(db)
		for _, name := range []string{"last_month", "month"} {
			w, err := ledger.ParseWindow(name, clock.Now())
			if err != nil {
				t.Fatal(err)
			}
			keys, err := u.ByKey(ctx, "acct_t", w)
			if err != nil || len(keys) != 1 {
				t.Fatalf("%s: usage %+v %v", name, keys, err)
			}
			var moved int64
			if err := db.SQL().QueryRowContext(ctx, `SELECT COALESCE(SUM(amount), 0) FROM ledger_entries WHERE account_id = $1
 AND kind IN ('charge', 'refund') AND created_at >= $2 AND created_at < $3`, "acct_t", w.From.UnixMicro(), w.To.UnixMicro()).Scan(&moved); err != nil {
				t.Fatal(err)
			}
			if int64(keys[0].Net()) != -moved {
				t.Fatalf("%s: usage net %d, the ledger's entries moved %d", name, keys[0].Net(), moved)
			}
		}
	})
}
