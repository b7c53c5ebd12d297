package ratelimit

import (
	"math"
	"math/bits"
	"time"
)

// Resolve is the part of an admission every implementation shares: the rate in force for the
// request at now (plan table, new-account multiplier) and its cost (below 1 counts as 1).
//
// It also returns the refusals decided without any stored state. A zero-capacity generate or
// interactive bucket is refused PlanHasNoAPIGenerate here, another zero-capacity bucket
// RequestTooLarge with a limit of 0 (final is true; the decision is complete). A request costing
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
		if r.Bucket == Generate || r.Bucket == Interactive {
			return rate, cost, Decision{Refusal: PlanHasNoAPIGenerate}, true, nil
		}
		// read, write or egress at capacity 0: every request asks more than it can ever hold.
		return rate, cost, Decision{Refusal: RequestTooLarge, Limit: 0}, true, nil
	}
	if cost > rate.Burst && !r.Overdraw {
		return rate, cost, Decision{Refusal: RequestTooLarge, Limit: rate.Burst}, false, nil
	}
	return rate, cost, Decision{}, false, nil
}

// State is a bucket as stored: its theoretical arrival time and the interval it was written
// under. The pair means tokens whatever rate is in force when it is read: GCRA rescales the
// debt it holds to the rate of the moment (Rescale).
type State struct {
	// TAT is when the bucket will be full again (at or before now: it is full).
	TAT int64
	// Interval is the time one token took to come back when TAT was written, in TAT's unit.
	// Zero is a bucket never written (full).
	Interval int64
}

// GCRA is the generic cell rate algorithm on a theoretical arrival time, all times in
// nanoseconds on one timeline. It takes cost tokens if they are there and returns the decision
// and the state to store: s itself when nothing changed (a refusal, or a read of cost 0, under the
// rate s was written with), otherwise the state under the rate in force. A cost of 0 only reads
// the bucket.
//
// When s was written under another interval (the new-account window ended, the plan changed),
// the debt it holds is first rescaled to the rate in force (Rescale), so each token spent counts
// once: 40 MB spent under a new free account's 40 MB/day leave 160 of the 200 MB/day that follow.
//
// With overdraw the cost is taken whatever the bucket holds (Request.Overdraw): the arrival
// time may run past a full bucket's worth ahead, a debt that refuses what follows until it is
// repaid.
//
// The Redis script is the same arithmetic in microseconds. The products saturate instead of
// overflowing: figures outside Rate.Check's bounds give a bucket that never fills again, never a
// wrapped one.
func GCRA(rate Rate, s State, now, cost int64, overdraw bool) (Decision, State) {
	interval := int64(rate.Interval())
	tau := int64(rate.Fill()) // how far ahead of now the tat may run: a full bucket's worth
	tat := max(s.TAT, now)
	rescaled := false
	if tat > now && s.Interval > 0 && s.Interval != interval {
		tat, rescaled = now+Rescale(tat-now, s.Interval, interval, tau), true
	}
	newTAT := tat + min(mulSat(cost, interval), math.MaxInt64-tat)
	if debt := newTAT - now; debt <= tau || overdraw {
		d := Decision{
			Allowed:    true,
			Limit:      rate.Burst,
			Remaining:  max(tau-debt, 0) / interval,
			ResetAfter: time.Duration(debt),
		}
		if cost == 0 && !rescaled {
			return d, s
		}
		return d, State{TAT: newTAT, Interval: interval}
	}
	held := tat - now
	remaining := (tau - held) / interval
	if remaining < 0 {
		remaining = 0 // a state without its interval can hold more debt than the bucket in force
	}
	d := Decision{
		Refusal:    BucketSpent,
		Limit:      rate.Burst,
		Remaining:  remaining,
		ResetAfter: time.Duration(held),
		RetryAfter: time.Duration(newTAT - now - tau),
	}
	if !rescaled {
		return d, s
	}
	return d, State{TAT: tat, Interval: interval}
}

// Rescale is a debt of debt time units spent at one token per from, in time units at one token
// per to (the same tokens: debt × to / from, rounded up so rounding never hands a token back),
// capped at tau, the bucket in force when full: a bucket is never more than empty. The Redis
// script does the same in microseconds.
func Rescale(debt, from, to, tau int64) int64 {
	if debt <= 0 || from <= 0 {
		return min(max(debt, 0), tau)
	}
	hi, lo := bits.Mul64(uint64(debt), uint64(to))
	if hi >= uint64(from) { // the quotient does not fit in 64 bits
		return tau
	}
	q, r := bits.Div64(hi, lo, uint64(from))
	if r != 0 {
		q++
	}
	if q > uint64(tau) {
		return tau
	}
	return int64(q)
}
