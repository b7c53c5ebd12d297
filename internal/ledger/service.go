package ledger

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
)

// Credits is an amount of credits: money is an integer.
type Credits int64

// Service owns every credit movement: charges at a job's start, settlements and refunds,
// operator grants, monthly allowances, passes and promotions, per-key spend and ceilings, and
// the account changes the console makes. A job's movements run inside the jobs engine's
// transaction (the methods taking a Tx); the others open their own.
type Service struct {
	store Store
	now   func() time.Time
}

// New wires the ledger over its store. now is the clock of the operator's movements.
func New(store Store, now func() time.Time) *Service { return &Service{store: store, now: now} }

// Open locks the account for the rest of tx and credits its monthly allowance when due, so the
// first charge of a month sees that month's allowance. It answers the account as it stands.
func (s *Service) Open(ctx context.Context, tx Tx, accountID string, now time.Time) (auth.Account, error) {
	a, err := tx.LedgerLockAccount(ctx, accountID)
	if err != nil {
		return a, err
	}
	return s.grantAllowanceDue(ctx, tx, a, now)
}

// OpenFor is Open for a caller's request that may spend: it reads the caller's key with the
// account it locks, in the same statement, and refuses a caller whose standing no longer
// allows spending with the codes and in the order of spec 02 check 6 (account_banned,
// account_suspended, account_limited, key_revoked, key_expired). The gate may have answered
// the key from a cache (auth.Principal.Unconfirmed): this is where a revocation, a ban or an
// expiry is seen at once (KEY-25), and where the key's ceiling and spend are read as they
// stand for Decide. It answers the account and the key.
//
// key is the caller's key as the gate saw it: only its id counts, except for the console's
// submissions (auth.ConsoleKeyID), whose key has no record and stands as given.
func (s *Service) OpenFor(ctx context.Context, tx Tx, accountID string, key auth.KeyRecord, now time.Time) (auth.Account, auth.KeyRecord, error) {
	var a auth.Account
	k := key
	var err error
	if key.ID == auth.ConsoleKeyID {
		a, err = tx.LedgerLockAccount(ctx, accountID)
	} else {
		a, k, err = tx.LedgerLockAccountKey(ctx, accountID, key.ID)
	}
	if err != nil {
		return a, k, err
	}
	if err := auth.Standing(a, k, now, false); err != nil {
		return a, k, err
	}
	a, err = s.grantAllowanceDue(ctx, tx, a, now)
	return a, k, err
}

// Standing refuses, as OpenFor does, a caller whose account or key no longer allows spending,
// for an answer that takes no transaction (an idempotent replay of an unconfirmed principal).
func (s *Service) Standing(ctx context.Context, accountID, keyID string, now time.Time) error {
	a, k, err := s.store.LedgerStanding(ctx, accountID, keyID)
	if err != nil {
		return err
	}
	return auth.Standing(a, k, now, false)
}

func (s *Service) grantAllowanceDue(ctx context.Context, tx Tx, a auth.Account, now time.Time) (auth.Account, error) {
	if !a.AllowanceDue(now) {
		return a, nil
	}
	period := auth.Period(now)
	won, err := tx.LedgerClaimAllowance(ctx, a.ID, period)
	if err != nil || !won {
		return a, err
	}
	bal, err := tx.LedgerApply(ctx, Entry{AccountID: a.ID, Kind: Allowance, Amount: Credits(a.MonthlyAllowance), At: now}, math.MinInt64)
	if err != nil {
		return a, err
	}
	a.Balance, a.AllowancePeriod = bal, period
	return a, nil
}

// Job is what the ledger knows of a job: who pays, for which model, how much was quoted, and
// what a pass decided.
type Job struct {
	AccountID string
	KeyID     string
	JobID     string
	Model     string
	Quote     Credits
	Coverage  *Coverage
}

