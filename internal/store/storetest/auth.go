package storetest

import (
	"context"
	"errors"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/ledger"
)

// Run is the conformance suite every backend passes.
func Run(t *testing.T, open func(t testing.TB) Stores) {
	t.Run("AccountsAndLedger", func(t *testing.T) { testAccountsAndLedger(t, open(t)) })
	t.Run("KeysLiveLimitAtomic", func(t *testing.T) { testKeysLiveLimit(t, open(t)) })
	t.Run("RevokeKeepsOriginalStamp", func(t *testing.T) { testRevoke(t, open(t)) })
	t.Run("Ceilings", func(t *testing.T) { testCeilings(t, open(t)) })
	t.Run("ChargeTogether", func(t *testing.T) { testChargeTogether(t, open(t)) })
	t.Run("ChargeRaisesKeySpend", func(t *testing.T) { testChargeRaisesKeySpend(t, open(t)) })
	t.Run("CEIL01_RefundLowersTheMonthOfItsCharge", func(t *testing.T) { testRefundSpend(t, open(t)) })
	t.Run("ACC04_MonthlyAllowances", func(t *testing.T) { testAllowances(t, open(t)) })
	t.Run("ConsoleUsersAndSessions", func(t *testing.T) { testConsoleUsers(t, open(t)) })
	t.Run("SignInFailures", func(t *testing.T) { testSignInFailures(t, open(t)) })
}

// Failed console sign-ins: counted per email and client address, and per email from every
// address together, each within a window from its first failure, started afresh once it
// ended; a success forgets its own address's failures only; ended windows are dropped.
func testSignInFailures(t *testing.T, s Stores) {
	ctx := context.Background()
	const window = 15 * time.Minute
	const ana, here, there = "ana@example.test", "198.51.100.7", "2001:db8::9"
	fail := func(email, addr string, at time.Time) {
		t.Helper()
		if err := s.SignIns.FailSignIn(ctx, email, addr, at, window); err != nil {
			t.Fatal(err)
		}
	}
	want := func(what, addr string, n int, first time.Time) {
		t.Helper()
		var got int
		var from time.Time
		var err error
		if addr == "" {
			got, from, err = s.SignIns.SignInFailuresOfEmail(ctx, ana)
		} else {
			got, from, err = s.SignIns.SignInFailures(ctx, ana, addr)
		}
		if err != nil || got != n || (n > 0 && !from.Equal(first)) {
			t.Fatalf("%s: %d from %v (%v), want %d from %v", what, got, from, err, n, first)
		}
	}
	for i := range 3 {
		fail(ana, here, t0.Add(time.Duration(i)*time.Minute))
	}
	fail(ana, there, t0.Add(5*time.Minute))
	want("three failures from one address", here, 3, t0)
	want("one failure from another", there, 1, t0.Add(5*time.Minute))
	want("the email from every address", "", 4, t0)
	if n, _, err := s.SignIns.SignInFailures(ctx, ana, "203.0.113.1"); err != nil || n != 0 {
		t.Fatalf("an address that never failed: %d (%v), want none", n, err)
	}

	// A success forgets its own address's failures, not another's nor the email's count.
	if err := s.SignIns.ClearSignInFailures(ctx, ana, here); err != nil {
		t.Fatal(err)
	}
	want("after a success from it", here, 0, time.Time{})
	want("another address after a success elsewhere", there, 1, t0.Add(5*time.Minute))
	want("the email after a success from one address", "", 4, t0)

	// After the window from each count's first failure, each starts afresh; the email's
	// window is its own (it began at t0, the other address's at t0+5m).
	later := t0.Add(window + time.Minute)
	fail(ana, there, later)
	want("a failure after the email's window", "", 1, later)
	want("the address's window still running", there, 2, t0.Add(5*time.Minute))
	fail(ana, there, t0.Add(5*time.Minute+window))
	want("a failure after the address's window", there, 1, t0.Add(5*time.Minute+window))
	want("the email's new window", "", 2, later)

	// Another email's failures are its own.
	fail("bob@example.test", here, later)
	if n, _, err := s.SignIns.SignInFailures(ctx, "bob@example.test", here); err != nil || n != 1 {
		t.Fatalf("another email: %d (%v), want 1", n, err)
	}
	want("ana from the address bob failed from", here, 0, time.Time{})

	// Ended windows are swept on the next failure: only live rows stay.
	fail("cyd@example.test", here, later.Add(2*window))
	var rows int
	if err := s.Inspect.SQL().QueryRowContext(ctx, `SELECT COUNT(*) FROM sign_in_failures`).Scan(&rows); err != nil {
		t.Fatal(err)
	}
	if rows != 2 {
		t.Fatalf("%d rows after every other window ended, want cyd's two (from the address, from any)", rows)
	}
}

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

