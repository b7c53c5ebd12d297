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

// HostGate counts attempts per destination host and pauses a host platform-wide for an hour
// once it took HostMaxDeliveriesPerHour attempts or HostMaxFailuresPerHour failures within an
// hour. A paused attempt is not sent and not counted as a failure.
//
// MemHostGate keeps the counters in process memory: with several sender processes each
// counts its own share. A shared implementation (a table of host, window counters and
// paused_until, or Redis keys with expiry) makes the pause platform-wide.
type HostGate interface {
	// PausedUntil returns when the host's pause ends, or the zero time when it is not paused.
	PausedUntil(ctx context.Context, host string, now time.Time) (time.Time, error)
	// Record counts attempts made at about now, each tally's to its host, in one transaction
	// where the gate is a store; it pauses a host that reached a threshold. It answers, for
	// each tally, when its host's pause ends (the zero time when it is not paused).
	Record(ctx context.Context, now time.Time, tallies []HostTally) ([]time.Time, error)
}

// HostTally is attempts to one host counted together: Failures of them did not get a 2xx.
type HostTally struct {
	Host               string
	Attempts, Failures int
}

// MemHostGate is an in-memory HostGate over sliding one-hour windows.
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

func (g *MemHostGate) PausedUntil(_ context.Context, host string, now time.Time) (time.Time, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	w := g.hosts[host]
	if w == nil || !now.Before(w.pausedUntil) {
		return time.Time{}, nil
	}
	return w.pausedUntil, nil
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
