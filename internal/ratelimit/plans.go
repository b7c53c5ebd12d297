package ratelimit

import (
	"errors"
	"fmt"
	"time"
)

// Rate is one bucket's figures: it holds Burst tokens when full and gets Refill tokens back every
// Period, evenly (one token every Interval). A zero Burst is a bucket that never admits anything.
type Rate struct {
	Burst  int64         // capacity when full
	Refill int64         // tokens regained per Period
	Period time.Duration // 1 minute for request buckets, 24 hours for egress
}

// Interval is the time it takes the bucket to regain one token; 0 for a zero-capacity bucket.
func (r Rate) Interval() time.Duration {
	if r.Burst <= 0 || r.Refill <= 0 {
		return 0
	}
	return r.Period / time.Duration(r.Refill)
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
