package ratelimit

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Rate is one bucket's figures: it holds Burst tokens when full and gets Refill tokens back every
// Period, evenly (one token every Interval). A zero Burst is a bucket that never admits anything.
type Rate struct {
	Burst  int64         // capacity when full
	Refill int64         // tokens regained per Period
	Period time.Duration // 1 minute for request buckets, 24 hours for egress
}

// The bounds of a bucket's figures (Rate.Check). Within them the bucket arithmetic, in
// nanoseconds in int64 in process and in microseconds in the Redis script's doubles (exact below
// 2^53), neither overflows nor loses precision: a theoretical arrival time runs at most MaxFill
// ahead of the clock.
const (
	MaxTokens   = 1_000_000_000_000 // the most a bucket holds (burst) or regains in a period (refill)
	MaxPeriod   = 366 * Day         // the longest refill period
	MaxFill     = 10 * 365 * Day    // the longest an empty bucket may take to fill again
	MinInterval = time.Microsecond  // the shortest time a token takes to come back
)

// Interval is the time it takes the bucket to regain one token, 0 for a zero-capacity bucket. It
// is at least MinInterval: a faster refill regains one token a microsecond (the Redis limiter
// counts microseconds, and a zero interval would leave nothing to divide by).
func (r Rate) Interval() time.Duration {
	if r.Zero() {
		return 0
	}
	return max(r.Period/time.Duration(r.Refill), MinInterval)
}

// Fill is how long an empty bucket takes to fill again (Burst intervals; the GCRA's tolerance),
// saturated at the longest duration rather than overflowing.
func (r Rate) Fill() time.Duration {
	i := r.Interval()
	if i == 0 {
		return 0
	}
	return time.Duration(mulSat(r.Burst, int64(i)))
}

// Check names each figure outside the bounds the arithmetic holds to, with the range it may
// take ("burst: 1099511627776 is out of range 0 to 315360000 at refill 60 per 1m …"), for the
// caller to place in its file. A zero burst or refill is a bucket that admits nothing.
func (r Rate) Check() []string {
	var bad []string
	refillOK := r.Refill >= 0 && r.Refill <= MaxTokens
	if !refillOK {
		bad = append(bad, fmt.Sprintf("refill: %d is out of range 0 to %d (0 is a bucket that admits nothing)", r.Refill, int64(MaxTokens)))
	}
	periodOK := r.Period > 0 && r.Period <= MaxPeriod
	if !periodOK {
		bad = append(bad, fmt.Sprintf("period: %s is out of range: more than 0, at most %s", FormatPeriod(r.Period), FormatPeriod(MaxPeriod)))
	}
	most, why := int64(MaxTokens), "(0 is a bucket that admits nothing)"
	if refillOK && periodOK && r.Refill > 0 {
		interval := max(r.Period/time.Duration(r.Refill), MinInterval)
		if n := int64(MaxFill / interval); n < most {
			most, why = n, fmt.Sprintf("at refill %d per %s (an empty bucket must fill again within %s)", r.Refill, FormatPeriod(r.Period), FormatPeriod(MaxFill))
		}
	}
	if r.Burst < 0 || r.Burst > most {
		bad = append(bad, fmt.Sprintf("burst: %d is out of range 0 to %d %s", r.Burst, most, why))
	}
	return bad
}

// FormatPeriod writes a period the way a plans file gives it ("1m", "24h", "87600h").
func FormatPeriod(d time.Duration) string {
	switch {
	case d > 0 && d%time.Hour == 0:
		return fmt.Sprintf("%dh", d/time.Hour)
	case d > 0 && d%time.Minute == 0:
		return fmt.Sprintf("%dm", d/time.Minute)
	}
	return d.String()
}

// mulSat is a×b for non-negative a and b, saturated at the largest int64.
func mulSat(a, b int64) int64 {
	if a != 0 && b > math.MaxInt64/a {
		return math.MaxInt64
	}
	return a * b
}

// Zero reports a bucket of capacity 0 (plan_has_no_api_generate).
func (r Rate) Zero() bool { return r.Burst <= 0 || r.Refill <= 0 }

// Plan names of spec 02 (DESIGN decision 9).
const (
	Free     = "free"
	Pro      = "pro"
	Max      = "max"
	Ultimate = "ultimate"
)

// MB is the egress unit: 10^6 bytes (DESIGN decision 24).
const MB = 1_000_000

// Day is the egress refill period: the daily allowance refills evenly over 24 hours.
const Day = 24 * time.Hour

func perMinute(burst, n int64) Rate { return Rate{Burst: burst, Refill: n, Period: time.Minute} }

// perDay is the egress bucket: an allowance of mb megabytes a day is a bucket of mb tokens that
// refills evenly over 24 hours (DESIGN decision 24).
func perDay(mb int64) Rate { return Rate{Burst: mb, Refill: mb, Period: Day} }

