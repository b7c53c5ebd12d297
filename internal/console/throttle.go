package console

import (
	"strings"
	"sync"
	"time"
)

// signInThrottle slows password guessing: after maxFailures failed sign-ins for one email
// within window, that email is refused until the window has passed since its first failure.
// It counts per process and forgets everything past maxTracked emails (a flood of made-up
// addresses cannot grow it without bound).
type signInThrottle struct {
	mu       sync.Mutex
	failures map[string]*failures
}

type failures struct {
	n     int
	first time.Time
}

const (
	maxFailures = 5
	window      = 15 * time.Minute
	maxTracked  = 100_000
)

// blocked reports whether email may not try now, and until when.
func (t *signInThrottle) blocked(email string, now time.Time) (time.Time, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.failures[key(email)]
	if f == nil || now.Sub(f.first) >= window {
		return time.Time{}, false
	}
	return f.first.Add(window), f.n >= maxFailures
}

func (t *signInThrottle) fail(email string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.failures == nil || len(t.failures) >= maxTracked {
		t.failures = map[string]*failures{}
	}
	k := key(email)
	f := t.failures[k]
	if f == nil || now.Sub(f.first) >= window {
		f = &failures{first: now}
		t.failures[k] = f
	}
	f.n++
}

func (t *signInThrottle) succeed(email string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.failures, key(email))
}

func key(email string) string { return strings.ToLower(strings.TrimSpace(email)) }
