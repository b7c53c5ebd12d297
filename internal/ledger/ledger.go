package ledger

import (
	"math"
	"slices"
	"time"
)

// Kind names a ledger movement.
type Kind string

const (
	Grant  Kind = "grant"  // operator adds (or removes) credits
	Charge Kind = "charge" // a job's quote taken at start (negative amount)
	Refund Kind = "refund" // the part of a charge given back at settlement (positive amount)
	// Allowance is the plan's monthly credits, credited once at the start of each UTC month.
	Allowance Kind = "allowance"
)

// Entry is one movement of credits on an account.
type Entry struct {
	AccountID string
	KeyID     string
	JobID     string
	Model     string // the job's model slug, for the usage rollup ("" for grants and allowances)
	Kind      Kind
	Amount    Credits // signed: a charge is negative
	At        time.Time
}

// Settle returns what a job that used `done` (0..1) of its quoted work costs, and what is
// given back. The charge never exceeds the quote; a failed job (done = 0) is refunded whole.
func Settle(reserved int64, done float64) (charge, refund int64) {
	if done >= 1 || math.IsNaN(done) {
		return reserved, 0
	}
	if done <= 0 {
		return 0, reserved
	}
	charge = int64(math.Ceil(float64(reserved) * done))
	if charge > reserved {
		charge = reserved
	}
	return charge, reserved - charge
}

// Pass is a pass or a promotion an account holds: it pays for jobs instead of credits.
type Pass struct {
	ID         string
	AccountID  string
	Name       string
	Promotion  bool      // a promotion rather than a pass
	Models     []string  // model slugs it covers ("door"); empty covers every model
	MaxCredits int64     // largest quote it covers ("shape"); 0 means any
	UsesLeft   int64     // -1 unlimited
	ExpiresAt  time.Time // zero: never
}

// Active reports whether the pass can pay at now.
func (p Pass) Active(now time.Time) bool {
	return p.UsesLeft != 0 && (p.ExpiresAt.IsZero() || now.Before(p.ExpiresAt))
}

// Coverage is the status document's `coverage` object.
type Coverage struct {
	By     *string `json:"by"`             // "pass", "promotion", or null when a held pass did not cover
	Pass   string  `json:"pass,omitempty"` // the pass name when by = pass
	Miss   *Miss   `json:"miss,omitempty"`
	PassID string  `json:"-"`
}

// Miss says why a held pass did not cover the job.
type Miss struct {
	Pass string `json:"pass"`
	Why  string `json:"why"` // door (model not in the pass) or shape (request beyond it)
}

// Covered reports whether a pass or promotion pays.
func (c *Coverage) Covered() bool { return c != nil && c.By != nil }

// Cover decides who pays for a job of model quoted at quote: a promotion first, then a pass;
// nil when the account holds none that is active.
func Cover(passes []Pass, model string, quote int64, now time.Time) *Coverage {
	var miss *Miss
	for _, promo := range []bool{true, false} {
		for _, p := range passes {
			if p.Promotion != promo || !p.Active(now) {
				continue
			}
			switch {
			case len(p.Models) > 0 && !slices.Contains(p.Models, model):
				if miss == nil && !p.Promotion {
					miss = &Miss{Pass: p.Name, Why: "door"}
				}
			case p.MaxCredits > 0 && quote > p.MaxCredits:
				// A pass that takes the model but not this shape says more than a door miss.
				if (miss == nil || miss.Why == "door") && !p.Promotion {
					miss = &Miss{Pass: p.Name, Why: "shape"}
				}
			default:
				by := "pass"
				c := &Coverage{By: &by, Pass: p.Name, PassID: p.ID}
				if p.Promotion {
					by = "promotion"
					c.Pass = ""
				}
				return c
			}
		}
	}
	if miss != nil {
		return &Coverage{Miss: miss}
	}
	return nil
}