// Plans is the bucket table of spec 02 "Rate-limit buckets", as data.
//
// The spec leaves the interactive bucket "not shown"; the figures chosen here follow the
// generate column's shape: free has none (capacity 0, so 403 plan_has_no_api_generate with
// bucket interactive, which the spec's code table anticipates), and each paid plan gets twice
// its generate burst at a refill that lets a chat turn every 1-2 seconds:
//
//	interactive  free: none   pro: burst 10, 30/min   max: burst 20, 60/min   ultimate: burst 40, 120/min
//
// Every burst is a multiple of 5, so the new-account multiplier of 0.2 is exact.
var Plans = Table{
	Free: {
		Read:        perMinute(20, 60),
		Write:       perMinute(10, 20),
		Generate:    Rate{Period: time.Minute}, // none (capacity 0)
		Egress:      perDay(200),               // 200 MB/day
		Interactive: Rate{Period: time.Minute}, // none (capacity 0), chosen
	},
	Pro: {
		Read:        perMinute(60, 300),
		Write:       perMinute(20, 60),
		Generate:    perMinute(5, 20),
		Egress:      perDay(5_000), // 5 GB/day
		Interactive: perMinute(10, 30),
	},
	Max: {
		Read:        perMinute(120, 600),
		Write:       perMinute(40, 120),
		Generate:    perMinute(10, 60),
		Egress:      perDay(20_000), // 20 GB/day
		Interactive: perMinute(20, 60),
	},
	Ultimate: {
		Read:        perMinute(200, 1200),
		Write:       perMinute(60, 240),
		Generate:    perMinute(20, 120),
		Egress:      perDay(50_000), // 50 GB/day
		Interactive: perMinute(40, 120),
	},
}

// Table is a bucket table: each plan's rate per bucket. Plans is the one shipped; an
// operator's plans file (`serve --plans`) gives another, handed to the limiters' options.
type Table map[string]map[Bucket]Rate

// or returns t, or the shipped table when t is nil.
func (t Table) or() Table {
	if t == nil {
		return Plans
	}
	return t
}

// Buckets lists every bucket, in the order of spec 02.
var Buckets = []Bucket{Read, Write, Generate, Egress, Interactive}

// NewAccountWindow is how long after the account's creation (not the key's) every limit is
// multiplied by NewAccountFactor.
const NewAccountWindow = 24 * time.Hour

// NewAccountFactor is the multiplier of spec 02 rule 4, as a fraction (1/5 = 0.2).
const NewAccountFactor = 0.2

// ErrUnknownPlan and ErrUnknownBucket are programming or data errors (500 internal), never
// limiter failures: the Guard does not count them.
var (
	ErrUnknownPlan   = errors.New("ratelimit: unknown plan")
	ErrUnknownBucket = errors.New("ratelimit: unknown bucket")
)

// Policy returns the rate in force for a plan's bucket at now: the table's figures, multiplied by
// 0.2 while the account is younger than 24 hours. Under the multiplier the burst is floored at 1
// for any non-zero limit and a zero stays zero; the refill slows fivefold (the period is
// stretched rather than the count cut, so it stays exact).
func Policy(plan string, b Bucket, accountCreated, now time.Time) (Rate, error) {
	return Plans.Policy(plan, b, accountCreated, now)
}

// Policy is the package Policy over the table t (the shipped one when t is nil).
func (t Table) Policy(plan string, b Bucket, accountCreated, now time.Time) (Rate, error) {
	buckets, ok := t.or()[plan]
	if !ok {
		return Rate{}, fmt.Errorf("%w %q", ErrUnknownPlan, plan)
	}
	r, ok := buckets[b]
	if !ok {
		return Rate{}, fmt.Errorf("%w %q", ErrUnknownBucket, b)
	}
	if NewAccount(accountCreated, now) {
		r = r.newAccount()
	}
	return r, nil
}

// NewAccount reports whether an account created at created is inside its first 24 hours at now.
// A zero created time is an old account.
func NewAccount(created, now time.Time) bool {
	return !created.IsZero() && now.Sub(created) < NewAccountWindow
}

// newAccount applies the 0.2 multiplier: burst/5 floored at 1 unless zero, refill five times slower.
func (r Rate) newAccount() Rate {
	if r.Zero() {
		return r
	}
	r.Burst /= 5
	if r.Burst < 1 {
		r.Burst = 1
	}
	r.Period *= 5
	return r
}

// EgressCost is what a download of n bytes takes from the egress bucket: whole megabytes
// (10^6 bytes) rounded up, minimum 1.
func EgressCost(n int64) int64 {
	if n <= 0 {
		return 1
	}
	c := n / MB
	if n%MB != 0 {
		c++
	}
	return c
}
