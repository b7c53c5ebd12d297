package redisseats_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"
	goredis "github.com/redis/go-redis/v9"

	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/jobs/redisseats"
)

func caps(prefix string, lease time.Duration) redisseats.Options {
	return redisseats.Options{PerAccount: 2, PerProduct: 3, Platform: 4, Lease: lease, Prefix: prefix}
}

// take acquires a seat and fails the test unless the answer is want ("" for a seat).
func take(t *testing.T, s jobs.Seats, account, product, want string) func() {
	t.Helper()
	release, declined := s.Acquire(account, product)
	if declined != want {
		t.Fatalf("%s/%s: declined %q, want %q", account, product, declined, want)
	}
	return release
}

// Issue 26 item 6: two processes sharing one Redis give an account, a product and the platform
// one set of seats: the caps count the seats of both, in the order account, product, platform
// are refused as jobs.LocalSeats refuses them, and a seat given back is free for either.
func testSharedCaps(t *testing.T, a, b *redisseats.Seats) {
	r1 := take(t, a, "acct_1", "photo", "")
	take(t, b, "acct_1", "photo", "")
	take(t, a, "acct_1", "photo", jobs.AccountBusy) // two on the account, one from each process
	take(t, b, "acct_2", "photo", "")
	take(t, a, "acct_3", "photo", jobs.ProductBusy) // three on the product
	take(t, b, "acct_3", "music", "")
	take(t, a, "acct_4", "chat", jobs.PlatformBusy) // four in all
	if a.InUse() != 1 || b.InUse() != 3 {
		t.Fatalf("in use: %d and %d, want 1 and 3", a.InUse(), b.InUse())
	}
	r1()
	r1() // once only
	take(t, b, "acct_1", "photo", "")
	take(t, a, "acct_5", "chat", jobs.PlatformBusy)
}

func TestSharedCapsMiniredis(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
	testSharedCaps(t, redisseats.New(rdb, caps("t:", time.Minute)), redisseats.New(rdb, caps("t:", time.Minute)))
}

func TestSharedCapsRedis(t *testing.T) {
	url := os.Getenv("MODELEXEC_TEST_REDIS")
	if url == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("MODELEXEC_TEST_REDIS is unset under CI=true: the Redis tests must run")
		}
		t.Skip("MODELEXEC_TEST_REDIS is unset (e.g. redis://127.0.0.1:6379/0): real-Redis tests skipped")
	}
	opts, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opts)
	t.Cleanup(func() { rdb.Close() })
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "test:" + hex.EncodeToString(b[:]) + ":"
	testSharedCaps(t, redisseats.New(rdb, caps(prefix, time.Minute)), redisseats.New(rdb, caps(prefix, time.Minute)))
}

// A process that dies holding seats (it stops renewing them) leaves them only until their
// leases end; a process alive renews its own, which outlive their first lease.
func TestLeasesEndSeatsOfADeadProcess(t *testing.T) {
	m := miniredis.RunT(t)
	now := time.Unix(1_800_000_000, 0)
	m.SetTime(now)
	rdb := goredis.NewClient(&goredis.Options{Addr: m.Addr()})
	dead, alive := redisseats.New(rdb, caps("t:", 30*time.Second)), redisseats.New(rdb, caps("t:", 30*time.Second))
	take(t, dead, "acct_1", "photo", "")
	take(t, alive, "acct_1", "photo", "")
	take(t, alive, "acct_1", "photo", jobs.AccountBusy)
	for range 4 { // two minutes, the live process renewing every 30 s
		now = now.Add(30 * time.Second)
		m.SetTime(now)
		if err := alive.Renew(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	m.SetTime(now.Add(time.Second))
	take(t, alive, "acct_1", "photo", "")               // the dead process's seat ended
	take(t, alive, "acct_1", "photo", jobs.AccountBusy) // the live one's still held
}

// With Redis away a seat is counted in this process, under the same caps.
func TestRedisAwayCountsInProcess(t *testing.T) {
	m := miniredis.RunT(t)
	rdb := goredis.NewClient(&goredis.Options{Addr: m.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	s := redisseats.New(rdb, caps("t:", time.Minute))
	m.Close()
	r := take(t, s, "acct_1", "photo", "")
	take(t, s, "acct_1", "photo", "")
	take(t, s, "acct_1", "photo", jobs.AccountBusy)
	if s.InUse() != 2 {
		t.Fatalf("in use %d, want 2", s.InUse())
	}
	r()
	if s.InUse() != 1 {
		t.Fatalf("in use after a release %d, want 1", s.InUse())
	}
}
