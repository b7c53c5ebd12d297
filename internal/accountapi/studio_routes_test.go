package accountapi_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	y "github.com/skyterra/y-crdt"

	"github.com/modelexec/modelexec/internal/accountapi"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
	"github.com/modelexec/modelexec/internal/studio"
)

type studioEnv struct {
	t    *testing.T
	db   *sqlstore.DB
	auth *auth.Service
	srv  *httptest.Server
}

func newStudioEnv(t *testing.T, db *sqlstore.DB) *studioEnv {
	now := func() time.Time { return time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC) }
	lg := slog.New(slog.DiscardHandler)
	e := &studioEnv{t: t, db: db}
	e.auth = auth.NewService(db, auth.Format{Prefix: auth.DefaultPrefix}, auth.NewHasher("deployment-secret"), now, lg)
	gate := &httpapi.Gate{Auth: e.auth, Pacer: whPacer{}, Switches: &httpapi.Switches{}, Now: now, Log: lg}
	h := &accountapi.Handler{Gate: gate, Auth: e.auth, Now: now, Log: lg,
		Studio: studio.NewService(studio.Config{Store: sqlstore.Studio{DB: db}, Now: now, Log: lg})}
	e.srv = httptest.NewServer(h.Routes())
	t.Cleanup(e.srv.Close)
	return e
}

func (e *studioEnv) mint(account string, scopes ...auth.Scope) string {
	e.t.Helper()
	m, err := e.auth.Mint(context.Background(), auth.MintParams{AccountID: account, Scopes: scopes})
	if err != nil {
		e.t.Fatal(err)
	}
	return m.Key
}

func (e *studioEnv) do(method, path, key string, body any) whAnswer {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, e.srv.URL+path, rd)
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	a := whAnswer{status: res.StatusCode, raw: string(b)}
	_ = json.Unmarshal(b, &a.body)
	return a
}

func (e *studioEnv) want(a whAnswer, status int, code string) {
	e.t.Helper()
	if a.status != status || (code != "" && a.body["error"] != code) {
		e.t.Fatalf("got %d %s, want %d %s", a.status, a.raw, status, code)
	}
}

// yWindow is one editor's copy of a document.
type yWindow struct{ doc *y.Doc }

func newYWindow() *yWindow {
	return &yWindow{doc: y.NewDoc("", true, func(*y.Item) bool { return true }, nil, false)}
}

func (w *yWindow) insert(pos int, s string) []byte {
	before := y.EncodeStateVector(w.doc, nil, y.NewUpdateEncoderV1())
	w.doc.Transact(func(*y.Transaction) { w.doc.GetText("body").Insert(pos, s, nil) }, nil)
	return y.EncodeStateAsUpdate(w.doc, before)
}

func (w *yWindow) text() string { return w.doc.GetText("body").ToString() }

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func unb64(t *testing.T, v any) []byte {
	t.Helper()
	s, _ := v.(string)
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		t.Fatalf("not base64: %v", v)
	}
	return b
}

