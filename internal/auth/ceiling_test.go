package auth

import (
	"context"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
)

func refusal(t *testing.T, err error, code apierr.Code, ceiling int64) {
	t.Helper()
	e, ok := apierr.As(err)
	if !ok || e.Code != code {
		t.Fatalf("err = %v, want %s", err, code)
	}
	if got, _ := e.Fields["ceiling"].(int64); got != ceiling {
		t.Fatalf("%s carries ceiling %v, want %d", code, e.Fields["ceiling"], ceiling)
	}
}

// TestCEIL02_FollowPlan proves CEIL-02 (blank cap = the plan's monthly credits in force, read at
// every charge, promotion lift included), CEIL-03 (no monthly credits → no cap), CEIL-09 (0 means
// no cap and never refuses).
func TestCEIL02_FollowPlan(t *testing.T) {
	c := Ceiling{Mode: FollowPlan}
	for _, allowance := range []int64{2000, 2500 /* promotion lift */, 15000, 1} {
		if got := c.Effective(allowance); got != allowance {
			t.Fatalf("follow-plan cap under %d = %d", allowance, got)
		}
		// Read at every charge: the same key, charged under two allowances, is bounded by each.
		if err := CheckSpend(c, allowance, allowance-1, 1); err != nil {
			t.Fatalf("at the cap: %v", err)
		}
		if err := CheckSpend(c, allowance, allowance-1, 2); !apierr.Is(err, apierr.KeyCreditCeiling) {
			t.Fatalf("over the cap under %d: %v", allowance, err)
		}
	}
	// CEIL-03 / CEIL-09: no monthly credits → no cap, never refuses.
	if c.Effective(0) != 0 {
		t.Fatal("follow plan with no allowance has a cap")
	}
	if err := CheckSpend(c, 0, 1<<40, 1<<40); err != nil {
		t.Fatalf("no cap refused: %v", err)
	}
	if err := CheckSpend(Ceiling{Mode: NoCap}, 6000, 1<<40, 1); err != nil {
		t.Fatalf("legacy no-cap refused: %v", err)
	}

	// Through the service: a plan change moves the cap of a following key at once.
	f := newFixture(t, "s")
	f.account(t, "acct_1", Pro)
	m := f.mint(t, MintParams{AccountID: "acct_1"})
	if m.Record.Ceiling.Mode != FollowPlan {
		t.Fatalf("default ceiling %+v, want follow plan", m.Record.Ceiling)
	}
	if err := f.store.SetAccountPlan(context.Background(), "acct_1", Max, 6000); err != nil {
		t.Fatal(err)
	}
	p, err := f.auth(t, m.Key, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Key.Ceiling.Effective(p.Account.MonthlyAllowance); got != 6000 {
		t.Fatalf("after upgrade the cap is %d, want 6000", got)
	}
}

// TestCEIL08_OverCap proves CEIL-01 (per key, per UTC month), CEIL-08 (403 key_credit_ceiling with
// ceiling, spent, required, retry never).
func TestCEIL08_OverCap(t *testing.T) {
	c := Ceiling{Mode: Fixed, Amount: 500}
	if err := CheckSpend(c, 2000, 400, 100); err != nil {
		t.Fatalf("exactly at the cap: %v", err)
	}
	err := CheckSpend(c, 2000, 400, 101)
	e, ok := apierr.As(err)
	if !ok || e.Code != apierr.KeyCreditCeiling {
		t.Fatalf("%v", err)
	}
	if e.Fields["ceiling"] != int64(500) || e.Fields["spent"] != int64(400) || e.Fields["required"] != int64(101) {
		t.Fatalf("fields %v", e.Fields)
	}
	// ERR-34: the message says the same figures, and calls the cap spent only when it is.
	for _, c := range []struct {
		ceiling       Ceiling
		spent, amount int64
		message       string
	}{
		{c, 400, 101, "This request needs 101 credits, more than the 100 left of this key's monthly credit ceiling of 500 (400 spent this month)."},
		{Ceiling{Mode: Fixed, Amount: 5}, 0, 50, "This request needs 50 credits, more than the 5 left of this key's monthly credit ceiling of 5 (0 spent this month)."},
		{c, 500, 1, "This key's monthly credit ceiling of 500 is spent (500 spent this month); this request needs 1 credit."},
	} {
		if e, _ := apierr.As(CheckSpend(c.ceiling, 2000, c.spent, c.amount)); e == nil || e.Text() != c.message {
			t.Errorf("cap %d, %d spent, %d more: %v, want %q", c.ceiling.Amount, c.spent, c.amount, e, c.message)
		}
	}
	en := e.Entry()
	if en.Status != 403 || en.Retry != apierr.RetryNever || en.Charged != apierr.ChargedNo {
		t.Fatalf("row %+v", en)
	}
	// CEIL-01: the month rolls over in UTC; the spend of last month no longer counts.
	k := KeyRecord{SpentPeriod: "2026-11", Spent: 500}
	if k.SpentIn(time.Date(2026, 11, 30, 23, 59, 59, 0, time.UTC)) != 500 {
		t.Fatal("spend in November")
	}
	if k.SpentIn(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)) != 0 {
		t.Fatal("December starts at zero")
	}
	// 23:30 on 30 Nov in UTC-05:00 is already December in UTC.
	if k.SpentIn(time.Date(2026, 11, 30, 20, 30, 0, 0, time.FixedZone("x", -5*3600)).Add(4*time.Hour)) != 0 {
		t.Fatal("the period must be the UTC month")
	}
	if Period(time.Date(2026, 12, 1, 1, 0, 0, 0, time.FixedZone("y", 2*3600))) != "2026-11" {
		t.Fatal("Period is UTC")
	}
}

