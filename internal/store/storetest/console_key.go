package storetest

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/ledger"
)

// RunConsoleKeys is the suite of the console's key (auth.ConsoleKey): a key record per account,
// written once however many write it at once, holding no live-key slot, kept through a ban,
// and charged, counted and listed for the per-charge export like any key.
func RunConsoleKeys(t *testing.T, open func(t testing.TB) Stores) {
	t.Run("OnePerAccount", func(t *testing.T) { testConsoleKeyOnePerAccount(t, open(t)) })
	t.Run("KEY27_HoldsNoSlot", func(t *testing.T) { testConsoleKeyHoldsNoSlot(t, open(t)) })
	t.Run("ERR26_KeptThroughABan", func(t *testing.T) { testConsoleKeyKeptThroughABan(t, open(t)) })
	t.Run("ACC15_ChargedAndExportedLikeAnyKey", func(t *testing.T) { testConsoleKeyCharged(t, open(t)) })
}

// Written by several at once, an account's console key is stored once, and reads back as
// written.
func testConsoleKeyOnePerAccount(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_k", auth.Pro, 0)
	NewAccount(t, s.Ledger, "acct_l", auth.Pro, 0)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			errs[i] = s.Auth.InsertConsoleKey(ctx, auth.NewConsoleKey("acct_k", t0.Add(time.Duration(i)*time.Second)))
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("a concurrent write of the console's key: %v", err)
		}
	}
	keys, err := s.Auth.Keys(ctx, "acct_k")
	if err != nil || len(keys) != 1 {
		t.Fatalf("keys after concurrent writes: %+v %v, want the one console key", keys, err)
	}
	want := auth.NewConsoleKey("acct_k", keys[0].CreatedAt)
	k, err := s.Auth.Key(ctx, auth.ConsoleKeyIDOf("acct_k"))
	if err != nil || k.ID != want.ID || k.AccountID != "acct_k" || !k.Console || k.SecretHash != want.SecretHash ||
		!slices.Equal(k.Scopes, auth.Current) || !k.ExpiresAt.Equal(want.ExpiresAt) || k.RevokedAt != nil || k.Ceiling != want.Ceiling {
		t.Fatalf("console key %+v %v, want %+v", k, err, want)
	}
	// Another account's is its own; a minted key is not the console's.
	if err := s.Auth.InsertConsoleKey(ctx, auth.NewConsoleKey("acct_l", t0)); err != nil {
		t.Fatal(err)
	}
	if err := s.Auth.InsertKey(ctx, key("lkey00000001", "acct_l", t0.Add(time.Hour)), 25, t0); err != nil {
		t.Fatal(err)
	}
	keys, _ = s.Auth.Keys(ctx, "acct_l")
	if len(keys) != 2 || keys[0].ID == keys[1].ID || keys[0].Console == keys[1].Console {
		t.Fatalf("acct_l's keys %+v", keys)
	}
	if err := s.Auth.InsertConsoleKey(ctx, key("lkey00000002", "acct_l", t0.Add(time.Hour))); err == nil {
		t.Fatal("a key not marked as the console's was written as one")
	}
}

// KEY-27: the console's key holds no live-key slot: a free account holds its two keys beside it.
func testConsoleKeyHoldsNoSlot(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_f", auth.Free, 0)
	if err := s.Auth.InsertConsoleKey(ctx, auth.NewConsoleKey("acct_f", t0)); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"freekey00001", "freekey00002"} {
		if err := s.Auth.InsertKey(ctx, key(id, "acct_f", t0.Add(time.Hour)), auth.Free.MaxLiveKeys(), t0); err != nil {
			t.Fatalf("key %s beside the console's: %v", id, err)
		}
	}
	if err := s.Auth.InsertKey(ctx, key("freekey00003", "acct_f", t0.Add(time.Hour)), auth.Free.MaxLiveKeys(), t0); !errors.Is(err, auth.ErrTooManyKeys) {
		t.Fatalf("a third key on the free plan: %v", err)
	}
}

// ERR-26: a ban revokes the account's keys, not its console key, which the account's status
// already refuses: once the account stands again, its console runs again.
func testConsoleKeyKeptThroughABan(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_b", auth.Pro, 0)
	if err := s.Auth.InsertConsoleKey(ctx, auth.NewConsoleKey("acct_b", t0)); err != nil {
		t.Fatal(err)
	}
	if err := s.Auth.InsertKey(ctx, key("bannedkey001", "acct_b", time.Now().Add(time.Hour)), 25, t0); err != nil {
		t.Fatal(err)
	}
	if err := setStatus(ctx, s.Ledger, "acct_b", auth.Banned); err != nil {
		t.Fatal(err)
	}
	if err := setStatus(ctx, s.Ledger, "acct_b", auth.Live); err != nil {
		t.Fatal(err)
	}
	if k, _ := s.Auth.Key(ctx, "bannedkey001"); k.RevokedAt == nil {
		t.Fatal("the ban left the account's key live")
	}
	if k, _ := s.Auth.Key(ctx, auth.ConsoleKeyIDOf("acct_b")); k.RevokedAt != nil {
		t.Fatalf("the ban revoked the console's key at %v", k.RevokedAt)
	}
}

