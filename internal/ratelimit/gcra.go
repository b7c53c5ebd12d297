package ratelimit

import (
	"math"
	"time"
)

// Resolve is the part of an admission every implementation shares: the rate in force for the
// request at now (plan table, new-account multiplier) and its cost (below 1 counts as 1).
//
// It also returns the refusals decided without any stored state. A zero-capacity bucket is
// refused PlanHasNoAPIGenerate here (final is true; the decision is complete). A request costing
// more than the bucket can ever hold is marked RequestTooLarge (final is false): the
// implementation still reads the bucket, without taking from it, to fill Remaining and ResetAfter,
// and must keep the refusal.
func Resolve(r Request, now time.Time) (rate Rate, cost int64, d Decision, final bool, err error) {
	return Plans.Resolve(r, now)
}

// Resolve is the package Resolve over the table t (the shipped one when t is nil).
func (t Table) Resolve(r Request, now time.Time) (rate Rate, cost int64, d Decision, final bool, err error) {
	rate, err = t.Policy(r.Plan, r.Bucket, r.AccountCreated, now)
	if err != nil {
		return Rate{}, 0, Decision{}, false, err
	}
	cost = r.Cost
	if cost < 1 {
		cost = 1
	}
	if rate.Zero() {
		return rate, cost, Decision{Refusal: PlanHasNoAPIGenerate}, true, nil
	}
	if cost > rate.Burst {
		return rate, cost, Decision{Refusal: RequestTooLarge, Limit: rate.Burst}, false, nil
	}
	return rate, cost, Decision{}, false, nil
}

// GCRA is the generic cell rate algorithm on a theoretical arrival time: tat is when the bucket
// will be full again (at or before now: it is full), all times in nanoseconds on one timeline.
// It takes cost tokens if they are there and returns the decision and the tat to store
// (unchanged when refused). A cost of 0 only reads the bucket. The Redis script is the same
// arithmetic in microseconds. The products saturate instead of overflowing: figures outside
// Rate.Check's bounds give a bucket that never fills again, never a wrapped one.
func GCRA(rate Rate, tat, now, cost int64) (Decision, int64) {
	interval := int64(rate.Interval())
	tau := int64(rate.Fill()) // how far ahead of now the tat may run: a full bucket's worth
	if tat < now {
		tat = now
	}
	newTAT := tat + min(mulSat(cost, interval), math.MaxInt64-tat)
	if debt := newTAT - now; debt <= tau {
		return Decision{
			Allowed:    true,
			Limit:      rate.Burst,
			Remaining:  (tau - debt) / interval,
			ResetAfter: time.Duration(debt),
		}, newTAT
	}
	held := tat - now
	remaining := (tau - held) / interval
	if remaining < 0 {
		remaining = 0 // a plan change or the multiplier can leave more debt than a bucket holds
	}
	return Decision{
		Refusal:    BucketSpent,
		Limit:      rate.Burst,
		Remaining:  remaining,
		ResetAfter: time.Duration(held),
		RetryAfter: time.Duration(newTAT - now - tau),
	}, tat
}
