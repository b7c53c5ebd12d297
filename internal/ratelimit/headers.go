package ratelimit

import (
	"strconv"
	"time"
)

// Header is one response header; the package stays free of net/http, so the HTTP layer copies
// these with w.Header().Set(h.Name, h.Value).
type Header struct {
	Name, Value string
}

// Headers are the rate headers every response carries (spec 02 rule 5, RL-15): RateLimit-Limit,
// RateLimit-Remaining and RateLimit-Reset (delta seconds until the bucket is full, rounded up),
// and X-RateLimit-Limit, X-RateLimit-Remaining and X-RateLimit-Reset (the Unix second at which it
// is full, rounded up). now is the time the decision was taken.
func Headers(d Decision, now time.Time) []Header {
	limit := strconv.FormatInt(d.Limit, 10)
	remaining := strconv.FormatInt(max(d.Remaining, 0), 10)
	full := now.Add(max(d.ResetAfter, 0))
	at := full.Unix()
	if full.Nanosecond() != 0 {
		at++
	}
	return []Header{
		{"RateLimit-Limit", limit},
		{"RateLimit-Remaining", remaining},
		{"RateLimit-Reset", strconv.FormatInt(ceilSeconds(d.ResetAfter), 10)},
		{"X-RateLimit-Limit", limit},
		{"X-RateLimit-Remaining", remaining},
		{"X-RateLimit-Reset", strconv.FormatInt(at, 10)},
	}
}

// ceilSeconds rounds a duration up to whole seconds; negative counts as 0.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	return int64((d + time.Second - 1) / time.Second)
}