// TestCEIL05_FixedFigureBounds proves CEIL-04 (whole positive; zero refused) and CEIL-05 (at most
// the monthly credits while granted, 1,000,000 while none; ceiling_too_high with the most allowed).
func TestCEIL05_FixedFigureBounds(t *testing.T) {
	base := Ceiling{Mode: FollowPlan}
	for _, c := range []struct {
		allowance, amount int64
		ok                bool
		max               int64
	}{
		{2000, 1, true, 0},
		{2000, 2000, true, 0},
		{2000, 2001, false, 2000},
		{2000, 0, false, 2000},
		{2000, -5, false, 2000},
		{0, 1_000_000, true, 0},
		{0, 1_000_001, false, 1_000_000},
		{0, 0, false, 1_000_000},
		{15000, 15001, false, 15000},
	} {
		got, err := base.Apply(CeilingRequest{Amount: c.amount}, c.allowance)
		if c.ok {
			if err != nil || got != (Ceiling{Mode: Fixed, Amount: c.amount}) {
				t.Fatalf("%d under %d: %+v %v", c.amount, c.allowance, got, err)
			}
			continue
		}
		refusal(t, err, apierr.CeilingTooHigh, c.max)
		if got != base {
			t.Fatalf("a refused change altered the ceiling: %+v", got)
		}
	}
	if en := apierr.Lookup(apierr.CeilingTooHigh); en.Status != 400 {
		t.Fatalf("ceiling_too_high status %d", en.Status)
	}
}

// TestCEIL06_ChangeKeepsSpend proves CEIL-06: the cap changes looser or tighter within the bound,
// and the month's spend stays counted.
func TestCEIL06_ChangeKeepsSpend(t *testing.T) {
	f := newFixture(t, "s")
	f.account(t, "acct_1", Pro)
	m := f.mint(t, MintParams{AccountID: "acct_1", Ceiling: &CeilingRequest{Amount: 1000}})
	if m.Record.Ceiling != (Ceiling{Mode: Fixed, Amount: 1000}) {
		t.Fatalf("minted ceiling %+v", m.Record.Ceiling)
	}
	// Record spend as the ledger would.
	f.store.mu.Lock()
	k := f.store.keys[m.Record.ID]
	k.Spent, k.SpentPeriod = 700, Period(t0)
	f.store.keys[m.Record.ID] = k
	f.store.mu.Unlock()
	for _, amount := range []int64{500, 2000, 800} {
		c, err := f.svc.SetCeiling(context.Background(), m.Record.ID, CeilingRequest{Amount: amount})
		if err != nil || c.Amount != amount {
			t.Fatalf("set %d: %+v %v", amount, c, err)
		}
		rec, _ := f.store.Key(context.Background(), m.Record.ID)
		if rec.SpentIn(t0) != 700 {
			t.Fatalf("spend after change %d", rec.SpentIn(t0))
		}
		err = CheckSpend(rec.Ceiling, 2000, rec.SpentIn(t0), 101)
		if (amount-700 < 101) != apierr.Is(err, apierr.KeyCreditCeiling) {
			t.Fatalf("cap %d spent 700 + 101: %v", amount, err)
		}
	}
	_, err := f.svc.SetCeiling(context.Background(), m.Record.ID, CeilingRequest{Amount: 2001})
	refusal(t, err, apierr.CeilingTooHigh, 2000)
	if c, err := f.svc.SetCeiling(context.Background(), m.Record.ID, CeilingRequest{FollowPlan: true}); err != nil || c.Mode != FollowPlan {
		t.Fatalf("back to plan: %+v %v", c, err)
	}
	// Minting with a figure above the plan is refused too.
	_, err = f.svc.Mint(context.Background(), MintParams{AccountID: "acct_1", Ceiling: &CeilingRequest{Amount: 2001}})
	refusal(t, err, apierr.CeilingTooHigh, 2000)
}

