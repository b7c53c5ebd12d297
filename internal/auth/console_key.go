package auth

import (
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
)

// ConsoleKeyID is the key id a job submitted from the console's playground carries. No key
// record has it (minted ids are 12 characters of another alphabet), so nothing can sign a
// request with it; the ledger keeps no per-key spend under it, and usage shows it as its own
// line beside the account's keys.
const ConsoleKeyID = "console"

// ConsolePrincipal is who submits from a signed-in person's console: the account itself,
// through a key record that exists only in memory with every current scope and no ceiling of
// its own (the balance and the account's passes still bound what it may spend). The account's
// status is checked as a key's request would be: a banned, suspended or limited account
// cannot submit from the console either.
func ConsolePrincipal(a Account, now time.Time) (Principal, error) {
	switch a.Status {
	case Banned:
		return Principal{}, apierr.New(apierr.AccountBanned)
	case Suspended:
		return Principal{}, apierr.New(apierr.AccountSuspended)
	case Limited:
		return Principal{}, apierr.New(apierr.AccountLimited)
	}
	return Principal{Account: a, Key: KeyRecord{ID: ConsoleKeyID, AccountID: a.ID, Scopes: append([]Scope(nil), Current...),
		CreatedAt: now, ExpiresAt: now.Add(time.Hour), Ceiling: Ceiling{Mode: NoCap}}}, nil
}