// Decide says who pays for a job on account a (locked by Open): a promotion or a pass when one
// covers it (passes are read only when the account holds some), otherwise credits, after the
// key's ceiling and the balance are checked. It refuses with the catalogue's codes: a pass-only
// account that no pass covers (model_not_in_plan, pass_does_not_cover), a covered-only request
// that none covers (not_covered), a key past its ceiling (key_credit_ceiling), a balance short
// of the quote (insufficient_credits). It moves nothing: Charge does.
func (s *Service) Decide(ctx context.Context, tx Tx, a auth.Account, key auth.KeyRecord, model string, quote Credits, coveredOnly bool, now time.Time) (*Coverage, error) {
	var cov *Coverage
	if a.PassCount > 0 {
		passes, err := tx.LedgerPasses(ctx, a.ID)
		if err != nil {
			return nil, err
		}
		cov = Cover(passes, model, int64(quote), now)
	}
	if a.PassOnly && !cov.Covered() {
		if cov != nil && cov.Miss != nil && cov.Miss.Why == "shape" {
			return nil, apierr.New(apierr.PassDoesNotCover, "pass", cov.Miss.Pass, "why", cov.Miss.Why)
		}
		return nil, apierr.New(apierr.ModelNotInPlan, "plan", string(a.Plan))
	}
	if coveredOnly && !cov.Covered() {
		return nil, apierr.New(apierr.NotCovered)
	}
	if !cov.Covered() {
		if err := s.check(a, key, quote, now); err != nil {
			return nil, err
		}
	}
	return cov, nil
}

// check refuses a credit charge the key's ceiling or the balance does not allow.
func (s *Service) check(a auth.Account, key auth.KeyRecord, quote Credits, now time.Time) error {
	if err := auth.CheckSpend(key.Ceiling, a.MonthlyAllowance, key.SpentIn(now), int64(quote)); err != nil {
		return err
	}
	if a.Balance < int64(quote) {
		return apierr.New(apierr.InsufficientCredits, "required", int64(quote), "balance", a.Balance)
	}
	return nil
}

// Charged is what Charge took.
type Charged struct {
	Reserved Credits // credits taken (0 when a pass paid)
	Balance  Credits // the account's balance after the charge
}

// Charge takes a job's quote at its start: one use of the pass that covers it, or the quote in
// credits. Submitted and queued jobs start through it alike, so both pass the key's ceiling and
// the balance check at the moment credits move: the key's spend is added and checked in one
// statement, and the debit is guarded by the balance, so two starts at once cannot overspend.
// a is the account as Open returned it.
func (s *Service) Charge(ctx context.Context, tx Tx, a auth.Account, j Job, now time.Time) (Charged, error) {
	if j.Coverage.Covered() {
		return Charged{Balance: Credits(a.Balance)}, tx.LedgerUsePass(ctx, j.Coverage.PassID)
	}
	if j.Quote <= 0 {
		return Charged{Balance: Credits(a.Balance)}, nil
	}
	if a.Balance < int64(j.Quote) {
		return Charged{}, apierr.New(apierr.InsufficientCredits, "required", int64(j.Quote), "balance", a.Balance)
	}
	if j.KeyID == auth.ConsoleKeyID {
		// The console's submissions have no key record to count against: the guarded debit
		// below is the whole check, as for any charge.
		return s.debit(ctx, tx, a, j, now, nil)
	}
	k, err := tx.LedgerKeySpend(ctx, j.KeyID, auth.Period(now), int64(j.Quote))
	if err != nil {
		return Charged{}, err
	}
	// A refusal gives the spend back at once: a queued job refused at its turn is failed in
	// this same transaction, which then commits.
	undo := func(refusal error) (Charged, error) {
		if _, err := tx.LedgerKeySpend(ctx, j.KeyID, auth.Period(now), -int64(j.Quote)); err != nil {
			return Charged{}, err
		}
		return Charged{}, refusal
	}
	if err := auth.CheckSpend(k.Ceiling, a.MonthlyAllowance, k.SpentIn(now)-int64(j.Quote), int64(j.Quote)); err != nil {
		return undo(err)
	}
	return s.debit(ctx, tx, a, j, now, undo)
}

