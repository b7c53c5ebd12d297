package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/ledger"
)

// memStore is an in-memory ledger store: one "transaction" copies the state and keeps the copy
// only when fn succeeds, as a database would.
type memStore struct{ st memState }

type memState struct {
	accounts map[string]auth.Account
	keys     map[string]auth.KeyRecord
	passes   []ledger.Pass
	entries  []ledger.Entry
}

func (s memState) clone() memState {
	c := memState{accounts: map[string]auth.Account{}, keys: map[string]auth.KeyRecord{}}
	for k, v := range s.accounts {
		c.accounts[k] = v
	}
	for k, v := range s.keys {
		c.keys[k] = v
	}
	c.passes = append(c.passes, s.passes...)
	c.entries = append(c.entries, s.entries...)
	return c
}

func newMem() *memStore {
	return &memStore{st: memState{accounts: map[string]auth.Account{}, keys: map[string]auth.KeyRecord{}}}
}

func (m *memStore) LedgerTx(ctx context.Context, fn func(ledger.Tx) error) error {
	tx := &memTx{st: m.st.clone()}
	if err := fn(tx); err != nil {
		return err
	}
	m.st = tx.st
	return nil
}

func (m *memStore) LedgerDueAllowances(ctx context.Context, period string, limit int) ([]string, error) {
	var out []string
	for id, a := range m.st.accounts {
		if a.MonthlyAllowance > 0 && a.Status != auth.Banned && a.AllowancePeriod < period {
			out = append(out, id)
		}
	}
	return out, nil
}

func (m *memStore) LedgerBalanceSum(ctx context.Context, id string) (int64, error) {
	var sum int64
	for _, e := range m.st.entries {
		if e.AccountID == id {
			sum += int64(e.Amount)
		}
	}
	return sum, nil
}

func (m *memStore) LedgerAccount(ctx context.Context, id string) (auth.Account, error) {
	a, ok := m.st.accounts[id]
	if !ok {
		return a, ledger.ErrNotFound
	}
	return a, nil
}

func (m *memStore) LedgerStanding(ctx context.Context, accountID, keyID string) (auth.Account, auth.KeyRecord, error) {
	return accountKey(m.st, accountID, keyID)
}

func accountKey(st memState, accountID, keyID string) (auth.Account, auth.KeyRecord, error) {
	a, ok := st.accounts[accountID]
	k, kok := st.keys[keyID]
	if !ok || !kok || k.AccountID != accountID {
		return auth.Account{}, auth.KeyRecord{}, ledger.ErrNotFound
	}
	return a, k, nil
}

type memTx struct {
	st   memState
	held [][]ledger.AccountKey // what LedgerHold was asked, call by call
}

func (tx *memTx) LedgerLockAccount(ctx context.Context, id string) (auth.Account, error) {
	a, ok := tx.st.accounts[id]
	if !ok {
		return a, ledger.ErrNotFound
	}
	return a, nil
}

func (tx *memTx) LedgerApply(ctx context.Context, e ledger.Entry, floor int64) (int64, error) {
	a, ok := tx.st.accounts[e.AccountID]
	if !ok {
		return 0, ledger.ErrNotFound
	}
	if a.Balance+int64(e.Amount) < floor {
		return 0, ledger.ErrInsufficient
	}
	a.Balance += int64(e.Amount)
	tx.st.accounts[a.ID] = a
	tx.st.entries = append(tx.st.entries, e)
	// A charge raises its key's spend in its period, as the stores' statement does.
	if k, ok := tx.st.keys[e.KeyID]; ok && e.Kind == ledger.Charge {
		k.Spent, k.SpentPeriod = k.SpentIn(e.At)-int64(e.Amount), auth.Period(e.At)
		tx.st.keys[e.KeyID] = k
	}
	return a.Balance, nil
}

// LedgerRefundSpend lowers the key's spend when it is of the period of the job's charge.
func (tx *memTx) LedgerRefundSpend(ctx context.Context, keyID, jobID string, since time.Time, refund int64) error {
	k, ok := tx.st.keys[keyID]
	if !ok {
		return nil
	}
	for _, e := range tx.st.entries {
		if e.KeyID == keyID && e.JobID == jobID && e.Kind == ledger.Charge && !e.At.Before(since) && auth.Period(e.At) == k.SpentPeriod {
			k.Spent -= refund
			tx.st.keys[keyID] = k
			return nil
		}
	}
	return nil
}

func (tx *memTx) LedgerHold(ctx context.Context, pairs []ledger.AccountKey) (ledger.HeldRows, error) {
	tx.held = append(tx.held, pairs)
	var rows ledger.HeldRows
	for _, p := range pairs {
		if a, k, err := accountKey(tx.st, p.AccountID, p.KeyID); err == nil {
			rows.Accounts, rows.Keys = append(rows.Accounts, a), append(rows.Keys, k)
		}
	}
	return rows, nil
}

