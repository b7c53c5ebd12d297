package httpapi

import (
	"context"
	"fmt"
	"time"

	"github.com/modelexec/modelexec/internal/ratelimit"
)

// Admission adapts ratelimit.Admission (fuse, guard and shared limiter) to the Pacer seam.
type Admission struct {
	Adm *ratelimit.Admission
	Now func() time.Time
}

// Fuse is check step 5, with the fuse's own figures: a refusal's Decision carries the fuse's
// limit per second, nothing left and the reset at the next second, for its rate headers.
func (a Admission) Fuse(key string, b ratelimit.Bucket, now time.Time) (ratelimit.Decision, bool) {
	d, o := a.Adm.CheckFuse(key, b, now)
	return d, o == ratelimit.OutcomeAdmitted
}

// NoCapacity reports whether plan's bucket b holds nothing (a zero-capacity bucket).
func (a Admission) NoCapacity(plan string, b ratelimit.Bucket) bool { return a.Adm.NoCapacity(plan, b) }

// Admit is the rate part of check step 6. A refusal comes back in the Decision; an error
// means the limiter is unreachable.
func (a Admission) Admit(ctx context.Context, r ratelimit.Request) (ratelimit.Decision, error) {
	d, o, err := a.Adm.Check(ctx, r, a.Now())
	switch o {
	case ratelimit.OutcomeUnavailable:
		return d, err
	case ratelimit.OutcomeInvalid:
		return d, fmt.Errorf("rate limit request invalid: %w", err)
	}
	return d, nil
}