// debit writes the charge entry, guarded by the balance; a refusal goes through undo when the
// key's spend was taken first.
func (s *Service) debit(ctx context.Context, tx Tx, a auth.Account, j Job, now time.Time, undo func(error) (Charged, error)) (Charged, error) {
	bal, err := tx.LedgerApply(ctx, Entry{AccountID: j.AccountID, KeyID: j.KeyID, JobID: j.JobID, Model: j.Model, Kind: Charge, Amount: -j.Quote, At: now}, 0)
	if errors.Is(err, ErrInsufficient) {
		refusal := apierr.New(apierr.InsufficientCredits, "required", int64(j.Quote), "balance", a.Balance)
		if undo == nil {
			return Charged{}, refusal
		}
		return undo(refusal)
	}
	if err != nil {
		return Charged{}, err
	}
	return Charged{Reserved: j.Quote, Balance: Credits(bal)}, nil
}

// ChargeFor is Charge for a submit, whose transaction commits nothing when it is refused: the
// debit and the key's spend move in one statement (one round trip on PostgreSQL), and the
// key's ceiling is judged on the spend that statement answers. A refusal for the ceiling comes
// after both moved, so the caller's transaction must end on it (a refused submit rolls back);
// a job charged at its turn in the queue goes through Charge, which gives the spend back.
func (s *Service) ChargeFor(ctx context.Context, tx Tx, a auth.Account, j Job, now time.Time) (Charged, error) {
	if j.Coverage.Covered() || j.Quote <= 0 || j.KeyID == auth.ConsoleKeyID {
		return s.Charge(ctx, tx, a, j, now)
	}
	if a.Balance < int64(j.Quote) {
		return Charged{}, apierr.New(apierr.InsufficientCredits, "required", int64(j.Quote), "balance", a.Balance)
	}
	bal, k, err := tx.LedgerChargeKey(ctx, Entry{AccountID: j.AccountID, KeyID: j.KeyID, JobID: j.JobID, Model: j.Model, Kind: Charge,
		Amount: -j.Quote, At: now}, auth.Period(now), 0)
	if errors.Is(err, ErrInsufficient) {
		return Charged{}, apierr.New(apierr.InsufficientCredits, "required", int64(j.Quote), "balance", a.Balance)
	}
	if err != nil {
		return Charged{}, err
	}
	if err := auth.CheckSpend(k.Ceiling, a.MonthlyAllowance, k.SpentIn(now)-int64(j.Quote), int64(j.Quote)); err != nil {
		return Charged{}, err
	}
	return Charged{Reserved: j.Quote, Balance: Credits(bal)}, nil
}

// ChargeFirst is a submit's charge made before its account is read: the debit and the key's
// spend move in one statement, which also reads the account (held until the transaction
// ends) and the key; on PostgreSQL that is one statement and one round trip fewer than OpenFor
// then ChargeFor. The charge is then judged in the order OpenFor, Decide and ChargeFor judge
// it: the caller's standing, then admit (the caller's own checks on the account, such as its
// in-flight limit), then the key's ceiling. The balance is judged by the debit's own guard.
//
// Any error leaves the charge written: the caller's transaction must roll back on it. A charge
// that cannot be judged this way answers ErrJudgeFirst: a balance that did not allow it (its
// refusal must come in its order, after the others), or an account that has passes, a
// pass-only rule or an allowance due (ChargesFirst, on the account as it now stands).
func (s *Service) ChargeFirst(ctx context.Context, tx Tx, key auth.KeyRecord, j Job, now time.Time, admit func(auth.Account) error) (auth.Account, Charged, error) {
	a, k, err := tx.LedgerChargeOpen(ctx, Entry{AccountID: j.AccountID, KeyID: key.ID, JobID: j.JobID, Model: j.Model, Kind: Charge,
		Amount: -j.Quote, At: now}, auth.Period(now))
	if errors.Is(err, ErrInsufficient) {
		return a, Charged{}, ErrJudgeFirst
	}
	if err != nil {
		return a, Charged{}, err
	}
	if err := auth.Standing(a, k, now, false); err != nil {
		return a, Charged{}, err
	}
	if !ChargesFirst(a, key.ID, j.Quote, false, now) {
		return a, Charged{}, ErrJudgeFirst
	}
	if err := admit(a); err != nil {
		return a, Charged{}, err
	}
	if err := auth.CheckSpend(k.Ceiling, a.MonthlyAllowance, k.SpentIn(now)-int64(j.Quote), int64(j.Quote)); err != nil {
		return a, Charged{}, err
	}
	return a, Charged{Reserved: j.Quote, Balance: Credits(a.Balance)}, nil
}