func (tx *memTx) LedgerChargeAll(ctx context.Context, cs []ledger.Taken) error {
	for _, c := range cs {
		bal, err := tx.LedgerApply(ctx, c.Entry, math.MinInt64)
		if err != nil {
			return err
		}
		if bal != c.Balance {
			return fmt.Errorf("charge of %s leaves %d, taken as leaving %d", c.JobID, bal, c.Balance)
		}
	}
	return nil
}

func (tx *memTx) LedgerPasses(ctx context.Context, accountID string) ([]ledger.Pass, error) {
	var out []ledger.Pass
	for _, p := range tx.st.passes {
		if p.AccountID == accountID {
			out = append(out, p)
		}
	}
	return out, nil
}

func (tx *memTx) LedgerUsePass(ctx context.Context, passID string) error {
	for i, p := range tx.st.passes {
		if p.ID == passID && p.UsesLeft > 0 {
			tx.st.passes[i].UsesLeft--
		}
	}
	return nil
}

func (tx *memTx) LedgerInsertPass(ctx context.Context, p ledger.Pass) error {
	tx.st.passes = append(tx.st.passes, p)
	a := tx.st.accounts[p.AccountID]
	a.PassCount++
	tx.st.accounts[p.AccountID] = a
	return nil
}

func (tx *memTx) LedgerClaimAllowance(ctx context.Context, id, period string) (bool, error) {
	a := tx.st.accounts[id]
	if a.AllowancePeriod >= period {
		return false, nil
	}
	a.AllowancePeriod = period
	tx.st.accounts[id] = a
	return true, nil
}

func (tx *memTx) LedgerInsertAccount(ctx context.Context, a auth.Account) error {
	tx.st.accounts[a.ID] = a
	return nil
}

func (tx *memTx) LedgerUpdateAccount(ctx context.Context, a auth.Account) error {
	cur, ok := tx.st.accounts[a.ID]
	if !ok {
		return ledger.ErrNotFound
	}
	cur.Plan, cur.MonthlyAllowance, cur.Status, cur.PassOnly = a.Plan, a.MonthlyAllowance, a.Status, a.PassOnly
	tx.st.accounts[a.ID] = cur
	return nil
}

func (tx *memTx) LedgerRevokeKeys(ctx context.Context, id string, at time.Time) (int, error) {
	n := 0
	for kid, k := range tx.st.keys {
		if k.AccountID == id && k.RevokedAt == nil && at.Before(k.ExpiresAt) {
			k.RevokedAt = &at
			tx.st.keys[kid] = k
			n++
		}
	}
	return n, nil
}

var now = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func setup(t *testing.T, balance int64, ceiling auth.Ceiling) (*memStore, *ledger.Service) {
	t.Helper()
	m := newMem()
	l := ledger.New(m, func() time.Time { return now })
	if err := l.CreateAccount(context.Background(), auth.Account{ID: "acct", Plan: auth.Pro, Status: auth.Live, Balance: balance,
		MonthlyAllowance: 2000, CreatedAt: now}); err != nil {
		t.Fatal(err)
	}
	m.st.keys["key"] = auth.KeyRecord{ID: "key", AccountID: "acct", ExpiresAt: now.AddDate(0, 3, 0), Ceiling: ceiling, SpentPeriod: auth.Period(now)}
	return m, l
}

func code(err error) apierr.Code {
	if e, ok := apierr.As(err); ok {
		return e.Code
	}
	return ""
}

