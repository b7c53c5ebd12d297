package ledger

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
)

// The one charge path. Every charge, whatever asks for it (a submit alone or with others, a
// queued job at its turn, a chat turn, a console run), is:
//
//   - held: Hold locks the accounts and reads them with the keys and passes the checks need,
//     in one statement for any number of charges (a second only for accounts holding passes);
//   - judged: Judge applies the order of checks to what was held, in memory, with no I/O;
//   - written: Held.Write writes the allowances credited, the passes used and the charges
//     taken, in the caller's transaction.
//
// Judge is the one function that decides whether a charge is made.

// AccountKey names an API key of an account.
type AccountKey struct{ AccountID, KeyID string }

// Holding is what one charge is judged on: the account and the key as they stand after the
// charges judged before it in the same transaction, the account's passes, and the number of
// its jobs in flight.
type Holding struct {
	Account  auth.Account
	Key      auth.KeyRecord
	Passes   []Pass
	InFlight int
}

// Request is one charge to judge.
type Request struct {
	Job
	// CoveredOnly refuses the charge unless a pass or a promotion pays it (not_covered).
	CoveredOnly bool
	// InFlightLimit is the most jobs the account's plan lets it have in flight; negative for
	// no limit.
	InFlightLimit int
	// Turn is a queued job charged at its turn: the plan's room was judged when it was
	// submitted, so only its caller's standing (a key revoked or expired, an account banned,
	// suspended or limited while it waited: spec 02 Auth #5) and who pays are judged again. A
	// turn with no quote left (a job charged when it was handed off, before any revocation)
	// takes nothing.
	Turn bool
}

// Verdict is what Judge allows: who pays, and the credits to take.
type Verdict struct {
	Coverage *Coverage // the pass or promotion that pays; a miss when a held pass did not
	Reserve  Credits   // credits to take; 0 when a pass pays or nothing is quoted
}

// Judge decides a charge, in the order of checks of spec 02: the caller's standing
// (account_banned, account_suspended, account_limited, key_revoked, key_expired; at a queued
// job's turn too, so a job that waited past its key's revocation is never charged), the plan's
// room for one more job in flight (plan_has_no_api_generate for a plan that runs none,
// too_many_jobs; not at a turn), then who pays: a pass-only account that no
// pass covers (pass_does_not_cover, model_not_in_plan), a covered-only request that none covers
// (not_covered), then for credits the key's monthly ceiling (key_credit_ceiling) and the
// balance (insufficient_credits). It moves nothing.
func Judge(h Holding, r Request, now time.Time) (Verdict, error) {
	a, k := h.Account, h.Key
	if r.Turn && r.Quote <= 0 {
		return Verdict{}, nil
	}
	if err := auth.Standing(a, k, now, false); err != nil {
		return Verdict{}, err
	}
	if !r.Turn {
		if r.InFlightLimit == 0 { // a plan that runs no job (free): never 429 (spec 02 limits #3)
			return Verdict{}, apierr.Newf(apierr.PlanHasNoAPIGenerate, "The %s plan runs no jobs: a paid plan runs models.", a.Plan).
				With("plan", string(a.Plan)).With("bucket", "generate")
		}
		if r.InFlightLimit >= 0 && h.InFlight >= r.InFlightLimit {
			return Verdict{}, apierr.New(apierr.TooManyJobs, "limit", r.InFlightLimit, "plan", string(a.Plan), "tier", nil)
		}
	}
	var cov *Coverage
	if len(h.Passes) > 0 {
		cov = Cover(h.Passes, r.Model, int64(r.Quote), now)
	}
	if a.PassOnly && !cov.Covered() {
		if cov != nil && cov.Miss != nil && cov.Miss.Why == "shape" {
			return Verdict{}, apierr.New(apierr.PassDoesNotCover, "pass", cov.Miss.Pass, "why", cov.Miss.Why)
		}
		return Verdict{}, apierr.New(apierr.ModelNotInPlan, "plan", string(a.Plan))
	}
	if r.CoveredOnly && !cov.Covered() {
		return Verdict{}, apierr.New(apierr.NotCovered)
	}
	if cov.Covered() {
		return Verdict{Coverage: cov}, nil
	}
	quote := max(r.Quote, 0)
	if err := auth.CheckSpend(k.Ceiling, a.MonthlyAllowance, k.SpentIn(now), int64(quote)); err != nil {
		return Verdict{}, err
	}
	if a.Balance < int64(quote) {
		return Verdict{}, apierr.New(apierr.InsufficientCredits, "required", int64(quote), "balance", a.Balance)
	}
	return Verdict{Coverage: cov, Reserve: quote}, nil
}

