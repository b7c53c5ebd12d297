package sqlstore

import (
	"context"
	"database/sql"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
)

var _ auth.UserStore = (*DB)(nil)

const userCols = `id, account_id, email, password_hash, operator, created_at`

func scanUser(row interface{ Scan(...any) error }) (auth.User, error) {
	var u auth.User
	var op int
	var created int64
	if err := row.Scan(&u.ID, &u.AccountID, &u.Email, &u.PasswordHash, &op, &created); err != nil {
		if isNoRows(err) {
			return u, auth.ErrNotFound
		}
		return u, err
	}
	u.Operator, u.CreatedAt = op == 1, fromMicros(created)
	return u, nil
}

func (db *DB) InsertUser(ctx context.Context, u auth.User) error {
	op := 0
	if u.Operator {
		op = 1
	}
	// Writes go through InTx: on SQLite it is the one writer of the process.
	err := db.InTx(ctx, func(tx *Tx) error {
		_, err := tx.q.ExecContext(ctx, `INSERT INTO console_users (`+userCols+`) VALUES ($1, $2, $3, $4, $5, $6)`,
			u.ID, u.AccountID, u.Email, u.PasswordHash, op, micros(u.CreatedAt))
		return err
	})
	if isUniqueViolation(err) {
		return auth.ErrEmailTaken
	}
	return err
}

func (db *DB) UserByEmail(ctx context.Context, email string) (auth.User, error) {
	return scanUser(db.sql.QueryRowContext(ctx, `SELECT `+userCols+` FROM console_users WHERE email = $1`, email))
}

func (db *DB) User(ctx context.Context, id string) (auth.User, error) {
	return scanUser(db.sql.QueryRowContext(ctx, `SELECT `+userCols+` FROM console_users WHERE id = $1`, id))
}

func (db *DB) Users(ctx context.Context, accountID string) ([]auth.User, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT `+userCols+` FROM console_users WHERE account_id = $1 ORDER BY created_at, id`, accountID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []auth.User
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

const sessionCols = `id, user_id, secret_hash, created_at, expires_at, revoked_at`

func (db *DB) InsertSession(ctx context.Context, s auth.Session) error {
	return db.InTx(ctx, func(tx *Tx) error {
		_, err := tx.q.ExecContext(ctx, `INSERT INTO console_sessions (`+sessionCols+`) VALUES ($1, $2, $3, $4, $5, $6)`,
			s.ID, s.UserID, s.SecretHash, micros(s.CreatedAt), micros(s.ExpiresAt), nullMicros(s.RevokedAt))
		return err
	})
}

func (db *DB) Session(ctx context.Context, id string) (auth.Session, error) {
	var s auth.Session
	var created, expires int64
	var revoked sql.NullInt64
	err := db.sql.QueryRowContext(ctx, `SELECT `+sessionCols+` FROM console_sessions WHERE id = $1`, id).
		Scan(&s.ID, &s.UserID, &s.SecretHash, &created, &expires, &revoked)
	if isNoRows(err) {
		return s, auth.ErrNotFound
	}
	if err != nil {
		return s, err
	}
	s.CreatedAt, s.ExpiresAt, s.RevokedAt = fromMicros(created), fromMicros(expires), timePtr(revoked)
	return s, nil
}

func (db *DB) RevokeSession(ctx context.Context, id string, at time.Time) error {
	return db.InTx(ctx, func(tx *Tx) error {
		_, err := tx.q.ExecContext(ctx, `UPDATE console_sessions SET revoked_at = $1 WHERE id = $2 AND revoked_at IS NULL`, micros(at), id)
		return err
	})
}
