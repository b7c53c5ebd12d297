package auth

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
)

// memStore is an in-memory Store that counts key lookups.
type memStore struct {
	mu       sync.Mutex
	accounts map[string]Account
	keys     map[string]KeyRecord
	lookups  int
}

func newMemStore() *memStore {
	return &memStore{accounts: map[string]Account{}, keys: map[string]KeyRecord{}}
}

func (m *memStore) CreateAccount(_ context.Context, a Account) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.accounts[a.ID] = a
	return nil
}

func (m *memStore) Account(_ context.Context, id string) (Account, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.accounts[id]
	if !ok {
		return a, ErrNotFound
	}
	return a, nil
}

func (m *memStore) SetAccountStatus(_ context.Context, id string, s Status) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.accounts[id]
	if !ok {
		return ErrNotFound
	}
	a.Status = s
	m.accounts[id] = a
	return nil
}

func (m *memStore) SetAccountPlan(_ context.Context, id string, p Plan, allowance int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	a, ok := m.accounts[id]
	if !ok {
		return ErrNotFound
	}
	a.Plan, a.MonthlyAllowance = p, allowance
	m.accounts[id] = a
	return nil
}

func (m *memStore) InsertKey(_ context.Context, k KeyRecord, maxLive int, now time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	live := 0
	for _, o := range m.keys {
		if o.AccountID == k.AccountID && o.HoldsSlot(now) {
			live++
		}
	}
	if live >= maxLive {
		return ErrTooManyKeys
	}
	m.keys[k.ID] = k
	return nil
}

func (m *memStore) InsertConsoleKey(_ context.Context, k KeyRecord) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, o := range m.keys {
		if o.AccountID == k.AccountID && o.Console {
			return nil
		}
	}
	m.keys[k.ID] = k
	return nil
}

func (m *memStore) Key(_ context.Context, id string) (KeyRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.lookups++
	k, ok := m.keys[id]
	if !ok {
		return k, ErrNotFound
	}
	return k, nil
}

func (m *memStore) Keys(_ context.Context, account string) ([]KeyRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []KeyRecord
	for _, k := range m.keys {
		if k.AccountID == account {
			out = append(out, k)
		}
	}
	slices.SortFunc(out, func(a, b KeyRecord) int { return a.CreatedAt.Compare(b.CreatedAt) })
	return out, nil
}

func (m *memStore) RevokeKey(_ context.Context, id string, at time.Time) (time.Time, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keys[id]
	if !ok {
		return time.Time{}, ErrNotFound
	}
	if k.RevokedAt == nil {
		k.RevokedAt = &at
		m.keys[id] = k
	}
	return *k.RevokedAt, nil
}

func (m *memStore) SetKeyCeiling(_ context.Context, id string, c Ceiling) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k, ok := m.keys[id]
	if !ok {
		return ErrNotFound
	}
	k.Ceiling = c
	m.keys[id] = k
	return nil
}

// clock is an injected time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

type fixture struct {
	store *memStore
	clock *clock
	svc   *Service
}

func newFixture(t *testing.T, secret string) *fixture {
	t.Helper()
	f := &fixture{store: newMemStore(), clock: &clock{t: t0}}
	f.svc = NewService(f.store, std, NewHasher(secret), f.clock.Now, slog.New(slog.NewTextHandler(io.Discard, nil)))
	return f
}

