package e2e_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
)

// TestACC04_AllowanceCreditedAtFirstSubmitOfMonth: an account whose balance cannot pay a job
// at the end of one UTC month submits it at the start of the next: the submit credits the
// month's allowance first (one `allowance` ledger entry) and is charged from it; a second
// submit in the month credits nothing more. Proves ACC-04, ACC-05 (period rolls over in UTC).
func TestACC04_AllowanceCreditedAtFirstSubmitOfMonth(t *testing.T) {
	each(t, options{}, func(t *testing.T, h *harness) {
		ctx := context.Background()
		now := h.clock.Now()
		lastMonth := auth.Period(time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC).AddDate(0, -1, 0))
		a := auth.Account{ID: "acct_month", Plan: auth.Pro, Status: auth.Live, MonthlyAllowance: 2000, AllowancePeriod: lastMonth,
			CreatedAt: now.AddDate(0, -2, 0)}
		if err := h.db.CreateAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
		m, err := h.auth.Mint(ctx, auth.MintParams{AccountID: a.ID})
		if err != nil {
			t.Fatal(err)
		}
		submit := func() resp {
			return h.callKey(m.Key, http.MethodPost, h.queue.URL+"/svc-serverless/"+mFast+"?wait=10", `{"positivePrompt":"ok"}`)
		}
		first := submit()
		if first.Code != http.StatusOK || first.str("status") != "COMPLETED" {
			t.Fatalf("first submit of the month: %d %s", first.Code, first.Raw)
		}
		q := first.num("credits_charged")
		if first.num("credits_remaining") != 2000-q || h.balanceOf(a.ID) != 2000-q {
			t.Fatalf("credits_remaining %d, balance %d; want the allowance less the charge, %d",
				first.num("credits_remaining"), h.balanceOf(a.ID), 2000-q)
		}
		second := submit()
		if second.Code != http.StatusOK || h.balanceOf(a.ID) != 2000-2*q {
			t.Fatalf("second submit: %d, balance %d, want %d", second.Code, h.balanceOf(a.ID), 2000-2*q)
		}
		var entries int
		if err := h.db.SQL().QueryRowContext(ctx, `SELECT count(*) FROM ledger_entries WHERE account_id = $1 AND kind = 'allowance' AND period = $2`,
			a.ID, auth.Period(now)).Scan(&entries); err != nil {
			t.Fatal(err)
		}
		if entries != 1 {
			t.Fatalf("%d allowance entries this month, want 1", entries)
		}
	})
}
