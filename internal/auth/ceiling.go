package auth

import (
	"fmt"

	"github.com/modelexec/modelexec/internal/apierr"
)

// CeilingMode says where a key's monthly spend cap comes from (spec 02 "Per-key credit ceilings").
type CeilingMode string

const (
	// FollowPlan: the cap is the plan's monthly credits in force, read at every charge;
	// a plan granting none gives no cap.
	FollowPlan CeilingMode = "plan"
	// Fixed: a whole positive figure.
	Fixed CeilingMode = "fixed"
	// NoCap: for keys imported from before caps were selectable that held none, and for the
	// console's key (console_key.go), which the balance and the account's passes bound.
	NoCap CeilingMode = "none"
)

// MaxFixedWithoutAllowance bounds a fixed cap while the plan grants no monthly credits.
const MaxFixedWithoutAllowance = 1_000_000

// Ceiling is a key's cap.
type Ceiling struct {
	Mode   CeilingMode
	Amount int64 // the figure when Fixed
	// Support is a cap set by the support team; it binds: the key may be lowered and raised back
	// only up to it, never switched to the plan or above it. 0 when none.
	Support int64
}

// Effective returns the cap in force for an account's allowance; 0 means no cap.
func (c Ceiling) Effective(monthlyAllowance int64) int64 {
	switch c.Mode {
	case Fixed:
		return c.Amount
	case FollowPlan:
		return monthlyAllowance
	}
	return 0
}

// maxFixed is the highest fixed figure allowed under an allowance.
func maxFixed(monthlyAllowance int64) int64 {
	if monthlyAllowance > 0 {
		return monthlyAllowance
	}
	return MaxFixedWithoutAllowance
}

// CeilingRequest is a change asked of a key's cap: FollowPlan, or a fixed Amount.
type CeilingRequest struct {
	FollowPlan bool
	Amount     int64
	BySupport  bool // the support team sets a binding cap
}

// Apply returns the key's new ceiling or the catalogued refusal (CEIL rules 3 and 4).
func (c Ceiling) Apply(r CeilingRequest, monthlyAllowance int64) (Ceiling, error) {
	if r.FollowPlan {
		if r.BySupport {
			return Ceiling{Mode: FollowPlan}, nil // support lifting its own hold
		}
		if c.Support > 0 {
			return c, apierr.New(apierr.CeilingHeld, "ceiling", c.Support)
		}
		return Ceiling{Mode: FollowPlan}, nil
	}
	if r.Amount <= 0 {
		return c, apierr.Newf(apierr.CeilingTooHigh, "A ceiling is a whole positive number; zero spells no cap.").With("ceiling", maxFixed(monthlyAllowance))
	}
	if limit := maxFixed(monthlyAllowance); r.Amount > limit {
		return c, apierr.New(apierr.CeilingTooHigh, "ceiling", limit)
	}
	if r.BySupport {
		return Ceiling{Mode: Fixed, Amount: r.Amount, Support: r.Amount}, nil
	}
	if c.Support > 0 && r.Amount > c.Support {
		return c, apierr.New(apierr.CeilingHeld, "ceiling", c.Support)
	}
	return Ceiling{Mode: Fixed, Amount: r.Amount, Support: c.Support}, nil
}

// LegacyCeiling converts the cap of a key made before caps were selectable (CEIL rule 6): it
// follows the plan only if its cap equalled the plan's monthly credits that day; otherwise it
// keeps the cap it held, or none.
func LegacyCeiling(capThatDay, planMonthlyThatDay int64) Ceiling {
	switch {
	case capThatDay > 0 && capThatDay == planMonthlyThatDay:
		return Ceiling{Mode: FollowPlan}
	case capThatDay > 0:
		return Ceiling{Mode: Fixed, Amount: capThatDay}
	}
	return Ceiling{Mode: NoCap}
}

// CheckSpend refuses a charge that would take the key past its cap (CEIL rule 5):
// 403 key_credit_ceiling with ceiling, spent, required. Its message says the same figures in
// words, so that a surface that shows the message alone (the compatibility surface) still tells
// a cap that is spent from a request that needs more than what is left of it.
func CheckSpend(c Ceiling, monthlyAllowance, spent, amount int64) error {
	limit := c.Effective(monthlyAllowance)
	if limit == 0 || spent+amount <= limit {
		return nil
	}
	var e *apierr.Error
	if left := limit - spent; left > 0 {
		e = apierr.Newf(apierr.KeyCreditCeiling, "This request needs %s, more than the %d left of this key's monthly credit ceiling of %d (%d spent this month).",
			credits(amount), left, limit, spent)
	} else {
		e = apierr.Newf(apierr.KeyCreditCeiling, "This key's monthly credit ceiling of %d is spent (%d spent this month); this request needs %s.",
			limit, spent, credits(amount))
	}
	return e.With("ceiling", limit).With("spent", spent).With("required", amount)
}

// credits writes an amount of credits in words.
func credits(n int64) string {
	if n == 1 {
		return "1 credit"
	}
	return fmt.Sprintf("%d credits", n)
}
