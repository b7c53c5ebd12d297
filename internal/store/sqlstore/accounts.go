package sqlstore

import (
	"context"
	"math"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
)

// qAccountsPage is one page of the operator's account list, newest first, keyset-paged on
// (created_at, id) through the accounts_created index.
const qAccountsPage = `SELECT ` + accountCols + ` FROM accounts WHERE (created_at, id) < ($1, $2) ORDER BY created_at DESC, id DESC LIMIT $3`

// Accounts lists at most limit accounts created before (before, beforeID), newest first; a
// zero before starts from the newest account.
func (db *DB) Accounts(ctx context.Context, before time.Time, beforeID string, limit int) ([]auth.Account, error) {
	at := int64(math.MaxInt64)
	if !before.IsZero() {
		at = micros(before)
	}
	rows, err := db.sql.QueryContext(ctx, qAccountsPage, at, beforeID, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []auth.Account
	for rows.Next() {
		a, err := scanAccount(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}
