package auth

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelexec/modelexec/internal/apierr"
)

// The console's key is a record of the account's keys: written on first need, once however
// many ask at once, with every current scope, no ceiling of its own and no expiry; the
// console's principal carries that record.
func TestConsoleKeyIsARecordPerAccount(t *testing.T) {
	f := newFixture(t, "s")
	a := f.account(t, "acct_1", Pro)
	f.account(t, "acct_2", Pro)
	ctx := context.Background()
	var wg sync.WaitGroup
	got := make([]KeyRecord, 8)
	for i := range got {
		wg.Go(func() {
			k, err := f.svc.ConsoleKey(ctx, "acct_1")
			if err != nil {
				t.Error(err)
			}
			got[i] = k
		})
	}
	wg.Wait()
	keys, _ := f.store.Keys(ctx, "acct_1")
	if len(keys) != 1 {
		t.Fatalf("%d keys after concurrent first uses, want the one console key", len(keys))
	}
	k := keys[0]
	for _, g := range got {
		if g.ID != k.ID {
			t.Fatalf("answered %s, stored %s", g.ID, k.ID)
		}
	}
	if k.ID != ConsoleKeyIDOf("acct_1") || k.AccountID != "acct_1" || !k.Console || !slices.Equal(k.Scopes, Current) ||
		k.Ceiling.Mode != NoCap || k.Ceiling.Effective(a.MonthlyAllowance) != 0 || k.RevokedAt != nil {
		t.Fatalf("console key %+v", k)
	}
	if k.Status(t0.AddDate(100, 0, 0)) != KeyLive || k.ExpiringSoon(t0.AddDate(100, 0, 0)) {
		t.Fatalf("the console's key expires: %v", k.ExpiresAt)
	}
	if other, err := f.svc.ConsoleKey(ctx, "acct_2"); err != nil || other.ID == k.ID || other.AccountID != "acct_2" {
		t.Fatalf("another account's console key %+v %v", other, err)
	}
	p, err := f.svc.ConsolePrincipal(ctx, a)
	if err != nil || p.Key.ID != k.ID || !p.Key.Console || p.Account.ID != "acct_1" || p.Unconfirmed {
		t.Fatalf("console principal %+v %v", p, err)
	}
}

// KEY-07, KEY-09: nothing can sign a request with the console's key. Its id is not a public id
// the parser reads, and a key presenting the id in any shape is refused invalid_api_key; its
// stored hash is matched by no secret.
func TestKEY09_ConsoleKeySignsNothing(t *testing.T) {
	f := newFixture(t, "s")
	f.account(t, "acct_1", Pro)
	k, err := f.svc.ConsoleKey(context.Background(), "acct_1")
	if err != nil {
		t.Fatal(err)
	}
	for _, raw := range []string{k.ID, std.Prefix + k.ID, std.Prefix + k.ID + "_" + strings.Repeat("A", secretLen) + "AAAAAA"} {
		if _, err := f.svc.Parse(raw); !apierr.Is(err, apierr.InvalidAPIKey) {
			t.Fatalf("%q parsed: %v", raw, err)
		}
	}
	h := NewHasher("s")
	for _, secret := range []string{"", "none", k.SecretHash, strings.Repeat("A", secretLen)} {
		if h.Equal(secret, k.SecretHash) {
			t.Fatalf("secret %q matches the console key's hash", secret)
		}
	}
	if len(k.ID) == idLen && inAlphabet(k.ID, isBase62) {
		t.Fatalf("console key id %q has the shape of a public id", k.ID)
	}
}

// KEY-24, KEY-27: the console's key cannot be revoked nor capped, and holds no live-key slot:
// a free account mints its two keys beside it.
func TestKEY27_ConsoleKeyHoldsNoSlotAndIsNotRevocable(t *testing.T) {
	f := newFixture(t, "s")
	a := f.account(t, "acct_1", Free)
	ctx := context.Background()
	p, err := f.svc.ConsolePrincipal(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	if p.Key.HoldsSlot(t0) {
		t.Fatal("the console's key holds a live-key slot")
	}
	for range Free.MaxLiveKeys() {
		f.mint(t, MintParams{AccountID: "acct_1"})
	}
	if _, err := f.svc.Mint(ctx, MintParams{AccountID: "acct_1"}); !errors.Is(err, ErrTooManyKeys) {
		t.Fatalf("a third key on the free plan: %v", err)
	}
	if _, err := f.svc.Revoke(ctx, p.Key.ID); !errors.Is(err, ErrConsoleKey) {
		t.Fatalf("revoking the console's key: %v", err)
	}
	if _, err := f.svc.SetCeiling(ctx, p.Key.ID, CeilingRequest{Amount: 10}); !errors.Is(err, ErrConsoleKey) {
		t.Fatalf("capping the console's key: %v", err)
	}
	k, _ := f.store.Key(ctx, p.Key.ID)
	if k.RevokedAt != nil || k.Ceiling.Mode != NoCap {
		t.Fatalf("console key after refusals %+v", k)
	}
}

// ORD-06: the console's principal is refused for a banned, suspended or limited account, as a
// key's request would be, before anything is written.
func TestConsolePrincipalAccountStatus(t *testing.T) {
	for _, c := range []struct {
		status Status
		want   apierr.Code
	}{{Banned, apierr.AccountBanned}, {Suspended, apierr.AccountSuspended}, {Limited, apierr.AccountLimited}} {
		f := newFixture(t, "s")
		a := f.account(t, "acct_1", Pro)
		a.Status = c.status
		if _, err := f.svc.ConsolePrincipal(context.Background(), a); !apierr.Is(err, c.want) {
			t.Fatalf("%s: %v, want %s", c.status, err, c.want)
		}
		if keys, _ := f.store.Keys(context.Background(), "acct_1"); len(keys) != 0 {
			t.Fatalf("%s: a refused principal wrote %d keys", c.status, len(keys))
		}
	}
}
