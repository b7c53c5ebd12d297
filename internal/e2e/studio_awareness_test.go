package e2e_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// TestI26_StudioAwarenessReachesARoomOpenedLater: studio awareness already announced on one
// process reaches a client that opens the document on another, the first there, at once
// (README, Notices: cursors and names reach the live clients of every process), not when the
// announcing client next renews its state (y-protocols: every 15 s). Through PostgreSQL's
// LISTEN/NOTIFY.
func TestI26_StudioAwarenessReachesARoomOpenedLater(t *testing.T) {
	studioAwarenessAcrossProcesses(t, "")
}

// TestI26_StudioAwarenessReachesARoomOpenedLaterThroughRedis: the same, the notices through
// Redis.
func TestI26_StudioAwarenessReachesARoomOpenedLaterThroughRedis(t *testing.T) {
	studioAwarenessAcrossProcesses(t, testRedis(t))
}

// studioAwarenessAcrossProcesses runs three API processes over one database: ben on b announces
// his name while carol has the document open on c; then ann opens it on a, where no one had
// it open. Ann is sent ben's state though ben sends nothing more; carol, who had it, is not
// sent it again, and ann's own state then reaches ben and carol as the next thing they hear.
func studioAwarenessAcrossProcesses(t *testing.T, redisURL string) {
	each(t, options{}, func(t *testing.T, h *harness) {
		if h.db.Dialect() != sqlstore.Postgres {
			t.Skip("notices between processes travel through PostgreSQL or Redis, over a PostgreSQL database")
		}
		h.stopWorker() // the harness's own process plays no part
		roles, _ := server.ParseRoles("api")
		ctx, cancel := context.WithCancel(context.Background())
		var urls []string
		var done []chan struct{}
		for range 3 {
			s := h.newServer(server.Config{Roles: roles, PublicURLQueue: h.queue.URL, PublicURLSync: h.sync.URL, Redis: redisURL}, nil, nil, nil)
			api := httptest.NewServer(s.Handler(server.RoleAPI))
			t.Cleanup(api.Close)
			urls = append(urls, api.URL)
			d := make(chan struct{})
			go func() { defer close(d); _ = s.RunWorkers(ctx) }()
			done = append(done, d)
		}
		t.Cleanup(func() {
			cancel()
			for _, d := range done {
				<-d
			}
		})
		// Each process listens twice: its jobs engine and its studio rooms.
		if redisURL == "" {
			waitForListeners(t, h.db, 6)
		} else {
			waitForSubscribers(t, redisURL, server.NoticeChannel(secret), 6)
		}
		m, err := h.auth.Mint(context.Background(), auth.MintParams{AccountID: h.account, Scopes: []auth.Scope{auth.StudioWrite}})
		if err != nil {
			t.Fatal(err)
		}
		live := "/v1/studio/projects/p1/brief/live"
		dial := func(base string) *websocket.Conn {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(base, "http")+live,
				&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + m.Key}}})
			if err != nil {
				t.Fatalf("open %s on %s: %v", live, base, err)
			}
			t.Cleanup(func() { c.CloseNow() })
			return c
		}
		a, b, c := urls[0], urls[1], urls[2]

		carol := dial(c)
		ben := dial(b)
		announce(t, ben, 42, 1, `{"user":{"name":"ben"}}`)
		if got := nextAwareness(t, ben); !strings.Contains(got, "ben") {
			t.Fatalf("ben's echo: %q", got)
		}
		if got := nextAwareness(t, carol); !strings.Contains(got, "ben") {
			t.Fatalf("carol, on another process, heard %q", got)
		}

		ann := dial(a)
		if got := nextAwareness(t, ann); !strings.Contains(got, `"ben"`) {
			t.Fatalf("ann, the first on her process, heard %q, want ben's state", got)
		}
		announce(t, ann, 7, 1, `{"user":{"name":"ann"}}`)
		for who, conn := range map[string]*websocket.Conn{"ben": ben, "carol": carol} {
			if got := nextAwareness(t, conn); !strings.Contains(got, `"ann"`) || strings.Contains(got, `"ben"`) {
				t.Fatalf("%s heard %q, want ann's state alone", who, got)
			}
		}
	})
}

// announce sends the awareness state of client id at clock, as a y-websocket provider does.
func announce(t *testing.T, c *websocket.Conn, id, clock byte, state string) {
	t.Helper()
	update := append([]byte{1, id, clock, byte(len(state))}, state...)
	msg := append([]byte{1, byte(len(update))}, update...) // message type 1: awareness
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageBinary, msg); err != nil {
		t.Fatalf("announce: %v", err)
	}
}

// nextAwareness reads until the next awareness message (type 1) and answers it whole; each
// read waits at most 10 s.
func nextAwareness(t *testing.T, c *websocket.Conn) string {
	t.Helper()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, msg, err := c.Read(ctx)
		cancel()
		if err != nil {
			t.Fatalf("waiting for awareness: %v", err)
		}
		if len(msg) > 0 && msg[0] == 1 {
			return string(msg)
		}
	}
}
