package auth

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The console's key. A run from the console's playground is charged under a key record of the
// account like any other, so the ledger sees an ordinary key: its spend is tracked, and usage
// by key and the per-charge export count the console's runs with the rest. Each account has
// one such record, marked Console. What sets it apart follows from the record itself:
//
//   - its id is ConsoleKeyIDOf(account), which no minted id can be (a public id is 12 base62
//     characters) and which the key parser never reads, so no request can name it; and its
//     stored secret hash is not a hash, so no secret would match it either;
//   - it holds every current scope and has no ceiling of its own (the balance and the
//     account's passes bound what it spends), and it does not expire;
//   - the owner sees it on the keys page, but cannot revoke it or set its ceiling
//     (ErrConsoleKey), and it holds no live-key slot (HoldsSlot).
//
// The record is written with the account's first need of it (ConsoleKey), as an insert that
// does nothing when the record is there: two processes doing it at once write one.

// consoleKeyPrefix starts the id of every console key: '_' is outside the public id's base62
// alphabet.
const consoleKeyPrefix = "console_"

// ConsoleKeyIDOf is the id of accountID's console key: "console_" and the account id.
func ConsoleKeyIDOf(accountID string) string { return consoleKeyPrefix + accountID }

// ConsoleKeyName is what the console calls the console's key.
const ConsoleKeyName = "Console"

// consoleSecretHash is what a console key stores in place of a secret's hash: not 64
// hexadecimal digits, so Hasher.Equal never matches it, whatever is presented.
const consoleSecretHash = "none"

// consoleKeyExpiry is the expiry of every console key: never, in effect.
var consoleKeyExpiry = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// ErrConsoleKey refuses a change the console's key does not take: it cannot be revoked and
// has no ceiling of its own.
var ErrConsoleKey = errors.New("auth: the console's key belongs to the account's console: it cannot be revoked and has no ceiling of its own")

// NewConsoleKey is the record of accountID's console key, as written at now.
func NewConsoleKey(accountID string, now time.Time) KeyRecord {
	now = now.UTC()
	return KeyRecord{ID: ConsoleKeyIDOf(accountID), AccountID: accountID, SecretHash: consoleSecretHash,
		Scopes: append([]Scope(nil), Current...), CreatedAt: now, ExpiresAt: consoleKeyExpiry, Ceiling: Ceiling{Mode: NoCap},
		SpentPeriod: Period(now), Console: true}
}

// ConsoleKey answers accountID's console key, writing it first when the account has none yet
// (accounts created before it existed, or never in the console).
func (s *Service) ConsoleKey(ctx context.Context, accountID string) (KeyRecord, error) {
	id := ConsoleKeyIDOf(accountID)
	k, err := s.store.Key(ctx, id)
	if errors.Is(err, ErrNotFound) {
		if err := s.store.InsertConsoleKey(ctx, NewConsoleKey(accountID, s.now())); err != nil {
			return KeyRecord{}, fmt.Errorf("auth: write the console's key of %s: %w", accountID, err)
		}
		k, err = s.store.Key(ctx, id)
	}
	if err != nil {
		return KeyRecord{}, fmt.Errorf("auth: read the console's key of %s: %w", accountID, err)
	}
	return k, nil
}

// ConsolePrincipal is who submits from a signed-in person's console: the account itself,
// through its console key. The account's status is checked as a key's request would be, before
// anything is written: a banned, suspended or limited account cannot submit from the console
// either.
func (s *Service) ConsolePrincipal(ctx context.Context, a Account) (Principal, error) {
	if err := accountStanding(a, false); err != nil {
		return Principal{}, err
	}
	k, err := s.ConsoleKey(ctx, a.ID)
	if err != nil {
		return Principal{}, err
	}
	if err := Standing(a, k, s.now(), false); err != nil {
		return Principal{}, err
	}
	return Principal{Account: a, Key: k}, nil
}
