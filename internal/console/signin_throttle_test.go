package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// This file tests the throttle of failed sign-ins over HTTP, on SQLite and PostgreSQL: per
// email and client address, so that a stranger who knows a user's email cannot lock the user
// out, with a much higher bound per email across every address. The site trusts its loopback
// peer as a load balancer (--trusted-proxies), so each request names its client address in
// X-Forwarded-For, as a deployment behind one does.

const (
	throttleEmail    = "ana@example.com"
	throttlePassword = "correct horse battery"
	userAddr         = "198.51.100.7"
	strangerAddr     = "203.0.113.66"
)

// throttleSite is a site behind a trusted proxy, with a clock the test moves and a user.
func throttleSite(t *testing.T, db *sqlstore.DB, proxies ...string) (*site, *usageClock) {
	t.Helper()
	clock := &usageClock{t: time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)}
	s := newSiteOn(t, db, func(c *server.Config, d *server.Deps) { c.TrustedProxies, d.Now = proxies, clock.Now })
	storetest.NewAccount(t, s.db, "acct_ana", auth.Pro, 100)
	if _, err := s.sessions.CreateUser(context.Background(), auth.NewUser{AccountID: "acct_ana", Email: throttleEmail, Password: throttlePassword}); err != nil {
		t.Fatal(err)
	}
	return s, clock
}

var loopback = []string{"127.0.0.0/8", "::1"}

// signInAttempt is what a sign-in answered.
type signInAttempt struct {
	status     int
	page       string
	retryAfter string
}

// signInFrom sends the sign-in form from addr, in a fresh browser, as a proxy in front of the
// site would forward it.
func (s *site) signInFrom(t *testing.T, addr, email, password string) signInAttempt {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	p := &person{t: t, s: s, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	_, form := p.get("/console/sign-in")
	values := url.Values{"csrf": {match(t, csrfField, form)}, "email": {email}, "password": {password}}
	req, _ := http.NewRequest(http.MethodPost, s.url+"/console/sign-in", strings.NewReader(values.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.url)
	req.Header.Set("X-Forwarded-For", addr)
	res, err := p.c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return signInAttempt{status: res.StatusCode, page: body(res), retryAfter: res.Header.Get("Retry-After")}
}

// failFrom sends n wrong passwords for email from addr, each refused as wrong.
func (s *site) failFrom(t *testing.T, addr, email string, n int) {
	t.Helper()
	for i := range n {
		if a := s.signInFrom(t, addr, email, "wrong password"); a.status != http.StatusUnauthorized {
			t.Fatalf("wrong password %d from %s answered %d, want 401: %.1500s", i+1, addr, a.status, a.page)
		}
	}
}

func (a signInAttempt) locked(t *testing.T, what, message string) {
	t.Helper()
	if a.status != http.StatusTooManyRequests || !strings.Contains(a.page, message) || !strings.Contains(a.page, "Try again after ") ||
		a.retryAfter == "" {
		t.Fatalf("%s answered %d (Retry-After %q), want 429 saying %q and when to try again: %.2000s", what, a.status, a.retryAfter, message, a.page)
	}
}

func (a signInAttempt) signedIn(t *testing.T, what string) {
	t.Helper()
	if a.status != http.StatusSeeOther {
		t.Fatalf("%s answered %d, want 303 (signed in): %.2000s", what, a.status, a.page)
	}
}

const lockedHere = "Too many failed sign-ins for this email. Try again after 2026-11-23 08:15:00 UTC."

// TestConsoleSignInThrottleLocksTheAddressNotTheUser: a stranger's five wrong passwords lock
// the stranger's address out of the email, not the user signing in from elsewhere; the user's
// success leaves the stranger locked; the lock ends with its window.
func TestConsoleSignInThrottleLocksTheAddressNotTheUser(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		s, clock := throttleSite(t, db, loopback...)
		s.failFrom(t, strangerAddr, throttleEmail, 5)
		s.signInFrom(t, strangerAddr, " ANA@example.com", throttlePassword).locked(t, "the stranger's address after five failures", lockedHere)
		s.signInFrom(t, userAddr, throttleEmail, throttlePassword).signedIn(t, "the user from another address")
		s.signInFrom(t, strangerAddr, throttleEmail, throttlePassword).locked(t, "the stranger's address after the user signed in", lockedHere)
		clock.Set(clock.Now().Add(15 * time.Minute))
		s.signInFrom(t, strangerAddr, throttleEmail, throttlePassword).signedIn(t, "the locked address once the window passed")
	})
}

// TestConsoleSignInThrottleBoundsTheEmailAcrossAddresses: a guesser spread over ten addresses,
// five wrong passwords from each, reaches the email's bound (50 in 15 minutes): the email is
// refused from every address, the user's too, until its window has passed.
func TestConsoleSignInThrottleBoundsTheEmailAcrossAddresses(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		s, clock := throttleSite(t, db, loopback...)
		for i := range 10 {
			if i == 9 {
				if a := s.signInFrom(t, userAddr, throttleEmail, throttlePassword); a.status != http.StatusSeeOther {
					t.Fatalf("the user after 45 failures from nine other addresses answered %d, want 303", a.status)
				}
			}
			clock.Set(clock.Now().Add(time.Second))
			s.failFrom(t, fmt.Sprintf("192.0.2.%d", i+1), throttleEmail, 5)
		}
		const everywhere = "Too many failed sign-ins for this email, from many addresses. Try again after 2026-11-23 08:15:01 UTC."
		s.signInFrom(t, userAddr, throttleEmail, throttlePassword).locked(t, "the user after 50 failures from ten addresses", everywhere)
		s.signInFrom(t, "2001:db8::1", throttleEmail, throttlePassword).locked(t, "a new address after 50 failures", everywhere)
		clock.Set(clock.Now().Add(15 * time.Minute))
		s.signInFrom(t, userAddr, throttleEmail, throttlePassword).signedIn(t, "the user once the email's window passed")
	})
}

// TestConsoleSignInSuccessForgetsOnlyItsAddress: the user's success forgets the user's own
// address's failures, so four more typos do not lock the user; a stranger's four failures,
// counted elsewhere, stay, and a fifth locks the stranger.
func TestConsoleSignInSuccessForgetsOnlyItsAddress(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		s, _ := throttleSite(t, db, loopback...)
		s.failFrom(t, userAddr, throttleEmail, 4)
		s.failFrom(t, strangerAddr, throttleEmail, 4)
		s.signInFrom(t, userAddr, throttleEmail, throttlePassword).signedIn(t, "the user after four typos")
		s.failFrom(t, userAddr, throttleEmail, 4)
		s.signInFrom(t, userAddr, throttleEmail, throttlePassword).signedIn(t, "the user after four more typos")
		s.failFrom(t, strangerAddr, throttleEmail, 1)
		s.signInFrom(t, strangerAddr, throttleEmail, throttlePassword).locked(t, "the stranger after a fifth failure", lockedHere)
	})
}

// TestConsoleSignInThrottleIgnoresForgedForwardedFor: without --trusted-proxies the address is
// the connection's peer, so a guesser cannot escape the lock by writing X-Forwarded-For.
func TestConsoleSignInThrottleIgnoresForgedForwardedFor(t *testing.T) {
	s, _ := throttleSite(t, storetest.OpenSQLite(t))
	s.failFrom(t, strangerAddr, throttleEmail, 5)
	s.signInFrom(t, userAddr, throttleEmail, throttlePassword).locked(t, "another X-Forwarded-For from an untrusted peer", lockedHere)
}
