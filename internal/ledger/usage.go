package ledger

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
)

// KeyUsage is one key's spend in a window: Charged is what its charges took (positive),
// Refunded what refunds gave back, Jobs how many jobs were charged.
type KeyUsage struct {
	KeyID    string
	Charged  Credits
	Refunded Credits
	Jobs     int64
}

// Net is what the key's jobs cost once refunds are given back.
func (u KeyUsage) Net() Credits { return u.Charged - u.Refunded }

// DayUsage is one row of the usage rollup: what one key spent on one model in one UTC day.
type DayUsage struct {
	Day      time.Time // start of the UTC day
	KeyID    string
	Model    string // "" for a movement that named no model
	Jobs     int64
	Charged  Credits
	Refunded Credits
}

// Net is what the row's jobs cost once refunds are given back.
func (u DayUsage) Net() Credits { return u.Charged - u.Refunded }

// UsageLine is one charge or refund entry of a job: the export's per-job granularity.
type UsageLine struct {
	EntryID  int64 // the entry's id: with At, where the next page of lines resumes
	At       time.Time
	KeyID    string
	Model    string // "" when the job is no longer on record
	JobID    string
	Kind     Kind    // Charge or Refund
	Charged  Credits // what a charge took (positive); 0 on a refund
	Refunded Credits // what a refund gave back; 0 on a charge
}

// MaxUsageMonths is the longest window usage is read over: twelve calendar months.
const MaxUsageMonths = 12

// UsageWindows lists every window name accepted (the refusal's `allowed`): month, last_month,
// and 1m to 12m.
var UsageWindows = func() []string {
	out := []string{"month", "last_month"}
	for n := 1; n <= MaxUsageMonths; n++ {
		out = append(out, strconv.Itoa(n)+"m")
	}
	return out
}()

// Window is a named span of whole calendar months, [From, To) in UTC.
type Window struct {
	Name     string // as asked, "month" when none was
	From, To time.Time
}

// ParseWindow resolves a window name at now (UTC). The account API's GET /v1/usage and its
// export, and the console's charts, accept the same names:
//   - "month" (also ""): the current calendar month;
//   - "last_month": the whole previous calendar month;
//   - "<N>m" with N from 1 to 12: the current month and the N-1 before it ("1m" is "month",
//     "12m" the last twelve calendar months).
//
// To is exclusive and a month boundary: the current month's window ends where the next month
// starts (nothing is written after now, so it reads everything up to now).
//
// Refusals: a recognised form longer than twelve months ("24m", "13m") is 413
// usage_window_too_large carrying `window`. A name that is not a window at all ("week", "0m",
// "bogus") is not "too large" but a malformed value: 400 invalid_input carrying `window` and
// `allowed`, with a message naming the windows accepted.
func ParseWindow(name string, now time.Time) (Window, error) {
	now = now.UTC()
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	next := month.AddDate(0, 1, 0)
	switch name {
	case "", "month":
		return Window{Name: "month", From: month, To: next}, nil
	case "last_month":
		return Window{Name: name, From: month.AddDate(0, -1, 0), To: month}, nil
	}
	// "<N>m": N written in digits without a leading zero. A number past the integer's range
	// (Atoi's only error for such digits) is past twelve too: too large, as any longer window.
	if n, ok := strings.CutSuffix(name, "m"); ok && n != "" && n[0] != '0' && strings.Trim(n, "0123456789") == "" {
		v, err := strconv.Atoi(n)
		if err != nil || v > MaxUsageMonths {
			return Window{}, apierr.Newf(apierr.UsageWindowTooLarge, "The usage window is too big to read: at most 12 months (12m).").
				With("window", name).With("allowed", UsageWindows).With("max_months", MaxUsageMonths)
		}
		return Window{Name: name, From: month.AddDate(0, -(v - 1), 0), To: next}, nil
	}
	return Window{}, apierr.Newf(apierr.InvalidInput,
		"window %q is not a usage window: send month, last_month, or 1m to 12m (the current month and up to eleven before it).", name).
		With("window", name).With("allowed", UsageWindows)
}

// DefaultExportRows is how many rows one usage export may hold: "one file".
const DefaultExportRows = 100_000

// Usage reads what an account spent: from the rollup the ledger writes in the transaction of
// each charge and refund, per key for GET /v1/usage and per day, key and model for the export
// and the console's charts; from the charge and refund entries themselves for the per-job
// export. Every read is bounded by its window (at most twelve months), an export also by its
// row limit, and the long ones are read in pages.
type Usage struct {
	store UsageStore
	// MaxExportRows is the most rows one export holds; past it Export refuses with
	// export_too_large. Zero means DefaultExportRows.
	MaxExportRows int
	// PageRows is how many rows one statement reads while streaming (0: DefaultPageRows).
	PageRows int
}

