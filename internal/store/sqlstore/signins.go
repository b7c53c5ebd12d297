package sqlstore

import (
	"context"
	"time"
)

// SignInFailures answers how many sign-ins of email failed since first, the first failure of
// its current window.
func (db *DB) SignInFailures(ctx context.Context, email string) (int, time.Time, error) {
	var n int
	var first int64
	err := db.sql.QueryRowContext(ctx, `SELECT failures, first_at FROM sign_in_failures WHERE email = $1`, email).Scan(&n, &first)
	if isNoRows(err) {
		return 0, time.Time{}, nil
	}
	return n, fromMicros(first), err
}

// FailSignIn counts one more failure of email at now, in a new window from now when its last
// one began before now less window; windows ended are dropped, so the table holds only
// the failures of the last window.
func (db *DB) FailSignIn(ctx context.Context, email string, now time.Time, window time.Duration) error {
	expired := micros(now.Add(-window))
	return db.InTx(ctx, func(tx *Tx) error {
		if _, err := tx.q.ExecContext(ctx, `DELETE FROM sign_in_failures WHERE first_at < $1`, expired); err != nil {
			return err
		}
		_, err := tx.q.ExecContext(ctx, `INSERT INTO sign_in_failures (email, failures, first_at) VALUES ($1, 1, $2)
 ON CONFLICT (email) DO UPDATE SET failures = sign_in_failures.failures + 1`, email, micros(now))
		return err
	})
}

// ClearSignInFailures forgets email's failures.
func (db *DB) ClearSignInFailures(ctx context.Context, email string) error {
	_, err := db.sql.ExecContext(ctx, `DELETE FROM sign_in_failures WHERE email = $1`, email)
	return err
}