// TestCEIL07_SupportHeld proves CEIL-07: a support-set cap binds; lowered and raised back only up
// to the figure; switching to the plan or above it → ceiling_held with the figure.
func TestCEIL07_SupportHeld(t *testing.T) {
	const allowance = 2000
	held, err := Ceiling{Mode: FollowPlan}.Apply(CeilingRequest{Amount: 800, BySupport: true}, allowance)
	if err != nil || held != (Ceiling{Mode: Fixed, Amount: 800, Support: 800}) {
		t.Fatalf("support set %+v %v", held, err)
	}
	lower, err := held.Apply(CeilingRequest{Amount: 300}, allowance)
	if err != nil || lower != (Ceiling{Mode: Fixed, Amount: 300, Support: 800}) {
		t.Fatalf("lowered %+v %v", lower, err)
	}
	back, err := lower.Apply(CeilingRequest{Amount: 800}, allowance)
	if err != nil || back != held {
		t.Fatalf("raised back to the figure %+v %v", back, err)
	}
	_, err = lower.Apply(CeilingRequest{Amount: 801}, allowance)
	refusal(t, err, apierr.CeilingHeld, 800)
	_, err = lower.Apply(CeilingRequest{FollowPlan: true}, allowance)
	refusal(t, err, apierr.CeilingHeld, 800)
	// Even when the plan's figure equals or is below the support figure, switching to the plan is
	// not the user's to make.
	_, err = held.Apply(CeilingRequest{FollowPlan: true}, 500)
	refusal(t, err, apierr.CeilingHeld, 800)
	if en := apierr.Lookup(apierr.CeilingHeld); en.Status != 409 {
		t.Fatalf("ceiling_held status %d", en.Status)
	}
	// Support may move or lift its own hold.
	if c, err := lower.Apply(CeilingRequest{Amount: 1500, BySupport: true}, allowance); err != nil || c.Support != 1500 || c.Amount != 1500 {
		t.Fatalf("support raise %+v %v", c, err)
	}
	if c, err := lower.Apply(CeilingRequest{FollowPlan: true, BySupport: true}, allowance); err != nil || c != (Ceiling{Mode: FollowPlan}) {
		t.Fatalf("support lift %+v %v", c, err)
	}
	// Through the service and the store.
	f := newFixture(t, "s")
	f.account(t, "acct_1", Pro)
	m := f.mint(t, MintParams{AccountID: "acct_1"})
	if _, err := f.svc.SetCeiling(context.Background(), m.Record.ID, CeilingRequest{Amount: 600, BySupport: true}); err != nil {
		t.Fatal(err)
	}
	_, err = f.svc.SetCeiling(context.Background(), m.Record.ID, CeilingRequest{FollowPlan: true})
	refusal(t, err, apierr.CeilingHeld, 600)
	_, err = f.svc.SetCeiling(context.Background(), m.Record.ID, CeilingRequest{Amount: 601})
	refusal(t, err, apierr.CeilingHeld, 600)
	if c, err := f.svc.SetCeiling(context.Background(), m.Record.ID, CeilingRequest{Amount: 100}); err != nil || c.Support != 600 {
		t.Fatalf("lowering under a hold: %+v %v", c, err)
	}
	rec, _ := f.store.Key(context.Background(), m.Record.ID)
	if rec.Ceiling != (Ceiling{Mode: Fixed, Amount: 100, Support: 600}) {
		t.Fatalf("stored %+v", rec.Ceiling)
	}
}

// TestCEIL10_LegacyKeys proves CEIL-10: keys from before caps were selectable follow the plan only
// if their cap equalled the plan's monthly credits that day; otherwise keep their cap, or none.
func TestCEIL10_LegacyKeys(t *testing.T) {
	for _, c := range []struct {
		capThatDay, planThatDay int64
		want                    Ceiling
	}{
		{2000, 2000, Ceiling{Mode: FollowPlan}},
		{1500, 2000, Ceiling{Mode: Fixed, Amount: 1500}},
		{2500, 2000, Ceiling{Mode: Fixed, Amount: 2500}},
		{0, 2000, Ceiling{Mode: NoCap}},
		{0, 0, Ceiling{Mode: NoCap}},
		{700, 0, Ceiling{Mode: Fixed, Amount: 700}},
	} {
		if got := LegacyCeiling(c.capThatDay, c.planThatDay); got != c.want {
			t.Errorf("LegacyCeiling(%d, %d) = %+v, want %+v", c.capThatDay, c.planThatDay, got, c.want)
		}
	}
	// A legacy key following the plan moves with it; one that kept its figure does not.
	if LegacyCeiling(2000, 2000).Effective(6000) != 6000 || LegacyCeiling(1500, 2000).Effective(6000) != 1500 {
		t.Fatal("legacy effective caps")
	}
	if LegacyCeiling(0, 2000).Effective(6000) != 0 {
		t.Fatal("a legacy key without a cap gained one")
	}
}