// TestSTU05_BriefStateRouteOverHTTP: the state route merges (STU-02, STU-09), answers the
// crdt_ack (STU-05), takes one seed (STU-03, STU-04), refuses with the listed statuses only
// (STU-06), needs studio:write (STU-01, SCP-26), spends nothing (STU-07); the save (STU-08)
// and read (SCP-12) routes and canvases ride on it; projects are per account.
func TestSTU05_BriefStateRouteOverHTTP(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newStudioEnv(t, db)
		storetest.NewAccount(t, db, "acct_a", auth.Pro, 1000)
		storetest.NewAccount(t, db, "acct_b", auth.Pro, 1000)
		key := e.mint("acct_a", auth.StudioWrite)
		reader := e.mint("acct_a", auth.StudioRead)
		noStudio := e.mint("acct_a")
		other := e.mint("acct_b", auth.StudioWrite)
		const path = "/v1/studio/projects/launch/brief"

		// STU-01 / SCP-26: studio:write, checked after the key; a read key is refused 403.
		e.want(e.do("POST", path+"/state", "", map[string]any{"update": "AAA="}), 401, "missing_authorization")
		e.want(e.do("POST", path+"/state", noStudio, map[string]any{"update": "AAA="}), 403, "insufficient_scope")
		e.want(e.do("POST", path+"/state", reader, map[string]any{"update": "AAA="}), 403, "insufficient_scope")
		// Nothing written yet: the empty document at rev 0, as the live route syncs it.
		if r := e.do("GET", path, key, nil); r.status != 200 || r.body["rev"] != 0.0 || r.body["update"] != "AAA=" {
			t.Fatalf("unwritten project: %s", r.raw)
		}

		// STU-03: a seed while nothing is stored.
		first := newYWindow()
		a := e.do("POST", path+"/state", key, map[string]any{"update": b64(first.insert(0, "the brief")), "seed": true})
		e.want(a, 200, "")
		if a.body["object"] != "crdt_ack" || a.body["doc"] != "brief" || a.body["rev"] != 1.0 || a.body["request_id"] == "" || a.body["bytes"].(float64) <= 0 {
			t.Fatalf("ack %s", a.raw)
		}
		if len(a.body) != 6 {
			t.Fatalf("the ack carries exactly object, doc, rev, state_vector, bytes, request_id: %s", a.raw)
		}
		if err := studio.ValidateStateVector(unb64(t, a.body["state_vector"])); err != nil {
			t.Fatal(err)
		}
		// STU-04: a second seed is 409 revision_conflict and carries the first to load.
		second := newYWindow()
		c := e.do("POST", path+"/state", key, map[string]any{"update": b64(second.insert(0, "a stale copy")), "seed": true})
		e.want(c, 409, "revision_conflict")
		if c.body["rev"] != 1.0 {
			t.Fatalf("conflict %s", c.raw)
		}
		second = newYWindow()
		y.ApplyUpdate(second.doc, unb64(t, c.body["update"]), nil)
		if second.text() != "the brief" {
			t.Fatalf("the conflict loads %q", second.text())
		}

		// STU-02 / STU-09: two windows edit at once and converge through the route.
		w1, w2 := newYWindow(), newYWindow()
		y.ApplyUpdate(w1.doc, unb64(t, c.body["update"]), nil)
		y.ApplyUpdate(w2.doc, unb64(t, c.body["update"]), nil)
		u1, u2 := w1.insert(0, "A: "), w2.insert(9, " (B)")
		e.want(e.do("POST", path+"/state", key, map[string]any{"update": b64(u1)}), 200, "")
		last := e.do("POST", path+"/state", key, map[string]any{"update": b64(u2)})
		e.want(last, 200, "")
		if last.body["rev"] != 3.0 {
			t.Fatalf("rev after two merges: %s", last.raw)
		}
		// SCP-12: a studio:read key reads; with its state vector, only what it lacks.
		sv := y.EncodeStateVector(w1.doc, nil, y.NewUpdateEncoderV1())
		r := e.do("GET", path+"?state_vector="+url.QueryEscape(b64(sv)), reader, nil)
		e.want(r, 200, "")
		y.ApplyUpdate(w1.doc, unb64(t, r.body["update"]), nil)
		full := e.do("GET", path, reader, nil)
		y.ApplyUpdate(w2.doc, unb64(t, full.body["update"]), nil)
		if w1.text() != "A: the brief (B)" || w2.text() != w1.text() || full.body["object"] != "crdt_state" || full.body["rev"] != 3.0 {
			t.Fatalf("converged to %q and %q (%s)", w1.text(), w2.text(), full.raw)
		}
		if full.body["state_vector"] != last.body["state_vector"] || full.body["bytes"] != last.body["bytes"] {
			t.Fatalf("read %s disagrees with the last ack %s", full.raw, last.raw)
		}

		// STU-06: refusals with the spec's statuses; a refused write changes nothing.
		e.want(e.do("POST", path+"/state", key, map[string]any{}), 400, "invalid_body")
		e.want(e.do("POST", path+"/state", key, map[string]any{"update": 12}), 400, "invalid_body")
		e.want(e.do("POST", path+"/state", key, map[string]any{"update": "%%%"}), 400, "invalid_body")
		bad := e.do("POST", path+"/state", key, map[string]any{"update": b64([]byte{1, 1, 5, 0, 4, 9})})
		e.want(bad, 400, "invalid_body")
		if !strings.Contains(bad.body["message"].(string), "not a Yjs update") {
			t.Fatalf("message: %s", bad.raw)
		}
		e.want(e.do("GET", path+"?state_vector=AQ", key, nil), 400, "invalid_body")
		// LIM-14: past 2,097,152 bytes is 413 and nothing changes. Two 700 KB writes fit
		// the body limit; the third takes the document past the limit.
		for i := range 3 {
			a := e.do("POST", path+"/state", key, map[string]any{"update": b64(w1.insert(0, strings.Repeat(string(rune('x'+i)), 700_000)))})
			if i < 2 {
				e.want(a, 200, "")
				continue
			}
			e.want(a, 413, "body_too_large")
			if a.body["limit_bytes"] != float64(studio.MaxBytes) || a.body["bytes"].(float64) <= float64(studio.MaxBytes) {
				t.Fatalf("413 body %s", a.raw)
			}
		}
		after := e.do("GET", path, reader, nil)
		if after.body["rev"] != 5.0 || after.body["bytes"].(float64) > float64(studio.MaxBytes) {
			t.Fatalf("after refusals: rev %v bytes %v", after.body["rev"], after.body["bytes"])
		}

		// STU-08: the whole-document save replaces from the stored revision only.
		fresh := newYWindow()
		fresh.insert(0, "rewritten")
		whole := b64(y.EncodeStateAsUpdate(fresh.doc, nil))
		e.want(e.do("POST", path, key, map[string]any{"update": whole}), 400, "invalid_body") // rev is required
		e.want(e.do("POST", path, key, map[string]any{"update": whole, "rev": 2}), 409, "revision_conflict")
		saved := e.do("POST", path, key, map[string]any{"update": whole, "rev": 5})
		e.want(saved, 200, "")
		if saved.body["object"] != "crdt_ack" || saved.body["rev"] != 6.0 {
			t.Fatalf("save ack %s", saved.raw)
		}
		got := newYWindow()
		y.ApplyUpdate(got.doc, unb64(t, e.do("GET", path, reader, nil).body["update"]), nil)
		if got.text() != "rewritten" {
			t.Fatalf("saved document reads %q", got.text())
		}

		// Canvases: doc is canvas:<id>.
		cv := e.do("POST", "/v1/studio/projects/launch/canvases/c-1/state", key, map[string]any{"update": b64(newYWindow().insert(0, "shape"))})
		e.want(cv, 200, "")
		if cv.body["doc"] != "canvas:c-1" || cv.body["rev"] != 1.0 {
			t.Fatalf("canvas ack %s", cv.raw)
		}

		// Per account: another account's project of the same id is its own, still empty.
		if r := e.do("GET", path, other, nil); r.status != 200 || r.body["rev"] != 0.0 || r.body["update"] != "AAA=" {
			t.Fatalf("acct_b's unwritten project: %s", r.raw)
		}
		mine := e.do("POST", path+"/state", other, map[string]any{"update": b64(newYWindow().insert(0, "b's"))})
		if mine.status != 200 || mine.body["rev"] != 1.0 {
			t.Fatalf("acct_b's own project: %s", mine.raw)
		}

		// STU-07: nothing was spent.
		for _, id := range []string{"acct_a", "acct_b"} {
			if acct, _ := db.Account(context.Background(), id); acct.Balance != 1000 {
				t.Fatalf("%s balance %d, want 1000", id, acct.Balance)
			}
		}
	})
}