// ACC-14, ACC-15: charges under the console's key move its spend, count in usage by key, and
// are listed with the account's keys, so the per-charge export reads them.
func testConsoleKeyCharged(t *testing.T, s Stores) {
	ctx := context.Background()
	NewAccount(t, s.Ledger, "acct_c", auth.Pro, 100)
	console := auth.ConsoleKeyIDOf("acct_c")
	if err := s.Auth.InsertConsoleKey(ctx, auth.NewConsoleKey("acct_c", t0)); err != nil {
		t.Fatal(err)
	}
	err := s.Ledger.LedgerTx(ctx, func(tx ledger.Tx) error {
		held, err := tx.LedgerHold(ctx, []ledger.AccountKey{{AccountID: "acct_c", KeyID: console}})
		if err != nil {
			return err
		}
		as, ks := held.Accounts, held.Keys
		if len(as) != 1 || len(ks) != 1 || ks[0].ID != console || !ks[0].Console {
			t.Fatalf("held %+v with %+v: want acct_c with its console key", as, ks)
		}
		return tx.LedgerChargeAll(ctx, []ledger.Taken{{Entry: ledger.Entry{AccountID: "acct_c", KeyID: console, JobID: "photo_c1",
			Model: "image-4b", Kind: ledger.Charge, Amount: -30, At: t0}, Balance: 70}})
	})
	if err != nil {
		t.Fatal(err)
	}
	if k, _ := s.Auth.Key(ctx, console); k.SpentIn(t0) != 30 {
		t.Fatalf("console key spent %d, want 30", k.SpentIn(t0))
	}
	day := t0.Truncate(24 * time.Hour)
	u, err := s.Usage.LedgerUsageByKey(ctx, "acct_c", day, day.AddDate(0, 0, 1))
	if err != nil || len(u) != 1 || u[0].KeyID != console || u[0].Charged != 30 || u[0].Jobs != 1 {
		t.Fatalf("usage by key %+v %v", u, err)
	}
	keys, err := s.Usage.LedgerUsageKeys(ctx, "acct_c")
	if err != nil || !slices.Equal(keys, []string{console}) {
		t.Fatalf("the export's keys %v %v, want the console's", keys, err)
	}
	lines, err := s.Usage.LedgerUsageLines(ctx, console, day, day.AddDate(0, 0, 1), nil, 10)
	if err != nil || len(lines) != 1 || lines[0].JobID != "photo_c1" || lines[0].Charged != 30 {
		t.Fatalf("the console key's lines %+v %v", lines, err)
	}
	if n, err := s.Usage.LedgerUsageLineCount(ctx, "acct_c", day, day.AddDate(0, 0, 1)); err != nil || n != 1 {
		t.Fatalf("line count %d %v, want 1", n, err)
	}
}

// RunConsoleKeysMigration upgrades a database of the release before the console's key
// was a record (migration 00115), holding playground charges under the id 'console', which no
// key record had: migration 00120 gives every account its console key, moves the charges,
// their job and the usage rollups to it, so that usage by key, the per-charge export and the
// key's spend all show the console's runs, and leaves the account's own keys as they were.
func RunConsoleKeysMigration(t *testing.T, openAt func(t testing.TB, version int64) Stores) {
	ctx := context.Background()
	now := time.Now().UTC()
	s := openAt(t, 115)
	old := seedBeforeConsoleKeys(t, s, now)
	if err := s.Inspect.Migrate(ctx); err != nil {
		t.Fatal(err)
	}

	console := auth.ConsoleKeyIDOf("acct_old")
	k, err := s.Auth.Key(ctx, console)
	want := auth.NewConsoleKey("acct_old", old.CreatedAt)
	if err != nil || !k.Console || k.AccountID != "acct_old" || k.SecretHash != want.SecretHash || !slices.Equal(k.Scopes, auth.Current) ||
		!k.CreatedAt.Equal(old.CreatedAt) || !k.ExpiresAt.Equal(want.ExpiresAt) || k.Ceiling != want.Ceiling || k.RevokedAt != nil ||
		k.SpentIn(now) != 25 {
		t.Fatalf("acct_old's console key %+v %v, want %+v spending 25 this month", k, err, want)
	}
	if idle, err := s.Auth.Key(ctx, auth.ConsoleKeyIDOf("acct_idle")); err != nil || !idle.Console || idle.SpentIn(now) != 0 {
		t.Fatalf("acct_idle's console key %+v %v", idle, err)
	}
	if own, err := s.Auth.Key(ctx, "oldkey000001"); err != nil || own.Console || own.Status(now) != auth.KeyLive {
		t.Fatalf("the account's own key after the migration %+v %v", own, err)
	}
	var keyID string
	if err := s.Inspect.SQL().QueryRowContext(ctx, `SELECT key_id FROM jobs WHERE id = 'photo_c2'`).Scan(&keyID); err != nil || keyID != console {
		t.Fatalf("the job in flight is under %q (%v), want %s", keyID, err, console)
	}
	for _, table := range []string{"ledger_entries", "jobs", "usage_daily", "usage_monthly"} {
		var n int
		if err := s.Inspect.SQL().QueryRowContext(ctx, `SELECT count(*) FROM `+table+` WHERE key_id = 'console'`).Scan(&n); err != nil || n != 0 {
			t.Fatalf("%s keeps %d rows under 'console' (%v)", table, n, err)
		}
	}

	consoleUsageAgrees(t, s, "acct_old", console, now)
}

