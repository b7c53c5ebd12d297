package sqlstore

import (
	"context"
	"time"
)

// anyAddress is the address of the row that counts an email's failed sign-ins from every
// address together (migration 00160). A client address is never "*".
const anyAddress = "*"

// SignInFailures answers how many sign-ins of email failed from addr since first, the first
// failure of that pair's current window.
func (db *DB) SignInFailures(ctx context.Context, email, addr string) (int, time.Time, error) {
	return db.signInFailures(ctx, email, addr)
}

// SignInFailuresOfEmail answers how many sign-ins of email failed from every address together
// since first, the first failure of the email's own window (which began at its first failure
// from any address, whatever window each address is in).
func (db *DB) SignInFailuresOfEmail(ctx context.Context, email string) (int, time.Time, error) {
	return db.signInFailures(ctx, email, anyAddress)
}

func (db *DB) signInFailures(ctx context.Context, email, addr string) (int, time.Time, error) {
	var n int
	var first int64
	err := db.sql.QueryRowContext(ctx, `SELECT failures, first_at FROM sign_in_failures WHERE email = $1 AND address = $2`,
		email, addr).Scan(&n, &first)
	if isNoRows(err) {
		return 0, time.Time{}, nil
	}
	return n, fromMicros(first), err
}

// FailSignIn counts one more failure of email from addr at now, both in that pair's count and
// in the email's count from every address. Each is in a new window from now when its last one
// began at or before now less window: windows ended are dropped, so the table holds only the
// failures of the last window.
func (db *DB) FailSignIn(ctx context.Context, email, addr string, now time.Time, window time.Duration) error {
	expired := micros(now.Add(-window))
	return db.InTx(ctx, func(tx *Tx) error {
		if _, err := tx.q.ExecContext(ctx, `DELETE FROM sign_in_failures WHERE first_at <= $1`, expired); err != nil {
			return err
		}
		for _, a := range []string{addr, anyAddress} {
			if _, err := tx.q.ExecContext(ctx, `INSERT INTO sign_in_failures (email, address, failures, first_at) VALUES ($1, $2, 1, $3)
 ON CONFLICT (email, address) DO UPDATE SET failures = sign_in_failures.failures + 1`, email, a, micros(now)); err != nil {
				return err
			}
		}
		return nil
	})
}

// ClearSignInFailures forgets email's failures from addr (a sign-in from there succeeded).
// Its failures from other addresses, and its count from every address, stay: a guesser
// elsewhere keeps the budget already spent.
func (db *DB) ClearSignInFailures(ctx context.Context, email, addr string) error {
	_, err := db.sql.ExecContext(ctx, `DELETE FROM sign_in_failures WHERE email = $1 AND address = $2`, email, addr)
	return err
}
