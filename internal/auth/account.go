package auth

import (
	"crypto/rand"
	"errors"
	"fmt"
	"time"
)

// Plan is an account's plan.
type Plan string

const (
	Free     Plan = "free"
	Pro      Plan = "pro"
	Max      Plan = "max"
	Ultimate Plan = "ultimate"
)

// Plans lists every plan.
var Plans = []Plan{Free, Pro, Max, Ultimate}

// ParsePlan reads a plan name.
func ParsePlan(s string) (Plan, error) {
	for _, p := range Plans {
		if string(p) == s {
			return p, nil
		}
	}
	return "", fmt.Errorf("unknown plan %q (free, pro, max, ultimate)", s)
}

// Paid reports whether the plan is paid (25 live keys instead of 2).
func (p Plan) Paid() bool { return p != Free }

// MaxLiveKeys is the live-key limit of the plan (KEY-27).
func (p Plan) MaxLiveKeys() int {
	if p.Paid() {
		return 25
	}
	return 2
}

// MaxMonthlyAllowance is the largest monthly allowance a plan or an account may have: a balance
// credited it every month for a million years stays far inside the ledger's int64 credits.
const MaxMonthlyAllowance = 1_000_000_000_000

// DefaultMonthlyAllowance is the monthly credit grant of each plan as shipped; operators
// change an account's figure with `modelexec accounts set --allowance`.
func DefaultMonthlyAllowance(p Plan) int64 {
	switch p {
	case Pro:
		return 2000
	case Max:
		return 6000
	case Ultimate:
		return 15000
	}
	return 0
}

// Status is an account's standing.
type Status string

const (
	Live      Status = "live"
	Banned    Status = "banned"
	Suspended Status = "suspended"
	Limited   Status = "limited" // may read but not spend or write
)

// ParseStatus reads a status name.
func ParseStatus(s string) (Status, error) {
	switch Status(s) {
	case Live, Banned, Suspended, Limited:
		return Status(s), nil
	}
	return "", fmt.Errorf("unknown status %q (live, banned, suspended, limited)", s)
}

// Account is one customer account.
type Account struct {
	ID               string
	Plan             Plan
	Status           Status
	Balance          int64 // credits; always the sum of the account's ledger entries
	MonthlyAllowance int64 // plan's monthly credits in force, promotion lift included
	// AllowancePeriod is the last UTC month (Period) whose allowance was credited. An account
	// is created with the month it was created in: its opening balance stands for that month,
	// and the allowance is credited once at the start of each later month (AllowanceDue).
	AllowancePeriod string
	CreatedAt       time.Time
	// PassOnly accounts run jobs only when a pass or promotion pays: otherwise
	// model_not_in_plan (no pass takes the model) or pass_does_not_cover (one does, not this shape).
	PassOnly bool
	// PassCount is how many passes and promotions the account was ever given: a submit reads
	// the passes only when there are some.
	PassCount int
}

// Period is the UTC year-month of t: credits periods and key spend are calendar months in UTC.
func Period(t time.Time) string { return t.UTC().Format("2006-01") }

// AllowanceDue reports whether the account's monthly allowance for now's period is still to
// be credited: a positive allowance, not yet credited this month, and not banned. Periods
// compare as strings ("2026-11" < "2026-12").
func (a Account) AllowanceDue(now time.Time) bool {
	return a.MonthlyAllowance > 0 && a.Status != Banned && a.AllowancePeriod < Period(now)
}

// ErrNotFound is returned by stores for a missing account or key.
var ErrNotFound = errors.New("auth: not found")

// ErrTooManyKeys is returned when minting would exceed the plan's live-key limit.
var ErrTooManyKeys = errors.New("auth: live-key limit reached")

// NewID is prefix plus 16 random lower-case letters and digits: the ids of accounts, passes
// and console users, whoever creates them (the CLI or the web console).
func NewID(prefix string) string {
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
	var b [16]byte
	_, _ = rand.Read(b[:])
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = alphabet[int(c)%len(alphabet)]
	}
	return prefix + string(out)
}
