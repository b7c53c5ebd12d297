package sqlstore

import (
	"context"
	"time"
)

// UsageRow is one key's spend in a window, read from the ledger: Charged is the credits its
// charges took (a positive number), Refunded what refunds gave back, Jobs how many distinct
// jobs were charged.
//
// It is an alias of an unnamed struct on purpose: accountapi declares the same shape for its
// UsageReader port, and Go treats the two as one type, so *DB satisfies that port without the
// HTTP layer importing the store or the store importing the HTTP layer.
type UsageRow = struct {
	KeyID    string
	Charged  int64
	Refunded int64
	Jobs     int64
}

// Usage sums the ledger's charge and refund entries of accountID created in [from, to),
// grouped by the key that caused them, ordered by key id. Grants (which have no key) are not
// spend and are left out. A refund counts in the window it was written in, which may differ
// from its charge's.
func (db *DB) Usage(ctx context.Context, accountID string, from, to time.Time) ([]UsageRow, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT key_id,
 CAST(COALESCE(SUM(CASE WHEN kind = 'charge' THEN -amount ELSE 0 END), 0) AS BIGINT),
 CAST(COALESCE(SUM(CASE WHEN kind = 'refund' THEN amount ELSE 0 END), 0) AS BIGINT),
 COUNT(DISTINCT CASE WHEN kind = 'charge' THEN job_id END)
 FROM ledger_entries
 WHERE account_id = $1 AND created_at >= $2 AND created_at < $3 AND kind IN ('charge', 'refund')
 GROUP BY key_id ORDER BY key_id`, accountID, micros(from), micros(to))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []UsageRow{}
	for rows.Next() {
		var r UsageRow
		if err := rows.Scan(&r.KeyID, &r.Charged, &r.Refunded, &r.Jobs); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
