package accountapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// upgrade sends a WebSocket handshake with hdr over the defaults of a good one (a key of the
// RFC's example, version 13) and answers the refusal: status, headers and error body.
func upgrade(t *testing.T, srv *httptest.Server, method, path string, hdr http.Header) (int, http.Header, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Connection", "Upgrade")
	req.Header.Set("Upgrade", "websocket")
	req.Header.Set("Sec-WebSocket-Version", "13")
	req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	for k, v := range hdr {
		req.Header.Del(k)
		for _, x := range v {
			req.Header.Add(k, x)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	var body map[string]any
	_ = json.Unmarshal(b, &body)
	return res.StatusCode, res.Header, body
}

// A handshake the live route cannot accept (another protocol version, no key or a bad one, a
// HEAD) is refused with the service's error body: 400 invalid_body naming the header, with
// Sec-WebSocket-Version: 13 for a wrong version (RFC 6455 §4.4). By ticket, the refusal does
// not spend the ticket.
func TestI27_LiveHandshakeRefusalsHaveTheErrorBody(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newLiveEnv(t, db)
		storetest.NewAccount(t, db, "acct_a", auth.Pro, 1000)
		key, _ := e.mint("acct_a", auth.StudioWrite)
		const live = "/v1/studio/projects/p1/brief/live"
		bearer := "Bearer " + key
		for _, c := range []struct {
			name, method string
			hdr          http.Header
			names        string // the header the message names
		}{
			{"version 8", http.MethodGet, http.Header{"Sec-Websocket-Version": {"8"}}, "Sec-WebSocket-Version"},
			{"no key", http.MethodGet, http.Header{"Sec-Websocket-Key": nil}, "Sec-WebSocket-Key"},
			{"short key", http.MethodGet, http.Header{"Sec-Websocket-Key": {"c2hvcnQ="}}, "Sec-WebSocket-Key"},
			{"two keys", http.MethodGet, http.Header{"Sec-Websocket-Key": {"dGhlIHNhbXBsZSBub25jZQ==", "dGhlIHNhbXBsZSBub25jZQ=="}}, "Sec-WebSocket-Key"},
			{"HEAD", http.MethodHead, nil, ""},
		} {
			hdr := http.Header{"Authorization": {bearer}}
			for k, v := range c.hdr {
				hdr[k] = v
			}
			status, h, body := upgrade(t, e.a, c.method, live, hdr)
			if status != 400 || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
				t.Errorf("%s: %d %v %v", c.name, status, h, body)
				continue
			}
			if c.method == http.MethodHead {
				continue // no body
			}
			if msg, _ := body["message"].(string); body["error"] != "invalid_body" || !strings.Contains(msg, c.names) {
				t.Errorf("%s: %v", c.name, body)
			}
			if wantV := c.name == "version 8"; wantV != (h.Get("Sec-WebSocket-Version") == "13") {
				t.Errorf("%s: Sec-WebSocket-Version %q", c.name, h.Get("Sec-WebSocket-Version"))
			}
		}

		tk := e.ticket(e.a, "p1", key)
		path := live + "?ticket=" + url.QueryEscape(tk)
		browser := http.Header{"Origin": {studioOrigin}, "Sec-Websocket-Version": {"8"}}
		if status, h, body := upgrade(t, e.a, http.MethodGet, path, browser); status != 400 || body["error"] != "invalid_body" || h.Get("Sec-WebSocket-Version") != "13" {
			t.Fatalf("wrong version by ticket: %d %v %v", status, h, body)
		}
		mustHandshake(t, e.a, path, http.Header{"Origin": {studioOrigin}}).sync()
	})
}