// DefaultPageRows is how many rows a streaming read takes per statement: enough to make the
// round trips cheap, few enough that memory holds a page, never the file.
const DefaultPageRows = 1000

// NewUsage wires the usage reads over the store.
func NewUsage(store UsageStore) *Usage { return &Usage{store: store} }

// ByKey is the account's spend per key in the window, ordered by key id; keys that neither
// charged nor refunded are left out.
func (u *Usage) ByKey(ctx context.Context, accountID string, w Window) ([]KeyUsage, error) {
	from, to := days(w)
	rows, err := u.store.LedgerUsageByKey(ctx, accountID, from, to)
	if err != nil {
		return nil, err
	}
	out := rows[:0]
	for _, r := range rows {
		if r.Charged != 0 || r.Refunded != 0 || r.Jobs != 0 {
			out = append(out, r)
		}
	}
	return out, nil
}

// UsageGroup is what Summary sums the rollup by.
type UsageGroup int

const (
	PerDay UsageGroup = iota
	PerModel
)

// Summary is a window's spend summed three ways: per UTC day (Day set, days without spend left
// out), per model (Model set) and per key.
type Summary struct {
	Days   []DayUsage
	Models []DayUsage
	Keys   []KeyUsage
}

// Summary sums the account's spend in the window per day, per model and per key: three reads
// of the rollup, whose cost follows the window's days and months (at most a row per day, and a
// row per month, key and model), never the account's jobs.
func (u *Usage) Summary(ctx context.Context, accountID string, w Window) (Summary, error) {
	from, to := days(w)
	var s Summary
	var err error
	if s.Days, err = u.store.LedgerUsagePer(ctx, accountID, from, to, PerDay); err != nil {
		return s, err
	}
	if s.Models, err = u.store.LedgerUsagePer(ctx, accountID, from, to, PerModel); err != nil {
		return s, err
	}
	s.Keys, err = u.ByKey(ctx, accountID, w)
	return s, err
}

func (u *Usage) days(ctx context.Context, accountID string, from, to time.Time, limit int, fn func(DayUsage) error) error {
	_, err := u.pages(limit, keyset(func(after *DayUsage, size int) ([]DayUsage, error) {
		return u.store.LedgerUsageDays(ctx, accountID, from, to, after, size)
	}, fn))
	return err
}

// lines hands fn the charge and refund entries of the account's keys in the window, key by key
// (in key id order), each key's in the order they were written, at most limit of them.
func (u *Usage) lines(ctx context.Context, accountID string, from, to time.Time, limit int, fn func(UsageLine) error) error {
	keys, err := u.store.LedgerUsageKeys(ctx, accountID)
	if err != nil {
		return err
	}
	for _, k := range keys {
		n, err := u.pages(limit, keyset(func(after *UsageLine, size int) ([]UsageLine, error) {
			return u.store.LedgerUsageLines(ctx, k, from, to, after, size)
		}, fn))
		if err != nil {
			return err
		}
		if limit > 0 {
			if limit -= n; limit <= 0 {
				return nil
			}
		}
	}
	return nil
}

// keyset is one page read after another for pages: each fetches the rows after the last one
// the page before handed to fn, and answers how many it read.
func keyset[T any](fetch func(after *T, size int) ([]T, error), fn func(T) error) func(size int) (int, error) {
	var after *T
	return func(size int) (int, error) {
		rows, err := fetch(after, size)
		if err != nil {
			return 0, err
		}
		for _, r := range rows {
			if err := fn(r); err != nil {
				return 0, err
			}
		}
		if len(rows) > 0 {
			after = &rows[len(rows)-1]
		}
		return len(rows), nil
	}
}

// pages calls read with page sizes until a page comes back short or limit rows were read
// (limit <= 0: no limit), and answers how many were.
func (u *Usage) pages(limit int, read func(size int) (int, error)) (int, error) {
	page := u.PageRows
	if page <= 0 {
		page = DefaultPageRows
	}
	total := 0
	for {
		size := page
		if limit > 0 && limit-total < size {
			size = limit - total
		}
		if size <= 0 {
			return total, nil
		}
		n, err := read(size)
		total += n
		if err != nil || n < size {
			return total, err
		}
	}
}

// Export is an export the window fits in, ready to stream: rollup rows (Export[DayUsage]) or
// charge and refund entries (Export[UsageLine]).
type Export[T any] struct {
	Rows int64 // rows counted when it was prepared

	each func(ctx context.Context, fn func(T) error) error
}