// NeverDue is an AllowancePeriod no clock reaches: the account's monthly allowance is never
// credited, so a test's balances move only by what the test does, whatever the date.
const NeverDue = "9999-12"

// NewAccount creates an account for tests through the ledger (ledger.Service over the ledger
// port, which *sqlstore.DB serves). Its monthly allowance is never due (NeverDue); allowance
// tests create their accounts with the period they need.
func NewAccount(t testing.TB, l ledger.Store, id string, plan auth.Plan, credits int64) auth.Account {
	t.Helper()
	a := auth.Account{ID: id, Plan: plan, Status: auth.Live, Balance: credits, MonthlyAllowance: auth.DefaultMonthlyAllowance(plan),
		AllowancePeriod: NeverDue, CreatedAt: t0.Add(-72 * time.Hour)}
	if err := ledger.New(l, time.Now).CreateAccount(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	return a
}

// The suite moves credits and changes accounts as the service does, through ledger.Service
// over the ledger port: setStatus, setPlan, grantAllowances and ledgerSum are sqlstore's
// shorthands (SetAccountStatus, SetAccountPlan, GrantAllowances, LedgerSum) made over the port.

// setStatus changes an account's status (a ban revokes its keys).
func setStatus(ctx context.Context, l ledger.Store, id string, st auth.Status) error {
	_, err := ledger.New(l, time.Now).ChangeAccount(ctx, id, ledger.AccountChange{Status: &st})
	return err
}

// setPlan changes an account's plan and monthly allowance.
func setPlan(ctx context.Context, l ledger.Store, id string, p auth.Plan, allowance ledger.Credits) error {
	_, err := ledger.New(l, time.Now).ChangeAccount(ctx, id, ledger.AccountChange{Plan: &p, Allowance: &allowance})
	return err
}

// grantAllowances credits the monthly allowances due at now, up to limit accounts.
func grantAllowances(ctx context.Context, l ledger.Store, now time.Time, limit int) (int, error) {
	return ledger.New(l, func() time.Time { return now }).GrantAllowances(ctx, now, limit)
}

// ledgerSum is the sum of an account's ledger entries (the invariant the balance keeps).
func ledgerSum(ctx context.Context, l ledger.Store, id string) (int64, error) {
	v, err := ledger.New(l, time.Now).Sum(ctx, id)
	return int64(v), err
}

func testAccountsAndLedger(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_a", auth.Pro, 500)
	a, err := s.Auth.Account(ctx, "acct_a")
	if err != nil || a.Balance != 500 || a.Plan != auth.Pro || a.Status != auth.Live || !a.CreatedAt.Equal(t0.Add(-72*time.Hour)) {
		t.Fatalf("account = %+v, %v", a, err)
	}
	if _, err := s.Auth.Account(ctx, "nope"); !errors.Is(err, auth.ErrNotFound) {
		t.Fatalf("missing account: %v", err)
	}
	if bal, err := ledger.New(s.Ledger, func() time.Time { return t0 }).Grant(ctx, "acct_a", -200); err != nil || bal != 300 {
		t.Fatalf("grant: %d %v", bal, err)
	}
	sum, err := ledgerSum(ctx, s.Ledger, "acct_a")
	if err != nil || sum != 300 {
		t.Fatalf("ledger sum %d %v, want the balance 300", sum, err)
	}
	if err := setStatus(ctx, s.Ledger, "acct_a", auth.Limited); err != nil {
		t.Fatal(err)
	}
	if err := setPlan(ctx, s.Ledger, "acct_a", auth.Max, 6000); err != nil {
		t.Fatal(err)
	}
	a, _ = s.Auth.Account(ctx, "acct_a")
	if a.Status != auth.Limited || a.Plan != auth.Max || a.MonthlyAllowance != 6000 {
		t.Fatalf("after set: %+v", a)
	}
	if err := setStatus(ctx, s.Ledger, "nope", auth.Live); !errors.Is(err, auth.ErrNotFound) {
		t.Fatalf("set on missing: %v", err)
	}
}

func key(id, account string, expires time.Time) auth.KeyRecord {
	return auth.KeyRecord{ID: id, AccountID: account, SecretHash: "h", Scopes: auth.DefaultScopes(), CreatedAt: t0, ExpiresAt: expires,
		Ceiling: auth.Ceiling{Mode: auth.FollowPlan}, SpentPeriod: auth.Period(t0)}
}

// KEY-27: the live-key count and the insert are atomic; expired and revoked keys hold no slot.
func testKeysLiveLimit(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_f", auth.Free, 0)
	if err := s.Auth.InsertKey(ctx, key("expiredkey01", "acct_f", t0.Add(-time.Hour)), 2, t0); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = s.Auth.InsertKey(ctx, key("concurrent0"+string(rune('a'+i)), "acct_f", t0.Add(time.Hour)), 2, t0)
		}()
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, auth.ErrTooManyKeys):
			t.Fatalf("unexpected error %v", err)
		}
	}
	if ok != 2 {
		t.Fatalf("%d concurrent mints succeeded, want exactly 2", ok)
	}
	keys, err := s.Auth.Keys(ctx, "acct_f")
	if err != nil || len(keys) != 3 {
		t.Fatalf("keys = %d, %v", len(keys), err)
	}
	k, err := s.Auth.Key(ctx, keys[1].ID)
	if err != nil || k.AccountID != "acct_f" || len(k.Scopes) != len(auth.DefaultScopes()) || k.Ceiling.Mode != auth.FollowPlan {
		t.Fatalf("key = %+v %v", k, err)
	}
	if _, err := s.Auth.Key(ctx, "missing00000"); !errors.Is(err, auth.ErrNotFound) {
		t.Fatalf("missing key: %v", err)
	}
}

