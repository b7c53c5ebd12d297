package ledger_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/ledger"
)

// TestACC14_ACC15_ParseWindow: the windows the usage report and its export accept, at a fixed
// instant, and the two refusals (too large: 413 usage_window_too_large; not a window: 400).
func TestACC14_ACC15_ParseWindow(t *testing.T) {
	now := time.Date(2026, 1, 31, 23, 59, 0, 0, time.FixedZone("UTC+2", 2*3600)) // 21:59 UTC
	d := func(y int, m time.Month) time.Time { return time.Date(y, m, 1, 0, 0, 0, 0, time.UTC) }
	for _, c := range []struct {
		name, want string
		from, to   time.Time
	}{
		{"", "month", d(2026, 1), d(2026, 2)},
		{"month", "month", d(2026, 1), d(2026, 2)},
		{"last_month", "last_month", d(2025, 12), d(2026, 1)},
		{"1m", "1m", d(2026, 1), d(2026, 2)},
		{"3m", "3m", d(2025, 11), d(2026, 2)},
		{"12m", "12m", d(2025, 2), d(2026, 2)},
	} {
		w, err := ledger.ParseWindow(c.name, now)
		if err != nil || w.Name != c.want || !w.From.Equal(c.from) || !w.To.Equal(c.to) {
			t.Errorf("%q: %+v %v, want %s [%s, %s)", c.name, w, err, c.want, c.from, c.to)
		}
	}
	for _, c := range []struct {
		name string
		code apierr.Code
	}{
		{"13m", apierr.UsageWindowTooLarge}, {"120m", apierr.UsageWindowTooLarge},
		// Past the integer's range the form is the same, and so is the answer.
		{"9223372036854775807m", apierr.UsageWindowTooLarge}, {"9223372036854775808m", apierr.UsageWindowTooLarge},
		{"100000000000000000000000000000m", apierr.UsageWindowTooLarge},
		{"0m", apierr.InvalidInput}, {"01m", apierr.InvalidInput}, {"week", apierr.InvalidInput}, {"m", apierr.InvalidInput},
		{"+3m", apierr.InvalidInput}, {"-3m", apierr.InvalidInput}, {"3 m", apierr.InvalidInput}, {"٣m", apierr.InvalidInput},
		{"00000000000000000000013m", apierr.InvalidInput},
	} {
		_, err := ledger.ParseWindow(c.name, now)
		var ae *apierr.Error
		if !errors.As(err, &ae) || ae.Code != c.code {
			t.Errorf("%q: %v, want %s", c.name, err, c.code)
		}
	}
}

// fakeUsage is a UsageStore over rows in memory, recording the page sizes asked for.
type fakeUsage struct {
	days  []ledger.DayUsage
	lines map[string][]ledger.UsageLine
	asked []int
}

func (f *fakeUsage) LedgerUsageByKey(context.Context, string, time.Time, time.Time) ([]ledger.KeyUsage, error) {
	return []ledger.KeyUsage{}, nil
}

func (f *fakeUsage) LedgerUsagePer(context.Context, string, time.Time, time.Time, ledger.UsageGroup) ([]ledger.DayUsage, error) {
	panic("not used by these tests")
}

func (f *fakeUsage) LedgerUsageDayCount(context.Context, string, time.Time, time.Time) (int64, error) {
	return int64(len(f.days)), nil
}

func (f *fakeUsage) LedgerUsageDays(_ context.Context, _ string, _, _ time.Time, after *ledger.DayUsage, limit int) ([]ledger.DayUsage, error) {
	f.asked = append(f.asked, limit)
	i := 0
	if after != nil {
		for i < len(f.days) && f.days[i] != *after {
			i++
		}
		i++
	}
	return slices.Clone(f.days[i:min(i+limit, len(f.days))]), nil
}

func (f *fakeUsage) LedgerUsageLineCount(context.Context, string, time.Time, time.Time) (int64, error) {
	n := 0
	for _, l := range f.lines {
		n += len(l)
	}
	return int64(n), nil
}

func (f *fakeUsage) LedgerUsageKeys(context.Context, string) ([]string, error) {
	return slices.Sorted(maps.Keys(f.lines)), nil
}

func (f *fakeUsage) LedgerUsageLines(_ context.Context, key string, _, _ time.Time, after *ledger.UsageLine, limit int) ([]ledger.UsageLine, error) {
	f.asked = append(f.asked, limit)
	ls, i := f.lines[key], 0
	if after != nil {
		for i < len(ls) && ls[i].EntryID != after.EntryID {
			i++
		}
		i++
	}
	return slices.Clone(ls[i:min(i+limit, len(ls))]), nil
}