// liveClient speaks just enough of the y-websocket protocol for the tests.
type liveClient struct {
	t    *testing.T
	conn *websocket.Conn
	doc  *y.Doc
}

func dialLive(t *testing.T, base, path, key string) *liveClient {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	u := "ws" + strings.TrimPrefix(base, "http") + path
	conn, _, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + key}}})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	conn.SetReadLimit(4 << 20)
	t.Cleanup(func() { conn.CloseNow() })
	return &liveClient{t: t, conn: conn, doc: y.NewDoc("", true, func(*y.Item) bool { return true }, nil, false)}
}

func varBytes(prefix []byte, b []byte) []byte {
	n := uint64(len(b))
	for n >= 0x80 {
		prefix = append(prefix, byte(n)|0x80)
		n >>= 7
	}
	return append(append(prefix, byte(n)), b...)
}

func (c *liveClient) send(msg []byte) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.conn.Write(ctx, websocket.MessageBinary, msg); err != nil {
		c.t.Fatal(err)
	}
}

// next reads one message, applying any sync payload to the client's document.
func (c *liveClient) next() (typ, step byte, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, msg, err := c.conn.Read(ctx)
	if err != nil {
		return 0, 0, err
	}
	if msg[0] == 0 && (msg[1] == 1 || msg[1] == 2) {
		payload := msg[2:]
		for payload[0]&0x80 != 0 {
			payload = payload[1:]
		}
		y.ApplyUpdate(c.doc, payload[1:], nil)
	}
	return msg[0], msg[1], nil
}

