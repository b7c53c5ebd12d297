package sqlstore

import (
	"context"
	"time"

	"github.com/modelexec/modelexec/internal/ledger"
)

// This file is the read side of the usage rollups, which the ledger's adapter (ledger_store.go)
// writes in the statement of each charge and refund: usage_daily (a row per account, UTC day,
// key and model), usage_monthly (per account, UTC calendar month, key and model) and
// usage_daily_totals (per account and UTC day). Every read here takes one account's rows over a
// window of days, each part one range of a rollup's primary key, so it costs the window's rows,
// not the account's history; the sums per key and per model read whole months from
// usage_monthly, so twelve months cost at most a row per month, key and model.

var _ ledger.UsageStore = (*DB)(nil)

// LedgerUsageByKey sums the charges and refunds of accountID over [from, to) per key that
// caused them, ordered by key id. Grants and allowances are not spend and are not in the
// rollup. A refund counts in the day it was written, which may differ from its charge's.
func (db *DB) LedgerUsageByKey(ctx context.Context, accountID string, from, to time.Time) ([]ledger.KeyUsage, error) {
	d0, m0, m1, d1 := usageSpans(from, to)
	rows, err := db.sql.QueryContext(ctx, qUsage, accountID, d0, m0, m1, d1)
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

// LedgerUsagePer sums the rollup of accountID over [from, to) per UTC day (Day set) or per
// model (Model set), in that order.
func (db *DB) LedgerUsagePer(ctx context.Context, accountID string, from, to time.Time, per ledger.UsageGroup) ([]ledger.DayUsage, error) {
	q, args := qUsagePerDay, []any{accountID, dayStart(from), dayEnd(to)}
	if per == ledger.PerModel {
		d0, m0, m1, d1 := usageSpans(from, to)
		q, args = qUsagePerModel, []any{accountID, d0, m0, m1, d1}
	}
	rows, err := db.sql.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := []ledger.DayUsage{}
	for rows.Next() {
		var r ledger.DayUsage
		if per == ledger.PerModel {
			err = rows.Scan(&r.Model, &r.Jobs, &r.Charged, &r.Refunded)
		} else {
			var day int64
			err = rows.Scan(&day, &r.Jobs, &r.Charged, &r.Refunded)
			r.Day = fromMicros(day)
		}
		if err != nil {
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

// LedgerUsageDays answers up to limit rollup rows of accountID over [from, to) in
// primary-key order (day, key, model), after the row `after` (nil: from the start).
func (db *DB) LedgerUsageDays(ctx context.Context, accountID string, from, to time.Time, after *ledger.DayUsage, limit int) ([]ledger.DayUsage, error) {
	// The first page starts just before the window's first day, so every row of that day is
	// after it.
	start, key, model := dayStart(from)-1, "", ""
	if after != nil {
		start, key, model = max(micros(after.Day), start), after.KeyID, after.Model
	}
	rows, err := db.sql.QueryContext(ctx, qUsageDays, accountID, start, dayEnd(to), key, model, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]ledger.DayUsage, 0, min(limit, 1024))
	for rows.Next() {
		var (
			r   ledger.DayUsage
			day int64
		)
		if err := rows.Scan(&day, &r.KeyID, &r.Model, &r.Jobs, &r.Charged, &r.Refunded); err != nil {
			return nil, err
		}
		r.Day = fromMicros(day)
		out = append(out, r)
	}
	return out, rows.Err()
}

// LedgerUsageLineCount counts the charge and refund entries of accountID's keys written in
// [from, to): what a per-job export of the window would hold.
func (db *DB) LedgerUsageLineCount(ctx context.Context, accountID string, from, to time.Time) (int64, error) {
	var n int64
	err := db.sql.QueryRowContext(ctx, qUsageLineCount, accountID, dayStart(from), dayEnd(to)).Scan(&n)
	return n, err
}

// LedgerUsageKeys lists the ids of every key accountID ever had, revoked ones too.
func (db *DB) LedgerUsageKeys(ctx context.Context, accountID string) ([]string, error) {
	rows, err := db.sql.QueryContext(ctx, qUsageKeys, accountID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// LedgerUsageLines answers up to limit charge and refund entries of keyID written in
// [from, to), in the order they were written, after the entry `after` (nil: from the start),
// each with its job's model.
func (db *DB) LedgerUsageLines(ctx context.Context, keyID string, from, to time.Time, after *ledger.UsageLine, limit int) ([]ledger.UsageLine, error) {
	// Entry ids start at 1: the first page takes every entry from the window's first instant.
	start, id := dayStart(from), int64(0)
	if after != nil {
		start, id = max(micros(after.At), start), after.EntryID
	}
	rows, err := db.sql.QueryContext(ctx, qUsageLines, keyID, start, dayEnd(to), id, limit)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := make([]ledger.UsageLine, 0, min(limit, 1024))
	for rows.Next() {
		var (
			l      ledger.UsageLine
			at     int64
			kind   string
			amount int64
		)
		if err := rows.Scan(&l.EntryID, &at, &l.KeyID, &l.Model, &l.JobID, &kind, &amount); err != nil {
			return nil, err
		}
		l.At, l.Kind = fromMicros(at), ledger.Kind(kind)
		if l.Kind == ledger.Charge {
			l.Charged = ledger.Credits(-amount)
		} else {
			l.Refunded = ledger.Credits(amount)
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// dayStart and dayEnd widen [from, to) to whole UTC days in the rollup's unit (microseconds
// since the epoch): the day holding from, and the end of the day holding the instant before to.
func dayStart(from time.Time) int64 { return micros(from) / dayMicros * dayMicros }
func dayEnd(to time.Time) int64     { return (micros(to) + dayMicros - 1) / dayMicros * dayMicros }

// usageSpans splits the days of [from, to) (widened as dayStart and dayEnd do) into [d0, m0),
// the days before its first whole UTC calendar month; [m0, m1), its whole months; and [m1, d1),
// the days after them. A window without a whole month is all days: m0 = m1 = d1.
func usageSpans(from, to time.Time) (d0, m0, m1, d1 int64) {
	d0, d1 = dayStart(from), dayEnd(to)
	if m0 = monthMicros(fromMicros(d0)); m0 < d0 {
		m0 = micros(fromMicros(m0).AddDate(0, 1, 0))
	}
	m1 = monthMicros(fromMicros(d1))
	if m0 >= m1 {
		m0, m1 = d1, d1
	}
	return d0, m0, m1, d1
}
