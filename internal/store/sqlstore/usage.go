package sqlstore

import (
	"context"
	"math"
	"time"

	"github.com/modelexec/modelexec/internal/ledger"
)

// This file is the read side of the usage rollup (usage_daily), which the ledger's adapter
// (ledger_store.go) writes in the transaction of each charge and refund. Every read here takes
// one account's rows over a window of days: one range of the rollup's primary key
// (account_id, day, key_id, model), so it costs the window's rows, not the account's history.

var _ ledger.UsageStore = (*DB)(nil)

// LedgerUsageByKey sums the charges and refunds of accountID over [from, to) per key that
// caused them, ordered by key id. Grants and allowances are not spend and are not in the
// rollup. A refund counts in the day it was written, which may differ from its charge's.
func (db *DB) LedgerUsageByKey(ctx context.Context, accountID string, from, to time.Time) ([]ledger.KeyUsage, error) {
	rows, err := db.sql.QueryContext(ctx, qUsage, accountID, dayStart(from), dayEnd(to))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []ledger.KeyUsage{}
	for rows.Next() {
		var r ledger.KeyUsage
		if err := rows.Scan(&r.KeyID, &r.Charged, &r.Refunded, &r.Jobs); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

// LedgerUsageDayCount counts the rollup rows of accountID over [from, to): what an export of
// the window would hold.
func (db *DB) LedgerUsageDayCount(ctx context.Context, accountID string, from, to time.Time) (int64, error) {
	var n int64
	err := db.sql.QueryRowContext(ctx, qUsageDayCount, accountID, dayStart(from), dayEnd(to)).Scan(&n)
	return n, err
}

// LedgerUsageDays hands fn the rollup rows of accountID over [from, to) in primary-key order
// (day, key, model), at most limit of them (limit <= 0: all), scanning one at a time.
func (db *DB) LedgerUsageDays(ctx context.Context, accountID string, from, to time.Time, limit int, fn func(ledger.DayUsage) error) error {
	lim := int64(limit)
	if limit <= 0 {
		lim = math.MaxInt64
	}
	rows, err := db.sql.QueryContext(ctx, qUsageDays, accountID, dayStart(from), dayEnd(to), lim)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			r   ledger.DayUsage
			day int64
		)
		if err := rows.Scan(&day, &r.KeyID, &r.Model, &r.Jobs, &r.Charged, &r.Refunded); err != nil {
			return err
		}
		r.Day = fromMicros(day)
		if err := fn(r); err != nil {
			return err
		}
	}
	return rows.Err()
}

// LedgerUsageLineCount counts the charge and refund entries of accountID's keys written in
// [from, to): what a per-job export of the window would hold.
func (db *DB) LedgerUsageLineCount(ctx context.Context, accountID string, from, to time.Time) (int64, error) {
	var n int64
	err := db.sql.QueryRowContext(ctx, qUsageLineCount, accountID, dayStart(from), dayEnd(to)).Scan(&n)
	return n, err
}

// LedgerUsageLines hands fn the charge and refund entries of accountID's keys written in
// [from, to), in the order they were written, at most limit of them (limit <= 0: all), each
// with its job's model.
func (db *DB) LedgerUsageLines(ctx context.Context, accountID string, from, to time.Time, limit int, fn func(ledger.UsageLine) error) error {
	lim := int64(limit)
	if limit <= 0 {
		lim = math.MaxInt64
	}
	rows, err := db.sql.QueryContext(ctx, qUsageLines, accountID, dayStart(from), dayEnd(to), lim)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var (
			l      ledger.UsageLine
			at     int64
			kind   string
			amount int64
		)
		if err := rows.Scan(&at, &l.KeyID, &l.Model, &l.JobID, &kind, &amount); err != nil {
			return err
		}
		l.At, l.Kind = fromMicros(at), ledger.Kind(kind)
		if l.Kind == ledger.Charge {
			l.Charged = ledger.Credits(-amount)
		} else {
			l.Refunded = ledger.Credits(amount)
		}
		if err := fn(l); err != nil {
			return err
		}
	}
	return rows.Err()
}

// dayStart and dayEnd widen [from, to) to whole UTC days in the rollup's unit (microseconds
// since the epoch): the day holding from, and the end of the day holding the instant before to.
func dayStart(from time.Time) int64 { return micros(from) / dayMicros * dayMicros }
func dayEnd(to time.Time) int64     { return (micros(to) + dayMicros - 1) / dayMicros * dayMicros }