// Settlement closes a job's credits.
type Settlement struct {
	Job
	Reserved  Credits   // what Charge took
	Done      float64   // share of the quoted work done, 0..1 (0 refunds everything)
	StartedAt time.Time // the key's spend is given back in the month it was taken
}

// Closed is what Settle did.
type Closed struct {
	Charged Credits // what the job costs, at most what was reserved
	// Balance is the account's balance the refund left; nil when nothing was refunded (the
	// job's last movement was then its charge).
	Balance *Credits
}

// Settle keeps what the work done costs, never above what was reserved, refunds the rest and
// gives it back to the key's spend.
func (s *Service) Settle(ctx context.Context, tx Tx, st Settlement, now time.Time) (Closed, error) {
	charge, refund := Settle(int64(st.Reserved), st.Done)
	out := Closed{Charged: Credits(charge)}
	if refund > 0 {
		bal, err := tx.LedgerApply(ctx, Entry{AccountID: st.AccountID, KeyID: st.KeyID, JobID: st.JobID, Model: st.Model, Kind: Refund,
			Amount: Credits(refund), At: now}, math.MinInt64)
		if err != nil {
			return Closed{}, err
		}
		period := now
		if !st.StartedAt.IsZero() {
			period = st.StartedAt
		}
		if st.KeyID != auth.ConsoleKeyID {
			if _, err := tx.LedgerKeySpend(ctx, st.KeyID, auth.Period(period), -refund); err != nil {
				return Closed{}, err
			}
		}
		b := Credits(bal)
		out.Balance = &b
	}
	return out, nil
}

// CreateAccount opens an account; a non-zero opening balance is written as a grant entry. An
// empty AllowancePeriod is taken as the month of CreatedAt (the opening balance stands for it).
func (s *Service) CreateAccount(ctx context.Context, a auth.Account) error {
	if a.AllowancePeriod == "" {
		a.AllowancePeriod = auth.Period(a.CreatedAt)
	}
	opening := a.Balance
	a.Balance, a.PassCount = 0, 0
	return s.store.LedgerTx(ctx, func(tx Tx) error {
		if err := tx.LedgerInsertAccount(ctx, a); err != nil {
			return err
		}
		if opening != 0 {
			_, err := tx.LedgerApply(ctx, Entry{AccountID: a.ID, Kind: Grant, Amount: Credits(opening), At: a.CreatedAt}, math.MinInt64)
			return err
		}
		return nil
	})
}

// Account reads an account as it stands.
func (s *Service) Account(ctx context.Context, id string) (auth.Account, error) {
	return s.store.LedgerAccount(ctx, id)
}

// Sum is the sum of an account's ledger entries: the balance always equals it.
func (s *Service) Sum(ctx context.Context, accountID string) (Credits, error) {
	v, err := s.store.LedgerBalanceSum(ctx, accountID)
	return Credits(v), err
}

