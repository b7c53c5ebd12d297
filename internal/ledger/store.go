package ledger

import (
	"context"
	"errors"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
)

// ErrNotFound is returned by the store for a missing account, key or pass.
var ErrNotFound = auth.ErrNotFound

// ErrInsufficient is returned by Tx.Apply when a debit would take the balance below the floor
// it was given; the statement changed nothing.
var ErrInsufficient = errors.New("ledger: balance below the debit")

// Store is the persistence the ledger needs. Only this package calls it: every other package
// moves credits through Service (an architecture test keeps it so).
type Store interface {
	// LedgerTx runs fn in one transaction, committing when it returns nil.
	LedgerTx(ctx context.Context, fn func(Tx) error) error
	// LedgerDueAllowances lists up to limit accounts whose monthly allowance for period is
	// still to be credited (not banned, positive allowance, allowance_period < period).
	LedgerDueAllowances(ctx context.Context, period string, limit int) ([]string, error)
	// LedgerBalanceSum is the sum of an account's ledger entries.
	LedgerBalanceSum(ctx context.Context, accountID string) (int64, error)
	// LedgerAccount reads one account outside a transaction.
	LedgerAccount(ctx context.Context, id string) (auth.Account, error)
	// LedgerStanding reads an account and one of its keys outside a transaction, in one
	// statement (ErrNotFound when the key is not the account's).
	LedgerStanding(ctx context.Context, accountID, keyID string) (auth.Account, auth.KeyRecord, error)
}

// Tx is the ledger's view of one store transaction. The jobs engine's transaction offers it
// too, so a job's credits move in the job's own transaction.
type Tx interface {
	// LedgerLockAccount reads the account and holds its row until the transaction ends.
	LedgerLockAccount(ctx context.Context, id string) (auth.Account, error)
	// LedgerApply writes e, moves the balance by e.Amount, counts a charge or refund in the
	// usage rollup, adds a charge to its key's spend in the entry's period (starting the period
	// afresh when it changed), and returns the new balance. A debit (negative amount) that
	// would leave the balance below floor changes nothing and answers ErrInsufficient; pass
	// math.MinInt64 for an unguarded movement (operator grants may go negative).
	LedgerApply(ctx context.Context, e Entry, floor int64) (int64, error)
	// LedgerRefundSpend lowers the key's spend by refund in the period recorded on the job's
	// charge entry (written at or after since), when the key's spend is still of that period:
	// a refund given back after the key's spend moved on to a later month has nothing left to
	// lower, and never lowers the later month's.
	LedgerRefundSpend(ctx context.Context, keyID, jobID string, since time.Time, refund int64) error
	// LedgerHold locks the accounts of pairs, each once and in the order given (sorted by
	// account, so that transactions holding several never wait on each other in a cycle), and
	// reads them with the keys named and each account's jobs in flight, all as they stand once
	// the locks are held (a read made after waiting for a lock sees what its holder committed),
	// in one round trip where the store can. It answers one account and key for each pair
	// whose key is the account's, in the order given; the others are left out.
	LedgerHold(ctx context.Context, pairs []AccountKey) (HeldRows, error)
	// LedgerChargeAll writes charges taken on accounts the transaction holds (Held.Write): each
	// charge's entry with the balance it leaves (in the order given), each account's balance and
	// each key's spend in the charges' period moved by their sums, and the usage rollups; in one
	// statement where the store can. The balances are not guarded: Held judged them under the
	// transaction's locks.
	LedgerChargeAll(ctx context.Context, cs []Taken) error
	// LedgerPasses lists the account's passes and promotions.
	LedgerPasses(ctx context.Context, accountID string) ([]Pass, error)
	// LedgerUsePass takes one use of a pass with uses left (an unlimited one is untouched).
	LedgerUsePass(ctx context.Context, passID string) error
	// LedgerInsertPass stores a pass and counts it on its account.
	LedgerInsertPass(ctx context.Context, p Pass) error
	// LedgerClaimAllowance moves the account's allowance period to period when it is earlier,
	// and reports whether it did (two processes granting at once: one wins).
	LedgerClaimAllowance(ctx context.Context, accountID, period string) (bool, error)
	// LedgerInsertAccount creates an account with a zero balance.
	LedgerInsertAccount(ctx context.Context, a auth.Account) error
	// LedgerUpdateAccount writes the plan, allowance, status and pass-only flag of a.
	LedgerUpdateAccount(ctx context.Context, a auth.Account) error
	// LedgerRevokeKeys stamps every live key of the account revoked at `at`; it returns how many.
	LedgerRevokeKeys(ctx context.Context, accountID string, at time.Time) (int, error)
}

// UsageStore is the read side of the usage rollup the ledger writes with each charge and
// refund (one row per account, UTC day, key and model, with the same sums kept per calendar
// month and per day so that a long window's sums read a few hundred rows), and of the charge
// and refund entries themselves. Reads take whole UTC days: from and to are day starts (Usage
// rounds them). Reads that may be long come in pages, each one short statement resuming after
// the last row of the page before, so a slow reader of an export never holds a connection or a
// snapshot. Only this package calls it: every other package reads usage through Usage.
type UsageStore interface {
	// LedgerUsageByKey sums the rollup of accountID over [from, to) per key, ordered by key id;
	// an account without spend answers an empty, non-nil list.
	LedgerUsageByKey(ctx context.Context, accountID string, from, to time.Time) ([]KeyUsage, error)
	// LedgerUsagePer sums the rollup of accountID over [from, to) per UTC day (Day set) or per
	// model (Model set), in that order.
	LedgerUsagePer(ctx context.Context, accountID string, from, to time.Time, per UsageGroup) ([]DayUsage, error)
	// LedgerUsageDayCount counts the rollup rows of accountID over [from, to).
	LedgerUsageDayCount(ctx context.Context, accountID string, from, to time.Time) (int64, error)
	// LedgerUsageDays answers up to limit rollup rows of accountID over [from, to) in (day,
	// key, model) order, starting after the row `after` (nil: from the start).
	LedgerUsageDays(ctx context.Context, accountID string, from, to time.Time, after *DayUsage, limit int) ([]DayUsage, error)
	// LedgerUsageLineCount counts the charge and refund entries of accountID's keys written in
	// [from, to).
	LedgerUsageLineCount(ctx context.Context, accountID string, from, to time.Time) (int64, error)
	// LedgerUsageKeys lists the ids of every key accountID ever had (revoked ones too), in
	// order.
	LedgerUsageKeys(ctx context.Context, accountID string) ([]string, error)
	// LedgerUsageLines answers up to limit charge and refund entries of one key written in
	// [from, to), in the order they were written, starting after the entry `after` (nil: from
	// the start).
	LedgerUsageLines(ctx context.Context, keyID string, from, to time.Time, after *UsageLine, limit int) ([]UsageLine, error)
}

// HeldRows is what LedgerHold reads: Keys[i] is the key of the pair whose account is
// Accounts[i], and InFlight counts each held account's unsettled jobs (none: left out).
type HeldRows struct {
	Accounts []auth.Account
	Keys     []auth.KeyRecord
	InFlight map[string]int
}
