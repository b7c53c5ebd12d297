package accountapi_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestACC15_ExportTooLargeNamesWhatFits: export_too_large's message names what would fit, so it
// can be acted on: per job past the limit, the same window per day when its rows fit (never a
// "smaller window" for a single month, which has none); a window of several months, a smaller
// window too; a single month whose day rows do not fit either, that no smaller window exists
// and where its totals are read. Each suggestion, followed, is answered.
func TestACC15_ExportTooLargeNamesWhatFits(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newAccEnvConfig(t, db, func(c *server.Config) { c.UsageExportRows = 3 })
		key := e.account("acct_fit")
		for i := range 4 { // four lines, one day row
			e.settle(e.submit(key, "image-lite", fmt.Sprintf(`{"positivePrompt":"line %d"}`, i), fmt.Sprintf("l%d", i)))
		}
		message := func(path, window string, has, hasNot []string) {
			t.Helper()
			a := e.exportRefused(path, key, 413, "export_too_large", window)
			msg, _ := a.body["message"].(string)
			for _, s := range has {
				if !strings.Contains(msg, s) {
					t.Errorf("%s: message %q does not say %q", path, msg, s)
				}
			}
			for _, s := range hasNot {
				if strings.Contains(msg, s) {
					t.Errorf("%s: message %q says %q", path, msg, s)
				}
			}
		}
		message("/v1/usage/export?window=month&granularity=job", "month", []string{"(4 rows, at most 3)", "granularity=day (1 row for this window)"},
			[]string{"smaller window"})
		message("/v1/usage/export?window=3m&granularity=job", "3m", []string{"granularity=day", "smaller window, such as month or last_month"}, nil)
		if rows := e.exportCSV(key, "acct_fit", "month"); len(rows) != 1 {
			t.Fatalf("the day export the message names: %v", rows)
		}

		// Four day rows in November: no coarser granularity, no smaller window.
		for i := 1; i <= 3; i++ {
			e.clock.Set(time.Date(2026, 11, 21+i, 10, 0, 0, 0, time.UTC))
			e.settle(e.submit(key, "image-lite", fmt.Sprintf(`{"positivePrompt":"day %d"}`, i), fmt.Sprintf("d%d", i)))
		}
		message("/v1/usage/export?window=month", "month", []string{"no smaller window exists", "GET /v1/usage?window=month"},
			[]string{"such as month", "granularity=day ("})
		if a := e.get("/v1/usage?window=month", key); a.status != 200 {
			t.Fatalf("the totals the message names: %d %s", a.status, a.raw)
		}
	})
}