// Charged is what a charge took.
type Charged struct {
	Reserved Credits // credits taken (0 when a pass paid)
	Balance  Credits // the account's balance after the charge
}

// Taken is a charge taken in memory by Held.Take: its entry and the balance it leaves.
type Taken struct {
	Entry
	Balance int64
}

// Held is the accounts and keys of the charges of one transaction, held by it until it ends,
// with what was taken so far applied to them in memory.
type Held struct {
	now       time.Time
	accounts  map[string]*auth.Account
	keys      map[AccountKey]*auth.KeyRecord
	passes    map[string][]Pass
	inFlight  map[string]int // each account's unsettled jobs, those placed since the hold counted
	allowance []Entry        // monthly allowances credited, in account order
	passUses  []string       // passes used, one id per use
	taken     []Taken
}

// Hold locks the accounts of pairs in tx (each once, in id order: transactions that hold
// several never wait on each other in a cycle) and reads them with the keys named, and the
// passes of accounts that hold some. An account whose monthly allowance is due is credited
// it, in memory (Write writes it), so the first charge of a month sees that month's
// allowance. now is the transaction's time: the charges' and the spends' period.
func (s *Service) Hold(ctx context.Context, tx Tx, pairs []AccountKey, now time.Time) (*Held, error) {
	want := slices.Clone(pairs)
	slices.SortFunc(want, func(a, b AccountKey) int {
		return cmp.Or(cmp.Compare(a.AccountID, b.AccountID), cmp.Compare(a.KeyID, b.KeyID))
	})
	want = slices.Compact(want)
	rows, err := tx.LedgerHold(ctx, want)
	if err != nil {
		return nil, err
	}
	as, ks := rows.Accounts, rows.Keys
	h := &Held{now: now, accounts: map[string]*auth.Account{}, keys: map[AccountKey]*auth.KeyRecord{}, passes: map[string][]Pass{},
		inFlight: rows.InFlight}
	if h.inFlight == nil {
		h.inFlight = map[string]int{}
	}
	for i := range as {
		h.keys[AccountKey{AccountID: ks[i].AccountID, KeyID: ks[i].ID}] = &ks[i]
		if _, ok := h.accounts[as[i].ID]; ok {
			continue
		}
		a := &as[i]
		h.accounts[a.ID] = a
		if a.PassCount > 0 {
			if h.passes[a.ID], err = tx.LedgerPasses(ctx, a.ID); err != nil {
				return nil, err
			}
		}
		if a.AllowanceDue(now) {
			a.Balance += a.MonthlyAllowance
			a.AllowancePeriod = auth.Period(now)
			h.allowance = append(h.allowance, Entry{AccountID: a.ID, Kind: Allowance, Amount: Credits(a.MonthlyAllowance), At: now})
		}
	}
	return h, nil
}

// Account is the held account as the charges taken so far left it.
func (h *Held) Account(id string) (auth.Account, bool) {
	a, ok := h.accounts[id]
	if !ok {
		return auth.Account{}, false
	}
	return *a, true
}

