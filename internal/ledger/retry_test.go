package ledger_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// twiceLedger runs every ledger transaction's function twice: the first run succeeds and is
// rolled back, as when the store retries a transaction whose COMMIT failed (PostgreSQL retries
// serialization failures and deadlocks).
type twiceLedger struct{ *sqlstore.DB }

var errRetried = errors.New("the commit failed: run the transaction again")

func (s twiceLedger) LedgerTx(ctx context.Context, fn func(ledger.Tx) error) error {
	err := s.DB.LedgerTx(ctx, func(tx ledger.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		return errRetried
	})
	if !errors.Is(err, errRetried) {
		return err
	}
	return s.DB.LedgerTx(ctx, fn)
}

// The ledger's own transactions, each run twice, move credits and answer as for one run: the
// opening grant, an operator's grant, a pass, an account change and a monthly allowance are
// each written once, and the balance equals the ledger's sum.
func TestRetriedTransactionsMoveCreditsOnce(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		ctx := context.Background()
		now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
		l := ledger.New(twiceLedger{db}, func() time.Time { return now })
		check := func(stage string, want int64) {
			t.Helper()
			a, err := l.Account(ctx, "acct_t")
			sum, serr := l.Sum(ctx, "acct_t")
			if err != nil || serr != nil || a.Balance != want || int64(sum) != want {
				t.Fatalf("%s: balance %d, ledger sum %d (%v %v): want %d", stage, a.Balance, sum, err, serr, want)
			}
		}
		allowance := auth.DefaultMonthlyAllowance(auth.Pro)
		if err := l.CreateAccount(ctx, auth.Account{ID: "acct_t", Plan: auth.Pro, Status: auth.Live, Balance: 500,
			MonthlyAllowance: allowance, AllowancePeriod: "2026-10", CreatedAt: now.AddDate(0, -1, 0)}); err != nil {
			t.Fatal(err)
		}
		check("opened", 500)
		if bal, err := l.Grant(ctx, "acct_t", 200); err != nil || bal != 700 {
			t.Fatalf("grant answered %d %v, want 700", bal, err)
		}
		check("granted", 700)
		if err := l.GrantPass(ctx, ledger.Pass{ID: "pass_t", AccountID: "acct_t", Name: "Photo pass", UsesLeft: 3}); err != nil {
			t.Fatal(err)
		}
		if ps, err := l.Passes(ctx, "acct_t"); err != nil || len(ps) != 1 {
			t.Fatalf("passes %+v %v, want one", ps, err)
		}
		if a, _ := l.Account(ctx, "acct_t"); a.PassCount != 1 {
			t.Fatalf("pass count %d, want 1", a.PassCount)
		}
		passOnly := false
		if a, err := l.ChangeAccount(ctx, "acct_t", ledger.AccountChange{PassOnly: &passOnly}); err != nil || a.Balance != 700 || a.ID != "acct_t" {
			t.Fatalf("change answered %+v %v", a, err)
		}
		n, err := l.GrantAllowances(ctx, now, 10)
		if err != nil || n != 1 {
			t.Fatalf("allowances credited %d %v, want 1", n, err)
		}
		check("allowance", 700+allowance)
		if n, err := l.GrantAllowances(ctx, now, 10); err != nil || n != 0 {
			t.Fatalf("allowances credited again %d %v, want 0", n, err)
		}
	})
}