func (c *liveClient) text() string { return c.doc.GetText("body").ToString() }

// The live route: a server-side client (key in the query, no Origin header) joins, syncs
// with the state route's writes and with another live client; each merge is stored before it
// is sent on; a read-only key is told permission denied; a malformed update closes with 1007.
func TestSTU09_LiveRouteSyncsWithStateRoute(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e, key := newStudioWriter(t, db)
		reader := e.mint("acct_a", auth.StudioRead)
		const path = "/v1/studio/projects/live/brief"
		e.want(e.do("POST", path+"/state", key, map[string]any{"update": b64(newYWindow().insert(0, "from http"))}), 200, "")

		// Without a key the handshake is refused with the usual 401.
		if _, res, err := websocket.Dial(context.Background(), "ws"+strings.TrimPrefix(e.srv.URL, "http")+path+"/live", nil); err == nil || res.StatusCode != 401 {
			t.Fatalf("dial without key: %v", err)
		}

		// A browser's request (an Origin header) with a key is refused before its key is looked
		// at, with no upgrade (KEY-16, ORD-02): an API key never serves a page of another site.
		live := "ws" + strings.TrimPrefix(e.srv.URL, "http") + path + "/live"
		if _, res, err := websocket.Dial(context.Background(), live, &websocket.DialOptions{HTTPHeader: http.Header{
			"Origin": {"https://evil.example"}, "Authorization": {"Bearer " + key}}}); err == nil || res.StatusCode != 403 {
			t.Fatalf("dial from a browser's origin: %v", err)
		}
		// A key in the URL is refused whatever else the request holds: logs keep URLs.
		if _, res, err := websocket.Dial(context.Background(), live+"?key="+url.QueryEscape(key), nil); err == nil || res.StatusCode != 400 {
			t.Fatalf("dial with the key in the URL: %v", err)
		}

		a := dialLive(t, e.srv.URL, path+"/live", key)
		if typ, step, err := a.next(); err != nil || typ != 0 || step != 0 {
			t.Fatalf("first message %d/%d %v, want sync step 1", typ, step, err)
		}
		a.send(varBytes([]byte{0, 0}, y.EncodeStateVector(a.doc, nil, y.NewUpdateEncoderV1())))
		if typ, step, err := a.next(); err != nil || typ != 0 || step != 1 || a.text() != "from http" {
			t.Fatalf("step 2: %d/%d %v %q", typ, step, err, a.text())
		}
		b := dialLive(t, e.srv.URL, path+"/live", key)
		b.next()
		b.send(varBytes([]byte{0, 0}, []byte{0}))
		b.next()

		// a types; b hears it, and it was stored before: the state route reads it.
		before := y.EncodeStateVector(a.doc, nil, y.NewUpdateEncoderV1())
		a.doc.Transact(func(*y.Transaction) { a.doc.GetText("body").Insert(0, "live ", nil) }, nil)
		a.send(varBytes([]byte{0, 2}, y.EncodeStateAsUpdate(a.doc, before)))
		if typ, step, err := b.next(); err != nil || typ != 0 || step != 2 || b.text() != "live from http" {
			t.Fatalf("b heard %d/%d %v %q", typ, step, err, b.text())
		}
		r := e.do("GET", path, key, nil)
		w := newYWindow()
		y.ApplyUpdate(w.doc, unb64(t, r.body["update"]), nil)
		if w.text() != "live from http" {
			t.Fatalf("stored %q", w.text())
		}
		// A write through the state route reaches both live clients.
		e.want(e.do("POST", path+"/state", key, map[string]any{"update": b64(w.insert(w.doc.GetText("body").Length(), "!"))}), 200, "")
		a.next()
		b.next()
		if a.text() != "live from http!" || b.text() != a.text() {
			t.Fatalf("live clients read %q and %q", a.text(), b.text())
		}
		// Awareness is relayed to the other peers.
		aw := varBytes(nil, []byte(`{"user":"a"}`))
		a.send(varBytes([]byte{1}, append([]byte{1, 7, 1}, aw...)))
		if typ, _, err := b.next(); err != nil || typ != 1 {
			t.Fatalf("b heard %d %v, want awareness", typ, err)
		}

		// A studio:read key syncs but may not write: permission denied, the connection stays.
		ro := dialLive(t, e.srv.URL, path+"/live", reader)
		ro.next()
		ro.send(varBytes([]byte{0, 2}, newYWindow().insert(0, "sneaky")))
		for {
			typ, _, err := ro.next() // the room's awareness comes first
			if err != nil || typ == 0 {
				t.Fatalf("read-only write: %d %v, want an auth message", typ, err)
			}
			if typ == 2 {
				break
			}
		}
		// A malformed update ends the connection with 1007 and changes nothing.
		b.send(varBytes([]byte{0, 2}, []byte{1, 1, 5, 0, 4, 9}))
		for {
			if _, _, err := b.next(); err != nil {
				if websocket.CloseStatus(err) != websocket.StatusInvalidFramePayloadData {
					t.Fatalf("close %v, want 1007", err)
				}
				break
			}
		}
		if got := e.do("GET", path, key, nil); got.body["rev"] != 3.0 {
			t.Fatalf("rev %v after refusals, want 3", got.body["rev"])
		}
	})
}