// Judge judges r (Judge) on its account and key as held, with the account's jobs in flight.
// ErrNotFound when the key is not the account's.
func (h *Held) Judge(r Request) (Verdict, error) {
	a, ok := h.accounts[r.AccountID]
	k, kok := h.keys[AccountKey{AccountID: r.AccountID, KeyID: r.KeyID}]
	if !ok || !kok {
		return Verdict{}, ErrNotFound
	}
	return Judge(Holding{Account: *a, Key: *k, Passes: h.passes[r.AccountID], InFlight: h.inFlight[r.AccountID]}, r, h.now)
}

// Placed counts one more job of the account in flight: a submit judged and placed, charged
// now or at its turn. The submits judged after it see it.
func (h *Held) Placed(accountID string) { h.inFlight[accountID]++ }

// Take takes what v allowed for r, in memory: one use of the pass that pays, or the credits
// from the balance and into the key's spend. Write writes it.
func (h *Held) Take(r Request, v Verdict) Charged {
	a := h.accounts[r.AccountID]
	if v.Coverage.Covered() {
		h.usePass(r.AccountID, v.Coverage.PassID)
		return Charged{Balance: Credits(a.Balance)}
	}
	if v.Reserve <= 0 {
		return Charged{Balance: Credits(a.Balance)}
	}
	k := h.keys[AccountKey{AccountID: r.AccountID, KeyID: r.KeyID}]
	k.Spent, k.SpentPeriod = k.SpentIn(h.now)+int64(v.Reserve), auth.Period(h.now)
	a.Balance -= int64(v.Reserve)
	h.taken = append(h.taken, Taken{Entry: Entry{AccountID: r.AccountID, KeyID: r.KeyID, JobID: r.JobID, Model: r.Model, Kind: Charge,
		Amount: -v.Reserve, At: h.now}, Balance: a.Balance})
	return Charged{Reserved: v.Reserve, Balance: Credits(a.Balance)}
}

// usePass counts one use of a pass in memory, so the charges after it see what is left.
func (h *Held) usePass(accountID, passID string) {
	h.passUses = append(h.passUses, passID)
	ps := h.passes[accountID]
	for i := range ps {
		if ps[i].ID == passID && ps[i].UsesLeft > 0 {
			ps[i].UsesLeft--
		}
	}
}

// Write writes what was held and taken: the allowances credited, then the passes used, then
// the charges (in one statement where the store can). The transaction holds every account
// they move, so each balance is as Judge saw it.
func (h *Held) Write(ctx context.Context, tx Tx) error {
	for _, e := range h.allowance {
		won, err := tx.LedgerClaimAllowance(ctx, e.AccountID, auth.Period(h.now))
		if err != nil {
			return err
		}
		if !won {
			// The account is held: no other transaction can have credited it since Hold.
			return fmt.Errorf("ledger: the allowance of %s for %s was credited under the account's lock", e.AccountID, auth.Period(h.now))
		}
		if _, err := tx.LedgerApply(ctx, e, math.MinInt64); err != nil {
			return err
		}
	}
	for _, id := range h.passUses {
		if err := tx.LedgerUsePass(ctx, id); err != nil {
			return err
		}
	}
	if len(h.taken) == 0 {
		return nil
	}
	return tx.LedgerChargeAll(ctx, h.taken)
}

// Charge is the charge path for one request alone in tx: Hold, Judge, Take and Write. A
// refusal writes nothing.
func (s *Service) Charge(ctx context.Context, tx Tx, r Request, now time.Time) (Verdict, Charged, error) {
	h, err := s.Hold(ctx, tx, []AccountKey{{AccountID: r.AccountID, KeyID: r.KeyID}}, now)
	if err != nil {
		return Verdict{}, Charged{}, err
	}
	v, err := h.Judge(r)
	if err != nil {
		return Verdict{}, Charged{}, err
	}
	c := h.Take(r, v)
	return v, c, h.Write(ctx, tx)
}
