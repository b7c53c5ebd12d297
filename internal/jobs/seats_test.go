package jobs_test

import (
	"testing"

	"github.com/modelexec/modelexec/internal/jobs"
)

// TestSYNC06_SeatsCountPlatformProductAccount: one held connection takes a seat counted
// against the platform, its product and its account; the first full cap names the refusal
// (platform_busy, product_busy, account_busy) and a released seat (once, however often
// release is called) is free again. Proves SYNC-06, READ-05 and JOB-21 (the declined values).
func TestSYNC06_SeatsCountPlatformProductAccount(t *testing.T) {
	s := jobs.NewSeats(2, 3, 4)
	take := func(account, product, want string) func() {
		t.Helper()
		release, declined := s.Acquire(account, product)
		if declined != want {
			t.Fatalf("Acquire(%s, %s) declined %q, want %q", account, product, declined, want)
		}
		if (release == nil) != (want != "") {
			t.Fatalf("Acquire(%s, %s): release %v with declined %q", account, product, release != nil, declined)
		}
		return release
	}
	a1 := take("a", "photo", "")
	take("a", "photo", "")
	take("a", "music", "account_busy") // the account's two seats are in use
	take("b", "photo", "")
	take("c", "photo", "product_busy") // photo's three seats are in use
	take("c", "music", "")
	take("d", "music", "platform_busy") // all four seats are in use
	a1()
	a1() // a second release frees nothing more
	take("d", "music", "")
	take("e", "music", "platform_busy")
}
