package ledger_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/ledger"
)

// chargeOne charges r alone at now.
func chargeOne(ctx context.Context, tx ledger.Tx, l *ledger.Service, r ledger.Request) (ledger.Charged, error) {
	_, c, err := l.Charge(ctx, tx, r, now)
	return c, err
}

// ORD-06 / ERR-54 / CEIL-01 / CEIL-02 / CEIL-03 / CEIL-08 / CEIL-09: Judge, the one function that
// decides a charge, gives every refusal it can give, each in the spec's order of checks:
// standing (account, then key), the plan's in-flight room, then who pays (pass-only, covered
// only), then the key's ceiling, then the balance.
func TestJudgeOrderOfChecks(t *testing.T) {
	revoked := now.Add(-time.Hour)
	live := auth.Account{ID: "acct", Plan: auth.Pro, Status: auth.Live, Balance: 100, MonthlyAllowance: 50}
	key := auth.KeyRecord{ID: "key", AccountID: "acct", ExpiresAt: now.AddDate(0, 1, 0), Ceiling: auth.Ceiling{Mode: auth.FollowPlan},
		SpentPeriod: auth.Period(now), Spent: 20}
	job := ledger.Job{AccountID: "acct", KeyID: "key", JobID: "photo_1", Model: "image-4b", Quote: 10}
	pass := ledger.Pass{ID: "pass_1", AccountID: "acct", Name: "Photo pass", Models: []string{"image-4b"}, MaxCredits: 20, UsesLeft: 3}
	promo := ledger.Pass{ID: "promo_1", AccountID: "acct", Name: "Launch", Promotion: true, UsesLeft: -1}
	with := func(f func(h *ledger.Holding, r *ledger.Request)) (ledger.Holding, ledger.Request) {
		h := ledger.Holding{Account: live, Key: key}
		r := ledger.Request{Job: job, InFlightLimit: 10}
		f(&h, &r)
		return h, r
	}
	cases := []struct {
		name    string
		f       func(h *ledger.Holding, r *ledger.Request)
		code    apierr.Code
		reserve ledger.Credits
		by      string // who pays when a pass does
	}{
		{"credits", func(h *ledger.Holding, r *ledger.Request) {}, "", 10, ""},
		{"banned before everything", func(h *ledger.Holding, r *ledger.Request) {
			h.Account.Status, h.Account.Balance, h.Key.RevokedAt, h.InFlight = auth.Banned, 0, &revoked, 99
		}, apierr.AccountBanned, 0, ""},
		{"suspended", func(h *ledger.Holding, r *ledger.Request) { h.Account.Status = auth.Suspended }, apierr.AccountSuspended, 0, ""},
		{"limited before the key", func(h *ledger.Holding, r *ledger.Request) {
			h.Account.Status, h.Key.RevokedAt = auth.Limited, &revoked
		}, apierr.AccountLimited, 0, ""},
		{"revoked", func(h *ledger.Holding, r *ledger.Request) { h.Key.RevokedAt = &revoked }, apierr.KeyRevoked, 0, ""},
		{"expired", func(h *ledger.Holding, r *ledger.Request) { h.Key.ExpiresAt = now.Add(-time.Second) }, apierr.KeyExpired, 0, ""},
		{"in flight before who pays", func(h *ledger.Holding, r *ledger.Request) {
			h.InFlight, h.Account.Balance = 10, 0
		}, apierr.TooManyJobs, 0, ""},
		{"no in-flight limit", func(h *ledger.Holding, r *ledger.Request) { h.InFlight, r.InFlightLimit = 1000, -1 }, "", 10, ""},
		{"a plan that runs no job, before who pays", func(h *ledger.Holding, r *ledger.Request) {
			h.Account.Plan, r.InFlightLimit, h.Account.Balance = auth.Free, 0, 0
		}, apierr.PlanHasNoAPIGenerate, 0, ""},
		{"pass-only, no pass takes the model", func(h *ledger.Holding, r *ledger.Request) {
			h.Account.PassOnly, r.Model = true, "music-1"
			h.Passes = []ledger.Pass{pass}
		}, apierr.ModelNotInPlan, 0, ""},
		{"pass-only, the pass takes the model but not this shape", func(h *ledger.Holding, r *ledger.Request) {
			h.Account.PassOnly, r.Quote = true, 30
			h.Passes = []ledger.Pass{pass}
		}, apierr.PassDoesNotCover, 0, ""},
		{"pass-only without passes", func(h *ledger.Holding, r *ledger.Request) { h.Account.PassOnly = true }, apierr.ModelNotInPlan, 0, ""},
		{"covered only, none covers", func(h *ledger.Holding, r *ledger.Request) { r.CoveredOnly = true }, apierr.NotCovered, 0, ""},
		{"a pass pays: no ceiling, no balance", func(h *ledger.Holding, r *ledger.Request) {
			h.Passes, h.Account.Balance, h.Key.Spent = []ledger.Pass{pass}, 0, 50
		}, "", 0, "pass"},
		{"a promotion before a pass", func(h *ledger.Holding, r *ledger.Request) { h.Passes = []ledger.Pass{pass, promo} }, "", 0, "promotion"},
		{"ceiling before balance", func(h *ledger.Holding, r *ledger.Request) {
			h.Key.Spent, h.Account.Balance = 45, 0
		}, apierr.KeyCreditCeiling, 0, ""},
		{"fixed ceiling", func(h *ledger.Holding, r *ledger.Request) {
			h.Key.Ceiling = auth.Ceiling{Mode: auth.Fixed, Amount: 25}
		}, apierr.KeyCreditCeiling, 0, ""},
		{"last month's spend does not count", func(h *ledger.Holding, r *ledger.Request) {
			h.Key.Spent, h.Key.SpentPeriod = 50, auth.Period(now.AddDate(0, -1, 0))
		}, "", 10, ""},
		{"no cap on a plan without allowance", func(h *ledger.Holding, r *ledger.Request) {
			h.Account.MonthlyAllowance, h.Key.Spent = 0, 1000
		}, "", 10, ""},
		{"balance", func(h *ledger.Holding, r *ledger.Request) { h.Account.Balance = 9 }, apierr.InsufficientCredits, 0, ""},
		{"a negative balance refuses a free job", func(h *ledger.Holding, r *ledger.Request) {
			h.Account.Balance, r.Quote = -1, 0
		}, apierr.InsufficientCredits, 0, ""},
		{"a turn: the plan's room was judged at submit", func(h *ledger.Holding, r *ledger.Request) {
			h.InFlight, r.Turn = 99, true
		}, "", 10, ""},
		{"a turn of a key revoked while its job waited", func(h *ledger.Holding, r *ledger.Request) {
			h.Key.RevokedAt, h.InFlight, r.Turn = &revoked, 99, true
		}, apierr.KeyRevoked, 0, ""},
		{"a turn of a key expired while its job waited", func(h *ledger.Holding, r *ledger.Request) {
			h.Key.ExpiresAt, r.Turn = now.Add(-time.Second), true
		}, apierr.KeyExpired, 0, ""},
		{"a turn of an account banned while its job waited", func(h *ledger.Holding, r *ledger.Request) {
			h.Account.Status, h.Key.RevokedAt, r.Turn = auth.Banned, &revoked, true
		}, apierr.AccountBanned, 0, ""},
		{"a turn of an account suspended while its job waited", func(h *ledger.Holding, r *ledger.Request) {
			h.Account.Status, r.Turn = auth.Suspended, true
		}, apierr.AccountSuspended, 0, ""},
		{"a turn of an account limited while its job waited", func(h *ledger.Holding, r *ledger.Request) {
			h.Account.Status, r.Turn = auth.Limited, true
		}, apierr.AccountLimited, 0, ""},
		{"a turn paid by a pass still judges the standing", func(h *ledger.Holding, r *ledger.Request) {
			h.Passes, h.Key.RevokedAt, r.Turn = []ledger.Pass{pass}, &revoked, true
		}, apierr.KeyRevoked, 0, ""},
		{"a turn is refused for the balance", func(h *ledger.Holding, r *ledger.Request) {
			h.Account.Balance, r.Turn = 5, true
		}, apierr.InsufficientCredits, 0, ""},
		{"a turn with nothing left to charge takes nothing", func(h *ledger.Holding, r *ledger.Request) {
			h.Account.Balance, h.Passes, r.Quote, r.Turn = -5, []ledger.Pass{pass}, 0, true
		}, "", 0, ""},
		{"a turn charged at its hand-off runs as paid, whatever came after", func(h *ledger.Holding, r *ledger.Request) {
			h.Key.RevokedAt, r.Quote, r.Turn = &revoked, 0, true
		}, "", 0, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, r := with(c.f)
			v, err := ledger.Judge(h, r, now)
			if code(err) != c.code || (c.code == "" && err != nil) {
				t.Fatalf("refusal %v, want %q", err, c.code)
			}
			if v.Reserve != c.reserve {
				t.Fatalf("reserve %d, want %d", v.Reserve, c.reserve)
			}
			by := ""
			if v.Coverage.Covered() {
				by = *v.Coverage.By
			}
			if by != c.by {
				t.Fatalf("paid by %q, want %q", by, c.by)
			}
		})
	}
}