// TestACC15_ExportPages: an export within the limit hands over every row once, reading pages of
// PageRows; one past the limit is refused with export_too_large carrying the window before a
// row is read; Days stops at its limit mid-page.
func TestACC15_ExportPages(t *testing.T) {
	ctx := context.Background()
	f := &fakeUsage{lines: map[string][]ledger.UsageLine{}}
	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		f.days = append(f.days, ledger.DayUsage{Day: day.AddDate(0, 0, i), KeyID: "k", Model: "m", Jobs: 1})
	}
	for i := range 3 {
		f.lines["kb"] = append(f.lines["kb"], ledger.UsageLine{EntryID: int64(10 + i), KeyID: "kb"})
		f.lines["ka"] = append(f.lines["ka"], ledger.UsageLine{EntryID: int64(20 + i), KeyID: "ka"})
	}
	u := ledger.NewUsage(f)
	u.PageRows, u.MaxExportRows = 2, 6
	w := ledger.Window{Name: "month", From: day, To: day.AddDate(0, 1, 0)}

	exp, err := u.Export(ctx, "acct", w)
	if err != nil || exp.Rows != 5 {
		t.Fatalf("export: %v, %v", exp, err)
	}
	var got []ledger.DayUsage
	if err := exp.Each(ctx, func(d ledger.DayUsage) error { got = append(got, d); return nil }); err != nil || !slices.Equal(got, f.days) {
		t.Fatalf("export rows %v %v", got, err)
	}
	if !slices.Equal(f.asked, []int{2, 2, 2}) {
		t.Fatalf("pages asked %v, want 2, 2, 2", f.asked)
	}

	lx, err := u.ExportLines(ctx, "acct", w)
	if err != nil || lx.Rows != 6 {
		t.Fatalf("line export: %v, %v", lx, err)
	}
	var ids []int64
	if err := lx.Each(ctx, func(l ledger.UsageLine) error { ids = append(ids, l.EntryID); return nil }); err != nil ||
		!slices.Equal(ids, []int64{20, 21, 22, 10, 11, 12}) {
		t.Fatalf("lines %v %v, want key ka's then kb's", ids, err)
	}

	u.MaxExportRows = 4
	f.asked = nil
	for _, try := range []func() error{
		func() error { _, err := u.Export(ctx, "acct", w); return err },
		func() error { _, err := u.ExportLines(ctx, "acct", w); return err },
	} {
		var ae *apierr.Error
		if err := try(); !errors.As(err, &ae) || ae.Code != apierr.ExportTooLarge || ae.Fields["window"] != "month" {
			t.Fatalf("past the limit: %v", err)
		}
	}
	if len(f.asked) != 0 {
		t.Fatalf("rows read before the refusal: %v", f.asked)
	}

	// Rows written between the count and the read still never take the file past the limit.
	u.MaxExportRows = 5
	if exp, err = u.Export(ctx, "acct", w); err != nil {
		t.Fatal(err)
	}
	f.days = append(f.days, ledger.DayUsage{Day: day.AddDate(0, 0, 5), KeyID: "k", Model: "m", Jobs: 1},
		ledger.DayUsage{Day: day.AddDate(0, 0, 6), KeyID: "k", Model: "m", Jobs: 1})
	got = nil
	if err := exp.Each(ctx, func(d ledger.DayUsage) error { got = append(got, d); return nil }); err != nil || len(got) != 5 ||
		!slices.Equal(f.asked, []int{2, 2, 1}) {
		t.Fatalf("export limited to 5: %d rows, pages %v, %v", len(got), f.asked, err)
	}
}

// TestACC15_ExportTooLargeSaysWhatFits: export_too_large's message names what would fit: per
// job past the limit, the same window per day when its day rows fit; a smaller window only
// when the window spans several months; neither, that the month is the smallest window and
// where its totals are read.
func TestACC15_ExportTooLargeSaysWhatFits(t *testing.T) {
	ctx := context.Background()
	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	month := ledger.Window{Name: "month", From: day, To: day.AddDate(0, 1, 0)}
	three := ledger.Window{Name: "3m", From: day.AddDate(0, -2, 0), To: day.AddDate(0, 1, 0)}
	for _, c := range []struct {
		name      string
		w         ledger.Window
		perJob    bool
		days      int
		has, hasn []string
	}{
		{"per job, the days fit", month, true, 2, []string{"(6 rows, at most 3)", "ask for granularity=day (2 rows for this window)."}, []string{"smaller window"}},
		{"per job, the days fit, months", three, true, 1, []string{"granularity=day (1 row for this window), or pick a smaller window, such as month or last_month."}, nil},
		{"per job, the days do not fit", month, true, 4, []string{"month is a single month, so no smaller window exists", "GET /v1/usage?window=month"}, []string{"granularity=day ("}},
		{"per day, months", three, false, 4, []string{"(4 rows, at most 3): pick a smaller window, such as month or last_month."}, []string{"granularity"}},
		{"per day, one month", month, false, 4, []string{"no smaller window exists"}, []string{"such as month", "granularity=day ("}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeUsage{lines: map[string][]ledger.UsageLine{}}
			for i := range c.days {
				f.days = append(f.days, ledger.DayUsage{Day: day.AddDate(0, 0, i), KeyID: "k", Model: "m", Jobs: 1})
			}
			for i := range 6 {
				f.lines["k"] = append(f.lines["k"], ledger.UsageLine{EntryID: int64(i), KeyID: "k"})
			}
			u := ledger.NewUsage(f)
			u.MaxExportRows = 3
			var err error
			if c.perJob {
				_, err = u.ExportLines(ctx, "acct", c.w)
			} else {
				_, err = u.Export(ctx, "acct", c.w)
			}
			var ae *apierr.Error
			if !errors.As(err, &ae) || ae.Code != apierr.ExportTooLarge {
				t.Fatalf("%v, want export_too_large", err)
			}
			for _, s := range c.has {
				if !strings.Contains(ae.Message, s) {
					t.Errorf("message %q does not say %q", ae.Message, s)
				}
			}
			for _, s := range c.hasn {
				if strings.Contains(ae.Message, s) {
					t.Errorf("message %q says %q", ae.Message, s)
				}
			}
		})
	}
}
