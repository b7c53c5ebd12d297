package console

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
)

// SignInFailures counts failed sign-ins per email and client address, and per email from
// every address together, where every process of the service sees them (the store), so that
// several processes give a guesser one budget, not one each.
type SignInFailures interface {
	// SignInFailures answers how many sign-ins of email failed from addr since first, the
	// first failure of that pair's current window (0 when none is counted).
	SignInFailures(ctx context.Context, email, addr string) (n int, first time.Time, err error)
	// SignInFailuresOfEmail answers how many sign-ins of email failed from every address
	// together since first, the first failure of the email's own window (0 when none).
	SignInFailuresOfEmail(ctx context.Context, email string) (n int, first time.Time, err error)
	// FailSignIn counts one more failure of email from addr at now, in the pair's count and
	// in the email's; each starts a new window at now when its last one began at or before now
	// less window.
	FailSignIn(ctx context.Context, email, addr string, now time.Time, window time.Duration) error
	// ClearSignInFailures forgets email's failures from addr (a sign-in from there
	// succeeded); those from elsewhere, and the email's count, stay.
	ClearSignInFailures(ctx context.Context, email, addr string) error
}

// signInThrottle slows password guessing without handing a stranger the power to lock a user
// out: after maxFailures failed sign-ins for one email from one client address within window,
// that address is refused for that email until the window has passed since its first failure;
// the user, signing in from elsewhere, is not. A guesser spread over many addresses is stopped
// by a much higher bound on the email's failures from every address (maxFailuresOfEmail),
// which, reached, refuses the email everywhere until its own window has passed.
//
// It counts in the store when there is one (every process shares the count), else in this
// process, where it forgets everything past maxTracked keys (a flood of made-up addresses
// cannot grow it without bound). A store that cannot be read lets the sign-in be tried: it
// needs the same store to succeed.
type signInThrottle struct {
	store SignInFailures
	log   *slog.Logger

	mu      sync.Mutex
	byAddr  map[emailAddr]*failures
	byEmail map[string]*failures
}

type emailAddr struct{ email, addr string }

// failures is a count within a window that began at first (n 0: none counted).
type failures struct {
	n     int
	first time.Time
}

const (
	maxFailures        = 5  // for one email from one address
	maxFailuresOfEmail = 50 // for one email from every address together
	window             = 15 * time.Minute
	maxTracked         = 100_000
)

// lockout is a refusal of a sign-in: until when, and whether it is the email's bound across
// every address that refuses (not the address's own).
type lockout struct {
	until      time.Time
	everywhere bool
}

// refusal decides whether a sign-in may be tried at now, from the failures counted for its
// email from its address and from every address. Each bound reached refuses until its window
// ends; when both are, the later end.
func refusal(fromAddr, fromAll failures, now time.Time) (lockout, bool) {
	addr := fromAddr.n >= maxFailures && now.Before(fromAddr.first.Add(window))
	all := fromAll.n >= maxFailuresOfEmail && now.Before(fromAll.first.Add(window))
	switch {
	case all && (!addr || !fromAddr.first.After(fromAll.first)):
		return lockout{until: fromAll.first.Add(window), everywhere: true}, true
	case addr:
		return lockout{until: fromAddr.first.Add(window)}, true
	}
	return lockout{}, false
}

// blocked reports whether email may not be tried from addr now, and until when.
func (t *signInThrottle) blocked(ctx context.Context, email, addr string, now time.Time) (lockout, bool) {
	email = key(email)
	if t.store != nil {
		var mine, all failures
		var err error
		if mine.n, mine.first, err = t.store.SignInFailures(ctx, email, addr); err == nil {
			all.n, all.first, err = t.store.SignInFailuresOfEmail(ctx, email)
		}
		if err != nil {
			t.log.Warn("console: failed sign-ins could not be read", "error", err)
			return lockout{}, false
		}
		return refusal(mine, all, now)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	var mine, all failures
	if f := t.byAddr[emailAddr{email, addr}]; f != nil {
		mine = *f
	}
	if f := t.byEmail[email]; f != nil {
		all = *f
	}
	return refusal(mine, all, now)
}

func (t *signInThrottle) fail(ctx context.Context, email, addr string, now time.Time) {
	email = key(email)
	if t.store != nil {
		if err := t.store.FailSignIn(ctx, email, addr, now, window); err != nil {
			t.log.Warn("console: a failed sign-in could not be counted", "error", err)
		}
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byAddr == nil || len(t.byAddr) >= maxTracked {
		t.byAddr = map[emailAddr]*failures{}
	}
	if t.byEmail == nil || len(t.byEmail) >= maxTracked {
		t.byEmail = map[string]*failures{}
	}
	count(t.byAddr, emailAddr{email, addr}, now)
	count(t.byEmail, email, now)
}

// count adds a failure at now to m[k], in a new window from now when its last one ended.
func count[K comparable](m map[K]*failures, k K, now time.Time) {
	f := m[k]
	if f == nil || now.Sub(f.first) >= window {
		f = &failures{first: now}
		m[k] = f
	}
	f.n++
}

// succeed forgets email's failures from addr: the sign-in from there succeeded.
func (t *signInThrottle) succeed(ctx context.Context, email, addr string) {
	email = key(email)
	if t.store != nil {
		if err := t.store.ClearSignInFailures(ctx, email, addr); err != nil {
			t.log.Warn("console: failed sign-ins could not be cleared", "error", err)
		}
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.byAddr, emailAddr{email, addr})
}

func key(email string) string { return strings.ToLower(strings.TrimSpace(email)) }
