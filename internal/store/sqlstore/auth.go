package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
)

var _ auth.Store = (*DB)(nil)

const accountCols = `id, plan, status, balance, monthly_allowance, allowance_period, created_at, pass_only, pass_count`

func scanAccount(row interface{ Scan(...any) error }) (auth.Account, error) {
	var a auth.Account
	var plan, status string
	var created int64
	var passOnly int
	if err := row.Scan(&a.ID, &plan, &status, &a.Balance, &a.MonthlyAllowance, &a.AllowancePeriod, &created, &passOnly, &a.PassCount); err != nil {
		if isNoRows(err) {
			return a, auth.ErrNotFound
		}
		return a, err
	}
	a.Plan, a.Status, a.CreatedAt, a.PassOnly = auth.Plan(plan), auth.Status(status), fromMicros(created), passOnly == 1
	return a, nil
}

func (db *DB) Account(ctx context.Context, id string) (auth.Account, error) {
	return db.direct().Account(ctx, id)
}

// Account reads one account inside a transaction.
func (tx *Tx) Account(ctx context.Context, id string) (auth.Account, error) {
	return scanAccount(tx.q.QueryRowContext(ctx, `SELECT `+accountCols+` FROM accounts WHERE id = $1`, id))
}

// accountForUpdate reads and locks one account row for the rest of the transaction.
func (tx *Tx) accountForUpdate(ctx context.Context, id string) (auth.Account, error) {
	return scanAccount(tx.q.QueryRowContext(ctx, `SELECT `+accountCols+` FROM accounts WHERE id = $1`+tx.forUpdate(), id))
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

const keyCols = `id, account_id, secret_hash, scopes, created_at, expires_at, revoked_at, ceiling_mode, ceiling, support_ceiling, spent_period, spent, console, name`

func scanKey(row interface{ Scan(...any) error }) (auth.KeyRecord, error) {
	var k auth.KeyRecord
	var scopes, mode string
	var created, expires int64
	var revoked sql.NullInt64
	var console int
	if err := row.Scan(&k.ID, &k.AccountID, &k.SecretHash, &scopes, &created, &expires, &revoked, &mode, &k.Ceiling.Amount, &k.Ceiling.Support,
		&k.SpentPeriod, &k.Spent, &console, &k.Name); err != nil {
		if isNoRows(err) {
			return k, auth.ErrNotFound
		}
		return k, err
	}
	k.Scopes = auth.ParseStored(scopes)
	k.CreatedAt, k.ExpiresAt, k.RevokedAt = fromMicros(created), fromMicros(expires), timePtr(revoked)
	k.Ceiling.Mode, k.Console = auth.CeilingMode(mode), console == 1
	return k, nil
}

// qAccountKey reads an account and one of its keys in one row.
var qAccountKey = `SELECT ` + prefixed("a.", accountCols) + `, ` + prefixed("k.", keyCols) +
	` FROM accounts a JOIN api_keys k ON k.account_id = a.id WHERE a.id = $1 AND k.id = $2`

// prefixed qualifies each column of a column list with p.
func prefixed(p, cols string) string {
	parts := strings.Split(cols, ", ")
	for i := range parts {
		parts[i] = p + parts[i]
	}
	return strings.Join(parts, ", ")
}

// scanAccountKey scans a row of qAccountKey, and into more the columns that follow.
func scanAccountKey(row interface{ Scan(...any) error }, more ...any) (auth.Account, auth.KeyRecord, error) {
	var a auth.Account
	var k auth.KeyRecord
	var plan, status, scopes, mode string
	var created, kCreated, expires int64
	var passOnly, console int
	var revoked sql.NullInt64
	dest := append([]any{&a.ID, &plan, &status, &a.Balance, &a.MonthlyAllowance, &a.AllowancePeriod, &created, &passOnly, &a.PassCount,
		&k.ID, &k.AccountID, &k.SecretHash, &scopes, &kCreated, &expires, &revoked, &mode, &k.Ceiling.Amount, &k.Ceiling.Support, &k.SpentPeriod, &k.Spent,
		&console, &k.Name}, more...)
	if err := row.Scan(dest...); err != nil {
		if isNoRows(err) {
			return a, k, auth.ErrNotFound
		}
		return a, k, err
	}
	a.Plan, a.Status, a.CreatedAt, a.PassOnly = auth.Plan(plan), auth.Status(status), fromMicros(created), passOnly == 1
	k.Scopes = auth.ParseStored(scopes)
	k.CreatedAt, k.ExpiresAt, k.RevokedAt = fromMicros(kCreated), fromMicros(expires), timePtr(revoked)
	k.Ceiling.Mode, k.Console = auth.CeilingMode(mode), console == 1
	return a, k, nil
}

func (db *DB) InsertKey(ctx context.Context, k auth.KeyRecord, maxLive int, now time.Time) error {
	return db.InTx(ctx, func(tx *Tx) error {
		// Lock the account row so two concurrent mints cannot both pass the count.
		if _, err := tx.accountForUpdate(ctx, k.AccountID); err != nil {
			return err
		}
		// The keys that hold a slot (auth.KeyRecord.HoldsSlot): live, and not the console's.
		var live int
		if err := tx.q.QueryRowContext(ctx, `SELECT count(*) FROM api_keys WHERE account_id = $1 AND revoked_at IS NULL AND expires_at > $2 AND console = 0`,
			k.AccountID, micros(now)).Scan(&live); err != nil {
			return err
		}
		if live >= maxLive {
			return auth.ErrTooManyKeys
		}
		_, err := tx.q.ExecContext(ctx, qInsertKey, keyArgs(k)...)
		return err
	})
}

// qInsertKey writes a key record; qInsertConsoleKey writes one unless it conflicts with a key
// already there (the account's console key, by its id or by api_keys_console).
const (
	qInsertKey        = `INSERT INTO api_keys (` + keyCols + `) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)`
	qInsertConsoleKey = qInsertKey + ` ON CONFLICT DO NOTHING`
)

func keyArgs(k auth.KeyRecord) []any {
	return []any{k.ID, k.AccountID, k.SecretHash, strings.Join(auth.Strings(k.Scopes), ","), micros(k.CreatedAt), micros(k.ExpiresAt),
		nullMicros(k.RevokedAt), string(k.Ceiling.Mode), k.Ceiling.Amount, k.Ceiling.Support, k.SpentPeriod, k.Spent, boolInt(k.Console), k.Name}
}

// InsertConsoleKey writes an account's console key unless the account has it already.
func (db *DB) InsertConsoleKey(ctx context.Context, k auth.KeyRecord) error {
	if !k.Console {
		return fmt.Errorf("sqlstore: key %s is not a console key", k.ID)
	}
	_, err := db.sql.ExecContext(ctx, qInsertConsoleKey, keyArgs(k)...)
	return err
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
