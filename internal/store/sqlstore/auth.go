package sqlstore

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/ledger"
)

var _ auth.Store = (*DB)(nil)

const accountCols = `id, plan, status, balance, monthly_allowance, allowance_period, created_at, pass_only`

func scanAccount(row interface{ Scan(...any) error }) (auth.Account, error) {
	var a auth.Account
	var plan, status string
	var created int64
	var passOnly int
	if err := row.Scan(&a.ID, &plan, &status, &a.Balance, &a.MonthlyAllowance, &a.AllowancePeriod, &created, &passOnly); err != nil {
		if isNoRows(err) {
			return a, auth.ErrNotFound
		}
		return a, err
	}
	a.Plan, a.Status, a.CreatedAt, a.PassOnly = auth.Plan(plan), auth.Status(status), fromMicros(created), passOnly == 1
	return a, nil
}

// CreateAccount inserts a; a positive opening balance is written as a grant ledger entry. An
// empty AllowancePeriod is taken as the month of CreatedAt (the opening balance stands for it).
func (db *DB) CreateAccount(ctx context.Context, a auth.Account) error {
	if a.AllowancePeriod == "" {
		a.AllowancePeriod = auth.Period(a.CreatedAt)
	}
	return db.InTx(ctx, func(tx *Tx) error {
		if _, err := tx.q.ExecContext(ctx, `INSERT INTO accounts (id, plan, status, balance, monthly_allowance, allowance_period, created_at, pass_only) VALUES ($1, $2, $3, 0, $4, $5, $6, $7)`,
			a.ID, string(a.Plan), string(a.Status), a.MonthlyAllowance, a.AllowancePeriod, micros(a.CreatedAt), boolInt(a.PassOnly)); err != nil {
			return err
		}
		if a.Balance != 0 {
			_, err := tx.AddLedgerEntry(ctx, ledger.Entry{AccountID: a.ID, Kind: ledger.Grant, Amount: a.Balance, At: a.CreatedAt})
			return err
		}
		return nil
	})
}

func (db *DB) Account(ctx context.Context, id string) (auth.Account, error) {
	return db.direct().Account(ctx, id)
}

// Account reads one account inside a transaction.
func (tx *Tx) Account(ctx context.Context, id string) (auth.Account, error) {
	return scanAccount(tx.q.QueryRowContext(ctx, `SELECT `+accountCols+` FROM accounts WHERE id = $1`, id))
}

// AccountForUpdate reads and locks one account row for the rest of the transaction.
func (tx *Tx) AccountForUpdate(ctx context.Context, id string) (auth.Account, error) {
	return scanAccount(tx.q.QueryRowContext(ctx, `SELECT `+accountCols+` FROM accounts WHERE id = $1`+tx.forUpdate(), id))
}

func (db *DB) SetAccountStatus(ctx context.Context, id string, s auth.Status) error {
	return expectOne(db.sql.ExecContext(ctx, `UPDATE accounts SET status = $1 WHERE id = $2`, string(s), id))
}

// SetAccountPassOnly puts an account on (or off) a pass-only plan.
func (db *DB) SetAccountPassOnly(ctx context.Context, id string, passOnly bool) error {
	return expectOne(db.sql.ExecContext(ctx, `UPDATE accounts SET pass_only = $1 WHERE id = $2`, boolInt(passOnly), id))
}

func (db *DB) SetAccountPlan(ctx context.Context, id string, p auth.Plan, allowance int64) error {
	return expectOne(db.sql.ExecContext(ctx, `UPDATE accounts SET plan = $1, monthly_allowance = $2 WHERE id = $3`, string(p), allowance, id))
}

func expectOne(res sql.Result, err error) error {
	if err != nil {
		return err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return err
	}
	if n == 0 {
		return auth.ErrNotFound
	}
	return nil
}

