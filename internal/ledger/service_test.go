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
	held [][]ledger.AccountKey // what LedgerHoldKeys was asked, call by call
}

func (tx *memTx) LedgerLockAccountKey(ctx context.Context, accountID, keyID string) (auth.Account, auth.KeyRecord, error) {
	return accountKey(tx.st, accountID, keyID)
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
	return a.Balance, nil
}

func (tx *memTx) LedgerKeySpend(ctx context.Context, keyID, period string, delta int64) (auth.KeyRecord, error) {
	k, ok := tx.st.keys[keyID]
	if !ok {
		return k, ledger.ErrNotFound
	}
	switch {
	case k.SpentPeriod == period:
		k.Spent += delta
	case delta > 0:
		k.SpentPeriod, k.Spent = period, delta
	default:
		return auth.KeyRecord{}, nil
	}
	tx.st.keys[keyID] = k
	return k, nil
}

func (tx *memTx) LedgerChargeKey(ctx context.Context, e ledger.Entry, period string, floor int64) (int64, auth.KeyRecord, error) {
	bal, err := tx.LedgerApply(ctx, e, floor)
	if err != nil {
		return 0, auth.KeyRecord{}, err
	}
	k, err := tx.LedgerKeySpend(ctx, e.KeyID, period, -int64(e.Amount))
	return bal, k, err
}

func (tx *memTx) LedgerChargeOpen(ctx context.Context, e ledger.Entry, period string) (auth.Account, auth.KeyRecord, error) {
	a, _, err := accountKey(tx.st, e.AccountID, e.KeyID)
	if err != nil || a.Balance+int64(e.Amount) < 0 {
		return auth.Account{}, auth.KeyRecord{}, ledger.ErrInsufficient
	}
	bal, k, err := tx.LedgerChargeKey(ctx, e, period, 0)
	a.Balance = bal
	return a, k, err
}

func (tx *memTx) LedgerHoldKeys(ctx context.Context, pairs []ledger.AccountKey) ([]auth.Account, []auth.KeyRecord, error) {
	tx.held = append(tx.held, pairs)
	var as []auth.Account
	var ks []auth.KeyRecord
	for _, p := range pairs {
		if a, k, err := accountKey(tx.st, p.AccountID, p.KeyID); err == nil {
			as, ks = append(as, a), append(ks, k)
		}
	}
	return as, ks, nil
}

