package sqlstore

import (
	"context"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/ledger"
)

// Shorthands for tests, tools and bootstrapping: each goes through ledger.Service, which
// owns every credit movement; none writes credits itself.

// CreateAccount opens an account through the ledger (the opening balance is a grant entry).
func (db *DB) CreateAccount(ctx context.Context, a auth.Account) error {
	return ledger.New(db, time.Now).CreateAccount(ctx, a)
}

// Grant adds credits through the ledger, stamped at, and answers the new balance.
func (db *DB) Grant(ctx context.Context, accountID string, amount int64, at time.Time) (int64, error) {
	bal, err := ledger.New(db, func() time.Time { return at }).Grant(ctx, accountID, ledger.Credits(amount))
	return int64(bal), err
}

// AddPass gives a pass or promotion through the ledger.
func (db *DB) AddPass(ctx context.Context, p ledger.Pass) error {
	return ledger.New(db, time.Now).GrantPass(ctx, p)
}

// SetAccountStatus changes an account's status through the ledger (a ban revokes its keys).
func (db *DB) SetAccountStatus(ctx context.Context, id string, s auth.Status) error {
	_, err := ledger.New(db, time.Now).ChangeAccount(ctx, id, ledger.AccountChange{Status: &s})
	return err
}

// SetAccountPassOnly puts an account on or off a pass-only plan through the ledger.
func (db *DB) SetAccountPassOnly(ctx context.Context, id string, passOnly bool) error {
	_, err := ledger.New(db, time.Now).ChangeAccount(ctx, id, ledger.AccountChange{PassOnly: &passOnly})
	return err
}

// SetAccountPlan changes an account's plan and monthly allowance through the ledger.
func (db *DB) SetAccountPlan(ctx context.Context, id string, p auth.Plan, allowance int64) error {
	c := ledger.Credits(allowance)
	_, err := ledger.New(db, time.Now).ChangeAccount(ctx, id, ledger.AccountChange{Plan: &p, Allowance: &c})
	return err
}

// GrantAllowances credits the monthly allowances due at now through the ledger.
func (db *DB) GrantAllowances(ctx context.Context, now time.Time, limit int) (int, error) {
	return ledger.New(db, func() time.Time { return now }).GrantAllowances(ctx, now, limit)
}

// LedgerSum is the sum of an account's ledger entries (the invariant the balance keeps).
func (db *DB) LedgerSum(ctx context.Context, accountID string) (int64, error) {
	v, err := ledger.New(db, time.Now).Sum(ctx, accountID)
	return int64(v), err
}
