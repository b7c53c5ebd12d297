package storetest

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/ledger"
)

// RunUsage is the conformance suite of the usage reads: per-key spend in a window (ACC-14) and
// the rollup's rows per day, key and model that the export streams (ACC-15).
func RunUsage(t *testing.T, open func(t testing.TB) Stores) {
	t.Run("UsageByKeyInWindow", func(t *testing.T) { testUsage(t, open(t)) })
	t.Run("UsageDaysInWindow", func(t *testing.T) { testUsageDays(t, open(t)) })
	t.Run("UsageLinesInWindow", func(t *testing.T) { testUsageLines(t, open(t)) })
	t.Run("UsageRollupsAgree", func(t *testing.T) { testUsageRollups(t, open(t)) })
}

func testUsage(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_u", auth.Pro, 1000)
	NewAccount(t, s.Ledger, "acct_v", auth.Pro, 1000)
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	to := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	add := func(acct, key, job string, kind ledger.Kind, amount int64, at time.Time) {
		t.Helper()
		applyEntry(t, s.Ledger, ledger.Entry{AccountID: acct, KeyID: key, JobID: job, Kind: kind, Amount: ledger.Credits(amount), At: at})
	}
	add("acct_u", "", "", ledger.Grant, 500, from.Add(time.Hour))                       // not spend
	add("acct_u", "key_a", "photo_1", ledger.Charge, -10, from)                         // first instant: in
	add("acct_u", "key_a", "photo_1", ledger.Refund, 4, from.Add(time.Minute))          // partial refund
	add("acct_u", "key_a", "photo_2", ledger.Charge, -20, from.Add(24*time.Hour))       // second job
	add("acct_u", "key_a", "photo_2", ledger.Refund, 20, from.Add(25*time.Hour))        // fully refunded
	add("acct_u", "key_b", "music_1", ledger.Charge, -7, to.Add(-time.Microsecond))     // last instant: in
	add("acct_u", "key_b", "music_2", ledger.Charge, -100, to)                          // next month: out
	add("acct_u", "key_b", "music_0", ledger.Charge, -100, from.Add(-time.Microsecond)) // last month: out
	add("acct_v", "key_c", "photo_1", ledger.Charge, -50, from.Add(time.Hour))          // another account

	got, err := s.Usage.LedgerUsageByKey(ctx, "acct_u", from, to)
	if err != nil {
		t.Fatal(err)
	}
	want := []ledger.KeyUsage{
		{KeyID: "key_a", Charged: 30, Refunded: 24, Jobs: 2},
		{KeyID: "key_b", Charged: 7, Refunded: 0, Jobs: 1},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("usage = %+v, want %+v", got, want)
	}
	got, err = s.Usage.LedgerUsageByKey(ctx, "acct_u", from.AddDate(0, -1, 0), from)
	if err != nil || !reflect.DeepEqual(got, []ledger.KeyUsage{{KeyID: "key_b", Charged: 100, Jobs: 1}}) {
		t.Fatalf("last month = %+v, %v", got, err)
	}
	got, err = s.Usage.LedgerUsageByKey(ctx, "acct_none", from, to)
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("no entries = %#v, %v (want an empty, non-nil list)", got, err)
	}
}