// typedOneByOne is a Yjs update (format v1) in which client 1 types n characters into the root
// text "t" as n items, each after the one before: what Yjs would send as one item.
func typedOneByOne(n int) []byte {
	vu := func(b []byte, v uint64) []byte {
		for v >= 0x80 {
			b = append(b, byte(v)|0x80)
			v >>= 7
		}
		return append(b, byte(v))
	}
	b := vu(vu(vu(vu(nil, 1), uint64(n)), 1), 0)
	b = append(b, 4, 1, 1, 't', 1, 'a') // a string item under the root type "t"
	for i := 1; i < n; i++ {
		b = append(vu(vu(append(b, 0x84), 1), uint64(i-1)), 1, 'a') // origin: the item before
	}
	return vu(b, 0) // no delete set
}

// TestSTU05_UpdateMergeCostBounded: the merging library joins text items one at a time, each
// join copying the text so far, so an update of many one-character items costs the square of
// its size to merge (a 700 KB one took 6 GB). Such an update within the bound merges; past it
// the update is refused invalid_body before it reaches the document, and nothing is stored.
func TestSTU05_UpdateMergeCostBounded(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e, key := newStudioWriter(t, db)
		const path = "/v1/studio/projects/typed/brief"
		a := e.do("POST", path+"/state", key, map[string]any{"update": b64(typedOneByOne(5000))})
		e.want(a, 200, "")
		big := e.do("POST", path+"/state", key, map[string]any{"update": b64(typedOneByOne(20000))})
		e.want(big, 400, "invalid_body")
		if !strings.Contains(big.raw, "Yjs encodes it") {
			t.Fatalf("the refusal should say how to send the text: %s", big.raw)
		}
		r := e.do("GET", path, key, nil)
		w := newYWindow()
		y.ApplyUpdate(w.doc, unb64(t, r.body["update"]), nil)
		if r.body["rev"] != 1.0 || w.doc.GetText("t").ToString() != strings.Repeat("a", 5000) {
			t.Fatalf("after the refusal: rev %v, %d characters", r.body["rev"], len(w.doc.GetText("t").ToString()))
		}
	})
}

// TestSTU02_UpdatesMergeInAnyOrder: a deletion posted before the text it deletes is kept and
// applied when the text arrives, so two projects given the same updates in opposite orders
// read the same (Yjs keeps such deletions; DESIGN 35).
func TestSTU02_UpdatesMergeInAnyOrder(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e, key := newStudioWriter(t, db)
		const del, ins = "AAGFBwEABQ==", "AQGFBwAEAQF0BXdvcmxkAA==" // client 901: delete clocks 0-4; write "world"
		read := func(project string, updates ...string) string {
			path := "/v1/studio/projects/" + project + "/brief"
			for _, u := range updates {
				e.want(e.do("POST", path+"/state", key, map[string]any{"update": u}), 200, "")
			}
			w := newYWindow()
			y.ApplyUpdate(w.doc, unb64(t, e.do("GET", path, key, nil).body["update"]), nil)
			return w.doc.GetText("t").ToString()
		}
		if a, b := read("insert-first", ins, del), read("delete-first", del, ins); a != "" || b != "" {
			t.Fatalf("insert then delete reads %q, delete then insert %q; both should read empty", a, b)
		}
	})
}