// KEY-24: revocation is a stamp; revoking twice keeps the original.
func testRevoke(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_r", auth.Pro, 0)
	if err := s.Auth.InsertKey(ctx, key("revokekey001", "acct_r", t0.Add(time.Hour)), 25, t0); err != nil {
		t.Fatal(err)
	}
	first, err := s.Auth.RevokeKey(ctx, "revokekey001", t0)
	if err != nil || !first.Equal(t0) {
		t.Fatalf("revoke: %v %v", first, err)
	}
	again, err := s.Auth.RevokeKey(ctx, "revokekey001", t0.Add(time.Hour))
	if err != nil || !again.Equal(t0) {
		t.Fatalf("second revoke answered %v, want the original %v (%v)", again, t0, err)
	}
	if _, err := s.Auth.RevokeKey(ctx, "missing00000", t0); !errors.Is(err, auth.ErrNotFound) {
		t.Fatalf("revoke missing: %v", err)
	}
}

func testCeilings(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_c", auth.Pro, 0)
	if err := s.Auth.InsertKey(ctx, key("ceilingkey01", "acct_c", t0.Add(time.Hour)), 25, t0); err != nil {
		t.Fatal(err)
	}
	c := auth.Ceiling{Mode: auth.Fixed, Amount: 700, Support: 900}
	if err := s.Auth.SetKeyCeiling(ctx, "ceilingkey01", c); err != nil {
		t.Fatal(err)
	}
	k, _ := s.Auth.Key(ctx, "ceilingkey01")
	if k.Ceiling != c {
		t.Fatalf("ceiling = %+v", k.Ceiling)
	}
}

