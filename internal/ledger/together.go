package ledger

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
)

// Charges together. Submits that wait at one moment are charged in one transaction: Hold locks
// and reads their accounts and keys in one statement, Held.Charge judges each charge in memory in
// the order OpenFor, Decide and ChargeFor judge it, and Held.Write writes every charge taken in
// one more statement. On a store over a network (PostgreSQL) a batch of submits then costs the
// statements and the COMMIT that one submit costs.

// ErrJudgeFirst answers a charge that ChargeFirst or Held.Charge does not judge: the caller
// takes the path of OpenFor, Decide and ChargeFor on its own, which answers in the order of
// checks for passes, pass-only rules and allowances.
var ErrJudgeFirst = errors.New("ledger: the charge is judged on its own")

// ChargesFirst reports whether a submit's charge of quote may be made first (ChargeFirst) or
// with others (Hold), as far as the account a (as the caller last saw it: the gate's cache)
// tells: a charge in credits through an API key, on an account without passes, pass-only rule
// or allowance due.
func ChargesFirst(a auth.Account, keyID string, quote Credits, coveredOnly bool, now time.Time) bool {
	return quote > 0 && !coveredOnly && keyID != auth.ConsoleKeyID && a.PassCount == 0 && !a.PassOnly && !a.AllowanceDue(now)
}

// AccountKey names an API key of an account.
type AccountKey struct{ AccountID, KeyID string }

// Taken is a charge Held.Charge took: its entry and the balance it leaves.
type Taken struct {
	Entry
	Balance int64
}

// Held is the accounts and keys of charges made together, held by their transaction until it
// ends, with the charges taken so far applied to them in memory.
type Held struct {
	now      time.Time
	accounts map[string]*auth.Account
	keys     map[AccountKey]*auth.KeyRecord
	taken    []Taken
}

// Hold locks the accounts of pairs in tx (every account once, in id order: transactions that
// hold several never wait on each other in a cycle) and reads them with the keys, as they stand.
// now is the transaction's time: the charges' and the spends' period.
func (s *Service) Hold(ctx context.Context, tx Tx, pairs []AccountKey, now time.Time) (*Held, error) {
	want := slices.Clone(pairs)
	slices.SortFunc(want, func(a, b AccountKey) int {
		return cmp.Or(cmp.Compare(a.AccountID, b.AccountID), cmp.Compare(a.KeyID, b.KeyID))
	})
	want = slices.Compact(want)
	as, ks, err := tx.LedgerHoldKeys(ctx, want)
	if err != nil {
		return nil, err
	}
	h := &Held{now: now, accounts: map[string]*auth.Account{}, keys: map[AccountKey]*auth.KeyRecord{}}
	for i := range as {
		if _, ok := h.accounts[as[i].ID]; !ok {
			h.accounts[as[i].ID] = &as[i]
		}
		h.keys[AccountKey{AccountID: ks[i].AccountID, KeyID: ks[i].ID}] = &ks[i]
	}
	return h, nil
}

// Charge judges a charge of j.Quote through the key j.KeyID, on the account and key as they
// stand after the charges taken before it, in the order of OpenFor, Decide and ChargeFor: the
// caller's standing; then admit (the caller's own checks on the account, such as its in-flight
// limit); then the key's ceiling and the balance; then start (the caller's last check, such as
// a runner's slot). When all allow it the charge is taken, in memory: Write writes it.
//
// A refusal takes nothing. ErrJudgeFirst answers a charge that is not judged here: a key that
// is not the account's, or an account that now has passes, a pass-only rule or an allowance
// due (ChargesFirst).
func (h *Held) Charge(j Job, admit func(auth.Account) error, start func() error) (Charged, error) {
	a, ok := h.accounts[j.AccountID]
	k, kok := h.keys[AccountKey{AccountID: j.AccountID, KeyID: j.KeyID}]
	if !ok || !kok {
		return Charged{}, ErrJudgeFirst
	}
	if err := auth.Standing(*a, *k, h.now, false); err != nil {
		return Charged{}, err
	}
	if !ChargesFirst(*a, k.ID, j.Quote, false, h.now) {
		return Charged{}, ErrJudgeFirst
	}
	if err := admit(*a); err != nil {
		return Charged{}, err
	}
	if err := auth.CheckSpend(k.Ceiling, a.MonthlyAllowance, k.SpentIn(h.now), int64(j.Quote)); err != nil {
		return Charged{}, err
	}
	if a.Balance < int64(j.Quote) {
		return Charged{}, apierr.New(apierr.InsufficientCredits, "required", int64(j.Quote), "balance", a.Balance)
	}
	if err := start(); err != nil {
		return Charged{}, err
	}
	period := auth.Period(h.now)
	k.Spent, k.SpentPeriod = k.SpentIn(h.now)+int64(j.Quote), period
	a.Balance -= int64(j.Quote)
	h.taken = append(h.taken, Taken{Entry: Entry{AccountID: j.AccountID, KeyID: j.KeyID, JobID: j.JobID, Model: j.Model, Kind: Charge,
		Amount: -j.Quote, At: h.now}, Balance: a.Balance})
	return Charged{Reserved: j.Quote, Balance: Credits(a.Balance)}, nil
}

// Write writes the charges taken, in one statement where the store can. The transaction holds
// every account they debit, so each balance is as Charge judged it.
func (h *Held) Write(ctx context.Context, tx Tx) error {
	if len(h.taken) == 0 {
		return nil
	}
	return tx.LedgerChargeAll(ctx, h.taken)
}