// JOB / CEIL-08: charges held together are judged on the account and key as the charges
// before them left them; a refusal takes nothing; Write moves the balance, the key's spend and
// the pass's uses by what was taken, and the balance stays the sum of the entries.
func TestHeldChargesSeeTheChargesBefore(t *testing.T) {
	ctx := context.Background()
	m, l := setup(t, 100, auth.Ceiling{Mode: auth.Fixed, Amount: 70})
	m.st.passes = []ledger.Pass{{ID: "pass_1", AccountID: "acct", Name: "One use", Models: []string{"photo"}, UsesLeft: 1}}
	a := m.st.accounts["acct"]
	a.PassCount = 1
	m.st.accounts["acct"] = a
	req := func(job, model string, quote ledger.Credits) ledger.Request {
		return ledger.Request{Job: ledger.Job{AccountID: "acct", KeyID: "key", JobID: job, Model: model, Quote: quote}, InFlightLimit: -1}
	}
	var got []apierr.Code
	err := m.LedgerTx(ctx, func(tx ledger.Tx) error {
		h, err := l.Hold(ctx, tx, []ledger.AccountKey{{AccountID: "acct", KeyID: "key"}, {AccountID: "acct", KeyID: "key"}}, now)
		if err != nil {
			return err
		}
		for _, r := range []ledger.Request{
			req("j1", "m", 40),     // taken: 60 left, 40 spent
			req("j2", "m", 40),     // the fixed ceiling of 70: refused, nothing taken
			req("j3", "m", 30),     // taken: 30 left, 70 spent
			req("j4", "photo", 50), // the pass pays
			req("j5", "photo", 31), // the pass is used up: the ceiling refuses
			req("j6", "m", 0),      // nothing to take
		} {
			v, err := h.Judge(r)
			got = append(got, code(err))
			if err == nil {
				h.Take(r, v)
			}
		}
		return h.Write(ctx, tx)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []apierr.Code{"", apierr.KeyCreditCeiling, "", "", apierr.KeyCreditCeiling, ""}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("verdicts %v, want %v", got, want)
		}
	}
	if bal, k := m.st.accounts["acct"].Balance, m.st.keys["key"]; bal != 30 || k.Spent != 70 || m.st.passes[0].UsesLeft != 0 {
		t.Fatalf("balance %d, spent %d, pass uses left %d", bal, k.Spent, m.st.passes[0].UsesLeft)
	}
	if sum, _ := m.LedgerBalanceSum(ctx, "acct"); sum != 30 {
		t.Fatalf("entries sum to %d, balance 30", sum)
	}
}

