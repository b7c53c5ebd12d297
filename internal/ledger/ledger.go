package ledger

import (
	"math"
	"math/big"
	"slices"
	"time"

	"github.com/modelexec/modelexec/internal/catalog"
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

// Settle is the one rule of what a settlement charges: what a job that did `done` (0..1) of its
// quoted work costs, and what is given back of the reserved credits. A completed job (done 1)
// keeps the whole quote; a failed one (done 0) is refunded whole; the charge never exceeds
// reserved.
//
// exact is the unrounded price of the quoted work (billed units × credits_per_unit, DESIGN 30),
// the figure reserved is the ceiling of: the work done costs ceil(exact × done), rounded up once
// (PRICE-10, DESIGN 29). Pricing it from the rounded quote would round twice: 42 of 50 steps of a
// quote of 9.5233 credits cost 8, where ceil(10 × 42/50) says 9. nil prices the work from
// reserved itself, as a language model's settlement asks: its runner meters the tokens and
// reports the share of the rounded quote their cost makes (chat.Fraction).
func Settle(reserved int64, done float64, exact *big.Rat) (charge, refund int64) {
	if done >= 1 || math.IsNaN(done) {
		return reserved, 0
	}
	if done <= 0 {
		return 0, reserved
	}
	if exact == nil {
		charge = int64(math.Ceil(float64(reserved) * done))
	} else {
		charge = catalog.CeilCredits(new(big.Rat).Mul(exact, fraction(done)))
	}
	charge = min(charge, reserved)
	return charge, reserved - charge
}

// fraction is done (0 < done < 1) as the fraction it stands for: the simplest one among the
// reals that round to the float done. A runner reports a ratio of small whole numbers (steps
// done / steps); its float is a hair off (42/50 is 0.83999…), and a price times that hair would
// round up to a credit more, or less, than the work done costs.
func fraction(done float64) *big.Rat {
	x := new(big.Rat).SetFloat64(done)
	half := big.NewRat(1, 2)
	lo := new(big.Rat).SetFloat64(math.Nextafter(done, 0))
	lo.Add(lo, x).Mul(lo, half)
	hi := new(big.Rat).SetFloat64(math.Nextafter(done, 1))
	hi.Add(hi, x).Mul(hi, half)
	return simplest(lo, hi)
}

// simplest is the fraction of smallest denominator in [lo, hi] (0 < lo < hi), by continued
// fractions: the whole number between them if there is one, else floor(lo) + 1/y for the
// simplest y between the reciprocals of what is left.
func simplest(lo, hi *big.Rat) *big.Rat {
	if lo.IsInt() {
		return new(big.Rat).Set(lo)
	}
	fl := new(big.Int).Quo(lo.Num(), lo.Denom()) // floor: lo is positive
	next := new(big.Rat).SetInt(new(big.Int).Add(fl, big.NewInt(1)))
	if next.Cmp(hi) <= 0 {
		return next
	}
	whole := new(big.Rat).SetInt(fl)
	y := simplest(new(big.Rat).Inv(new(big.Rat).Sub(hi, whole)), new(big.Rat).Inv(new(big.Rat).Sub(lo, whole)))
	return whole.Add(whole, y.Inv(y))
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
