package console

import (
	"context"
	"testing"
	"time"
)

func TestSignInThrottle(t *testing.T) {
	var th signInThrottle
	now := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	for i := 0; i < maxFailures; i++ {
		if _, b := th.blocked(context.Background(), "Ana@example.com", now); b {
			t.Fatalf("blocked after %d failures", i)
		}
		th.fail(context.Background(), "ana@example.com ", now.Add(time.Duration(i)*time.Second))
	}
	until, b := th.blocked(context.Background(), "ana@example.com", now.Add(time.Minute))
	if !b || !until.Equal(now.Add(window)) {
		t.Fatalf("after %d failures: blocked %v until %v", maxFailures, b, until)
	}
	if _, b := th.blocked(context.Background(), "bob@example.com", now); b {
		t.Fatal("another email is blocked")
	}
	if _, b := th.blocked(context.Background(), "ana@example.com", now.Add(window)); b {
		t.Fatal("still blocked once the window has passed")
	}
	th.fail(context.Background(), "bob@example.com", now)
	th.succeed(context.Background(), "bob@example.com")
	if th.failures["bob@example.com"] != nil {
		t.Fatal("a successful sign-in keeps the failures")
	}
}