// JOB / plan in-flight limits: submits held together see the jobs placed before them
// (Held.Placed) in the account's in-flight count.
func TestHeldCountsJobsPlaced(t *testing.T) {
	ctx := context.Background()
	m, l := setup(t, 100, auth.Ceiling{Mode: auth.FollowPlan})
	r := ledger.Request{Job: ledger.Job{AccountID: "acct", KeyID: "key", JobID: "j", Model: "m", Quote: 1}, InFlightLimit: 2}
	var got []apierr.Code
	err := m.LedgerTx(ctx, func(tx ledger.Tx) error {
		h, err := l.Hold(ctx, tx, []ledger.AccountKey{{AccountID: "acct", KeyID: "key"}}, now)
		if err != nil {
			return err
		}
		for range 3 {
			v, err := h.Judge(r)
			got = append(got, code(err))
			if err == nil {
				h.Take(r, v)
				h.Placed("acct")
			}
		}
		return h.Write(ctx, tx)
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := []apierr.Code{"", "", apierr.TooManyJobs}; !slices.Equal(got, want) {
		t.Fatalf("verdicts %v, want %v", got, want)
	}
}

// A key that is not the account's is not held: Judge answers ErrNotFound and nothing moves.
func TestHeldKeyOfAnotherAccount(t *testing.T) {
	ctx := context.Background()
	m, l := setup(t, 100, auth.Ceiling{Mode: auth.FollowPlan})
	err := m.LedgerTx(ctx, func(tx ledger.Tx) error {
		_, err := chargeOne(ctx, tx, l, ledger.Request{Job: ledger.Job{AccountID: "other", KeyID: "key", Quote: 5}, InFlightLimit: -1})
		return err
	})
	if !errors.Is(err, ledger.ErrNotFound) || m.st.accounts["acct"].Balance != 100 {
		t.Fatalf("%v, balance %d", err, m.st.accounts["acct"].Balance)
	}
}

// ALW: the first charge of a month sees that month's allowance, credited once.
func TestHoldCreditsTheAllowanceDue(t *testing.T) {
	ctx := context.Background()
	m, l := setup(t, 10, auth.Ceiling{Mode: auth.NoCap})
	dec := now.AddDate(0, 1, 0)
	for range 2 {
		err := m.LedgerTx(ctx, func(tx ledger.Tx) error {
			h, err := l.Hold(ctx, tx, []ledger.AccountKey{{AccountID: "acct", KeyID: "key"}}, dec)
			if err != nil {
				return err
			}
			r := ledger.Request{Job: ledger.Job{AccountID: "acct", KeyID: "key", JobID: "j", Model: "m", Quote: 1000}, InFlightLimit: -1}
			v, err := h.Judge(r)
			if err != nil {
				return err
			}
			h.Take(r, v)
			return h.Write(ctx, tx)
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if bal := m.st.accounts["acct"].Balance; bal != 10+2000-2000 {
		t.Fatalf("balance %d, want 10", bal)
	}
}
