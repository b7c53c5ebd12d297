package accountapi_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
	"github.com/modelexec/modelexec/internal/studio"
)

// awareness reads until the next awareness message and answers it whole.
func (c *liveClient) awareness() string {
	c.t.Helper()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, msg, err := c.conn.Read(ctx)
		cancel()
		if err != nil {
			c.t.Fatalf("waiting for awareness: %v", err)
		}
		if msg[0] == 1 {
			return string(msg)
		}
	}
}

// announce sends the awareness state of client id at clock.
func (c *liveClient) announce(id, clock byte, state string) {
	c.send(varBytes([]byte{1}, append([]byte{1, id, clock}, varBytes(nil, []byte(state))...)))
}

// Awareness (cursors, names) is relayed to every client of the document, whatever process
// each is connected to (docs/studio.md): a state announced on one process reaches the peers of
// the other, a peer joining there later is sent it, a client that disconnects is told gone
// everywhere, and a state its process stops renewing (a process that died says nothing) is
// dropped after 30 s.
func TestSTU_AwarenessReachesThePeersOfEveryProcess(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newLiveEnv(t, db)
		e.fanOut.Store(true)
		storetest.NewAccount(t, db, "acct_a", auth.Pro, 1000)
		key, _ := e.mint("acct_a", auth.StudioWrite)
		const live = "/v1/studio/projects/p1/brief/live"
		alice := mustHandshake(t, e.a, live, keyHeader(key))
		alice.sync()
		bob := mustHandshake(t, e.b, live, keyHeader(key))
		bob.sync()

		alice.announce(7, 1, `{"user":"alice"}`)
		if got := alice.awareness(); !strings.Contains(got, "alice") {
			t.Fatalf("alice's echo: %q", got)
		}
		if got := bob.awareness(); !strings.Contains(got, "alice") {
			t.Fatalf("bob, on the other process, heard %q", got)
		}
		bob.announce(9, 1, `{"user":"bob"}`)
		bob.awareness() // his own echo
		if got := alice.awareness(); !strings.Contains(got, "bob") {
			t.Fatalf("alice, on the other process, heard %q", got)
		}
		// A peer joining the second process later is sent both states.
		carol := mustHandshake(t, e.b, live, keyHeader(key))
		if got := carol.awareness(); !strings.Contains(got, "alice") || !strings.Contains(got, "bob") {
			t.Fatalf("a newcomer on b was sent %q", got)
		}
		// Alice leaves: the peers of the other process are told.
		alice.conn.Close(websocket.StatusNormalClosure, "")
		for _, c := range []*liveClient{bob, carol} {
			if got := c.awareness(); !strings.Contains(got, "null") || strings.Contains(got, "alice") {
				t.Fatalf("alice leaving reached b as %q", got)
			}
		}
		dave := mustHandshake(t, e.b, live, keyHeader(key))
		if got := dave.awareness(); strings.Contains(got, "alice") || !strings.Contains(got, "bob") {
			t.Fatalf("after alice left, a newcomer on b was sent %q", got)
		}

		// A state from another process that is not renewed goes after 30 s: erin on a
		// announces, then her process falls silent (the fan-out stops).
		erin := mustHandshake(t, e.a, live, keyHeader(key))
		erin.sync()
		erin.announce(11, 1, `{"user":"erin"}`)
		erin.awareness() // her own echo
		if got := dave.awareness(); !strings.Contains(got, "erin") {
			t.Fatalf("dave heard %q", got)
		}
		e.fanOut.Store(false)
		e.advance(studio.RemoteAwarenessTimeout + time.Second)
		frank := mustHandshake(t, e.b, live, keyHeader(key))
		if got := dave.awareness(); !strings.Contains(got, "null") {
			t.Fatalf("erin's unrenewed state: dave heard %q", got)
		}
		if got := frank.awareness(); strings.Contains(got, "erin") || !strings.Contains(got, "bob") {
			t.Fatalf("a newcomer after erin's state ran out was sent %q", got)
		}
	})
}