// seedBeforeConsoleKeys writes, as the release before the console's keys did, an account
// with a key of its own, a playground run charged 40 and refunded 15 and another in flight
// (both under the key id "console"), and an idle account; it answers the first account.
func seedBeforeConsoleKeys(t *testing.T, s Stores, now time.Time) auth.Account {
	ctx := context.Background()
	old := NewAccount(t, s.Ledger, "acct_old", auth.Pro, 1000)
	NewAccount(t, s.Ledger, "acct_idle", auth.Pro, 0)
	if _, err := s.Inspect.SQL().ExecContext(ctx, `INSERT INTO api_keys (id, account_id, secret_hash, scopes, created_at, expires_at, ceiling_mode, spent_period, spent)
 VALUES ('oldkey000001', 'acct_old', 'h', 'jobs:read,assets:read', $1, $2, 'plan', '', 0)`, now.UnixMicro(), now.AddDate(0, 1, 0).UnixMicro()); err != nil {
		t.Fatal(err)
	}
	// A playground run charged 40 and refunded 15, as the release before wrote them;
	// another one still in flight.
	err := s.Ledger.LedgerTx(ctx, func(tx ledger.Tx) error {
		if _, err := tx.LedgerApply(ctx, ledger.Entry{AccountID: "acct_old", KeyID: "console", JobID: "photo_c1", Model: "image-4b",
			Kind: ledger.Charge, Amount: -40, At: now}, 0); err != nil {
			return err
		}
		_, err := tx.LedgerApply(ctx, ledger.Entry{AccountID: "acct_old", KeyID: "console", JobID: "photo_c1", Model: "image-4b",
			Kind: ledger.Refund, Amount: 15, At: now}, math.MinInt64)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Inspect.SQL().ExecContext(ctx, `INSERT INTO jobs (account_id, id, key_id, request_id, model, product, idem_key, input, status, quoted, created_at)
 VALUES ('acct_old', 'photo_c2', 'console', 'req_c2', 'image-4b', 'photo', 'c2', '{}', 'IN_PROGRESS', 10, $1)`, now.UnixMicro()); err != nil {
		t.Fatal(err)
	}
	return old
}

// consoleUsageAgrees: usage by key and the per-charge export agree on the console's run of
// the migrated account (40 charged, 15 refunded, one job).
func consoleUsageAgrees(t *testing.T, s Stores, account, console string, now time.Time) {
	ctx := context.Background()
	w, err := ledger.ParseWindow("month", now)
	if err != nil {
		t.Fatal(err)
	}
	u := ledger.NewUsage(s.Usage)
	byKey, err := u.ByKey(ctx, account, w)
	if err != nil || len(byKey) != 1 || byKey[0].KeyID != console || byKey[0].Charged != 40 || byKey[0].Refunded != 15 || byKey[0].Jobs != 1 {
		t.Fatalf("usage by key %+v %v", byKey, err)
	}
	exp, err := u.ExportLines(ctx, account, w)
	if err != nil {
		t.Fatal(err)
	}
	var charged, refunded ledger.Credits
	var lines int
	if err := exp.Each(ctx, func(l ledger.UsageLine) error {
		if l.KeyID != console {
			t.Errorf("a line under %q", l.KeyID)
		}
		charged, refunded, lines = charged+l.Charged, refunded+l.Refunded, lines+1
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if exp.Rows != 2 || lines != 2 || charged != byKey[0].Charged || refunded != byKey[0].Refunded {
		t.Fatalf("per-charge export: %d lines (%d counted), %d charged, %d refunded; usage by key %+v", lines, exp.Rows, charged, refunded, byKey[0])
	}
}