func (tx *memTx) LedgerChargeAll(ctx context.Context, cs []ledger.Taken) error {
	for _, c := range cs {
		bal, _, err := tx.LedgerChargeKey(ctx, c.Entry, auth.Period(c.At), math.MinInt64)
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

// JOB-05 / CEIL: a submit's charge (ChargeFor) takes the quote and adds it to the key's spend
// together, judges the ceiling on the spend it moved, and a refusal, which the submit's
// transaction ends on, leaves neither moved.
func TestChargeForMovesDebitAndSpendTogether(t *testing.T) {
	ctx := context.Background()
	m, l := setup(t, 100, auth.Ceiling{Mode: auth.Fixed, Amount: 50})
	charge := func(q ledger.Credits) (ledger.Charged, error) {
		var c ledger.Charged
		err := m.LedgerTx(ctx, func(tx ledger.Tx) error {
			a, _, err := l.OpenFor(ctx, tx, "acct", auth.KeyRecord{ID: "key"}, now)
			if err != nil {
				return err
			}
			c, err = l.ChargeFor(ctx, tx, a, ledger.Job{AccountID: "acct", KeyID: "key", JobID: "photo_1", Model: "m", Quote: q}, now)
			return err // a refused submit commits nothing
		})
		return c, err
	}
	c, err := charge(30)
	if err != nil || c.Reserved != 30 || c.Balance != 70 || m.st.keys["key"].Spent != 30 {
		t.Fatalf("charge 30: %+v %v spent %d", c, err, m.st.keys["key"].Spent)
	}
	if _, err := charge(25); code(err) != apierr.KeyCreditCeiling {
		t.Fatalf("past the ceiling: %v", err)
	}
	if _, err := charge(71); code(err) != apierr.InsufficientCredits {
		t.Fatalf("beyond the balance: %v", err)
	}
	if m.st.keys["key"].Spent != 30 || m.st.accounts["acct"].Balance != 70 {
		t.Fatalf("a refusal moved spend %d / balance %d", m.st.keys["key"].Spent, m.st.accounts["acct"].Balance)
	}
}

// JOB-05 / CEIL: a charge takes the quote, adds it to the key's spend, and a refusal (ceiling or
// balance) leaves neither the balance nor the key's spend moved, even in a transaction that
// then commits (a queued job failed at its turn).
func TestChargeChecksCeilingAndBalanceAndLeavesNothingOnRefusal(t *testing.T) {
	ctx := context.Background()
	m, l := setup(t, 100, auth.Ceiling{Mode: auth.Fixed, Amount: 50})
	charge := func(q ledger.Credits) (ledger.Charged, error) {
		var c ledger.Charged
		var chErr error
		err := m.LedgerTx(ctx, func(tx ledger.Tx) error {
			a, err := l.Open(ctx, tx, "acct", now)
			if err != nil {
				return err
			}
			c, chErr = l.Charge(ctx, tx, a, ledger.Job{AccountID: "acct", KeyID: "key", JobID: "photo_1", Model: "m", Quote: q}, now)
			return nil // commit whatever happened, as the queued path does after a refusal
		})
		if err != nil {
			t.Fatal(err)
		}
		return c, chErr
	}
	c, err := charge(30)
	if err != nil || c.Reserved != 30 || c.Balance != 70 || m.st.keys["key"].Spent != 30 {
		t.Fatalf("charge 30: %+v %v spent %d", c, err, m.st.keys["key"].Spent)
	}
	if _, err := charge(25); code(err) != apierr.KeyCreditCeiling {
		t.Fatalf("past the ceiling: %v", err)
	}
	if m.st.keys["key"].Spent != 30 || m.st.accounts["acct"].Balance != 70 {
		t.Fatalf("a ceiling refusal moved spend %d / balance %d", m.st.keys["key"].Spent, m.st.accounts["acct"].Balance)
	}
	m.st.keys["key"] = auth.KeyRecord{ID: "key", AccountID: "acct", ExpiresAt: now.AddDate(0, 1, 0), Ceiling: auth.Ceiling{Mode: auth.Fixed, Amount: 1000},
		SpentPeriod: auth.Period(now), Spent: 30}
	if _, err := charge(71); code(err) != apierr.InsufficientCredits {
		t.Fatalf("beyond the balance: %v", err)
	}
	if m.st.keys["key"].Spent != 30 || m.st.accounts["acct"].Balance != 70 {
		t.Fatalf("a balance refusal moved spend %d / balance %d", m.st.keys["key"].Spent, m.st.accounts["acct"].Balance)
	}
	if sum, _ := l.Sum(ctx, "acct"); int64(sum) != m.st.accounts["acct"].Balance {
		t.Fatalf("sum %d != balance %d", sum, m.st.accounts["acct"].Balance)
	}
}

// JOB-05 / QST-09: settlement keeps at most the reservation and gives the rest back to the
// balance and the key's spend.
func TestSettleRefundsTheRest(t *testing.T) {
	ctx := context.Background()
	m, l := setup(t, 100, auth.Ceiling{Mode: auth.FollowPlan})
	err := m.LedgerTx(ctx, func(tx ledger.Tx) error {
		a, err := l.Open(ctx, tx, "acct", now)
		if err != nil {
			return err
		}
		j := ledger.Job{AccountID: "acct", KeyID: "key", JobID: "photo_1", Model: "m", Quote: 40}
		if _, err := l.Charge(ctx, tx, a, j, now); err != nil {
			return err
		}
		closed, err := l.Settle(ctx, tx, ledger.Settlement{Job: j, Reserved: 40, Done: 0.25, StartedAt: now}, now)
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

// A pass pays instead of credits; a pass-only account without a covering pass is refused;
// covered_only refuses a job no pass covers; passes are read only when the account has some.
func TestDecideCoverage(t *testing.T) {
	ctx := context.Background()
	m, l := setup(t, 0, auth.Ceiling{Mode: auth.FollowPlan})
	key := m.st.keys["key"]
	decide := func(model string, coveredOnly bool) (*ledger.Coverage, error) {
		var cov *ledger.Coverage
		err := m.LedgerTx(ctx, func(tx ledger.Tx) error {
			a, err := l.Open(ctx, tx, "acct", now)
			if err != nil {
				return err
			}
			cov, err = l.Decide(ctx, tx, a, key, model, 5, coveredOnly, now)
			return err
		})
		return cov, err
	}
	if _, err := decide("image", false); code(err) != apierr.InsufficientCredits {
		t.Fatalf("no pass, no credits: %v", err)
	}
	if _, err := decide("image", true); code(err) != apierr.NotCovered {
		t.Fatalf("covered_only without a pass: %v", err)
	}
	if err := l.GrantPass(ctx, ledger.Pass{ID: "p1", AccountID: "acct", Name: "studio", Models: []string{"image"}, UsesLeft: 1}); err != nil {
		t.Fatal(err)
	}
	if cov, err := decide("image", true); err != nil || !cov.Covered() || cov.PassID != "p1" {
		t.Fatalf("pass covers: %+v %v", cov, err)
	}
	pass := true
	if _, err := l.ChangeAccount(ctx, "acct", ledger.AccountChange{PassOnly: &pass}); err != nil {
		t.Fatal(err)
	}
	if _, err := decide("music", false); code(err) != apierr.ModelNotInPlan {
		t.Fatalf("pass-only, model outside the pass: %v", err)
	}
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
		_, err := l.Open(ctx, tx, "acct", dec)
		return err
	})
	if err != nil || m.st.accounts["acct"].Balance != 2010 {
		t.Fatalf("balance %d (%v), want 2010", m.st.accounts["acct"].Balance, err)
	}
	if bal, err := l.Grant(ctx, "acct", -3000); err != nil || bal != -990 {
		t.Fatalf("an operator may take the balance below zero: %d %v", bal, err)
	}
}

// JOB-05 / CEIL / ORD: a submit's charge made first (ChargeFirst) moves the debit and the
// spend as ChargeFor does, and judges after it in the order of checks: standing, then the
// caller's own admission (the in-flight limit), then the key's ceiling. A balance that does
// not allow the charge, an account with passes or with an allowance due are not judged here
// (ErrJudgeFirst), and nothing moved for them.
func TestChargeFirstJudgesInTheOrderOfChecks(t *testing.T) {
	ctx := context.Background()
	m, l := setup(t, 100, auth.Ceiling{Mode: auth.Fixed, Amount: 50})
	acct := m.st.accounts["acct"]
	acct.AllowancePeriod = auth.Period(now)
	m.st.accounts["acct"] = acct
	full := errors.New("the plan's in-flight limit")
	charge := func(q ledger.Credits, admit error) (auth.Account, ledger.Charged, error) {
		var a auth.Account
		var c ledger.Charged
		err := m.LedgerTx(ctx, func(tx ledger.Tx) (err error) {
			a, c, err = l.ChargeFirst(ctx, tx, auth.KeyRecord{ID: "key"}, ledger.Job{AccountID: "acct", KeyID: "key", JobID: "photo_1", Model: "m", Quote: q}, now,
				func(auth.Account) error { return admit })
			return err // any error rolls the submit back
		})
		return a, c, err
	}
	if !ledger.ChargesFirst(m.st.accounts["acct"], "key", 30, false, now) {
		t.Fatal("a plain account's charge is not made first")
	}
	a, c, err := charge(30, nil)
	if err != nil || c.Reserved != 30 || c.Balance != 70 || a.Balance != 70 || m.st.keys["key"].Spent != 30 || m.st.accounts["acct"].Balance != 70 {
		t.Fatalf("charge 30: %+v %+v %v spent %d", a, c, err, m.st.keys["key"].Spent)
	}
	// Past the ceiling and past the in-flight limit: the limit is judged first.
	if _, _, err := charge(25, full); err != full {
		t.Fatalf("in-flight limit and ceiling: %v", err)
	}
	if _, _, err := charge(25, nil); code(err) != apierr.KeyCreditCeiling {
		t.Fatalf("past the ceiling: %v", err)
	}
	// A key revoked: standing comes before everything else.
	k := m.st.keys["key"]
	revoked := now.Add(-time.Minute)
	k.RevokedAt = &revoked
	m.st.keys["key"] = k
	if _, _, err := charge(10, full); code(err) != apierr.KeyRevoked {
		t.Fatalf("revoked key: %v", err)
	}
	k.RevokedAt = nil
	m.st.keys["key"] = k
	// Beyond the balance: judged on the usual path, where the ceiling comes first.
	if _, _, err := charge(71, nil); !errors.Is(err, ledger.ErrJudgeFirst) {
		t.Fatalf("beyond the balance: %v", err)
	}
	// Passes and an allowance due are the usual path's to judge.
	acct = m.st.accounts["acct"]
	acct.PassCount = 1
	m.st.accounts["acct"] = acct
	if _, _, err := charge(5, nil); !errors.Is(err, ledger.ErrJudgeFirst) {
		t.Fatalf("an account with passes: %v", err)
	}
	acct.PassCount, acct.AllowancePeriod = 0, "2000-01"
	m.st.accounts["acct"] = acct
	if _, _, err := charge(5, nil); !errors.Is(err, ledger.ErrJudgeFirst) {
		t.Fatalf("an allowance due: %v", err)
	}
	if m.st.keys["key"].Spent != 30 || m.st.accounts["acct"].Balance != 70 || len(m.st.entries) != 2 {
		t.Fatalf("a refusal moved something: spend %d, balance %d, %d entries", m.st.keys["key"].Spent, m.st.accounts["acct"].Balance, len(m.st.entries))
	}
}

// JOB-05 / CEIL / ORD: charges made together (Hold, Held.Charge, Held.Write) are judged one by
// one in the order of checks, each on the account and key as the charges before it left them:
// standing, then the caller's admission (the in-flight limit), then the key's ceiling, then the
// balance, then the caller's start (a runner's slot). A refusal takes nothing; an account with
// passes or an allowance due, or a key of another account, is not judged here (ErrJudgeFirst).
// The accounts are held once each, in id order.
func TestChargesTogetherJudgeInTheOrderOfChecks(t *testing.T) {
	ctx := context.Background()
	m, l := setup(t, 100, auth.Ceiling{Mode: auth.Fixed, Amount: 50})
	acct := m.st.accounts["acct"]
	acct.AllowancePeriod = auth.Period(now)
	m.st.accounts["acct"] = acct
	m.st.accounts["acct0"] = auth.Account{ID: "acct0", Plan: auth.Pro, Status: auth.Live, Balance: 10, AllowancePeriod: auth.Period(now), CreatedAt: now}
	m.st.keys["key0"] = auth.KeyRecord{ID: "key0", AccountID: "acct0", ExpiresAt: now.AddDate(0, 3, 0)}
	m.st.accounts["acctP"] = auth.Account{ID: "acctP", Plan: auth.Pro, Status: auth.Live, Balance: 10, PassCount: 1, AllowancePeriod: auth.Period(now), CreatedAt: now}
	m.st.keys["keyP"] = auth.KeyRecord{ID: "keyP", AccountID: "acctP", ExpiresAt: now.AddDate(0, 3, 0)}
	full := errors.New("the plan's in-flight limit")
	busy := errors.New("no runner free")
	var tx *memTx
	err := m.LedgerTx(ctx, func(ltx ledger.Tx) error {
		tx = ltx.(*memTx)
		h, err := l.Hold(ctx, tx, []ledger.AccountKey{{"acctP", "keyP"}, {"acct", "key"}, {"acct0", "key0"}, {"acct", "key"}, {"acct", "key0"}}, now)
		if err != nil {
			return err
		}
		charge := func(account, key string, q ledger.Credits, admit, start error) (ledger.Charged, error) {
			return h.Charge(ledger.Job{AccountID: account, KeyID: key, JobID: "photo_" + account, Model: "m", Quote: q},
				func(auth.Account) error { return admit }, func() error { return start })
		}
		if c, err := charge("acct", "key", 30, nil, nil); err != nil || c.Reserved != 30 || c.Balance != 70 {
			t.Fatalf("charge 30: %+v %v", c, err)
		}
		// Past the ceiling (30 spent by the charge before) and past the in-flight limit: the
		// limit is judged first, then the ceiling, before the caller's start.
		if _, err := charge("acct", "key", 25, full, busy); err != full {
			t.Fatalf("in-flight limit and ceiling: %v", err)
		}
		if _, err := charge("acct", "key", 25, nil, busy); code(err) != apierr.KeyCreditCeiling {
			t.Fatalf("past the ceiling: %v", err)
		}
		if _, err := charge("acct0", "key0", 11, nil, busy); code(err) != apierr.InsufficientCredits {
			t.Fatalf("beyond the balance: %v", err)
		}
		if _, err := charge("acct", "key", 15, nil, busy); err != busy {
			t.Fatalf("no runner free: %v", err)
		}
		if c, err := charge("acct", "key", 15, nil, nil); err != nil || c.Balance != 55 {
			t.Fatalf("charge 15: %+v %v", c, err)
		}
		if _, err := charge("acctP", "keyP", 5, nil, nil); !errors.Is(err, ledger.ErrJudgeFirst) {
			t.Fatalf("an account with passes: %v", err)
		}
		if _, err := charge("acct", "key0", 5, nil, nil); !errors.Is(err, ledger.ErrJudgeFirst) {
			t.Fatalf("another account's key: %v", err)
		}
		return h.Write(ctx, tx)
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []ledger.AccountKey{{"acct", "key"}, {"acct", "key0"}, {"acct0", "key0"}, {"acctP", "keyP"}}
	if len(tx.held) != 1 || fmt.Sprint(tx.held[0]) != fmt.Sprint(want) {
		t.Fatalf("held %v: want one read of %v", tx.held, want)
	}
	if k, a := m.st.keys["key"], m.st.accounts["acct"]; k.Spent != 45 || a.Balance != 55 || len(m.st.entries) != 3 ||
		m.st.entries[1].Amount != -30 || m.st.entries[2].Amount != -15 || m.st.accounts["acct0"].Balance != 10 {
		t.Fatalf("spend %d, balance %d, entries %+v: want the two charges taken, nothing else", k.Spent, a.Balance, m.st.entries)
	}

	// Standing comes before everything else; an allowance due is judged on its own.
	k := m.st.keys["key"]
	revoked := now.Add(-time.Minute)
	k.RevokedAt = &revoked
	m.st.keys["key"] = k
	acct0 := m.st.accounts["acct0"]
	acct0.MonthlyAllowance, acct0.AllowancePeriod = 100, "2000-01"
	m.st.accounts["acct0"] = acct0
	_ = m.LedgerTx(ctx, func(tx ledger.Tx) error {
		h, err := l.Hold(ctx, tx, []ledger.AccountKey{{"acct", "key"}, {"acct0", "key0"}}, now)
		if err != nil {
			return err
		}
		if _, err := h.Charge(ledger.Job{AccountID: "acct", KeyID: "key", Quote: 5}, func(auth.Account) error { return full }, func() error { return nil }); code(err) != apierr.KeyRevoked {
			t.Fatalf("revoked key: %v", err)
		}
		if _, err := h.Charge(ledger.Job{AccountID: "acct0", KeyID: "key0", Quote: 5}, func(auth.Account) error { return nil }, func() error { return nil }); !errors.Is(err, ledger.ErrJudgeFirst) {
			t.Fatalf("an allowance due: %v", err)
		}
		return h.Write(ctx, tx)
	})
	if len(m.st.entries) != 3 {
		t.Fatalf("%d entries: a refusal wrote one", len(m.st.entries))
	}
}
