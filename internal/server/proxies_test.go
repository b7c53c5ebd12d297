package server_test

import (
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/server"
)

// remaining answers RateLimit-Remaining of a keyless GET /healthz sent with the given
// X-Forwarded-For values.
func (r *running) remaining(t *testing.T, forwarded ...string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, r.apiURL+"/healthz", nil)
	for _, f := range forwarded {
		req.Header.Add("X-Forwarded-For", f)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	n, err := strconv.Atoi(res.Header.Get("RateLimit-Remaining"))
	if err != nil {
		t.Fatalf("RateLimit-Remaining %q: %v", res.Header.Get("RateLimit-Remaining"), err)
	}
	return n
}

// TestDESIGN23_KeylessBucketIsTheClientsBehindATrustedProxy proves DESIGN 23's
// per-client-address read bucket behind a load balancer: with the balancer's address given to
// --trusted-proxies, each client's X-Forwarded-For address has a bucket of its own (a
// balancer's health checks, from its own address, spend none of the clients'), the address a
// client wrote before the balancer's is not believed, and a process with no trusted proxy
// ignores the header, so a client cannot pick a fresh bucket by writing one.
func TestDESIGN23_KeylessBucketIsTheClientsBehindATrustedProxy(t *testing.T) {
	behind := startServer(t, time.Minute, nil, func(c *server.Config) {
		c.NoRateLimits, c.TrustedProxies = false, []string{"127.0.0.0/8", "::1"}
	})
	first := behind.remaining(t, "203.0.113.5")
	if again := behind.remaining(t, "203.0.113.5"); again != first-1 {
		t.Fatalf("one client's second request: remaining %d after %d", again, first)
	}
	for range 3 {
		behind.remaining(t) // the balancer's own checks, from its own address
	}
	if other := behind.remaining(t, "203.0.113.6"); other != first {
		t.Fatalf("another client starts from %d, want a full bucket's %d", other, first)
	}
	// A client that writes an address of its choice before the balancer's is still itself.
	if spoofed := behind.remaining(t, "198.51.100.9, 203.0.113.5"); spoofed != first-2 {
		t.Fatalf("a client's own X-Forwarded-For entry chose its bucket: remaining %d, want %d", spoofed, first-2)
	}
	if split := behind.remaining(t, "198.51.100.9", "203.0.113.5"); split != first-3 {
		t.Fatalf("X-Forwarded-For over two header lines: remaining %d, want %d", split, first-3)
	}

	direct := startServer(t, time.Minute, nil, func(c *server.Config) { c.NoRateLimits = false })
	a := direct.remaining(t, "203.0.113.7")
	if b := direct.remaining(t, "203.0.113.8"); b != a-1 {
		t.Fatalf("without a trusted proxy X-Forwarded-For chose the bucket: remaining %d after %d", b, a)
	}
}