// Each hands fn every row of the export, a page at a time. The read is bounded by the row
// limit, not the count: a row written between the count and the read (a new key or model
// today) is included, and the file still never exceeds one file.
func (e *Export[T]) Each(ctx context.Context, fn func(T) error) error { return e.each(ctx, fn) }

// Export prepares the window's rollup rows (one per day, key and model, in that order) for one
// file. It counts them first, so a window past the row limit is refused with 413
// export_too_large (carrying `window`) before anything is written; the rows are then read as
// they are sent (Each), never held together.
func (u *Usage) Export(ctx context.Context, accountID string, w Window) (*Export[DayUsage], error) {
	from, to := days(w)
	n, limit, err := u.fits(w, func() (int64, error) { return u.store.LedgerUsageDayCount(ctx, accountID, from, to) }, nil)
	if err != nil {
		return nil, err
	}
	return &Export[DayUsage]{Rows: n, each: func(ctx context.Context, fn func(DayUsage) error) error {
		return u.days(ctx, accountID, from, to, limit, fn)
	}}, nil
}

// ExportLines prepares the window's charge and refund entries, one per line, for one file: the
// export's per-job granularity, key by key in key id order and each key's in the order they
// were written. It is refused like Export past the row limit (its message names the day rows of
// the same window when they fit).
func (u *Usage) ExportLines(ctx context.Context, accountID string, w Window) (*Export[UsageLine], error) {
	from, to := days(w)
	n, limit, err := u.fits(w, func() (int64, error) { return u.store.LedgerUsageLineCount(ctx, accountID, from, to) },
		func() (int64, error) { return u.store.LedgerUsageDayCount(ctx, accountID, from, to) })
	if err != nil {
		return nil, err
	}
	return &Export[UsageLine]{Rows: n, each: func(ctx context.Context, fn func(UsageLine) error) error {
		return u.lines(ctx, accountID, from, to, limit, fn)
	}}, nil
}

// fits counts an export's rows and refuses it with export_too_large past the row limit; it
// answers the count and the limit the read is bounded by. coarser, when the export has a
// coarser granularity (per job: per day), counts that one's rows: the refusal's message names
// what would fit instead (tooLarge).
func (u *Usage) fits(w Window, count, coarser func() (int64, error)) (int64, int, error) {
	limit := u.MaxExportRows
	if limit <= 0 {
		limit = DefaultExportRows
	}
	n, err := count()
	if err != nil {
		return 0, 0, fmt.Errorf("usage export count: %w", err)
	}
	if n <= int64(limit) {
		return n, limit, nil
	}
	days := int64(-1)
	if coarser != nil {
		if days, err = coarser(); err != nil {
			return 0, 0, fmt.Errorf("usage export count: %w", err)
		}
	}
	return 0, 0, apierr.Newf(apierr.ExportTooLarge, "%s", tooLarge(w, n, days, int64(limit))).
		With("window", w.Name).With("rows", n).With("max_rows", limit)
}

// tooLarge is export_too_large's message: the export's n rows past limit, and what would fit
// instead: the same window per day when its days rows fit (days < 0: the export is per day
// already), a smaller window when the window spans more than one month (month and last_month
// are the smallest there are). When neither exists, it says where the window's totals are read.
func tooLarge(w Window, n, days, limit int64) string {
	msg := fmt.Sprintf("The usage export would exceed one file (%d rows, at most %d)", n, limit)
	coarser := days >= 0 && days <= limit
	smaller := monthsIn(w) > 1
	perDay := fmt.Sprintf("granularity=day (%d rows for this window)", days)
	if days == 1 {
		perDay = "granularity=day (1 row for this window)"
	}
	switch {
	case coarser && smaller:
		return msg + ": ask for " + perDay + ", or pick a smaller window, such as month or last_month."
	case coarser:
		return msg + ": ask for " + perDay + "."
	case smaller:
		return msg + ": pick a smaller window, such as month or last_month."
	}
	return msg + fmt.Sprintf(": %s is a single month, so no smaller window exists, and no coarser granularity fits either; GET /v1/usage?window=%s answers its totals per key.", w.Name, w.Name)
}

// monthsIn counts the calendar months a window spans.
func monthsIn(w Window) int {
	from, to := w.From.UTC(), w.To.UTC()
	return (to.Year()-from.Year())*12 + int(to.Month()) - int(from.Month())
}

// days widens a window to whole UTC days, the rollup's grain (the windows served are calendar
// months, so this changes nothing for them).
func days(w Window) (from, to time.Time) {
	from = w.From.UTC().Truncate(24 * time.Hour)
	to = w.To.UTC()
	if t := to.Truncate(24 * time.Hour); !t.Equal(to) {
		to = t.Add(24 * time.Hour)
	}
	return from, to
}