// TestSTU03_EmptyUpdateStoresNothing: an update that changes nothing (what a window's first
// sync of an empty document sends) leaves a never-written brief at revision 0, so another
// window's seed is still taken.
func TestSTU03_EmptyUpdateStoresNothing(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e, key := newStudioWriter(t, db)
		const path = "/v1/studio/projects/quiet/brief"
		a := e.do("POST", path+"/state", key, map[string]any{"update": "AAA="})
		e.want(a, 200, "")
		if a.body["rev"] != 0.0 || a.body["bytes"] != 0.0 {
			t.Fatalf("an empty update was stored: %s", a.raw)
		}
		seed := e.do("POST", path+"/state", key, map[string]any{"update": b64(newYWindow().insert(0, "the brief")), "seed": true})
		e.want(seed, 200, "")
		if seed.body["rev"] != 1.0 {
			t.Fatalf("the seed after an empty update: %s", seed.raw)
		}
	})
}

// newStudioWriter is a studio route harness with one account, acct_a, and a studio:write key.
func newStudioWriter(t *testing.T, db *sqlstore.DB) (*studioEnv, string) {
	e := newStudioEnv(t, db)
	storetest.NewAccount(t, db, "acct_a", auth.Pro, 1000)
	return e, e.mint("acct_a", auth.StudioWrite)
}

// awarenessUpdate encodes one awareness update message of the given clients' states, at clock 1.
func awarenessUpdate(states map[uint64]string) []byte { return awarenessUpdateAt(states, 1) }

// awarenessUpdateAt encodes one awareness update message of the given clients' states at clock.
func awarenessUpdateAt(states map[uint64]string, clock uint64) []byte {
	u := appendVar(nil, uint64(len(states)))
	for id, st := range states {
		u = appendVar(appendVar(u, id), clock)
		u = varBytes(u, []byte(st))
	}
	return varBytes([]byte{1}, u)
}

func appendVar(b []byte, n uint64) []byte {
	for n >= 0x80 {
		b = append(b, byte(n)|0x80)
		n >>= 7
	}
	return append(b, byte(n))
}

// A live peer could make the server hold far more than it sent: one 2 MB awareness state,
// then 256 one-byte queries from a peer that never read, each answered with the room's whole
// awareness, took the server from 71 to 651 MB. A state is now at most 16 KiB, a connection
// announces at most 4 clients, and a query is answered once per change of the states.
func TestStudioAwarenessBounded(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e, key := newStudioWriter(t, db)
		const live = "/v1/studio/projects/aw/brief/live"

		big := dialLive(t, e.srv.URL, live, key)
		big.next()
		big.send(awarenessUpdate(map[uint64]string{1: `"` + strings.Repeat("x", studio.MaxAwarenessState) + `"`}))
		if code, why := big.closed(); code != websocket.StatusMessageTooBig || !strings.Contains(why, "awareness state is at most 16384 bytes") {
			t.Fatalf("a 16 KiB awareness state: close %d %q", code, why)
		}

		many := dialLive(t, e.srv.URL, live, key)
		many.next()
		states := map[uint64]string{}
		for id := range studio.MaxAwarenessClients + 1 {
			states[uint64(id+1)] = `{"user":"x"}`
		}
		many.send(awarenessUpdate(states))
		if code, why := many.closed(); code != websocket.StatusMessageTooBig || !strings.Contains(why, "at most 4 awareness clients") {
			t.Fatalf("5 awareness clients: close %d %q", code, why)
		}

		a, b := dialLive(t, e.srv.URL, live, key), dialLive(t, e.srv.URL, live, key)
		a.next()
		b.next()
		a.send(awarenessUpdate(map[uint64]string{7: `{"user":"a"}`}))
		for _, c := range []*liveClient{a, b} {
			if typ, _, err := c.next(); err != nil || typ != 1 {
				t.Fatalf("the awareness update: %d %v", typ, err)
			}
		}
		// Three queries from b: one answer, as no state changed between them; a's next update
		// (relayed) and a query after it get one answer each.
		for range 3 {
			b.send([]byte{3})
		}
		if typ, _, err := b.next(); err != nil || typ != 1 {
			t.Fatalf("the first query: %d %v, want the states", typ, err)
		}
		a.send(awarenessUpdateAt(map[uint64]string{7: `{"user":"a","cursor":1}`}, 2)) // a newer state: clock 2
		if typ, _, err := b.next(); err != nil || typ != 1 {
			t.Fatalf("a's update: %d %v, want it relayed", typ, err)
		}
		b.send([]byte{3})
		if typ, _, err := b.next(); err != nil || typ != 1 {
			t.Fatalf("a query after a change: %d %v, want the states", typ, err)
		}
		b.send([]byte{3})
		a.typeText("typed")
		if typ, step, err := b.next(); err != nil || typ != 0 || step != 2 {
			t.Fatalf("after a repeated query b heard %d/%d %v first, want a's edit (no second answer)", typ, step, err)
		}
	})
}

