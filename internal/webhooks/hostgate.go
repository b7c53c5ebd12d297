package webhooks

import (
	"context"
	"sync"
	"time"
)

// Host pause thresholds (spec 02 "Retries and pausing" #6).
const (
	HostMaxDeliveriesPerHour = 2000
	HostMaxFailuresPerHour   = 100
	HostPause                = time.Hour
)

// A destination host is paused platform-wide for HostPause once it took
// HostMaxDeliveriesPerHour attempts or HostMaxFailuresPerHour failures within an hour; a
// paused attempt is not sent and not counted as a failure. The Store counts the attempts
// (with the records of the attempts, in one transaction) and keeps the pauses, so every
// process sharing a database shares them.

// HostTally is attempts to one host counted together: Failures of them did not get a 2xx.
type HostTally struct {
	Host               string
	Attempts, Failures int
}

// MemHostGate counts attempts per host in memory over sliding one-hour windows: MemStore's
// host counts.
type MemHostGate struct {
	mu          sync.Mutex
	maxAttempts int
	maxFailures int
	hosts       map[string]*hostWindow
}

type hostWindow struct {
	attempts    []time.Time
	failures    []time.Time
	pausedUntil time.Time
}

// NewMemHostGate returns a gate with the spec's thresholds.
func NewMemHostGate() *MemHostGate {
	return &MemHostGate{maxAttempts: HostMaxDeliveriesPerHour, maxFailures: HostMaxFailuresPerHour, hosts: map[string]*hostWindow{}}
}

// pausedAt answers the hosts paused at now.
func (g *MemHostGate) pausedAt(now time.Time) map[string]time.Time {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := map[string]time.Time{}
	for host, w := range g.hosts {
		if now.Before(w.pausedUntil) {
			out[host] = w.pausedUntil
		}
	}
	return out
}

func prune(ts []time.Time, from time.Time) []time.Time {
	i := 0
	for i < len(ts) && !ts[i].After(from) {
		i++
	}
	return ts[i:]
}

func (g *MemHostGate) Record(_ context.Context, now time.Time, tallies []HostTally) ([]time.Time, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	paused := make([]time.Time, len(tallies))
	for i, t := range tallies {
		w := g.hosts[t.Host]
		if w == nil {
			w = &hostWindow{}
			g.hosts[t.Host] = w
		}
		from := now.Add(-time.Hour)
		w.attempts, w.failures = prune(w.attempts, from), prune(w.failures, from)
		for range t.Attempts {
			w.attempts = append(w.attempts, now)
		}
		for range t.Failures {
			w.failures = append(w.failures, now)
		}
		if len(w.attempts) >= g.maxAttempts || len(w.failures) >= g.maxFailures {
			w.pausedUntil = now.Add(HostPause)
			w.attempts, w.failures = nil, nil
		}
		if now.Before(w.pausedUntil) {
			paused[i] = w.pausedUntil
		}
	}
	return paused, nil
}
