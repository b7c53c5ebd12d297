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

// Usage sums the charges and refunds of accountID written in [from, to), grouped by the key
// that caused them, ordered by key id. It reads the usage rollup (one row per account, UTC day,
// key and model, written with each entry), so it costs the window's days, not the account's
// history; the window is taken in whole UTC days (the windows served are calendar months).
// Grants and allowances are not spend and are left out. A refund counts in the day it was
// written, which may differ from its charge's.
func (db *DB) Usage(ctx context.Context, accountID string, from, to time.Time) ([]UsageRow, error) {
	first := micros(from) / dayMicros * dayMicros
	end := (micros(to) + dayMicros - 1) / dayMicros * dayMicros
	rows, err := db.sql.QueryContext(ctx, qUsage, accountID, first, end)
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
		if r.Charged == 0 && r.Refunded == 0 && r.Jobs == 0 {
			continue
		}
		out = append(out, r)
	}
	return out, rows.Err()
}
