package storetest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// The history BenchUsage1M builds: a million settled jobs over the twelve months before
// usage1MNow, on usage1MAccounts accounts.
const (
	usage1MJobs     = 1_000_000
	usage1MAccounts = 40
	// usage1MBatch is how many jobs one transaction settles while the history is built.
	usage1MBatch = 10_000
)

// usage1MNow is the instant the reads are made at: the last day of a month, so the current
// month's window (the default) holds a whole month of history.
var usage1MNow = time.Date(2026, 6, 30, 18, 0, 0, 0, time.UTC)

// usage1MHistory describes the history buildUsage1M wrote.
type usage1MHistory struct {
	Heaviest    string // the account with the most rollup rows: the one the reads are made for
	HeavyJobs   int
	HeavyKeys   int
	RollupRows  int64 // the heaviest account's rows of the daily rollup over the twelve months
	HeavyKeyIDs []string
	Models      []string // the catalogue's
	Entries     int
	Took        time.Duration
}

// BenchUsage1M measures what GET /v1/usage and the console's usage page read for one account
// when the database holds a million settled jobs of history (buildUsage1M), then what one
// charge costs to write beside that history.
//
// The reads are made for the heaviest account at the end of a month, in the default window
// (the current month) and in twelve months: ByKey is GET /v1/usage's read (ledger.Usage.ByKey),
// Summary the console's (ledger.Usage.Summary: per day, per model and per key); PerDay and
// PerModel are Summary's two other reads alone. Apply100 is a transaction of a hundred charges
// of that account through LedgerApply, as settlements write them.
//
//	go test -run '^$' -bench Usage1M -benchtime 20x ./internal/store/sqlstore
func BenchUsage1M(b *testing.B, db *sqlstore.DB) {
	h := buildUsage1M(b, db)
	b.Logf("history: %d entries written in %v; %s: %d jobs on %d keys, %d daily rollup rows in twelve months",
		h.Entries, h.Took.Round(time.Second), h.Heaviest, h.HeavyJobs, h.HeavyKeys, h.RollupRows)
	benchUsageReads(b, db, h)
}

