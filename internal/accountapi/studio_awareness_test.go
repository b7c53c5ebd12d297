package accountapi_test

import (
	"context"
	"fmt"
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

// awarenessStates decodes an awareness message: client id → state JSON.
func awarenessStates(t *testing.T, msg string) map[uint64]string {
	t.Helper()
	b := []byte(msg)
	uint := func() uint64 {
		var v uint64
		for shift := 0; ; shift += 7 {
			if len(b) == 0 {
				t.Fatalf("awareness message %q ends early", msg)
			}
			c := b[0]
			b = b[1:]
			v |= uint64(c&0x7f) << shift
			if c < 0x80 {
				return v
			}
		}
	}
	uint() // message type
	uint() // update length
	out := map[uint64]string{}
	for n := uint(); n > 0; n-- {
		id := uint()
		uint() // clock
		l := uint()
		out[id], b = string(b[:l]), b[l:]
	}
	return out
}

// A stock y-websocket provider re-sends every awareness state it hears, the others' included
// (docs/studio.md: the live route speaks the y-websocket protocol): six windows that each
// announce their own state and re-send all six are not closed 1009 (a relay is not one of the
// relaying connection's own 4 clients); a window that leaves takes only its own state with it,
// and a copy of its state re-sent after it left does not bring it back.
func TestSTU09_AwarenessRelaysAreNotTheRelayersOwn(t *testing.T) {
	db := storetest.OpenSQLite(t)
	e := newLiveEnv(t, db)
	storetest.NewAccount(t, db, "acct_a", auth.Pro, 1000)
	key, _ := e.mint("acct_a", auth.StudioWrite)
	const live = "/v1/studio/projects/aw/brief/live"
	var w []*liveClient
	for range 6 {
		c := mustHandshake(t, e.a, live, keyHeader(key))
		c.sync()
		w = append(w, c)
	}
	all := map[uint64]string{}
	for i, c := range w {
		id := uint64(i + 1)
		all[id] = fmt.Sprintf(`{"user":"w%d"}`, i)
		c.announce(byte(id), 1, all[id])
		for _, o := range w {
			if got := awarenessStates(t, o.awareness()); got[id] != all[id] {
				t.Fatalf("w%d's state reached a window as %v", i, got)
			}
		}
	}
	// Each window re-sends the six states it holds, as a stock provider does: nothing is new,
	// so the relayer alone hears it back and no one is closed.
	for i, c := range w {
		c.send(awarenessUpdate(all))
		if got := awarenessStates(t, c.awareness()); len(got) != 6 {
			t.Fatalf("w%d's relay came back as %v", i, got)
		}
	}
	// w0 leaves: the others are told its state only is gone.
	w[0].conn.Close(websocket.StatusNormalClosure, "")
	for i, o := range w[1:] {
		if got := awarenessStates(t, o.awareness()); len(got) != 1 || got[1] != "null" {
			t.Fatalf("w0 leaving reached w%d as %v, want its own state removed alone", i+1, got)
		}
	}
	// w1 re-sends w0's state, heard before it left: it does not come back. w1's own next
	// state is the next thing w2 hears.
	w[1].send(awarenessUpdate(map[uint64]string{1: all[1]}))
	w[1].awareness()
	w[1].announce(2, 2, `{"user":"w1 again"}`)
	if got := awarenessStates(t, w[2].awareness()); len(got) != 1 || got[2] != `{"user":"w1 again"}` {
		t.Fatalf("w2 heard %v, want w1's new state alone", got)
	}
	late := mustHandshake(t, e.a, live, keyHeader(key))
	if got := awarenessStates(t, late.awareness()); len(got) != 5 || got[1] != "" {
		t.Fatalf("a newcomer after w0 left was sent %v", got)
	}
	// w1 leaves: its own state goes, the ones it relayed stay.
	w[1].conn.Close(websocket.StatusNormalClosure, "")
	if got := awarenessStates(t, late.awareness()); len(got) != 1 || got[2] != "null" {
		t.Fatalf("w1 leaving reached the newcomer as %v", got)
	}
}