func testUsageDays(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_d", auth.Pro, 1000)
	NewAccount(t, s.Ledger, "acct_e", auth.Pro, 1000)
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	to := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	add := func(acct, key, model string, kind ledger.Kind, amount int64, at time.Time) {
		t.Helper()
		applyEntry(t, s.Ledger, ledger.Entry{AccountID: acct, KeyID: key, JobID: "j", Model: model, Kind: kind, Amount: ledger.Credits(amount), At: at})
	}
	d2 := from.AddDate(0, 0, 1)
	add("acct_d", "key_b", "photo", ledger.Charge, -10, d2.Add(time.Hour))
	add("acct_d", "key_a", "photo", ledger.Charge, -5, d2.Add(2*time.Hour))
	add("acct_d", "key_a", "photo", ledger.Charge, -5, d2.Add(3*time.Hour))
	add("acct_d", "key_a", "photo", ledger.Refund, 5, d2.Add(4*time.Hour))
	add("acct_d", "key_a", "music", ledger.Charge, -30, d2.Add(5*time.Hour))
	add("acct_d", "key_a", "photo", ledger.Charge, -8, from)                          // first instant: in
	add("acct_d", "key_a", "photo", ledger.Charge, -9, to.Add(-time.Microsecond))     // last instant: in
	add("acct_d", "key_a", "photo", ledger.Charge, -100, to)                          // next month: out
	add("acct_d", "key_a", "photo", ledger.Charge, -100, from.Add(-time.Microsecond)) // last month: out
	add("acct_d", "", "", ledger.Grant, 500, d2)                                      // not spend
	add("acct_e", "key_c", "photo", ledger.Charge, -50, d2)                           // another account

	// read pages through the window, size rows at a time, each page resuming after the last.
	read := func(acct string, size int) []ledger.DayUsage {
		t.Helper()
		return readPages(t, size, func(after *ledger.DayUsage) ([]ledger.DayUsage, error) {
			return s.Usage.LedgerUsageDays(ctx, acct, from, to, after, size)
		})
	}
	want := []ledger.DayUsage{
		{Day: from, KeyID: "key_a", Model: "photo", Jobs: 1, Charged: 8},
		{Day: d2, KeyID: "key_a", Model: "music", Jobs: 1, Charged: 30},
		{Day: d2, KeyID: "key_a", Model: "photo", Jobs: 2, Charged: 10, Refunded: 5},
		{Day: d2, KeyID: "key_b", Model: "photo", Jobs: 1, Charged: 10},
		{Day: to.AddDate(0, 0, -1), KeyID: "key_a", Model: "photo", Jobs: 1, Charged: 9},
	}
	for _, size := range []int{1, 2, 3, 100} {
		if got := read("acct_d", size); !reflect.DeepEqual(got, want) {
			t.Fatalf("days in pages of %d = %+v, want %+v", size, got, want)
		}
	}
	if rows, err := s.Usage.LedgerUsageDays(ctx, "acct_d", from, to, nil, 2); err != nil || !reflect.DeepEqual(rows, want[:2]) {
		t.Fatalf("first page of 2 = %+v %v", rows, err)
	}
	if n, err := s.Usage.LedgerUsageDayCount(ctx, "acct_d", from, to); err != nil || n != int64(len(want)) {
		t.Fatalf("count = %d %v, want %d", n, err, len(want))
	}
	if n, err := s.Usage.LedgerUsageDayCount(ctx, "acct_none", from, to); err != nil || n != 0 {
		t.Fatalf("count of an account without spend = %d %v", n, err)
	}
	if got := read("acct_none", 10); len(got) != 0 {
		t.Fatalf("days of an account without spend = %+v", got)
	}
}

func testUsageLines(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_l", auth.Pro, 1000)
	NewAccount(t, s.Ledger, "acct_m", auth.Pro, 1000)
	for _, k := range []struct{ id, acct string }{{"linekey00001", "acct_l"}, {"linekey00002", "acct_l"}, {"linekey00003", "acct_m"}} {
		if err := s.Auth.InsertKey(ctx, key(k.id, k.acct, t0.AddDate(1, 0, 0)), 25, t0); err != nil {
			t.Fatal(err)
		}
	}
	from := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	to := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	add := func(acct, key, job string, kind ledger.Kind, amount int64, at time.Time) {
		t.Helper()
		applyEntry(t, s.Ledger, ledger.Entry{AccountID: acct, KeyID: key, JobID: job, Model: "photo", Kind: kind, Amount: ledger.Credits(amount), At: at})
	}
	h := func(n int) time.Time { return from.Add(time.Duration(n) * time.Hour) }
	add("acct_l", "linekey00002", "job_2", ledger.Charge, -20, h(2))
	add("acct_l", "linekey00001", "job_1", ledger.Charge, -10, h(1))
	add("acct_l", "linekey00001", "job_1", ledger.Refund, 4, h(1)) // the same instant: written order
	add("acct_l", "linekey00001", "job_3", ledger.Charge, -3, h(3))
	add("acct_l", "", "", ledger.Grant, 500, h(4))                                         // not spend
	add("acct_l", "linekey00001", "job_0", ledger.Charge, -7, from.Add(-time.Microsecond)) // last month: out
	add("acct_l", "linekey00001", "job_9", ledger.Charge, -7, to)                          // next month: out
	add("acct_m", "linekey00003", "job_x", ledger.Charge, -50, h(1))                       // another account

	read := func(keyID string, size int) []ledger.UsageLine {
		t.Helper()
		return readPages(t, size, func(after *ledger.UsageLine) ([]ledger.UsageLine, error) {
			return s.Usage.LedgerUsageLines(ctx, keyID, from, to, after, size)
		})
	}
	if keys, err := s.Usage.LedgerUsageKeys(ctx, "acct_l"); err != nil || !reflect.DeepEqual(keys, []string{"linekey00001", "linekey00002"}) {
		t.Fatalf("keys = %v %v", keys, err)
	}
	// No job rows stand behind these entries: the model is empty (the join finds none).
	want1 := []ledger.UsageLine{
		{At: h(1), KeyID: "linekey00001", JobID: "job_1", Kind: ledger.Charge, Charged: 10},
		{At: h(1), KeyID: "linekey00001", JobID: "job_1", Kind: ledger.Refund, Refunded: 4},
		{At: h(3), KeyID: "linekey00001", JobID: "job_3", Kind: ledger.Charge, Charged: 3},
	}
	for _, size := range []int{1, 2, 10} {
		got := read("linekey00001", size)
		for i := range got {
			if got[i].EntryID == 0 {
				t.Fatalf("line %d has no entry id", i)
			}
			got[i].EntryID = 0
		}
		if !reflect.DeepEqual(got, want1) {
			t.Fatalf("lines in pages of %d = %+v, want %+v", size, got, want1)
		}
	}
	if got := read("linekey00002", 10); len(got) != 1 || got[0].Charged != 20 || !got[0].At.Equal(h(2)) {
		t.Fatalf("second key's lines = %+v", got)
	}
	if n, err := s.Usage.LedgerUsageLineCount(ctx, "acct_l", from, to); err != nil || n != 4 {
		t.Fatalf("line count = %d %v, want 4", n, err)
	}
	if n, err := s.Usage.LedgerUsageLineCount(ctx, "acct_none", from, to); err != nil || n != 0 {
		t.Fatalf("line count of an account without keys = %d %v", n, err)
	}
}

