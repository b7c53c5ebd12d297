package ledger

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"

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

// Standing refuses, as Judge does, a caller whose account or key no longer allows spending,
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

// Job is what the ledger knows of a job: who pays, for which model, and how much was quoted.
type Job struct {
	AccountID string
	KeyID     string
	JobID     string
	Model     string
	Quote     Credits
}

// Settlement closes a job's credits.
type Settlement struct {
	Job
	Reserved Credits // what Charge took
	Done     float64 // share of the quoted work done, 0..1 (0 refunds everything)
	// Exact is the unrounded price of the quoted work, which a partly done job is charged its
	// share of (Settle); nil charges the share of Reserved (a language model's settlement).
	Exact *big.Rat
	// Created is when the job was created: its charge, taken then or at its turn, is no older
	// (the charge's entry is looked for from there, less clockSkew).
	Created time.Time
}

// clockSkew is how far apart the clocks of two processes may be: a job created by one and
// charged at its turn by another may carry a charge stamped a little before its creation.
const clockSkew = time.Minute

// Closed is what Settle did.
type Closed struct {
	Charged Credits // what the job costs, at most what was reserved
	// Balance is the account's balance the refund left; nil when nothing was refunded (the
	// job's last movement was then its charge).
	Balance *Credits
}

// Settle keeps what the work done costs, never above what was reserved, refunds the rest and
// gives it back to the key's spend of the month its charge was taken in (the period recorded on
// the charge's entry), never of the month the job started or ended in: a job charged on
// November 30 and refunded on December 1 gives nothing back to December's spend, so the key's
// December ceiling stays whole.
func (s *Service) Settle(ctx context.Context, tx Tx, st Settlement, now time.Time) (Closed, error) {
	charge, refund := Settle(int64(st.Reserved), st.Done, st.Exact)
	out := Closed{Charged: Credits(charge)}
	if refund > 0 {
		bal, err := tx.LedgerApply(ctx, Entry{AccountID: st.AccountID, KeyID: st.KeyID, JobID: st.JobID, Model: st.Model, Kind: Refund,
			Amount: Credits(refund), At: now}, math.MinInt64)
		if err != nil {
			return Closed{}, err
		}
		if err := tx.LedgerRefundSpend(ctx, st.KeyID, st.JobID, st.Created.Add(-clockSkew), refund); err != nil {
			return Closed{}, err
		}
		b := Credits(bal)
		out.Balance = &b
	}
	return out, nil
}

// CreateAccount opens an account; a non-zero opening balance is written as a grant entry,
// at most MaxGrant (an *InputError refuses more, and nothing is written). An empty
// AllowancePeriod is taken as the month of CreatedAt (the opening balance stands for it).
func (s *Service) CreateAccount(ctx context.Context, a auth.Account) error {
	if a.Balance < 0 || a.Balance > MaxGrant {
		return &InputError{Reason: fmt.Sprintf("the opening balance is a whole number of credits from 0 to %d", int64(MaxGrant))}
	}
	if err := checkAllowance(a.MonthlyAllowance); err != nil {
		return err
	}
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

// MaxGrant bounds one operator grant or removal, and an opening balance: a slip of the
// keyboard cannot add a fortune, and no balance can leave the range of its integer.
const MaxGrant = 1_000_000_000

// InputError refuses what an operator typed (a grant, an opening balance, a monthly allowance,
// a pass); its message is written for the operator, and nothing was written.
type InputError struct{ Reason string }

func (e *InputError) Error() string { return e.Reason }

// CheckGrant is the one rule for an amount an operator moves: a whole number of credits other
// than zero, at most MaxGrant either way.
func CheckGrant(amount Credits) error {
	if amount == 0 || amount > MaxGrant || amount < -MaxGrant {
		return &InputError{Reason: fmt.Sprintf("the amount is a whole number of credits other than zero, at most %d either way", int64(MaxGrant))}
	}
	return nil
}

// checkAllowance is the rule for an account's monthly allowance: zero up to
// auth.MaxMonthlyAllowance.
func checkAllowance(n int64) error {
	if n < 0 || n > auth.MaxMonthlyAllowance {
		return &InputError{Reason: fmt.Sprintf("the monthly allowance is a whole number of credits from 0 to %d", int64(auth.MaxMonthlyAllowance))}
	}
	return nil
}

// maxBalance keeps every balance far inside its integer, whatever charges and refunds follow.
const maxBalance = math.MaxInt64 / 4

// Grant adds (or, negative, removes) credits as an operator and answers the new balance. An
// amount CheckGrant refuses, or one that would take the balance beyond ±maxBalance, is a
// *InputError and writes nothing.
func (s *Service) Grant(ctx context.Context, accountID string, amount Credits) (Credits, error) {
	if err := CheckGrant(amount); err != nil {
		return 0, err
	}
	var bal int64
	err := s.store.LedgerTx(ctx, func(tx Tx) error {
		a, err := tx.LedgerLockAccount(ctx, accountID)
		if err != nil {
			return err
		}
		if next := a.Balance + int64(amount); next > maxBalance || next < -maxBalance {
			return &InputError{Reason: fmt.Sprintf("the balance is %d credits and cannot take %d more", a.Balance, int64(amount))}
		}
		bal, err = tx.LedgerApply(ctx, Entry{AccountID: accountID, Kind: Grant, Amount: amount, At: s.now()}, math.MinInt64)
		return err
	})
	return Credits(bal), err
}

// MaxPassDays bounds a pass's lifetime.
const MaxPassDays = 3650

// checkPass is the rule for a pass an operator gives: a name of 1 to 100 characters, a largest
// covered quote of zero (any) or more, uses of 1 or more or -1 (unlimited), and an end, when it
// has one, after now and at most MaxPassDays ahead.
func checkPass(p Pass, now time.Time) error {
	switch {
	case strings.TrimSpace(p.Name) == "" || len(p.Name) > 100:
		return &InputError{Reason: "a pass needs a name of at most 100 characters"}
	case p.MaxCredits < 0:
		return &InputError{Reason: "the largest quote covered is a whole number of credits (0: any)"}
	case p.UsesLeft == 0 || p.UsesLeft < -1:
		return &InputError{Reason: "uses is a whole number of jobs, 1 or more (-1: unlimited)"}
	case !p.ExpiresAt.IsZero() && (!p.ExpiresAt.After(now) || p.ExpiresAt.After(now.AddDate(0, 0, MaxPassDays+1))):
		return &InputError{Reason: fmt.Sprintf("the lifetime is a number of days from 1 to %d (0: never ends)", MaxPassDays)}
	}
	return nil
}

// GrantPass gives an account a pass or a promotion; one checkPass refuses is an *InputError.
func (s *Service) GrantPass(ctx context.Context, p Pass) error {
	if p.ID == "" {
		return fmt.Errorf("a pass needs an id")
	}
	if err := checkPass(p, s.now()); err != nil {
		return err
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
		if c.Allowance != nil || c.Plan != nil {
			if err := checkAllowance(a.MonthlyAllowance); err != nil {
				return err
			}
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
