package ledger_test

import (
	"errors"
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
		{"0m", apierr.InvalidInput}, {"01m", apierr.InvalidInput}, {"week", apierr.InvalidInput}, {"m", apierr.InvalidInput},
	} {
		_, err := ledger.ParseWindow(c.name, now)
		var ae *apierr.Error
		if !errors.As(err, &ae) || ae.Code != c.code {
			t.Errorf("%q: %v, want %s", c.name, err, c.code)
		}
	}
}