// The sums per key, per model and per day read whole months from their own rollups and the
// part-month edges of a window from the daily one: over any window of days, whole months or
// not, across month and year ends, they equal the daily rollup's rows summed (which the export
// reads), and no other account's spend shows.
// allUsageDays reads every row of the account's per day, key and model usage in [from, to),
// a page of 1000 at a time.
func allUsageDays(t *testing.T, s Stores, account string, from, to time.Time) []ledger.DayUsage {
	t.Helper()
	var rows []ledger.DayUsage
	var after *ledger.DayUsage
	for {
		page, err := s.Usage.LedgerUsageDays(context.Background(), account, from, to, after, 1000)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, page...)
		if len(page) < 1000 {
			return rows
		}
		after = &page[len(page)-1]
	}
}

// sumUsage adds up rows per key, per model and per day, each in the order the usage reads
// answer it.
func sumUsage(rows []ledger.DayUsage) (perKey []ledger.KeyUsage, perModel, perDay []ledger.DayUsage) {
	perKey, perModel, perDay = []ledger.KeyUsage{}, []ledger.DayUsage{}, []ledger.DayUsage{}
	keys, models, days := map[string]*ledger.KeyUsage{}, map[string]*ledger.DayUsage{}, map[time.Time]*ledger.DayUsage{}
	for _, row := range rows {
		if keys[row.KeyID] == nil {
			keys[row.KeyID] = &ledger.KeyUsage{KeyID: row.KeyID}
		}
		k := keys[row.KeyID]
		k.Charged, k.Refunded, k.Jobs = k.Charged+row.Charged, k.Refunded+row.Refunded, k.Jobs+row.Jobs
		if models[row.Model] == nil {
			models[row.Model] = &ledger.DayUsage{Model: row.Model}
		}
		addUsage(models[row.Model], row)
		if days[row.Day] == nil {
			days[row.Day] = &ledger.DayUsage{Day: row.Day}
		}
		addUsage(days[row.Day], row)
	}
	for _, k := range keys {
		perKey = append(perKey, *k)
	}
	slices.SortFunc(perKey, func(a, b ledger.KeyUsage) int { return strings.Compare(a.KeyID, b.KeyID) })
	for _, m := range models {
		perModel = append(perModel, *m)
	}
	slices.SortFunc(perModel, func(a, b ledger.DayUsage) int { return strings.Compare(a.Model, b.Model) })
	for _, d := range days {
		perDay = append(perDay, *d)
	}
	slices.SortFunc(perDay, func(a, b ledger.DayUsage) int { return a.Day.Compare(b.Day) })
	return perKey, perModel, perDay
}

