package console_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// BenchmarkConsoleUsagePage measures the usage page and its download with 10,000 jobs charged
// in the account on SQLite, spread over the last twelve months, five keys and four models, one
// in ten refunded: the month's page, the twelve months' page (every rollup row of the year,
// about 7,000) and the month's CSV. Each is reported as p50 and p99 in milliseconds. The budget
// is 50 ms a page; this is a benchmark, not a timed test:
//
//	go test -run '^$' -bench ConsoleUsagePage -benchtime 100x ./internal/console/
func BenchmarkConsoleUsagePage(b *testing.B) {
	db := storetest.OpenSQLite(b)
	s := newUsageSite(b, db, 0)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	s.clock.Set(now)
	s.account("acct_ubench")
	var keys []string
	for range 5 {
		m, err := s.auth.Mint(context.Background(), auth.MintParams{AccountID: "acct_ubench"})
		if err != nil {
			b.Fatal(err)
		}
		keys = append(keys, m.Record.ID)
	}
	seedCharges(b, db, "acct_ubench", keys, now, 10_000)
	p := s.signIn("acct_ubench")
	measurePages(b, p.c, []benchPage{
		{"month", s.url + "/console/usage"},
		{"12m", s.url + "/console/usage?window=12m"},
		{"csv-month", s.url + "/console/usage/export.csv?window=month"},
	})
}

// seedCharges charges n jobs through the ledger, as the engine does at a job's start, spread
// evenly over the year before now, cycling through the keys and four models; one in ten is
// refunded in full, as a failed job is.
func seedCharges(b *testing.B, db *sqlstore.DB, account string, keys []string, now time.Time, n int) {
	b.Helper()
	ctx := context.Background()
	models := []string{"image-4b", "image-lite", "music-turbo", "upscale"}
	step := 365 * 24 * time.Hour / time.Duration(n)
	svc := ledger.New(db, func() time.Time { return now })
	const batch = 1000
	for lo := 0; lo < n; lo += batch {
		err := sqlstore.Jobs{DB: db}.InTx(ctx, func(tx jobs.Tx) error {
			for i := lo; i < min(lo+batch, n); i++ {
				at := now.Add(-time.Duration(n-i) * step)
				j := ledger.Job{AccountID: account, KeyID: keys[i%len(keys)], JobID: "bench_" + at.Format("20060102150405.000000"),
					Model: models[(i/len(keys))%len(models)], Quote: 3}
				_, c, err := svc.Charge(ctx, tx, ledger.Request{Job: j, InFlightLimit: -1}, at)
				if err != nil {
					return err
				}
				if i%10 == 0 {
					if _, err := svc.Settle(ctx, tx, ledger.Settlement{Job: j, Reserved: c.Reserved, Created: at}, at.Add(time.Second)); err != nil {
						return err
					}
				}
			}
			return nil
		})
		if err != nil {
			b.Fatal(err)
		}
	}
}