func (f *fixture) account(t *testing.T, id string, plan Plan) Account {
	t.Helper()
	a := Account{ID: id, Plan: plan, Status: Live, MonthlyAllowance: DefaultMonthlyAllowance(plan), CreatedAt: t0.Add(-48 * time.Hour)}
	if err := f.store.CreateAccount(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	return a
}

func (f *fixture) mint(t *testing.T, p MintParams) Minted {
	t.Helper()
	m, err := f.svc.Mint(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func (f *fixture) auth(t *testing.T, key string, readOnly bool) (Principal, error) {
	t.Helper()
	pk, err := f.svc.Parse(key)
	if err != nil {
		return Principal{}, err
	}
	return f.svc.Authenticate(context.Background(), pk, readOnly)
}

func wantCode(t *testing.T, err error, code apierr.Code) {
	t.Helper()
	if !apierr.Is(err, code) {
		t.Fatalf("err = %v, want %s", err, code)
	}
}

// TestKEY09_UnknownAndWrongSecretSame proves KEY-09 (same invalid_api_key for an unknown id and
// a wrong secret), KEY-07 (malformed keys refused before any store lookup), KEY-10 (the store
// holds only the HMAC of the secret) and KEY-11 (no secret: keys_not_configured).
func TestKEY09_UnknownAndWrongSecretSame(t *testing.T) {
	f := newFixture(t, "s3cret")
	f.account(t, "acct_1", Pro)
	m := f.mint(t, MintParams{AccountID: "acct_1"})
	if _, err := f.auth(t, m.Key, false); err != nil {
		t.Fatalf("valid key: %v", err)
	}
	pk, _ := std.Parse(m.Key)
	// Wrong secret: same id, another secret, valid checksum.
	other, _ := mustMint(t, std)
	otherPK, _ := std.Parse(other)
	wrong := withChecksum(DefaultPrefix + pk.ID + "_" + otherPK.Secret)
	_, errWrong := f.auth(t, wrong, false)
	_, errUnknown := f.auth(t, other, false)
	wantCode(t, errWrong, apierr.InvalidAPIKey)
	wantCode(t, errUnknown, apierr.InvalidAPIKey)
	ew, _ := apierr.As(errWrong)
	eu, _ := apierr.As(errUnknown)
	if ew.Error() != eu.Error() || len(ew.Fields) != 0 || len(eu.Fields) != 0 {
		t.Fatalf("answers differ: %q %v / %q %v", ew.Error(), ew.Fields, eu.Error(), eu.Fields)
	}
	// Read-only path too (the cache must not let a wrong secret through).
	if _, err := f.auth(t, m.Key, true); err != nil {
		t.Fatal(err)
	}
	_, err := f.auth(t, wrong, true)
	wantCode(t, err, apierr.InvalidAPIKey)

	// KEY-07: malformed keys never reach the store.
	before := f.store.lookups
	for _, raw := range []string{pk.ID, DefaultPrefix + pk.ID, m.Key[:68], m.Key[:68] + "!"} {
		_, err := f.auth(t, raw, false)
		wantCode(t, err, apierr.InvalidAPIKey)
	}
	if f.store.lookups != before {
		t.Fatalf("malformed keys caused %d store lookups", f.store.lookups-before)
	}
	// KEY-10: the record holds the HMAC of the secret, never the key or the secret.
	rec, _ := f.store.Key(context.Background(), pk.ID)
	if rec.SecretHash != NewHasher("s3cret").Hash(pk.Secret) || rec.SecretHash == pk.Secret {
		t.Fatalf("stored hash %q", rec.SecretHash)
	}
	// KEY-11: without a deployment secret nothing is parsed, minted or looked up.
	nf := newFixture(t, "")
	nf.account(t, "acct_2", Pro)
	_, err = nf.svc.Parse(m.Key)
	wantCode(t, err, apierr.KeysNotConfigured)
	_, err = nf.svc.Mint(context.Background(), MintParams{AccountID: "acct_2"})
	wantCode(t, err, apierr.KeysNotConfigured)
	if nf.svc.Configured() || !f.svc.Configured() {
		t.Fatal("Configured")
	}
}

// TestKEY18_LifetimesAndStatus proves KEY-18 (30/90/180/365, default 90, nothing beyond 366),
// KEY-19 (key_expired), KEY-20 (key_revoked), KEY-21 (live → expired/revoked, never back),
// KEY-22 (listed 30 days after expiry, no slot), KEY-23 (fewer than 14 days marked).
func TestKEY18_LifetimesAndStatus(t *testing.T) {
	f := newFixture(t, "s")
	f.account(t, "acct_1", Pro)
	for _, days := range []int{30, 90, 180, 365} {
		m := f.mint(t, MintParams{AccountID: "acct_1", LifetimeDays: days})
		if got := m.Record.ExpiresAt.Sub(t0); got != time.Duration(days)*24*time.Hour {
			t.Fatalf("%d days: expires after %v", days, got)
		}
	}
	m := f.mint(t, MintParams{AccountID: "acct_1"})
	if got := m.Record.ExpiresAt.Sub(t0); got != 90*24*time.Hour {
		t.Fatalf("default lifetime %v, want 90 days", got)
	}
	for _, days := range []int{1, 29, 60, 366, 367, 730, -30} {
		if _, err := f.svc.Mint(context.Background(), MintParams{AccountID: "acct_1", LifetimeDays: days}); err == nil {
			t.Fatalf("lifetime %d days accepted", days)
		}
	}
	for _, d := range Lifetimes {
		if d > 366 {
			t.Fatalf("lifetime %d beyond 366 days offered", d)
		}
	}

	k := KeyRecord{CreatedAt: t0, ExpiresAt: t0.Add(30 * 24 * time.Hour)}
	cases := []struct {
		at       time.Time
		status   KeyStatus
		listed   bool
		soon     bool
		revoked  bool
		describe string
	}{
		{t0, KeyLive, true, false, false, "fresh"},
		{k.ExpiresAt.Add(-14*24*time.Hour - time.Second), KeyLive, true, false, false, "14 days and a second left"},
		{k.ExpiresAt.Add(-14 * 24 * time.Hour), KeyLive, true, false, false, "exactly 14 days left"},
		{k.ExpiresAt.Add(-14*24*time.Hour + time.Second), KeyLive, true, true, false, "under 14 days left"},
		{k.ExpiresAt.Add(-time.Second), KeyLive, true, true, false, "last second"},
		{k.ExpiresAt, KeyExpired, true, false, false, "at expiry"},
		{k.ExpiresAt.Add(30*24*time.Hour - time.Second), KeyExpired, true, false, false, "expired 30 days less a second"},
		{k.ExpiresAt.Add(30 * 24 * time.Hour), KeyExpired, false, false, false, "expired 30 days"},
		{t0.Add(time.Hour), KeyRevoked, true, false, true, "revoked"},
		{k.ExpiresAt.Add(time.Hour), KeyRevoked, true, false, true, "revoked then past expiry"},
	}
	for _, c := range cases {
		kk := k
		if c.revoked {
			at := t0
			kk.RevokedAt = &at
		}
		if got := kk.Status(c.at); got != c.status {
			t.Errorf("%s: status %s, want %s", c.describe, got, c.status)
		}
		if got := kk.Listed(c.at); got != c.listed {
			t.Errorf("%s: listed %v, want %v", c.describe, got, c.listed)
		}
		if got := kk.ExpiringSoon(c.at); got != c.soon {
			t.Errorf("%s: expiring soon %v, want %v", c.describe, got, c.soon)
		}
	}

	// Through the service: expiry and revocation answers, and listing.
	f2 := newFixture(t, "s")
	f2.account(t, "acct_f", Free)
	short := f2.mint(t, MintParams{AccountID: "acct_f", LifetimeDays: 30})
	other := f2.mint(t, MintParams{AccountID: "acct_f", LifetimeDays: 365})
	f2.clock.Add(30 * 24 * time.Hour)
	_, err := f2.auth(t, short.Key, false)
	wantCode(t, err, apierr.KeyExpired)
	_, err = f2.auth(t, short.Key, true)
	wantCode(t, err, apierr.KeyExpired)
	// KEY-22: the expired key holds no slot: a free account mints a second live key.
	third := f2.mint(t, MintParams{AccountID: "acct_f"})
	if _, err := f2.svc.Mint(context.Background(), MintParams{AccountID: "acct_f"}); !errors.Is(err, ErrTooManyKeys) {
		t.Fatalf("third live key on free: %v", err)
	}
	list, _ := f2.svc.Keys(context.Background(), "acct_f")
	// Keys minted at one instant list in id order: compare as sets.
	if ids := sorted(keyIDs(list)); !slices.Equal(ids, sorted([]string{short.Record.ID, other.Record.ID, third.Record.ID})) {
		t.Fatalf("listed %v", ids)
	}
	f2.clock.Add(30 * 24 * time.Hour)
	list, _ = f2.svc.Keys(context.Background(), "acct_f")
	if ids := sorted(keyIDs(list)); !slices.Equal(ids, sorted([]string{other.Record.ID, third.Record.ID})) {
		t.Fatalf("after 30 days listed %v", ids)
	}
	// KEY-21: revoked stays revoked; expired never comes back.
	if _, err := f2.svc.Revoke(context.Background(), other.Record.ID); err != nil {
		t.Fatal(err)
	}
	_, err = f2.auth(t, other.Key, false)
	wantCode(t, err, apierr.KeyRevoked)
}

func keyIDs(ks []KeyRecord) []string {
	var out []string
	for _, k := range ks {
		out = append(out, k.ID)
	}
	return out
}

// TestKEY25_RevocationTiming proves KEY-24 (a stamp; revoking twice answers the original time),
// KEY-25 (spending, writing, downloading requests refused at once) and KEY-26 (read-only requests
// refused within 2 seconds), with the revocation made by another process (the console), so the
// service's own cache is not told.
func TestKEY25_RevocationTiming(t *testing.T) {
	f := newFixture(t, "s")
	f.account(t, "acct_1", Pro)
	m := f.mint(t, MintParams{AccountID: "acct_1"})
	if _, err := f.auth(t, m.Key, true); err != nil { // warm the read cache
		t.Fatal(err)
	}
	// Another process revokes (the console writes the store directly).
	console := NewService(f.store, std, NewHasher("s"), f.clock.Now, slog.New(slog.DiscardHandler))
	first, err := console.Revoke(context.Background(), m.Record.ID)
	if err != nil || !first.Equal(t0) {
		t.Fatalf("revoke: %v %v", first, err)
	}
	// KEY-25: at once for anything not read-only.
	_, err = f.auth(t, m.Key, false)
	wantCode(t, err, apierr.KeyRevoked)
	// KEY-26: reads within 2 seconds: step the clock and record when the refusal starts.
	refusedAt := time.Duration(-1)
	for step := time.Duration(0); step <= 2*time.Second; step += 100 * time.Millisecond {
		_, err := f.auth(t, m.Key, true)
		if apierr.Is(err, apierr.KeyRevoked) {
			refusedAt = step
			break
		}
		f.clock.Add(100 * time.Millisecond)
	}
	if refusedAt < 0 {
		t.Fatal("a read-only request still passed 2 seconds after revocation")
	}
	// KEY-24: revoking twice answers the original stamp.
	f.clock.Add(time.Hour)
	again, err := f.svc.Revoke(context.Background(), m.Record.ID)
	if err != nil || !again.Equal(first) {
		t.Fatalf("second revoke %v %v, want %v", again, err, first)
	}
	if _, err := f.svc.Revoke(context.Background(), "nosuchkey000"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoke unknown: %v", err)
	}

	// Revocation through the same service reaches reads at once.
	m2 := f.mint(t, MintParams{AccountID: "acct_1"})
	if _, err := f.auth(t, m2.Key, true); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.Revoke(context.Background(), m2.Record.ID); err != nil {
		t.Fatal(err)
	}
	_, err = f.auth(t, m2.Key, true)
	wantCode(t, err, apierr.KeyRevoked)
}

// TestKEY28_Rotation proves KEY-28: a new key and the old one both work until the old is revoked.
func TestKEY28_Rotation(t *testing.T) {
	f := newFixture(t, "s")
	f.account(t, "acct_1", Free)
	old := f.mint(t, MintParams{AccountID: "acct_1"})
	next := f.mint(t, MintParams{AccountID: "acct_1"})
	for _, k := range []string{old.Key, next.Key} {
		if _, err := f.auth(t, k, false); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.svc.Revoke(context.Background(), old.Record.ID); err != nil {
		t.Fatal(err)
	}
	_, err := f.auth(t, old.Key, false)
	wantCode(t, err, apierr.KeyRevoked)
	if _, err := f.auth(t, next.Key, false); err != nil {
		t.Fatal(err)
	}
}

// TestKEY27_LiveKeyLimits proves KEY-27: free 2, paid 25; revoked keys free a slot.
func TestKEY27_LiveKeyLimits(t *testing.T) {
	for _, c := range []struct {
		plan Plan
		max  int
	}{{Free, 2}, {Pro, 25}, {Max, 25}, {Ultimate, 25}} {
		if c.plan.MaxLiveKeys() != c.max {
			t.Fatalf("%s: %d", c.plan, c.plan.MaxLiveKeys())
		}
		f := newFixture(t, "s")
		f.account(t, "acct", c.plan)
		var first Minted
		for i := range c.max {
			m := f.mint(t, MintParams{AccountID: "acct"})
			if i == 0 {
				first = m
			}
		}
		if _, err := f.svc.Mint(context.Background(), MintParams{AccountID: "acct"}); !errors.Is(err, ErrTooManyKeys) {
			t.Fatalf("%s: key %d: %v", c.plan, c.max+1, err)
		}
		if _, err := f.svc.Revoke(context.Background(), first.Record.ID); err != nil {
			t.Fatal(err)
		}
		f.mint(t, MintParams{AccountID: "acct"})
	}
}

// TestAuthenticateAccountStatus proves the account part of ORD-06 and ERR-26/27 at the service:
// banned and suspended refuse every request, before the key's own status; limited refuses all but
// reads, also before key_revoked / key_expired.
func TestAuthenticateAccountStatus(t *testing.T) {
	f := newFixture(t, "s")
	f.account(t, "acct_1", Pro)
	live := f.mint(t, MintParams{AccountID: "acct_1"})
	revoked := f.mint(t, MintParams{AccountID: "acct_1"})
	expired := f.mint(t, MintParams{AccountID: "acct_1", LifetimeDays: 30})
	if _, err := f.svc.Revoke(context.Background(), revoked.Record.ID); err != nil {
		t.Fatal(err)
	}
	f.clock.Add(31 * 24 * time.Hour)
	// Expired/revoked report themselves on a live account.
	_, err := f.auth(t, revoked.Key, false)
	wantCode(t, err, apierr.KeyRevoked)
	_, err = f.auth(t, expired.Key, false)
	wantCode(t, err, apierr.KeyExpired)
	for _, c := range []struct {
		status   Status
		readOnly bool
		want     apierr.Code
	}{
		{Banned, true, apierr.AccountBanned}, {Banned, false, apierr.AccountBanned},
		{Suspended, true, apierr.AccountSuspended}, {Suspended, false, apierr.AccountSuspended},
		{Limited, false, apierr.AccountLimited},
	} {
		if err := f.store.SetAccountStatus(context.Background(), "acct_1", c.status); err != nil {
			t.Fatal(err)
		}
		f.clock.Add(2 * time.Second) // past any cached read
		for _, k := range []Minted{live, revoked, expired} {
			_, err := f.auth(t, k.Key, c.readOnly)
			if !apierr.Is(err, c.want) {
				t.Errorf("%s read=%v key %s: %v, want %s", c.status, c.readOnly, k.Record.ID, err, c.want)
			}
		}
	}
	// Limited reads pass.
	if _, err := f.auth(t, live.Key, true); err != nil {
		t.Fatalf("limited read: %v", err)
	}
}

func sorted(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