// Grant adds (or, negative, removes) credits as an operator and answers the new balance.
func (s *Service) Grant(ctx context.Context, accountID string, amount Credits) (Credits, error) {
	var bal int64
	err := s.store.LedgerTx(ctx, func(tx Tx) error {
		if _, err := tx.LedgerLockAccount(ctx, accountID); err != nil {
			return err
		}
		var err error
		bal, err = tx.LedgerApply(ctx, Entry{AccountID: accountID, Kind: Grant, Amount: amount, At: s.now()}, math.MinInt64)
		return err
	})
	return Credits(bal), err
}

// GrantPass gives an account a pass or a promotion.
func (s *Service) GrantPass(ctx context.Context, p Pass) error {
	if p.ID == "" || p.Name == "" {
		return fmt.Errorf("a pass needs an id and a name")
	}
	return s.store.LedgerTx(ctx, func(tx Tx) error {
		if _, err := tx.LedgerLockAccount(ctx, p.AccountID); err != nil {
			return err
		}
		return tx.LedgerInsertPass(ctx, p)
	})
}

// AccountChange is what the console changes on an account; nil fields stay as they are.
type AccountChange struct {
	Status   *auth.Status
	Plan     *auth.Plan
	PassOnly *bool
	// Allowance is the monthly allowance; with a new Plan and no Allowance, the plan's default.
	Allowance *Credits
}

// ChangeAccount applies c in one transaction and answers the account as it now stands.
// Banning an account revokes every live key it holds in the same transaction (spec 02:
// "account banned; its keys revoked"); a later change back to live does not bring them back.
func (s *Service) ChangeAccount(ctx context.Context, id string, c AccountChange) (auth.Account, error) {
	var out auth.Account
	err := s.store.LedgerTx(ctx, func(tx Tx) error {
		a, err := tx.LedgerLockAccount(ctx, id)
		if err != nil {
			return err
		}
		if c.Status != nil {
			a.Status = *c.Status
		}
		if c.PassOnly != nil {
			a.PassOnly = *c.PassOnly
		}
		if c.Plan != nil {
			a.Plan = *c.Plan
			a.MonthlyAllowance = auth.DefaultMonthlyAllowance(a.Plan)
		}
		if c.Allowance != nil {
			a.MonthlyAllowance = int64(*c.Allowance)
		}
		if err := tx.LedgerUpdateAccount(ctx, a); err != nil {
			return err
		}
		if c.Status != nil && *c.Status == auth.Banned {
			if _, err := tx.LedgerRevokeKeys(ctx, id, s.now()); err != nil {
				return err
			}
		}
		out = a
		return nil
	})
	return out, err
}

// GrantAllowances credits every account whose monthly allowance for now's period is due, at
// most limit of them, each in its own transaction, and answers how many it credited. The worker
// role runs it every minute; a job's charge credits its own account's at once (Open).
func (s *Service) GrantAllowances(ctx context.Context, now time.Time, limit int) (int, error) {
	ids, err := s.store.LedgerDueAllowances(ctx, auth.Period(now), limit)
	if err != nil {
		return 0, err
	}
	granted := 0
	for _, id := range ids {
		var credited bool
		err := s.store.LedgerTx(ctx, func(tx Tx) error {
			a, err := tx.LedgerLockAccount(ctx, id)
			if err != nil {
				return err
			}
			after, err := s.grantAllowanceDue(ctx, tx, a, now)
			credited = err == nil && after.AllowancePeriod != a.AllowancePeriod
			return err
		})
		if err != nil {
			return granted, err
		}
		if credited {
			granted++
		}
	}
	return granted, nil
}

// Passes lists the passes and promotions an account holds, for the operator pages.
func (s *Service) Passes(ctx context.Context, accountID string) ([]Pass, error) {
	var out []Pass
	err := s.store.LedgerTx(ctx, func(tx Tx) error {
		var err error
		out, err = tx.LedgerPasses(ctx, accountID)
		return err
	})
	return out, err
}