const keyCols = `id, account_id, secret_hash, scopes, created_at, expires_at, revoked_at, ceiling_mode, ceiling, support_ceiling, spent_period, spent`

func scanKey(row interface{ Scan(...any) error }) (auth.KeyRecord, error) {
	var k auth.KeyRecord
	var scopes, mode string
	var created, expires int64
	var revoked sql.NullInt64
	if err := row.Scan(&k.ID, &k.AccountID, &k.SecretHash, &scopes, &created, &expires, &revoked, &mode, &k.Ceiling.Amount, &k.Ceiling.Support, &k.SpentPeriod, &k.Spent); err != nil {
		if isNoRows(err) {
			return k, auth.ErrNotFound
		}
		return k, err
	}
	k.Scopes = auth.ParseStored(scopes)
	k.CreatedAt, k.ExpiresAt, k.RevokedAt = fromMicros(created), fromMicros(expires), timePtr(revoked)
	k.Ceiling.Mode = auth.CeilingMode(mode)
	return k, nil
}

func (db *DB) InsertKey(ctx context.Context, k auth.KeyRecord, maxLive int, now time.Time) error {
	return db.InTx(ctx, func(tx *Tx) error {
		// Lock the account row so two concurrent mints cannot both pass the count.
		if _, err := tx.AccountForUpdate(ctx, k.AccountID); err != nil {
			return err
		}
		var live int
		if err := tx.q.QueryRowContext(ctx, `SELECT count(*) FROM api_keys WHERE account_id = $1 AND revoked_at IS NULL AND expires_at > $2`,
			k.AccountID, micros(now)).Scan(&live); err != nil {
			return err
		}
		if live >= maxLive {
			return auth.ErrTooManyKeys
		}
		_, err := tx.q.ExecContext(ctx, `INSERT INTO api_keys (`+keyCols+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
			k.ID, k.AccountID, k.SecretHash, strings.Join(auth.Strings(k.Scopes), ","), micros(k.CreatedAt), micros(k.ExpiresAt),
			nullMicros(k.RevokedAt), string(k.Ceiling.Mode), k.Ceiling.Amount, k.Ceiling.Support, k.SpentPeriod, k.Spent)
		return err
	})
}

func (db *DB) Key(ctx context.Context, id string) (auth.KeyRecord, error) {
	return db.direct().Key(ctx, id)
}

// Key reads one key inside a transaction.
func (tx *Tx) Key(ctx context.Context, id string) (auth.KeyRecord, error) {
	return scanKey(tx.q.QueryRowContext(ctx, `SELECT `+keyCols+` FROM api_keys WHERE id = $1`, id))
}

func (db *DB) Keys(ctx context.Context, accountID string) ([]auth.KeyRecord, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT `+keyCols+` FROM api_keys WHERE account_id = $1 ORDER BY created_at, id`, accountID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []auth.KeyRecord
	for rows.Next() {
		k, err := scanKey(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, rows.Err()
}

func (db *DB) RevokeKey(ctx context.Context, id string, at time.Time) (time.Time, error) {
	var stamp time.Time
	err := db.InTx(ctx, func(tx *Tx) error {
		if _, err := tx.q.ExecContext(ctx, `UPDATE api_keys SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL`, micros(at), id); err != nil {
			return err
		}
		k, err := tx.Key(ctx, id)
		if err != nil {
			return err
		}
		stamp = *k.RevokedAt
		return nil
	})
	return stamp, err
}

func (db *DB) SetKeyCeiling(ctx context.Context, id string, c auth.Ceiling) error {
	return expectOne(db.sql.ExecContext(ctx, `UPDATE api_keys SET ceiling_mode = $1, ceiling = $2, support_ceiling = $3 WHERE id = $4`,
		string(c.Mode), c.Amount, c.Support, id))
}

// AddLedgerEntry applies e to the account balance and records it; it returns the new balance.
// The balance update and the entry are one statement pair inside the caller's transaction, so
// the balance always equals the sum of entries.
func (tx *Tx) AddLedgerEntry(ctx context.Context, e ledger.Entry) (int64, error) {
	var bal int64
	if err := tx.q.QueryRowContext(ctx, `UPDATE accounts SET balance = balance + $1 WHERE id = $2 RETURNING balance`, e.Amount, e.AccountID).Scan(&bal); err != nil {
		if isNoRows(err) {
			return 0, auth.ErrNotFound
		}
		return 0, err
	}
	_, err := tx.q.ExecContext(ctx, `INSERT INTO ledger_entries (account_id, key_id, job_id, kind, amount, balance, period, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
		e.AccountID, e.KeyID, e.JobID, string(e.Kind), e.Amount, bal, auth.Period(e.At), micros(e.At))
	return bal, err
}