// benchUsageReads is BenchUsage1M's measures over a history already written.
func benchUsageReads(b *testing.B, db *sqlstore.DB, h usage1MHistory) {
	ctx := context.Background()
	u := ledger.NewUsage(db)
	for _, name := range []string{"month", "12m"} {
		w, err := ledger.ParseWindow(name, usage1MNow)
		if err != nil {
			b.Fatal(err)
		}
		b.Run("ByKey/"+name, func(b *testing.B) {
			for range b.N {
				rows, err := u.ByKey(ctx, h.Heaviest, w)
				if err != nil || len(rows) != h.HeavyKeys {
					b.Fatalf("%d rows, want %d: %v", len(rows), h.HeavyKeys, err)
				}
			}
		})
		b.Run("Summary/"+name, func(b *testing.B) {
			for range b.N {
				s, err := u.Summary(ctx, h.Heaviest, w)
				if err != nil || len(s.Keys) != h.HeavyKeys || len(s.Days) < 28 {
					b.Fatalf("%d keys, %d days: %v", len(s.Keys), len(s.Days), err)
				}
			}
		})
		for _, per := range []struct {
			name string
			g    ledger.UsageGroup
		}{{"PerDay", ledger.PerDay}, {"PerModel", ledger.PerModel}} {
			b.Run(per.name+"/"+name, func(b *testing.B) {
				for range b.N {
					if rows, err := db.LedgerUsagePer(ctx, h.Heaviest, w.From, w.To, per.g); err != nil || len(rows) == 0 {
						b.Fatalf("%d rows: %v", len(rows), err)
					}
				}
			})
		}
	}
	b.Run("Apply100", func(b *testing.B) {
		at := usage1MNow
		for n := range b.N {
			err := db.LedgerTx(ctx, func(tx ledger.Tx) error {
				for i := range 100 {
					at = at.Add(time.Millisecond)
					e := ledger.Entry{AccountID: h.Heaviest, KeyID: h.HeavyKeyIDs[i%len(h.HeavyKeyIDs)], JobID: fmt.Sprintf("job_w%d_%d", n, i),
						Model: h.Models[i%len(h.Models)], Kind: ledger.Charge, Amount: -3, At: at}
					if _, err := tx.LedgerApply(ctx, e, math.MinInt64); err != nil {
						return err
					}
				}
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	})
}

// usage1MJob is one settled job of the history: which account, key and model, what it cost,
// and whether it was refunded.
type usage1MJob struct {
	account, key, model uint8
	cost                uint8
	refunded            bool
}

// buildUsage1M writes a million settled jobs over the twelve months before usage1MNow: a charge
// entry per job and a refund for one job in a hundred, written through the ledger's store port
// as settlements write them (LedgerApply in LedgerTx, which also writes the usage rollup),
// usage1MBatch jobs per transaction and each account's in the order they happened. On
// PostgreSQL four transactions write at once, each on its own accounts, and the tables are
// vacuumed and analysed afterwards, as autovacuum keeps them in service.
//
// The 40 accounts' volumes are skewed: account i's share is 1/(i+4), so the heaviest runs
// about ten times the jobs of the lightest. Account i has 1 + i%6 keys, the first of which
// takes most of its jobs; models are the catalogue's, model m taken with weight 1/(m+1).
func buildUsage1M(tb testing.TB, db *sqlstore.DB) usage1MHistory {
	tb.Helper()
	cat, err := catalog.Default()
	if err != nil {
		tb.Fatal(err)
	}
	var models []string
	for _, m := range cat.Models() {
		models = append(models, m.Slug)
	}
	accounts, plan := planUsage1M(len(models))
	for _, a := range accounts {
		NewAccount(tb, db, a.id, auth.Pro, 0)
	}
	began := time.Now()
	h := usage1MHistory{Models: models, Entries: settleUsage1M(tb, db, accounts, plan, models)}
	h.Took = time.Since(began)
	if db.Dialect() == sqlstore.Postgres {
		vacuum(tb, db)
	}
	h.RollupRows = -1
	for _, a := range accounts {
		n, err := db.LedgerUsageDayCount(context.Background(), a.id, usage1MNow.AddDate(-1, 0, -1), usage1MNow.AddDate(0, 0, 1))
		if err != nil {
			tb.Fatal(err)
		}
		if n > h.RollupRows {
			h.Heaviest, h.HeavyJobs, h.HeavyKeys, h.HeavyKeyIDs, h.RollupRows = a.id, len(a.jobs), len(a.keys), a.keys, n
		}
	}
	return h
}

// usage1MAccount is an account of the history: its keys and its jobs (indexes into the plan).
type usage1MAccount struct {
	id   string
	keys []string
	jobs []int
}

// planUsage1M draws the history's accounts and jobs over nModels models, the same every run.
func planUsage1M(nModels int) ([]usage1MAccount, []usage1MJob) {
	accounts := make([]usage1MAccount, usage1MAccounts)
	cumulative := make([]float64, usage1MAccounts)
	total := 0.0
	for i := range accounts {
		accounts[i].id = fmt.Sprintf("acct_u%02d", i)
		for k := range 1 + i%6 {
			accounts[i].keys = append(accounts[i].keys, fmt.Sprintf("key_%s_%d", accounts[i].id, k))
		}
		total += 1 / float64(i+4)
		cumulative[i] = total
	}
	r := rand.New(rand.NewPCG(1, 1_000_000))
	plan := make([]usage1MJob, usage1MJobs)
	for j := range plan {
		x := r.Float64() * total
		a := 0
		for a < len(cumulative)-1 && x >= cumulative[a] {
			a++
		}
		k := 0
		if r.IntN(2) == 0 {
			k = r.IntN(len(accounts[a].keys))
		}
		m := r.IntN(nModels)
		for r.Float64() >= 1/float64(m+1) {
			m = r.IntN(nModels)
		}
		plan[j] = usage1MJob{account: uint8(a), key: uint8(k), model: uint8(m), cost: uint8(1 + r.IntN(40)), refunded: r.IntN(100) == 0}
		accounts[a].jobs = append(accounts[a].jobs, j)
	}
	return accounts, plan
}

// settleUsage1M writes the plan's entries, usage1MBatch jobs a transaction, and answers how
// many it wrote. Job j settles at a year before usage1MNow plus j/usage1MJobs of the year; its
// refund, if any, a minute later.
func settleUsage1M(tb testing.TB, db *sqlstore.DB, accounts []usage1MAccount, plan []usage1MJob, models []string) int {
	ctx := context.Background()
	start := usage1MNow.AddDate(-1, 0, 0)
	span := usage1MNow.Sub(start)
	settle := func(tx ledger.Tx, j int) (int, error) {
		p := plan[j]
		a := &accounts[p.account]
		at := start.Add(time.Duration(float64(span) * float64(j) / usage1MJobs))
		e := ledger.Entry{AccountID: a.id, KeyID: a.keys[p.key], JobID: fmt.Sprintf("job_%07d", j), Model: models[p.model],
			Kind: ledger.Charge, Amount: -ledger.Credits(p.cost), At: at}
		if _, err := tx.LedgerApply(ctx, e, math.MinInt64); err != nil || !p.refunded {
			return 1, err
		}
		e.Kind, e.Amount, e.At = ledger.Refund, -e.Amount, at.Add(time.Minute)
		_, err := tx.LedgerApply(ctx, e, math.MinInt64)
		return 2, err
	}
	workers := 1
	if db.Dialect() == sqlstore.Postgres {
		workers = 4
	}
	entries := make([]int, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			// Worker w settles the jobs of accounts w, w+workers, …, merged in time order.
			var mine []int
			for a := w; a < len(accounts); a += workers {
				mine = append(mine, accounts[a].jobs...)
			}
			slices.Sort(mine)
			for len(mine) > 0 && errs[w] == nil {
				batch := mine[:min(usage1MBatch, len(mine))]
				mine = mine[len(batch):]
				errs[w] = db.LedgerTx(ctx, func(tx ledger.Tx) error {
					for _, j := range batch {
						n, err := settle(tx, j)
						if err != nil {
							return err
						}
						entries[w] += n
					}
					return nil
				})
			}
		})
	}
	wg.Wait()
	total := 0
	for w := range workers {
		if errs[w] != nil {
			tb.Fatal(errs[w])
		}
		total += entries[w]
	}
	return total
}

// vacuum vacuums and analyses the tables of the database's schema on PostgreSQL, as
// autovacuum keeps them in service.
func vacuum(tb testing.TB, db *sqlstore.DB) {
	tb.Helper()
	ctx := context.Background()
	rows, err := db.SQL().QueryContext(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = current_schema()`)
	if err != nil {
		tb.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			tb.Fatal(err)
		}
		tables = append(tables, t)
	}
	if err := rows.Close(); err != nil {
		tb.Fatal(err)
	}
	for _, t := range tables {
		if _, err := db.SQL().ExecContext(ctx, `VACUUM ANALYZE `+t); err != nil {
			tb.Fatal(err)
		}
	}
}