func testUsageRollups(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_r", auth.Pro, 0)
	NewAccount(t, s.Ledger, "acct_s", auth.Pro, 0)
	r := rand.New(rand.NewPCG(7, 7))
	start := time.Date(2026, 10, 28, 0, 0, 0, 0, time.UTC) // to 2027-02-05: four month ends, a year end
	err := s.Ledger.LedgerTx(ctx, func(tx ledger.Tx) error {
		for i := range 600 {
			acct := []string{"acct_r", "acct_s"}[r.IntN(4)/3]
			e := ledger.Entry{AccountID: acct, KeyID: fmt.Sprint("key_", r.IntN(3)), JobID: fmt.Sprint("j", i), Model: fmt.Sprint("m", r.IntN(4)),
				Kind: ledger.Charge, Amount: -ledger.Credits(1 + r.IntN(9)), At: start.Add(time.Duration(r.Int64N(int64(100 * 24 * time.Hour))))}
			if i%5 == 0 {
				e.Kind, e.Amount = ledger.Refund, -e.Amount
			}
			if i%50 == 0 {
				e.Kind = ledger.Grant // not spend
			}
			if _, err := tx.LedgerApply(ctx, e, math.MinInt64); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	day := func(n int) time.Time { return start.AddDate(0, 0, n) }
	month := func(y int, m time.Month) time.Time { return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC) }
	windows := [][2]time.Time{
		{month(2026, 11), month(2026, 12)}, {month(2026, 11), month(2027, 2)}, {month(2026, 1), month(2027, 1)},
		{day(0), day(100)}, {day(3), day(5)}, {day(2), day(40)}, {day(4), day(66)}, {day(35), day(36)},
		{month(2026, 12).Add(time.Hour), month(2027, 1).Add(-time.Hour)}, // inside one month
		{month(2026, 11).Add(-time.Hour), month(2027, 1).Add(time.Hour)}, // a day either side of whole months
	}
	for range 20 {
		a := r.IntN(100)
		windows = append(windows, [2]time.Time{day(a), day(a + 1 + r.IntN(100-a))})
	}
	for _, w := range windows {
		from, to := w[0], w[1]
		wantKeys, wantModels, wantDays := sumUsage(allUsageDays(t, s, "acct_r", from, to))
		gotKeys, err := s.Usage.LedgerUsageByKey(ctx, "acct_r", from, to)
		if err != nil || !reflect.DeepEqual(gotKeys, wantKeys) {
			t.Fatalf("[%v, %v) per key = %+v %v, want %+v", from, to, gotKeys, err, wantKeys)
		}
		gotModels, err := s.Usage.LedgerUsagePer(ctx, "acct_r", from, to, ledger.PerModel)
		if err != nil || !reflect.DeepEqual(gotModels, wantModels) {
			t.Fatalf("[%v, %v) per model = %+v %v, want %+v", from, to, gotModels, err, wantModels)
		}
		gotDays, err := s.Usage.LedgerUsagePer(ctx, "acct_r", from, to, ledger.PerDay)
		if err != nil || !reflect.DeepEqual(gotDays, wantDays) {
			t.Fatalf("[%v, %v) per day = %+v %v, want %+v", from, to, gotDays, err, wantDays)
		}
	}
}

// addUsage sums row's figures into sum.
func addUsage(sum *ledger.DayUsage, row ledger.DayUsage) {
	sum.Jobs, sum.Charged, sum.Refunded = sum.Jobs+row.Jobs, sum.Charged+row.Charged, sum.Refunded+row.Refunded
}

// readPages reads pages of size rows, each resuming after the last row of the one before,
// until a page comes back short.
func readPages[T any](t *testing.T, size int, page func(after *T) ([]T, error)) []T {
	t.Helper()
	var out []T
	var after *T
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		rows, err := page(after)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rows...)
		if len(rows) < size {
			return out
		}
		after = &rows[len(rows)-1]
	}
}

// applyEntry writes one ledger entry in a transaction of its own, without a balance floor.
func applyEntry(t *testing.T, l ledger.Store, e ledger.Entry) {
	t.Helper()
	ctx := context.Background()
	err := l.LedgerTx(ctx, func(tx ledger.Tx) error {
		_, err := tx.LedgerApply(ctx, e, math.MinInt64)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}