// GrantAllowanceDue credits a's monthly allowance for now's period when it is due (see
// auth.Account.AllowanceDue), as one `allowance` ledger entry, and returns the account as it
// now stands. a must have been read in this transaction (AccountForUpdate). The period is
// claimed by a conditional update, so two processes granting at once credit it once.
func (tx *Tx) GrantAllowanceDue(ctx context.Context, a auth.Account, now time.Time) (auth.Account, error) {
	if !a.AllowanceDue(now) {
		return a, nil
	}
	period := auth.Period(now)
	res, err := tx.q.ExecContext(ctx, `UPDATE accounts SET allowance_period = $1 WHERE id = $2 AND allowance_period < $1`, period, a.ID)
	if err != nil {
		return a, err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return a, err
	}
	bal, err := tx.AddLedgerEntry(ctx, ledger.Entry{AccountID: a.ID, Kind: ledger.Allowance, Amount: a.MonthlyAllowance, At: now})
	if err != nil {
		return a, err
	}
	a.Balance, a.AllowancePeriod = bal, period
	return a, nil
}

// GrantAllowances credits every account whose monthly allowance for now's period is due, at
// most limit of them, each in its own transaction, and returns how many it credited. The
// worker role runs it every minute; a submit grants its own account's at once.
func (db *DB) GrantAllowances(ctx context.Context, now time.Time, limit int) (int, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT id FROM accounts WHERE monthly_allowance > 0 AND status <> $1 AND allowance_period < $2 ORDER BY id LIMIT $3`,
		string(auth.Banned), auth.Period(now), limit)
	if err != nil {
		return 0, err
	}
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, err
		}
		ids = append(ids, id)
	}
	if err := rows.Close(); err != nil {
		return 0, err
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	granted := 0
	for _, id := range ids {
		var credited bool
		err := db.InTx(ctx, func(tx *Tx) error {
			a, err := tx.AccountForUpdate(ctx, id)
			if err != nil {
				return err
			}
			after, err := tx.GrantAllowanceDue(ctx, a, now)
			credited = err == nil && after.AllowancePeriod != a.AllowancePeriod
			return err
		})
		if err != nil {
			return granted, err
		}
		if credited {
			granted++
		}
	}
	return granted, nil
}

// Grant adds credits to an account (operator console).
func (db *DB) Grant(ctx context.Context, accountID string, amount int64, at time.Time) (int64, error) {
	var bal int64
	err := db.InTx(ctx, func(tx *Tx) error {
		var err error
		bal, err = tx.AddLedgerEntry(ctx, ledger.Entry{AccountID: accountID, Kind: ledger.Grant, Amount: amount, At: at})
		return err
	})
	return bal, err
}

// LedgerSum returns the sum of an account's ledger entries (the invariant the balance keeps).
func (db *DB) LedgerSum(ctx context.Context, accountID string) (int64, error) {
	var sum sql.NullInt64
	err := db.sql.QueryRowContext(ctx, `SELECT sum(amount) FROM ledger_entries WHERE account_id = $1`, accountID).Scan(&sum)
	return sum.Int64, err
}