// STU-05: sending an update the server already has changes nothing, also when the document
// holds object values (a map's {"color": …, "size": …}), whose encoding the server cannot
// repeat byte for byte: the same update sent four times leaves the revision at 1, and a save
// made at that revision is not refused.
func TestSTU05_ResentUpdateWithObjectsKeepsTheRevision(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newStudioEnv(t, db)
		storetest.NewAccount(t, db, "acct_a", auth.Pro, 1000)
		key := e.mint("acct_a", auth.StudioWrite)
		const path = "/v1/studio/projects/launch/brief"
		w := newYWindow()
		w.doc.Transact(func(*y.Transaction) {
			w.doc.GetMap("style").(*y.YMap).Set("heading", map[string]any{"color": "#336699", "size": 32, "font": "Inter", "weight": 700,
				"italic": false, "tracking": 0.5, "case": "upper", "align": "left"})
		}, nil)
		update := y.EncodeStateAsUpdate(w.doc, nil)
		for i := range 4 {
			a := e.do("POST", path+"/state", key, map[string]any{"update": b64(update)})
			if a.status != 200 || a.body["rev"] != 1.0 {
				t.Fatalf("send %d: %s", i+1, a.raw)
			}
		}
		e.want(e.do("POST", path, key, map[string]any{"update": b64(update), "rev": 1}), 200, "")
	})
}

// STU-02, STU-06: the state route merges over other windows' writes, but not over a
// whole-document save: an update holding content the save dropped (a copy loaded before it,
// sent whole or as what it adds) is refused 409 revision_conflict with the stored document and
// its generation, on the brief and on a canvas, and the saved document stays as saved.
func TestSTU06_StateRouteRefusesPreSaveCopy(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		e := newStudioEnv(t, db)
		storetest.NewAccount(t, db, "acct_a", auth.Pro, 1000)
		key := e.mint("acct_a", auth.StudioWrite)
		for _, path := range []string{"/v1/studio/projects/g2/brief", "/v1/studio/projects/g2/canvases/c1"} {
			e.want(e.do("POST", path+"/state", key, map[string]any{"update": b64(newYWindow().insert(0, "one two three"))}), 200, "")
			loaded := e.do("GET", path, key, nil)
			offline := newYWindow()
			y.ApplyUpdate(offline.doc, unb64(t, loaded.body["update"]), nil)
			offline.insert(0, "[offline]")
			replaced := newYWindow()
			replaced.insert(0, "REPLACED")
			e.want(e.do("POST", path, key, map[string]any{"update": b64(y.EncodeStateAsUpdate(replaced.doc, nil)), "rev": loaded.body["rev"]}), 200, "")

			saved := e.do("GET", path, key, nil)
			for what, u := range map[string][]byte{
				"the whole old copy":        y.EncodeStateAsUpdate(offline.doc, nil),
				"what it adds to the saved": y.EncodeStateAsUpdate(offline.doc, unb64(t, saved.body["state_vector"])),
			} {
				r := e.do("POST", path+"/state", key, map[string]any{"update": b64(u)})
				e.want(r, 409, "revision_conflict")
				if r.body["generation"] != 1.0 || r.body["rev"] != saved.body["rev"] || r.body["update"] != saved.body["update"] {
					t.Fatalf("%s %s: conflict body %s, want the saved document at generation 1", path, what, r.raw)
				}
			}
			// Edits made on the saved document still merge.
			replaced.insert(8, " v2")
			e.want(e.do("POST", path+"/state", key, map[string]any{"update": b64(y.EncodeStateAsUpdate(replaced.doc, nil))}), 200, "")
			st := e.do("GET", path, key, nil)
			w := newYWindow()
			y.ApplyUpdate(w.doc, unb64(t, st.body["update"]), nil)
			if w.text() != "REPLACED v2" || st.body["generation"] != 1.0 {
				t.Fatalf("%s after the old copy: %q %s", path, w.text(), st.raw)
			}
		}
	})
}
