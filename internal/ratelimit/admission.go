package ratelimit

import (
	"context"
	"errors"
	"time"
)

// Outcome is what an admission means for the HTTP answer. The HTTP layer maps it with Status,
// Code, Reason and RetryAfterSeconds and never needs to look inside the Decision's Refusal.
type Outcome string

const (
	OutcomeAdmitted             Outcome = "admitted"
	OutcomeInstanceFuse         Outcome = "instance_fuse"            // 429 rate_limited, reason instance_fuse, Retry-After 1
	OutcomeBucketSpent          Outcome = "bucket_spent"             // 429 rate_limited, reason bucket_spent, Retry-After from the bucket
	OutcomeRequestTooLarge      Outcome = "request_too_large"        // 413 request_too_large (plan, bucket, limit)
	OutcomePlanHasNoAPIGenerate Outcome = "plan_has_no_api_generate" // 403 plan_has_no_api_generate (plan, bucket)
	OutcomeUnavailable          Outcome = "limiter_unavailable"      // 503 limiter_unavailable, Retry-After 5
	OutcomeInvalid              Outcome = "invalid"                  // 500 internal: unknown plan or bucket (a bug, log it)
)

// Status is the HTTP status of the outcome; 0 when admitted.
func (o Outcome) Status() int {
	switch o {
	case OutcomeInstanceFuse, OutcomeBucketSpent:
		return 429
	case OutcomeRequestTooLarge:
		return 413
	case OutcomePlanHasNoAPIGenerate:
		return 403
	case OutcomeUnavailable:
		return 503
	case OutcomeInvalid:
		return 500
	}
	return 0
}

// Code is the error code of spec 02; empty when admitted.
func (o Outcome) Code() string {
	switch o {
	case OutcomeInstanceFuse, OutcomeBucketSpent:
		return "rate_limited"
	case OutcomeRequestTooLarge:
		return "request_too_large"
	case OutcomePlanHasNoAPIGenerate:
		return "plan_has_no_api_generate"
	case OutcomeUnavailable:
		return "limiter_unavailable"
	case OutcomeInvalid:
		return "internal"
	}
	return ""
}

// Reason is the rate_limited body's reason field: bucket_spent or instance_fuse; empty otherwise.
func (o Outcome) Reason() string {
	switch o {
	case OutcomeInstanceFuse, OutcomeBucketSpent:
		return string(o)
	}
	return ""
}

// RetryAfterSeconds is the Retry-After header (and rate_limited's retry_after) in whole seconds:
// 1 from the fuse, the bucket's wait rounded up (at least 1) when spent, 5 when the limiter is
// unavailable; 0 (send no Retry-After) for every other outcome.
func (o Outcome) RetryAfterSeconds(d Decision) int64 {
	switch o {
	case OutcomeInstanceFuse:
		return int64(InstanceFuseRetry / time.Second)
	case OutcomeBucketSpent:
		return max(ceilSeconds(d.RetryAfter), 1)
	case OutcomeUnavailable:
		return int64(UnavailableRetry / time.Second)
	}
	return 0
}

// Admission is what the HTTP layer calls: the per-instance Fuse at check step 5 and the shared
// Limiter, behind its Guard, at step 6. See the package documentation for the call order.
type Admission struct {
	Fuse  *Fuse
	Guard *Guard
}

// AdmissionOptions configures an Admission; the zero value gives the spec's figures.
type AdmissionOptions struct {
	FuseLimits  map[Bucket]int // defaults to DefaultFuseLimits
	FuseMaxKeys int            // defaults to DefaultMaxKeys
	Plans       Table          // the bucket table the limiter uses, for headers when it fails; defaults to Plans
}

// NewAdmission wires a Fuse and a Guard around the shared limiter (Memory or the Redis one).
func NewAdmission(l Limiter, opts AdmissionOptions) *Admission {
	g := NewGuard(l)
	g.plans = opts.Plans
	return &Admission{
		Guard: g,
		Fuse:  NewFuse(FuseOptions{Limits: opts.FuseLimits, MaxKeys: opts.FuseMaxKeys, Guard: g}),
	}
}

// NoCapacity reports whether plan's bucket b holds nothing (free's generate): a request for it
// is refused plan_has_no_api_generate at step 6 whatever the fuse says, never 429 (spec 02,
// rate-limit buckets #3).
func (a *Admission) NoCapacity(plan string, b Bucket) bool {
	r, ok := a.Guard.plans.or()[plan][b]
	return ok && r.Zero()
}

// CheckFuse is check step 5: the per-instance fuse for the key's public id and the route's bucket,
// before the key is looked up. It returns OutcomeAdmitted or OutcomeInstanceFuse; when refused,
// the Decision carries the fuse's figures for the rate headers (limit per second, nothing left,
// reset at the next second) and RetryAfter 1 s.
func (a *Admission) CheckFuse(key string, b Bucket, now time.Time) (Decision, Outcome) {
	if a.Fuse.Allow(key, b, now) {
		return Decision{Allowed: true}, OutcomeAdmitted
	}
	return Decision{
		Refusal:    InstanceFuse,
		Limit:      int64(a.Fuse.Limit(b, now)),
		ResetAfter: now.Truncate(time.Second).Add(time.Second).Sub(now),
		RetryAfter: InstanceFuseRetry,
	}, OutcomeInstanceFuse
}

// Check is the rate part of check step 6, after account status, key validity and plan are known
// good: the shared limiter through the guard. The error is non-nil only with OutcomeUnavailable
// (wraps ErrUnavailable) or OutcomeInvalid (wraps ErrUnknownPlan or ErrUnknownBucket). The
// Decision is always fit for the rate headers except with OutcomeInvalid.
func (a *Admission) Check(ctx context.Context, r Request, now time.Time) (Decision, Outcome, error) {
	d, err := a.Guard.Admit(ctx, r, now)
	if err != nil {
		if errors.Is(err, ErrUnavailable) {
			return d, OutcomeUnavailable, err
		}
		return d, OutcomeInvalid, err
	}
	switch {
	case d.Allowed:
		return d, OutcomeAdmitted, nil
	case d.Refusal == PlanHasNoAPIGenerate:
		return d, OutcomePlanHasNoAPIGenerate, nil
	case d.Refusal == RequestTooLarge:
		return d, OutcomeRequestTooLarge, nil
	default:
		return d, OutcomeBucketSpent, nil
	}
}

// Admit is CheckFuse then Check, for admissions that have no key lookup between the two: the
// second admission of an asset list (egress, after the read admission and the job lookup) and
// the keyless routes' per-client-address read bucket.
func (a *Admission) Admit(ctx context.Context, r Request, now time.Time) (Decision, Outcome, error) {
	if d, o := a.CheckFuse(r.Key, r.Bucket, now); o != OutcomeAdmitted {
		return d, o, nil
	}
	return a.Check(ctx, r, now)
}
