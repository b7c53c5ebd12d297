package sqlstore

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
)

var _ auth.LastUsedStore = (*DB)(nil)

// TouchKeys moves each key's last_used_at forward, one short statement per key in one
// transaction, in key id order: submits charged together lock their keys in that order
// (LedgerHold), so neither waits on the other in a cycle.
func (db *DB) TouchKeys(ctx context.Context, stamps map[string]time.Time) error {
	ids := slices.Sorted(maps.Keys(stamps))
	return db.InTx(ctx, func(tx *Tx) error {
		for _, id := range ids {
			if _, err := tx.q.ExecContext(ctx, `UPDATE api_keys SET last_used_at = $1 WHERE id = $2 AND (last_used_at IS NULL OR last_used_at < $1)`,
				micros(stamps[id]), id); err != nil {
				return err
			}
		}
		return nil
	})
}

// KeysLastUsed answers the last-used time of accountID's keys that were ever used.
func (db *DB) KeysLastUsed(ctx context.Context, accountID string) (map[string]time.Time, error) {
	rows, err := db.sql.QueryContext(ctx, `SELECT id, last_used_at FROM api_keys WHERE account_id = $1 AND last_used_at IS NOT NULL`, accountID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]time.Time{}
	for rows.Next() {
		var id string
		var at int64
		if err := rows.Scan(&id, &at); err != nil {
			return nil, err
		}
		out[id] = fromMicros(at)
	}
	return out, rows.Err()
}
