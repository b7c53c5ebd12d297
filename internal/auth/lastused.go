package auth

import (
	"context"
	"sync"
	"time"
)

// LastUsedStore keeps when each key was last used.
type LastUsedStore interface {
	// TouchKeys moves each key's last-used time forward to the given one (never back).
	TouchKeys(ctx context.Context, stamps map[string]time.Time) error
	// KeysLastUsed answers the last-used time of accountID's keys that were ever used.
	KeysLastUsed(ctx context.Context, accountID string) (map[string]time.Time, error)
}

// LastUsed notes when keys pass the gate, in memory, and writes the notes out every Every: a
// request costs a map write, the store one statement per key used in the interval. The time
// a key list shows is at most Every (plus a crash's worth of notes) behind.
type LastUsed struct {
	Store LastUsedStore
	Every time.Duration // 0: a minute

	mu   sync.Mutex
	seen map[string]time.Time
}

// maxNoted bounds the notes between two writes: past it, keys not yet noted in the interval
// wait for the next one (their time is one interval later than it could be; memory stays put).
const maxNoted = 100_000

// Note records that key id was used at t.
func (l *LastUsed) Note(id string, t time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.seen == nil {
		l.seen = map[string]time.Time{}
	}
	prev, ok := l.seen[id]
	if !ok && len(l.seen) >= maxNoted {
		return
	}
	if t.After(prev) {
		l.seen[id] = t
	}
}

// Flush writes the notes taken since the last flush.
func (l *LastUsed) Flush(ctx context.Context) error {
	l.mu.Lock()
	notes := l.seen
	l.seen = nil
	l.mu.Unlock()
	if len(notes) == 0 {
		return nil
	}
	return l.Store.TouchKeys(ctx, notes)
}

// Run flushes every Every until ctx ends, then once more.
func (l *LastUsed) Run(ctx context.Context) error {
	every := l.Every
	if every == 0 {
		every = time.Minute
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = l.Flush(flush)
			return nil
		case <-t.C:
			_ = l.Flush(ctx)
		}
	}
}