// JOB-05 / QST-09: settlement keeps at most the reservation and gives the rest back to the
// balance and the key's spend.
func TestSettleRefundsTheRest(t *testing.T) {
	ctx := context.Background()
	m, l := setup(t, 100, auth.Ceiling{Mode: auth.FollowPlan})
	err := m.LedgerTx(ctx, func(tx ledger.Tx) error {
		j := ledger.Job{AccountID: "acct", KeyID: "key", JobID: "photo_1", Model: "m", Quote: 40}
		if _, err := chargeOne(ctx, tx, l, ledger.Request{Job: j, InFlightLimit: -1}); err != nil {
			return err
		}
		closed, err := l.Settle(ctx, tx, ledger.Settlement{Job: j, Reserved: 40, Done: 0.25, Created: now}, now)
		if closed.Charged != 10 || closed.Balance == nil || *closed.Balance != 90 {
			t.Errorf("closed %+v, want 10 charged and a balance of 90", closed)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if m.st.accounts["acct"].Balance != 90 || m.st.keys["key"].Spent != 10 {
		t.Fatalf("balance %d spent %d", m.st.accounts["acct"].Balance, m.st.keys["key"].Spent)
	}
}

// CEIL-01: a refund comes off the key's spend of the month its charge was taken in, found from
// the job's creation even when the process that charged it at its turn has a clock a little
// behind the one that created it; a charge of another month is left alone.
func TestSettleGivesBackToTheMonthOfTheCharge(t *testing.T) {
	ctx := context.Background()
	m, l := setup(t, 100, auth.Ceiling{Mode: auth.FollowPlan})
	tx := func(fn func(tx ledger.Tx) error) {
		t.Helper()
		if err := m.LedgerTx(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	job := func(id string) ledger.Job {
		return ledger.Job{AccountID: "acct", KeyID: "key", JobID: id, Model: "m", Quote: 10}
	}
	charge := func(id string, at time.Time) {
		t.Helper()
		tx(func(tx ledger.Tx) error {
			_, _, err := l.Charge(ctx, tx, ledger.Request{Job: job(id), InFlightLimit: -1}, at)
			return err
		})
	}
	refund := func(id string, created, at time.Time) {
		t.Helper()
		tx(func(tx ledger.Tx) error {
			_, err := l.Settle(ctx, tx, ledger.Settlement{Job: job(id), Reserved: 10, Created: created}, at)
			return err
		})
	}
	spent := func(at time.Time, want int64) {
		t.Helper()
		if k := m.st.keys["key"]; k.SpentIn(at) != want {
			t.Fatalf("spend in %s: %d, want %d", auth.Period(at), k.SpentIn(at), want)
		}
	}
	nov := time.Date(2026, 11, 30, 23, 59, 0, 0, time.UTC)
	dec := nov.Add(2 * time.Minute)
	charge("photo_skew", nov)
	refund("photo_skew", nov.Add(30*time.Second), nov) // created by a clock 30 s ahead of the charger's
	spent(nov, 0)
	charge("photo_nov", nov)
	charge("photo_dec", dec)
	refund("photo_nov", nov, dec)
	spent(dec, 10)
}

// ERR-26: a ban revokes every live key in the same transaction; live again brings none back.
func TestBanRevokesKeys(t *testing.T) {
	ctx := context.Background()
	m, l := setup(t, 0, auth.Ceiling{Mode: auth.FollowPlan})
	banned, live := auth.Banned, auth.Live
	if _, err := l.ChangeAccount(ctx, "acct", ledger.AccountChange{Status: &banned}); err != nil {
		t.Fatal(err)
	}
	if m.st.keys["key"].RevokedAt == nil {
		t.Fatal("the ban left the key live")
	}
	a, err := l.ChangeAccount(ctx, "acct", ledger.AccountChange{Status: &live})
	if err != nil || a.Status != auth.Live || m.st.keys["key"].RevokedAt == nil {
		t.Fatalf("live again: %+v %v, key %+v", a, err, m.st.keys["key"])
	}
	if _, err := l.ChangeAccount(ctx, "nope", ledger.AccountChange{Status: &live}); !errors.Is(err, ledger.ErrNotFound) {
		t.Fatalf("missing account: %v", err)
	}
	// An account whose allowance is past today's bound (set before it was one) is still banned:
	// the allowance is checked only when a change sets it.
	a = m.st.accounts["acct"]
	a.MonthlyAllowance = auth.MaxMonthlyAllowance + 1
	m.st.accounts["acct"] = a
	if _, err := l.ChangeAccount(ctx, "acct", ledger.AccountChange{Status: &banned}); err != nil {
		t.Fatalf("banning an account with a large allowance: %v", err)
	}
	big := ledger.Credits(auth.MaxMonthlyAllowance + 1)
	var refused *ledger.InputError
	if _, err := l.ChangeAccount(ctx, "acct", ledger.AccountChange{Allowance: &big}); !errors.As(err, &refused) {
		t.Fatalf("setting an allowance past the bound: %v", err)
	}
}

// ACC-04: the allowance is credited once per month, by the sweep or by the first charge.
func TestAllowanceOncePerMonth(t *testing.T) {
	ctx := context.Background()
	m, l := setup(t, 10, auth.Ceiling{Mode: auth.FollowPlan})
	dec := now.AddDate(0, 1, 0)
	for range 2 {
		if _, err := l.GrantAllowances(ctx, dec, 10); err != nil {
			t.Fatal(err)
		}
	}
	err := m.LedgerTx(ctx, func(tx ledger.Tx) error {
		h, err := l.Hold(ctx, tx, []ledger.AccountKey{{AccountID: "acct", KeyID: "key"}}, dec)
		if err != nil {
			return err
		}
		return h.Write(ctx, tx)
	})
	if err != nil || m.st.accounts["acct"].Balance != 2010 {
		t.Fatalf("balance %d (%v), want 2010", m.st.accounts["acct"].Balance, err)
	}
	if bal, err := l.Grant(ctx, "acct", -3000); err != nil || bal != -990 {
		t.Fatalf("an operator may take the balance below zero: %d %v", bal, err)
	}
}
