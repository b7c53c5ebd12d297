package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Figures of spec 02 "Rate-limit buckets" rule 6 and the limiter_unavailable code.
const (
	GuardWindow       = 10               // calls looked back on
	GuardFailures     = 5                // failures among them that trip the guard
	GuardTrippedFor   = 30 * time.Second // how long the fuse stays at DegradedFuseLimit
	UnavailableRetry  = 5 * time.Second  // Retry-After of 503 limiter_unavailable
	InstanceFuseRetry = 1 * time.Second  // Retry-After of 429 rate_limited reason instance_fuse
)

// ErrUnavailable wraps every error of the shared limiter: 503 limiter_unavailable, Retry-After 5.
var ErrUnavailable = errors.New("ratelimit: limiter unavailable")

// Guard wraps the shared Limiter and watches it fail. When it has failed GuardFailures times in
// the last GuardWindow calls, the guard trips for GuardTrippedFor: a Fuse that consults it drops
// to DegradedFuseLimit a second per key per bucket, so the process keeps answering while the
// limiter is down or slow. Each failure while the condition holds pushes the end out again.
// It is safe for concurrent use.
type Guard struct {
	limiter Limiter
	plans   Table // for the headers of a failed call; nil: the shipped table

	mu    sync.Mutex
	ring  [GuardWindow]bool // true: that call failed
	next  int
	until time.Time // tripped while now is before until
	trips int
}

// NewGuard wraps a limiter.
func NewGuard(l Limiter) *Guard { return &Guard{limiter: l} }

// Admit asks the limiter. A limiter error comes back wrapped in ErrUnavailable, with a Decision
// still fit for the rate headers (limit of the plan in force, nothing remaining, reset in 5 s).
// ErrUnknownPlan and ErrUnknownBucket come back unwrapped and are not counted as failures; a call
// abandoned because the caller's context was cancelled is wrapped but not counted either.
func (g *Guard) Admit(ctx context.Context, r Request, now time.Time) (Decision, error) {
	d, err := g.limiter.Admit(ctx, r)
	switch {
	case err == nil:
		g.record(false, now)
		return d, nil
	case errors.Is(err, ErrUnknownPlan), errors.Is(err, ErrUnknownBucket):
		return Decision{}, err
	case !errors.Is(ctx.Err(), context.Canceled):
		g.record(true, now)
	}
	d = Decision{RetryAfter: UnavailableRetry, ResetAfter: UnavailableRetry}
	if rate, perr := g.plans.Policy(r.Plan, r.Bucket, r.AccountCreated, now); perr == nil {
		d.Limit = rate.Burst
	}
	return d, fmt.Errorf("%w: %w", ErrUnavailable, err)
}

func (g *Guard) record(failed bool, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.ring[g.next] = failed
	g.next = (g.next + 1) % GuardWindow
	if !failed {
		return
	}
	n := 0
	for _, f := range g.ring {
		if f {
			n++
		}
	}
	if n >= GuardFailures {
		if !now.Before(g.until) {
			g.trips++
		}
		g.until = now.Add(GuardTrippedFor)
	}
}

// Tripped reports whether the fuse is at DegradedFuseLimit at now.
func (g *Guard) Tripped(now time.Time) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return now.Before(g.until)
}

// Trips counts how many times the guard has tripped (for metrics).
func (g *Guard) Trips() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.trips
}
