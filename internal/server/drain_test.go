package server_test

import (
	"encoding/json"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/server"
)

// readyz asks the account API's readiness check, and whether the answer closes its
// connection; a refused connection answers 0.
func (r *running) readyz(t *testing.T) (int, bool) {
	code, closes, _ := r.readyzWhy(t)
	return code, closes
}

// readyzWhy is readyz with the check its 503 names ("unavailable").
func (r *running) readyzWhy(t *testing.T) (int, bool, string) {
	t.Helper()
	res, err := http.Get(r.apiURL + "/readyz")
	if err != nil {
		return 0, false, ""
	}
	defer res.Body.Close()
	var body struct {
		Unavailable string `json:"unavailable"`
	}
	_ = json.NewDecoder(res.Body).Decode(&body)
	return res.StatusCode, res.Close, body.Unavailable
}

// TestI26_DrainBeforeStop: a process told to stop (SIGTERM ends Run's context) drains first:
// /readyz answers 503 while the listeners still take requests, and its answers close their
// connections, so a load balancer's health check takes the process out before it goes; then
// the listeners close (no new work), and the synchronous run held all along gets its result.
func TestI26_DrainBeforeStop(t *testing.T) {
	rn := &holdRunner{started: make(chan struct{}, 1), release: make(chan struct{})}
	r := startServer(t, time.Minute, rn, func(c *server.Config) { c.DrainDelay = 1500 * time.Millisecond })
	if code, _ := r.readyz(t); code != http.StatusOK {
		t.Fatalf("readyz before the stop: %d", code)
	}
	ans := r.hold()
	<-rn.started
	r.stop()

	deadline := time.Now().Add(10 * time.Second)
	for {
		code, closes, why := r.readyzWhy(t)
		if code == http.StatusServiceUnavailable {
			if !closes {
				t.Error("an answer while draining keeps its connection open (no Connection: close)")
			}
			if why != "draining" {
				t.Errorf("readyz while draining names %q, want draining", why)
			}
			break
		}
		if code != http.StatusOK || time.Now().After(deadline) {
			t.Fatalf("readyz while draining: %d, want 503 before the listener closes", code)
		}
		time.Sleep(time.Millisecond) // polling a condition; no outcome depends on the time
	}
	r.closed(t) // after the drain delay: no new connection is taken ...
	close(rn.release)
	a := <-ans // ... and the held run gets the job's result
	if a.err != nil || a.code != http.StatusOK || !strings.Contains(a.body, `"ok":true`) {
		t.Fatalf("held run through the drain: %d %s %v", a.code, a.body, a.err)
	}
	if err := <-r.done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	r.done <- nil // for the cleanup
	if len(r.logs.lines(t, "draining: /readyz answers 503 before the listeners close")) != 1 {
		t.Fatalf("drain not logged:\n%s", r.logs)
	}
	if n := len(r.logs.lines(t, "not ready")); n != 0 {
		t.Fatalf("the drain's 503s were logged as faults %d times:\n%s", n, r.logs)
	}
}

// /readyz names the database when the database does not answer, so an operator knows where to
// look ("dependency" named nothing).
func TestI26_ReadyzNamesTheDatabase(t *testing.T) {
	r := startServer(t, time.Minute, &holdRunner{started: make(chan struct{}, 1), release: make(chan struct{})})
	if code, _, _ := r.readyzWhy(t); code != http.StatusOK {
		t.Fatalf("readyz: %d", code)
	}
	r.db.Close()
	if code, _, why := r.readyzWhy(t); code != http.StatusServiceUnavailable || why != "database" {
		t.Fatalf("readyz with the database closed: %d %q, want 503 database", code, why)
	}
}

// A surface whose address is in use stops the process before anything else starts: one
// error naming the surface and the address, no listener left open, no worker run (which
// would take jobs and deliveries only to be cut off).
func TestListenerInUseStopsBeforeTheWorkersStart(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	r := startServer(t, time.Minute, &holdRunner{started: make(chan struct{}, 1), release: make(chan struct{})}, func(c *server.Config) {
		delete(c.Listeners, server.RoleQueue)
		c.QueueAddr = busy.Addr().String()
	})
	err = <-r.done
	r.done <- nil // for the cleanup
	if err == nil || !strings.Contains(err.Error(), "queue listener") || !strings.Contains(err.Error(), busy.Addr().String()) {
		t.Fatalf("Run: %v", err)
	}
	if got := r.logs.String(); strings.Contains(got, `"msg":"listening"`) || strings.Contains(got, `"level":"WARN"`) || strings.Contains(got, `"level":"ERROR"`) {
		t.Fatalf("the process served or worked before it stopped:\n%s", got)
	}
}

// A process whose Redis does not answer refuses every keyed request (limiter_unavailable):
// /readyz says so, naming redis, so the balancer sends the work elsewhere.
func TestI26_ReadyzNamesRedis(t *testing.T) {
	dead, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := dead.Addr().String()
	dead.Close() // nothing listens there now
	r := startServer(t, time.Minute, &holdRunner{started: make(chan struct{}, 1), release: make(chan struct{})}, func(c *server.Config) {
		c.Redis = "redis://" + addr + "/0"
	})
	if code, _, why := r.readyzWhy(t); code != http.StatusServiceUnavailable || why != "redis" {
		t.Fatalf("readyz with Redis away: %d %q, want 503 redis", code, why)
	}
}
