package storetest

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/ledger"
)

// testAllowances: ACC-04. A monthly allowance is credited once per UTC month, as an
// `allowance` ledger entry, from the month after the account's opening balance; never twice
// when two processes sweep at once; never to a banned account or one without an allowance.
func testAllowances(t *testing.T, s Stores) {
	ctx := context.Background()
	create := func(id string, plan auth.Plan, status auth.Status, credits int64, period string) {
		t.Helper()
		a := auth.Account{ID: id, Plan: plan, Status: status, Balance: credits, MonthlyAllowance: auth.DefaultMonthlyAllowance(plan),
			AllowancePeriod: period, CreatedAt: t0}
		if err := ledger.New(s.Ledger, time.Now).CreateAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	create("acct_pro", auth.Pro, auth.Live, 500, "") // the period defaults to CreatedAt's month
	create("acct_free", auth.Free, auth.Live, 10, "2026-11")
	create("acct_banned", auth.Max, auth.Banned, 0, "2026-11")
	create("acct_limited", auth.Max, auth.Limited, 0, "2026-11")

	if a, _ := s.Auth.Account(ctx, "acct_pro"); a.AllowancePeriod != "2026-11" {
		t.Fatalf("allowance period = %q, want the month the account was created in", a.AllowancePeriod)
	}
	if n, err := grantAllowances(ctx, s.Ledger, t0.Add(9*24*time.Hour), 100); err != nil || n != 0 {
		t.Fatalf("same month: credited %d, %v; want nothing (the opening balance stands for it)", n, err)
	}
	testAllowanceOfDecember(t, s)
	testAllowanceSweepsAtOnce(t, s)
	testAllowanceInAHold(t, s)
}

// allowanceBalance is the account's balance, checked against the sum of its entries.
func allowanceBalance(t *testing.T, s Stores, id string) int64 {
	t.Helper()
	ctx := context.Background()
	a, err := s.Auth.Account(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := ledgerSum(ctx, s.Ledger, id)
	if err != nil {
		t.Fatal(err)
	}
	if sum != a.Balance {
		t.Fatalf("%s: balance %d != sum of ledger entries %d", id, a.Balance, sum)
	}
	return a.Balance
}

// testAllowanceOfDecember: one second past midnight UTC on 1 December, written in a zone
// where it is still November, credits the live and limited accounts once, as an allowance
// entry of the new month.
func testAllowanceOfDecember(t *testing.T, s Stores) {
	ctx := context.Background()
	balance := func(id string) int64 { t.Helper(); return allowanceBalance(t, s, id) }
	dec := time.Date(2026, 11, 30, 22, 0, 1, 0, time.FixedZone("UTC-2", -2*3600))
	if n, err := grantAllowances(ctx, s.Ledger, dec, 100); err != nil || n != 2 {
		t.Fatalf("December: credited %d, %v; want the pro and the limited accounts", n, err)
	}
	if got := balance("acct_pro"); got != 500+2000 {
		t.Fatalf("pro balance = %d, want 2500", got)
	}
	if got := balance("acct_limited"); got != 6000 {
		t.Fatalf("limited balance = %d, want 6000", got)
	}
	if balance("acct_free") != 10 || balance("acct_banned") != 0 {
		t.Fatal("a free or banned account was credited")
	}
	if n, err := grantAllowances(ctx, s.Ledger, dec.Add(20*24*time.Hour), 100); err != nil || n != 0 {
		t.Fatalf("December again: credited %d, %v", n, err)
	}
	var kind, period string
	var amount int64
	if err := s.Inspect.SQL().QueryRowContext(ctx, `SELECT kind, amount, period FROM ledger_entries WHERE account_id = 'acct_pro' ORDER BY id DESC LIMIT 1`).Scan(&kind, &amount, &period); err != nil {
		t.Fatal(err)
	}
	if kind != "allowance" || amount != 2000 || period != "2026-12" {
		t.Fatalf("ledger entry = %s %d %s, want allowance 2000 2026-12", kind, amount, period)
	}
}

// testAllowanceSweepsAtOnce: four sweeps at once in January, as four processes would: each
// account is credited once.
func testAllowanceSweepsAtOnce(t *testing.T, s Stores) {
	ctx := context.Background()
	jan := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	var wg sync.WaitGroup
	var mu sync.Mutex
	total := 0
	for range 4 {
		wg.Go(func() {
			n, err := grantAllowances(ctx, s.Ledger, jan, 100)
			if err != nil {
				t.Error(err)
			}
			mu.Lock()
			total += n
			mu.Unlock()
		})
	}
	wg.Wait()
	pro, limited := allowanceBalance(t, s, "acct_pro"), allowanceBalance(t, s, "acct_limited")
	if total != 2 || pro != 500+2*2000 || limited != 2*6000 {
		t.Fatalf("January: credited %d in all; balances %d, %d", total, pro, limited)
	}
}

// testAllowanceInAHold: held in a transaction (as a charge holds it), the account comes back
// with its new balance, and a second hold in the same month credits nothing.
func testAllowanceInAHold(t *testing.T, s Stores) {
	ctx := context.Background()
	if err := s.Auth.InsertKey(ctx, key("allowkey0001", "acct_pro", t0.AddDate(2, 0, 0)), 25, t0); err != nil {
		t.Fatal(err)
	}
	var after auth.Account
	err := s.Ledger.LedgerTx(ctx, func(tx ledger.Tx) error {
		feb := time.Date(2027, 2, 14, 0, 0, 0, 0, time.UTC)
		l := ledger.New(s.Ledger, func() time.Time { return feb })
		pair := []ledger.AccountKey{{AccountID: "acct_pro", KeyID: "allowkey0001"}}
		h, err := l.Hold(ctx, tx, pair, feb)
		if err != nil {
			return err
		}
		after, _ = h.Account("acct_pro")
		if err := h.Write(ctx, tx); err != nil {
			return err
		}
		again, err := l.Hold(ctx, tx, pair, feb)
		if err != nil {
			return err
		}
		if a, _ := again.Account("acct_pro"); a.Balance != after.Balance {
			t.Errorf("credited twice in one month: %d then %d", after.Balance, a.Balance)
		}
		return again.Write(ctx, tx)
	})
	if err != nil {
		t.Fatal(err)
	}
	if after.Balance != 500+3*2000 || after.AllowancePeriod != "2027-02" || allowanceBalance(t, s, "acct_pro") != after.Balance {
		t.Fatalf("after February = %+v", after)
	}
}
