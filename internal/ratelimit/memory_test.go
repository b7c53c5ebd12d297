package ratelimit_test

import (
	"testing"

	"github.com/modelexec/modelexec/internal/ratelimit"
	"github.com/modelexec/modelexec/internal/ratelimit/ratelimittest"
)

// TestMemory runs the behaviour suite on the in-process limiter with a fake clock.
// Proves RL-01, RL-04 to RL-16, ORD-05, ORD-06 for the embedded default (RL-19).
func TestMemory(t *testing.T) {
	clock := ratelimittest.NewClock()
	ratelimittest.Run(t, ratelimittest.Harness{
		New: func(t *testing.T) (ratelimit.Limiter, func()) {
			return ratelimit.NewMemory(ratelimit.MemoryOptions{Clock: clock.Now}), nil
		},
		Now:     clock.Now,
		Advance: clock.Advance,
	})
}
