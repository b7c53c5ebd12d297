package console

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// SignInFailures counts failed sign-ins per email where every process of the service sees
// them (the store), so that several processes give a guesser one budget, not one each.
type SignInFailures interface {
	// SignInFailures answers how many sign-ins of email failed since first, the first failure
	// of its current window (0 when none is counted).
	SignInFailures(ctx context.Context, email string) (n int, first time.Time, err error)
	// FailSignIn counts one more failure of email at now, starting a new window at now when
	// the last one began before now less window.
	FailSignIn(ctx context.Context, email string, now time.Time, window time.Duration) error
	// ClearSignInFailures forgets email's failures (a sign-in succeeded).
	ClearSignInFailures(ctx context.Context, email string) error
}

// signInThrottle slows password guessing: after maxFailures failed sign-ins for one email
// within window, that email is refused until the window has passed since its first failure.
// It counts in the store when there is one (every process shares the count), else in this
// process, where it forgets everything past maxTracked emails (a flood of made-up addresses
// cannot grow it without bound). A store that cannot be read lets the sign-in be tried: it
// needs the same store to succeed.
type signInThrottle struct {
	store SignInFailures
	log   *slog.Logger

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
func (t *signInThrottle) blocked(ctx context.Context, email string, now time.Time) (time.Time, bool) {
	if t.store != nil {
		n, first, err := t.store.SignInFailures(ctx, key(email))
		if err != nil {
			t.log.Warn("console: failed sign-ins could not be read", "error", err)
			return time.Time{}, false
		}
		if n == 0 || now.Sub(first) >= window {
			return time.Time{}, false
		}
		return first.Add(window), n >= maxFailures
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.failures[key(email)]
	if f == nil || now.Sub(f.first) >= window {
		return time.Time{}, false
	}
	return f.first.Add(window), f.n >= maxFailures
}

func (t *signInThrottle) fail(ctx context.Context, email string, now time.Time) {
	if t.store != nil {
		if err := t.store.FailSignIn(ctx, key(email), now, window); err != nil {
			t.log.Warn("console: a failed sign-in could not be counted", "error", err)
		}
		return
	}
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

func (t *signInThrottle) succeed(ctx context.Context, email string) {
	if t.store != nil {
		if err := t.store.ClearSignInFailures(ctx, key(email)); err != nil {
			t.log.Warn("console: failed sign-ins could not be cleared", "error", err)
		}
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.failures, key(email))
}

func key(email string) string { return strings.ToLower(strings.TrimSpace(email)) }
