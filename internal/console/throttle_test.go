package console

import (
	"context"
	"testing"
	"time"
)

func TestSignInRefusal(t *testing.T) {
	now := time.Date(2026, 11, 23, 8, 10, 0, 0, time.UTC)
	ago := func(d time.Duration) time.Time { return now.Add(-d) }
	for _, c := range []struct {
		name            string
		fromAddr, all   failures
		refused, anyone bool
		until           time.Time
	}{
		{name: "none counted"},
		{name: "four from the address", fromAddr: failures{4, ago(time.Minute)}, all: failures{4, ago(time.Minute)}},
		{name: "five from the address", fromAddr: failures{5, ago(time.Minute)}, all: failures{5, ago(time.Minute)},
			refused: true, until: ago(time.Minute).Add(window)},
		{name: "five from the address, window ended", fromAddr: failures{5, ago(window)}, all: failures{5, ago(window)}},
		{name: "49 from every address", fromAddr: failures{1, ago(time.Minute)}, all: failures{49, ago(10 * time.Minute)}},
		{name: "50 from every address", all: failures{50, ago(10 * time.Minute)},
			refused: true, anyone: true, until: ago(10 * time.Minute).Add(window)},
		{name: "50 from every address, window ended", all: failures{50, ago(window)}},
		{name: "both, the address's window ends later", fromAddr: failures{5, ago(time.Minute)}, all: failures{50, ago(10 * time.Minute)},
			refused: true, until: ago(time.Minute).Add(window)},
		{name: "both, the email's window ends later", fromAddr: failures{5, ago(12 * time.Minute)}, all: failures{60, ago(10 * time.Minute)},
			refused: true, anyone: true, until: ago(10 * time.Minute).Add(window)},
	} {
		l, refused := refusal(c.fromAddr, c.all, now)
		if refused != c.refused || l.everywhere != c.anyone || !l.until.Equal(c.until) {
			t.Errorf("%s: refused %v (everywhere %v) until %v, want %v (%v) until %v", c.name, refused, l.everywhere, l.until,
				c.refused, c.anyone, c.until)
		}
	}
}

// TestSignInThrottleInProcess: without a store, failures are counted per email and address,
// and per email across addresses, in the process.
func TestSignInThrottleInProcess(t *testing.T) {
	var th signInThrottle
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	for i := 0; i < maxFailures; i++ {
		if _, b := th.blocked(ctx, "Ana@example.com", "198.51.100.7", now); b {
			t.Fatalf("blocked after %d failures", i)
		}
		th.fail(ctx, "ana@example.com ", "198.51.100.7", now.Add(time.Duration(i)*time.Second))
	}
	if l, b := th.blocked(ctx, "ana@example.com", "198.51.100.7", now.Add(time.Minute)); !b || l.everywhere || !l.until.Equal(now.Add(window)) {
		t.Fatalf("after %d failures: blocked %v until %v", maxFailures, b, l.until)
	}
	if _, b := th.blocked(ctx, "ana@example.com", "203.0.113.1", now.Add(time.Minute)); b {
		t.Fatal("another address is blocked")
	}
	if _, b := th.blocked(ctx, "bob@example.com", "198.51.100.7", now); b {
		t.Fatal("another email is blocked")
	}
	if _, b := th.blocked(ctx, "ana@example.com", "198.51.100.7", now.Add(window)); b {
		t.Fatal("still blocked once the window has passed")
	}
	for i := maxFailures; i < maxFailuresOfEmail; i++ {
		th.fail(ctx, "ana@example.com", "10.0.0."+string(rune('0'+i%10)), now.Add(time.Minute))
	}
	if l, b := th.blocked(ctx, "ana@example.com", "203.0.113.1", now.Add(time.Minute)); !b || !l.everywhere {
		t.Fatalf("after %d failures from many addresses: blocked %v %+v", maxFailuresOfEmail, b, l)
	}
	th.succeed(ctx, "ana@example.com", "198.51.100.7")
	if th.byAddr[emailAddr{"ana@example.com", "198.51.100.7"}] != nil || th.byEmail["ana@example.com"] == nil {
		t.Fatal("a successful sign-in forgets other than its own address's failures")
	}
}
