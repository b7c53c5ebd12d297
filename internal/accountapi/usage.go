package accountapi

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/httpapi"
)

// UsageRow is one key's spend in a window: Charged is what its charges took (positive),
// Refunded what refunds gave back, Jobs how many distinct jobs were charged. It is an alias
// of an unnamed struct so the store can declare the identical type (sqlstore.UsageRow) and
// satisfy UsageReader without either package importing the other.
type UsageRow = struct {
	KeyID    string
	Charged  int64
	Refunded int64
	Jobs     int64
}

// UsageReader reads an account's ledger spend per key over [from, to).
type UsageReader interface {
	Usage(ctx context.Context, accountID string, from, to time.Time) ([]UsageRow, error)
}

// MaxUsageMonths is the longest window GET /v1/usage reads: twelve calendar months.
const MaxUsageMonths = 12

// usageWindows lists the window names accepted, for the refusal's `allowed`.
var usageWindows = []string{"month", "last_month", "1m", "3m", "6m", "12m"}

// usageWindow resolves a window name at now (UTC) into [from, to).
//
// Accepted (spec 01 "windows such as month, last_month, 12m"):
//   - "month" (the default): the current calendar month;
//   - "last_month": the whole previous calendar month;
//   - "<N>m" with N from 1 to 12: the current month and the N-1 before it ("1m" is "month",
//     "12m" the last twelve calendar months).
//
// `to` is exclusive and a month boundary: the current month's window ends where the next
// month starts (nothing is written after now, so it reads everything up to now).
//
// Refusals: a recognised form longer than twelve months ("24m", "13m") is 413
// usage_window_too_large carrying `window` (spec 02). A name that is not a window at all ("week",
// "0m", "bogus") is not "too large": it is a malformed query value, 400 invalid_input (the
// service's code for a value outside its contract) carrying `window` and `allowed`, with a
// message naming the windows accepted.
func usageWindow(name string, now time.Time) (from, to time.Time, err error) {
	now = now.UTC()
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	next := month.AddDate(0, 1, 0)
	tooLarge := func(msg string) error {
		return apierr.Newf(apierr.UsageWindowTooLarge, "%s", msg).With("window", name).With("allowed", usageWindows).
			With("max_months", MaxUsageMonths)
	}
	switch name {
	case "", "month":
		return month, next, nil
	case "last_month":
		return month.AddDate(0, -1, 0), month, nil
	}
	if n, ok := strings.CutSuffix(name, "m"); ok {
		if v, e := strconv.Atoi(n); e == nil && n == strconv.Itoa(v) && v >= 1 {
			if v > MaxUsageMonths {
				return time.Time{}, time.Time{}, tooLarge("The usage window is too big to read: at most 12 months (12m).")
			}
			return month.AddDate(0, -(v - 1), 0), next, nil
		}
	}
	return time.Time{}, time.Time{}, apierr.Newf(apierr.InvalidInput,
		"window %q is not a usage window: send month, last_month, or 1m to 12m (the current month and up to eleven before it).", name).
		With("window", name).With("allowed", usageWindows)
}

// usage serves GET /v1/usage: the account's spend per key in a window.
//
//	{"object": "usage", "window": "month", "from": "2026-11-01T00:00:00Z", "to": "2026-12-01T00:00:00Z",
//	 "data": [{"object": "key_usage", "key_id": "…", "credits_charged": 30, "credits_refunded": 24,
//	           "net": 6, "jobs": 2}],
//	 "total": {"credits_charged": 30, "credits_refunded": 24, "net": 6, "jobs": 2}}
//
// The figures are ledger movements written in the window (a refund counts when it was given);
// `to` is exclusive.
func (h *Handler) usage() http.Handler {
	return httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		if h.Usage == nil {
			return notConfigured("Usage reports are not configured on this deployment.")
		}
		p := httpapi.Principal(r)
		name := r.URL.Query().Get("window")
		from, to, err := usageWindow(name, h.Now())
		if err != nil {
			return err
		}
		if name == "" {
			name = "month"
		}
		rows, err := h.Usage.Usage(r.Context(), p.Account.ID, from, to)
		if err != nil {
			return fmt.Errorf("usage read: %w", err)
		}
		data := make([]map[string]any, 0, len(rows))
		var charged, refunded, jobs int64
		for _, u := range rows {
			data = append(data, map[string]any{
				"object":           "key_usage",
				"key_id":           u.KeyID,
				"credits_charged":  u.Charged,
				"credits_refunded": u.Refunded,
				"net":              u.Charged - u.Refunded,
				"jobs":             u.Jobs,
			})
			charged, refunded, jobs = charged+u.Charged, refunded+u.Refunded, jobs+u.Jobs
		}
		httpapi.WriteJSON(w, r, http.StatusOK, map[string]any{
			"object": "usage",
			"window": name,
			"from":   from.Format(time.RFC3339),
			"to":     to.Format(time.RFC3339),
			"data":   data,
			"total": map[string]any{
				"credits_charged":  charged,
				"credits_refunded": refunded,
				"net":              charged - refunded,
				"jobs":             jobs,
			},
		})
		return nil
	})
}