// CEIL: a charge written by LedgerApply raises its key's spend in the same statement, for the
// entry's period, starting the period afresh when the key's spend was of an earlier one; a
// refund, a grant or an allowance leaves the spend alone (the ledger gives a refund back to the
// period of its job's charge with LedgerRefundSpend).
func testChargeRaisesKeySpend(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_s", auth.Pro, 100)
	if err := s.Auth.InsertKey(ctx, key("spendkey0001", "acct_s", t0.AddDate(0, 3, 0)), 25, t0); err != nil {
		t.Fatal(err)
	}
	nextMonth := t0.AddDate(0, 1, 0)
	for _, step := range []struct {
		kind   ledger.Kind
		amount int64
		at     time.Time
		spent  int64 // the key's spend in at's period afterwards
	}{
		{ledger.Charge, -30, t0, 30},
		{ledger.Charge, -5, t0, 35},
		{ledger.Refund, 10, t0, 35},
		{ledger.Grant, 50, t0, 35},
		{ledger.Charge, -7, nextMonth, 7},
	} {
		err := s.Ledger.LedgerTx(ctx, func(tx ledger.Tx) error {
			e := ledger.Entry{AccountID: "acct_s", Kind: step.kind, Amount: ledger.Credits(step.amount), At: step.at}
			if step.kind == ledger.Charge || step.kind == ledger.Refund {
				e.KeyID, e.JobID, e.Model = "spendkey0001", "photo_s", "image-4b"
			}
			_, err := tx.LedgerApply(ctx, e, math.MinInt64)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		k, err := s.Auth.Key(ctx, "spendkey0001")
		if err != nil || k.SpentIn(step.at) != step.spent {
			t.Fatalf("after a %s of %d at %v the key's spend is %d (%v), want %d", step.kind, step.amount, step.at, k.SpentIn(step.at), err, step.spent)
		}
	}
}

// CEIL-01: LedgerRefundSpend gives a refund back to the key's spend of the month its job's
// charge entry records, and only while the key's spend is of that month: a job charged on
// November 30 and refunded in December lowers nothing (December's spend stays whole, so the
// key's December cap holds), while a job charged and refunded in December lowers December's.
// The charge is looked for from the time given on (the job's creation): one charged before it
// is not the job's.
func testRefundSpend(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_m", auth.Pro, 100)
	if err := s.Auth.InsertKey(ctx, key("monthkey0001", "acct_m", t0.AddDate(0, 3, 0)), 25, t0); err != nil {
		t.Fatal(err)
	}
	nov := time.Date(2026, 11, 30, 23, 59, 50, 0, time.UTC)
	dec := time.Date(2026, 12, 1, 0, 0, 5, 0, time.UTC)
	tx := func(fn func(tx ledger.Tx) error) {
		t.Helper()
		if err := s.Ledger.LedgerTx(ctx, fn); err != nil {
			t.Fatal(err)
		}
	}
	charge := func(job string, amount int64, at time.Time) {
		t.Helper()
		tx(func(tx ledger.Tx) error {
			_, err := tx.LedgerApply(ctx, ledger.Entry{AccountID: "acct_m", KeyID: "monthkey0001", JobID: job, Model: "image-4b",
				Kind: ledger.Charge, Amount: ledger.Credits(-amount), At: at}, math.MinInt64)
			return err
		})
	}
	refund := func(job string, amount int64, since time.Time) {
		t.Helper()
		tx(func(tx ledger.Tx) error { return tx.LedgerRefundSpend(ctx, "monthkey0001", job, since, amount) })
	}
	spent := func(at time.Time, want int64, after string) {
		t.Helper()
		k, err := s.Auth.Key(ctx, "monthkey0001")
		if err != nil || k.SpentIn(at) != want {
			t.Fatalf("%s: the key's spend in %s is %d (%v), want %d", after, auth.Period(at), k.SpentIn(at), err, want)
		}
	}
	charge("photo_nov", 10, nov)
	refund("photo_nov", 4, nov) // still November: November's spend goes down
	spent(nov, 6, "a November refund of a November charge")
	charge("photo_dec", 1, dec)
	refund("photo_nov", 6, nov)
	spent(dec, 1, "a December refund of a November charge")
	refund("photo_dec", 1, dec.Add(time.Second)) // the charge is older than the time given
	spent(dec, 1, "a refund looked for after its charge")
	refund("photo_dec", 1, dec)
	spent(dec, 0, "a December refund of a December charge")
}

// Charges made together: LedgerHold answers each account with the key named, in the order
// given, and leaves out a key that is not its account's; LedgerChargeAll moves each balance and
// key's spend by its charges' sum, writes each entry, and counts them in the usage rollups (per
// day and per month); it refuses charges made at two times.
func testChargeTogether(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_o", auth.Pro, 100)
	NewAccount(t, s.Ledger, "acct_q", auth.Pro, 100)
	for _, k := range []auth.KeyRecord{key("openkey00001", "acct_o", t0.AddDate(0, 3, 0)), key("qkey00000001", "acct_q", t0.AddDate(0, 3, 0))} {
		if err := s.Auth.InsertKey(ctx, k, 25, t0); err != nil {
			t.Fatal(err)
		}
	}
	charge := func(account, key, job string, amount, balance int64, at time.Time) ledger.Taken {
		return ledger.Taken{Entry: ledger.Entry{AccountID: account, KeyID: key, JobID: job, Model: "image-4b", Kind: ledger.Charge,
			Amount: ledger.Credits(-amount), At: at}, Balance: balance}
	}
	err := s.Ledger.LedgerTx(ctx, func(tx ledger.Tx) error {
		held, err := tx.LedgerHold(ctx, []ledger.AccountKey{{AccountID: "acct_o", KeyID: "openkey00001"},
			{AccountID: "acct_q", KeyID: "openkey00001"}, {AccountID: "acct_q", KeyID: "qkey00000001"}})
		if err != nil {
			return err
		}
		as, ks := held.Accounts, held.Keys
		if len(as) != 2 || as[0].ID != "acct_o" || as[0].Balance != 100 || as[0].Plan != auth.Pro || ks[0].ID != "openkey00001" ||
			as[1].ID != "acct_q" || ks[1].ID != "qkey00000001" || ks[1].AccountID != "acct_q" {
			t.Fatalf("held %+v with keys %+v: want acct_o and acct_q with their own keys", as, ks)
		}
		if err := tx.LedgerChargeAll(ctx, []ledger.Taken{charge("acct_o", "openkey00001", "photo_1", 30, 70, t0),
			charge("acct_q", "qkey00000001", "photo_2", 10, 90, t0.Add(time.Second))}); err == nil {
			t.Fatal("charges at two times were written together")
		}
		return tx.LedgerChargeAll(ctx, []ledger.Taken{charge("acct_o", "openkey00001", "photo_1", 30, 70, t0),
			charge("acct_q", "qkey00000001", "photo_2", 10, 90, t0), charge("acct_o", "openkey00001", "photo_3", 20, 50, t0)})
	})
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]int64{"acct_o": 50, "acct_q": 90} {
		sum, err := s.Ledger.LedgerBalanceSum(ctx, id)
		got, _ := s.Ledger.LedgerAccount(ctx, id)
		if err != nil || sum != got.Balance || got.Balance != want {
			t.Fatalf("%s: balance %d, entries sum %d, want %d (%v)", id, got.Balance, sum, want, err)
		}
	}
	for id, want := range map[string]int64{"openkey00001": 50, "qkey00000001": 10} {
		if k, _ := s.Auth.Key(ctx, id); k.SpentIn(t0) != want {
			t.Fatalf("key %s spent %d, want %d", id, k.SpentIn(t0), want)
		}
	}
	day := t0.Truncate(24 * time.Hour)
	month := time.Date(t0.Year(), t0.Month(), 1, 0, 0, 0, 0, time.UTC)
	for _, span := range [][2]time.Time{{day, day.AddDate(0, 0, 1)}, {month, month.AddDate(0, 1, 0)}} {
		u, err := s.Usage.LedgerUsageByKey(ctx, "acct_o", span[0], span[1])
		if err != nil || len(u) != 1 || u[0].KeyID != "openkey00001" || u[0].Charged != 50 || u[0].Jobs != 2 {
			t.Fatalf("usage of acct_o over %v: %+v %v, want 50 credits in 2 jobs", span, u, err)
		}
	}
}
