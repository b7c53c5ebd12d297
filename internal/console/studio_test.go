package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/modelexec/modelexec/internal/server"
)

// Issue 27 item 1: a signed-in owner's page mints a studio ticket with its session (no API key
// in the page) and opens the live route with it from the console's own origin, once.
func TestI27_ConsoleSessionMintsStudioTickets(t *testing.T) {
	var origin string
	s := newSite(t, func(c *server.Config, _ *server.Deps) {
		c.StudioOrigins = []string{c.PublicURLAPI}
		origin = c.PublicURLAPI
	})
	p := s.signIn(t, "acct_studio", 100)

	if res := p.post("/console/studio/projects/launch/tickets", url.Values{}); res.StatusCode != http.StatusForbidden {
		t.Fatalf("without the form token: %d", res.StatusCode)
	}
	res := p.post("/console/studio/projects/launch/tickets", url.Values{"csrf": {p.csrf}})
	defer res.Body.Close()
	var body struct {
		Object, Ticket string
		ExpiresIn      int `json:"expires_in"`
	}
	if err := json.NewDecoder(res.Body).Decode(&body); err != nil || res.StatusCode != 200 || body.Object != "studio_ticket" || body.ExpiresIn != 30 {
		t.Fatalf("mint: %d %+v %v", res.StatusCode, body, err)
	}

	live := "ws" + strings.TrimPrefix(s.url, "http") + "/v1/studio/projects/launch/brief/live?ticket=" + url.QueryEscape(body.Ticket)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, live, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {origin}}})
	if err != nil {
		t.Fatalf("dial with the console's ticket: %v", err)
	}
	defer conn.CloseNow()
	if _, msg, err := conn.Read(ctx); err != nil || msg[0] != 0 || msg[1] != 0 {
		t.Fatalf("first message %v %v, want sync step 1", msg, err)
	}
	if _, res, err := websocket.Dial(ctx, live, &websocket.DialOptions{HTTPHeader: http.Header{"Origin": {origin}}}); err == nil || res.StatusCode != 401 {
		t.Fatalf("the ticket used again: %v", err)
	}
}
