package accountapi_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/accountapi"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/ratelimit"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
	"github.com/modelexec/modelexec/internal/webhooks"
)

// whClock is a settable clock for the webhook tests.
type whClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *whClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *whClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// whPacer admits everything: rate limits are not under test here.
type whPacer struct{}

func (whPacer) NoCapacity(string, ratelimit.Bucket) bool { return false }

func (whPacer) Fuse(string, ratelimit.Bucket, time.Time) (ratelimit.Decision, bool) {
	return ratelimit.Decision{}, true
}
func (whPacer) Admit(context.Context, ratelimit.Request) (ratelimit.Decision, error) {
	return ratelimit.Decision{Allowed: true, Limit: 60, Remaining: 59, ResetAfter: time.Second}, nil
}

type whReceived struct {
	Header http.Header
	Body   []byte
}

// whReceiver is a real HTTPS receiver on loopback: it echoes the challenge nonce unless echo
// is off and answers 200 to everything else.
type whReceiver struct {
	srv    *httptest.Server
	mu     sync.Mutex
	echo   bool
	status int // the answer to events; 0 is 200
	reqs   []whReceived
}

func newWHReceiver(t *testing.T) *whReceiver {
	rc := &whReceiver{echo: true}
	rc.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, whReceived{Header: r.Header.Clone(), Body: body})
		echo, status := rc.echo, rc.status
		rc.mu.Unlock()
		if r.Header.Get(webhooks.HeaderEvent) == webhooks.EventChallenge && echo {
			var env webhooks.ChallengeEnvelope
			_ = json.Unmarshal(body, &env)
			_ = json.NewEncoder(w).Encode(map[string]string{"nonce": env.Data.Nonce})
			return
		}
		if status != 0 {
			w.WriteHeader(status)
		}
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	rc.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *whReceiver) URL() string { return rc.srv.URL + "/hook" }

func (rc *whReceiver) setEcho(on bool) { rc.mu.Lock(); rc.echo = on; rc.mu.Unlock() }

func (rc *whReceiver) setStatus(code int) { rc.mu.Lock(); rc.status = code; rc.mu.Unlock() }

func (rc *whReceiver) received(kind string) []whReceived {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []whReceived
	for _, r := range rc.reqs {
		if (r.Header.Get(webhooks.HeaderEvent) == webhooks.EventChallenge) == (kind == webhooks.EventChallenge) {
			out = append(out, r)
		}
	}
	return out
}

// whEnv is the account API wired the way cmd/modelexec/serve.go wires webhooks: the SQL
// stores, a key ring in the database, the service, the engine and the outbox relay; only the
// URL policy carries the test-only loopback allowance.
type whEnv struct {
	t      *testing.T
	db     *sqlstore.DB
	clock  *whClock
	auth   *auth.Service
	hooks  *webhooks.Service
	ring   *webhooks.KeyRing
	relay  *webhooks.Relay
	srv    *httptest.Server
	base   string
	tlsCAs *x509.CertPool
	gate   *httpapi.Gate
}

func newWHEnv(t *testing.T, db *sqlstore.DB, roots *x509.CertPool) *whEnv {
	return newWHEnvOn(t, db, roots, sqlstore.Webhooks{DB: db})
}

// newWHEnvOn is newWHEnv with the webhooks service over store (a store that fails on demand).
func newWHEnvOn(t *testing.T, db *sqlstore.DB, roots *x509.CertPool, store webhooks.Store) *whEnv {
	e := &whEnv{t: t, db: db, clock: &whClock{t: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}, tlsCAs: roots}
	lg := slog.New(slog.DiscardHandler)
	e.auth = auth.NewService(db, auth.Format{Prefix: auth.DefaultPrefix}, auth.NewHasher("deployment-secret"), e.clock.Now, lg)
	gate := &httpapi.Gate{Auth: e.auth, Pacer: whPacer{}, Switches: &httpapi.Switches{}, Now: e.clock.Now, Log: lg}
	e.gate = gate
	var err error
	e.ring, err = webhooks.NewKeyRing(webhooks.KeyRingConfig{Store: sqlstore.WebhookKeys{DB: db}, Secret: []byte("deployment-secret-0123456789"), Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	h := &accountapi.Handler{Gate: gate, Auth: e.auth, Now: e.clock.Now, Log: lg, KeyRing: e.ring}
	e.srv = httptest.NewServer(nil)
	t.Cleanup(e.srv.Close)
	e.base = e.srv.URL
	policy := webhooks.AllowLoopbackForTests(t)
	e.hooks, err = webhooks.NewService(webhooks.Config{Store: store, Keys: e.ring, Clock: e.clock,
		Policy: policy, PublicBaseURL: e.base, Logger: lg,
		Sender: webhooks.NewSender(webhooks.SenderConfig{Policy: policy, RootCAs: roots})})
	if err != nil {
		t.Fatal(err)
	}
	h.Webhooks = e.hooks
	e.relay = webhooks.NewRelay(sqlstore.WebhookOutbox{DB: db}, e.hooks, lg)
	e.srv.Config.Handler = h.Routes()
	return e
}

type whAnswer struct {
	status int
	body   map[string]any
	raw    string
}

func (e *whEnv) do(method, path, key string, body any) whAnswer {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.base+path, rd)
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
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

func (e *whEnv) want(a whAnswer, status int, code string) {
	e.t.Helper()
	if a.status != status || (code != "" && a.body["error"] != code) {
		e.t.Fatalf("got %d %s, want %d %s", a.status, a.raw, status, code)
	}
}

func (e *whEnv) mint(account string, scopes ...auth.Scope) string {
	e.t.Helper()
	m, err := e.auth.Mint(context.Background(), auth.MintParams{AccountID: account, Scopes: scopes})
	if err != nil {
		e.t.Fatal(err)
	}
	return m.Key
}

// publishedKeys fetches the JWKS without a key and returns it by kid.
func (e *whEnv) publishedKeys() map[string]ed25519.PublicKey {
	e.t.Helper()
	a := e.do("GET", webhooks.JWKSPath, "", nil)
	e.want(a, 200, "")
	var set struct {
		Keys []map[string]string `json:"keys"`
	}
	if err := json.Unmarshal([]byte(a.raw), &set); err != nil || len(set.Keys) == 0 {
		e.t.Fatalf("jwks %s %v", a.raw, err)
	}
	out := map[string]ed25519.PublicKey{}
	for _, k := range set.Keys {
		if k["kty"] != "OKP" || k["crv"] != "Ed25519" || k["alg"] != "EdDSA" || k["use"] != "sig" || k["x"] == "" || k["kid"] == "" {
			e.t.Fatalf("jwk %v", k)
		}
		x, err := base64.RawURLEncoding.DecodeString(k["x"])
		if err != nil {
			e.t.Fatal(err)
		}
		pub := ed25519.PublicKey(x)
		if tp, _ := webhooks.Thumbprint(pub); tp != k["kid"] {
			e.t.Fatalf("kid %s is not the RFC 7638 thumbprint %s", k["kid"], tp)
		}
		out[k["kid"]] = pub
	}
	return out
}

// settle writes a settled job's outbox row the way the jobs engine does in its settling
// transaction.
func (e *whEnv) settle(account, jobID, product string, status jobs.Outcome, errorCode, webhook string) {
	e.t.Helper()
	err := e.db.InTx(context.Background(), func(tx *sqlstore.Tx) error {
		return tx.InsertEvent(context.Background(), jobs.Event{ID: "evt_" + jobID + "_" + string(status), AccountID: account, JobID: jobID,
			RequestID: "req_" + jobID, Type: "job." + string(status), Product: product, Status: status, ErrorCode: errorCode,
			Charged: 7, Reserved: 9, Webhook: webhook, CreatedAt: e.clock.Now()})
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

// pump runs the relay and one delivery sweep, as the webhooks role's workers do.
func (e *whEnv) pump() {
	e.t.Helper()
	ctx := context.Background()
	if _, err := e.relay.RunOnce(ctx); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.hooks.Engine().RunOnce(ctx, e.clock.Now()); err != nil {
		e.t.Fatal(err)
	}
}

func rootsOf(srv *httptest.Server) *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AddCert(srv.Certificate())
	return pool
}

// TestWH05_WebhookRoutesOverHTTP walks the four webhook routes over HTTP against real HTTPS
// receivers on loopback, on SQLite and PostgreSQL. Proves WH-01 (url checks → 400 invalid_url
// with reason), WH-03 (invalid_products with allowed; omitted products → null), WH-05 (201
// record), WH-06 (too_many_webhooks with limit 5; a deleted one frees a place), WH-07 (list
// under jobs:read), WH-08 (re-challenge answers 200 passed or not), WH-09 (409 invalid_url on
// a stored URL that no longer passes), WH-10 (delete, existed false when gone), WH-11, WH-12,
// WH-13 (record fields and verification), WH-17 (the nonce is never answered), WH-18, WH-19,
// WH-20 (status transitions of the challenge), and the scopes of spec 01's route table.
func TestWH05_WebhookRoutesOverHTTP(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		good := newWHReceiver(t)
		quiet := newWHReceiver(t)
		quiet.setEcho(false)
		e := newWHEnv(t, db, rootsOf(good.srv))
		storetest.NewAccount(t, db, "acct_a", auth.Pro, 1000)
		storetest.NewAccount(t, db, "acct_b", auth.Pro, 1000)
		key := e.mint("acct_a")
		other := e.mint("acct_b")
		readOnly := e.mint("acct_a", auth.JobsRead)

		// WH-01: the URL checks answer 400 invalid_url with the reason.
		for url, reason := range map[string]string{
			"":                                    "not_absolute",
			"http://hooks.example.com/x":          "not_https",
			"https://user:pw@hooks.example.com/x": "has_userinfo",
			"https://localhost/x":                 "private_host",
			"https://10.1.2.3/x":                  "private_host",
			"https://[::ffff:192.168.0.1]/x":      "private_host",
			"https://x.example/" + strings.Repeat("a", webhooks.MaxURLLength): "too_long",
		} {
			a := e.do("POST", "/v1/webhooks", key, map[string]any{"url": url})
			e.want(a, 400, "invalid_url")
			if a.body["reason"] != reason {
				t.Fatalf("%q: reason %v, want %s", url, a.body["reason"], reason)
			}
		}
		// WH-03: an unknown product names the allowed ones.
		a := e.do("POST", "/v1/webhooks", key, map[string]any{"url": good.URL(), "products": []string{"photo", "movies"}})
		e.want(a, 400, "invalid_products")
		if allowed, _ := a.body["allowed"].([]any); len(allowed) != len(webhooks.AllowedProducts) {
			t.Fatalf("allowed %v", a.body["allowed"])
		}
		// Scopes: registering needs webhooks:write; listing needs only jobs:read.
		e.want(e.do("POST", "/v1/webhooks", readOnly, map[string]any{"url": good.URL()}), 403, "insufficient_scope")
		e.want(e.do("POST", "/v1/webhooks", "", map[string]any{"url": good.URL()}), 401, "missing_authorization")

		// WH-05, WH-18, WH-11, WH-12: the challenge echoed → 201 active and verified.
		a = e.do("POST", "/v1/webhooks", key, map[string]any{"url": good.URL()})
		e.want(a, 201, "")
		rec := a.body
		for _, f := range []string{"id", "object", "url", "products", "status", "created_at", "verified", "verified_at", "verify_keys",
			"signature_algorithm", "consecutive_failures", "last_success_at", "last_failure_at", "last_status_code", "disabled_reason"} {
			if _, ok := rec[f]; !ok {
				t.Fatalf("record lacks %s: %s", f, a.raw)
			}
		}
		if rec["object"] != "webhook" || rec["status"] != "active" || rec["verified"] != true || rec["products"] != nil ||
			rec["verify_keys"] != e.base+webhooks.JWKSPath || rec["signature_algorithm"] != "EdDSA" || rec["verified_at"] == nil ||
			rec["url"] != good.URL() || rec["consecutive_failures"] != float64(0) || rec["created_at"] != "2026-11-21T10:00:00Z" {
			t.Fatalf("record %s", a.raw)
		}
		if _, ok := rec["verification"]; ok {
			t.Fatal("verification shown after a passing challenge")
		}
		activeID := rec["id"].(string)
		if !strings.HasPrefix(activeID, "wh_") || len(good.received(webhooks.EventChallenge)) != 1 {
			t.Fatalf("id %s, %d challenges", activeID, len(good.received(webhooks.EventChallenge)))
		}

		e.clock.Add(time.Second) // the list is oldest first
		// WH-19, WH-13, WH-17: not echoed → 201 pending with verification; the nonce never shown.
		a = e.do("POST", "/v1/webhooks", key, map[string]any{"url": quiet.URL(), "products": []string{"photo", "chat"}})
		e.want(a, 201, "")
		v, _ := a.body["verification"].(map[string]any)
		if a.body["status"] != "pending" || a.body["verified"] != false || v == nil || v["reason"] != "nonce_not_echoed" ||
			v["body"] != `{"ok":true}` || v["status_code"] != float64(200) {
			t.Fatalf("pending record %s", a.raw)
		}
		if p, _ := a.body["products"].([]any); len(p) != 2 {
			t.Fatalf("products %v", a.body["products"])
		}
		pendingID := a.body["id"].(string)
		var ch webhooks.ChallengeEnvelope
		_ = json.Unmarshal(quiet.received(webhooks.EventChallenge)[0].Body, &ch)
		if ch.Data.Nonce == "" || strings.Contains(a.raw, ch.Data.Nonce) || ch.Account != "acct_a" || ch.WebhookID != pendingID {
			t.Fatalf("challenge %+v, answer %s", ch, a.raw)
		}

		// WH-07: the list, oldest first, readable with jobs:read alone.
		a = e.do("GET", "/v1/webhooks", readOnly, nil)
		e.want(a, 200, "")
		data, _ := a.body["data"].([]any)
		if a.body["object"] != "list" || len(data) != 2 || data[0].(map[string]any)["id"] != activeID || data[1].(map[string]any)["id"] != pendingID {
			t.Fatalf("list %s", a.raw)
		}
		if a := e.do("GET", "/v1/webhooks", other, nil); len(a.body["data"].([]any)) != 0 {
			t.Fatalf("another account sees %s", a.raw)
		}

		// WH-08, WH-20: re-challenge answers 200 whether it passed or not.
		a = e.do("POST", "/v1/webhooks/"+pendingID, key, nil)
		e.want(a, 200, "")
		if a.body["status"] != "pending" || a.body["verified"] != false {
			t.Fatalf("failed re-challenge %s", a.raw)
		}
		quiet.setEcho(true)
		a = e.do("POST", "/v1/webhooks/"+pendingID, key, nil)
		e.want(a, 200, "")
		if a.body["status"] != "active" || a.body["verified"] != true {
			t.Fatalf("passing re-challenge %s", a.raw)
		}
		if _, ok := a.body["verification"]; ok {
			t.Fatal("verification kept after a pass")
		}
		// Another account's endpoint is not found; so is an unknown id.
		e.want(e.do("POST", "/v1/webhooks/"+pendingID, other, nil), 404, "not_found")
		e.want(e.do("POST", "/v1/webhooks/wh_missing", key, nil), 404, "not_found")
		e.want(e.do("DELETE", "/v1/webhooks/"+pendingID, readOnly, nil), 403, "insufficient_scope")

		// WH-09: a stored URL that no longer passes → 409 invalid_url with reason.
		stale, err := sqlstore.Webhooks{DB: db}.CreateEndpoint(context.Background(), webhooks.CreateEndpointParams{ID: "wh_stale",
			Account: "acct_a", URL: "https://192.168.1.20/hook", Now: e.clock.Now(), MaxNotDead: 5})
		if err != nil {
			t.Fatal(err)
		}
		a = e.do("POST", "/v1/webhooks/"+stale.ID, key, nil)
		e.want(a, 409, "invalid_url")
		if a.body["reason"] != "private_host" {
			t.Fatalf("reason %s", a.raw)
		}

		// WH-06: five not dead, the sixth refused with limit.
		for i := 0; i < 2; i++ {
			e.want(e.do("POST", "/v1/webhooks", key, map[string]any{"url": good.URL()}), 201, "")
		}
		a = e.do("POST", "/v1/webhooks", key, map[string]any{"url": good.URL()})
		e.want(a, 409, "too_many_webhooks")
		if a.body["limit"] != float64(5) {
			t.Fatalf("limit %s", a.raw)
		}

		// WH-10: delete answers existed, then existed false; the place is freed.
		a = e.do("DELETE", "/v1/webhooks/"+stale.ID, key, nil)
		e.want(a, 200, "")
		if a.body["id"] != stale.ID || a.body["object"] != "webhook" || a.body["deleted"] != true || a.body["existed"] != true {
			t.Fatalf("delete %s", a.raw)
		}
		a = e.do("DELETE", "/v1/webhooks/"+stale.ID, key, nil)
		if a.status != 200 || a.body["existed"] != false {
			t.Fatalf("second delete %s", a.raw)
		}
		if a := e.do("DELETE", "/v1/webhooks/"+activeID, other, nil); a.status != 200 || a.body["existed"] != false {
			t.Fatalf("deleted across accounts: %s", a.raw)
		}
		e.want(e.do("POST", "/v1/webhooks", key, map[string]any{"url": good.URL()}), 201, "")
	})
}

// TestWH06_DeadEndpointBroughtBackCountsInTheLimit: an endpoint a 410 made dead does not
// count in the five not dead, so the account registers another in its place; a passing
// re-challenge of the dead one would make six, and is refused 409 too_many_webhooks with
// limit 5, the endpoint left dead (it was brought back active: every such round added one
// more live endpoint). With a place freed, the same re-challenge brings it back. SQLite and
// PostgreSQL.
func TestWH06_DeadEndpointBroughtBackCountsInTheLimit(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		good := newWHReceiver(t)
		gone := newWHReceiver(t)
		e := newWHEnv(t, db, rootsOf(good.srv))
		storetest.NewAccount(t, db, "acct_a", auth.Pro, 1000)
		key := e.mint("acct_a")
		a := e.do("POST", "/v1/webhooks", key, map[string]any{"url": gone.URL()})
		e.want(a, 201, "")
		goneID := a.body["id"].(string)
		var others []string
		for range 4 {
			a := e.do("POST", "/v1/webhooks", key, map[string]any{"url": good.URL()})
			e.want(a, 201, "")
			others = append(others, a.body["id"].(string))
		}
		gone.setStatus(http.StatusGone)
		e.settle("acct_a", "photo_k1", "photo", jobs.Succeeded, "", "")
		e.pump()
		status := func(id string) any {
			t.Helper()
			for _, w := range e.do("GET", "/v1/webhooks", key, nil).body["data"].([]any) {
				if w := w.(map[string]any); w["id"] == id {
					return w["status"]
				}
			}
			return nil
		}
		if st := status(goneID); st != "dead" {
			t.Fatalf("after a 410 the endpoint is %v", st)
		}
		e.want(e.do("POST", "/v1/webhooks", key, map[string]any{"url": good.URL()}), 201, "") // five not dead again
		gone.setStatus(0)
		a = e.do("POST", "/v1/webhooks/"+goneID, key, nil)
		e.want(a, 409, "too_many_webhooks")
		if a.body["limit"] != float64(5) || status(goneID) != "dead" {
			t.Fatalf("re-challenge at the limit: %s; endpoint %v", a.raw, status(goneID))
		}
		e.want(e.do("DELETE", "/v1/webhooks/"+others[0], key, nil), 200, "")
		a = e.do("POST", "/v1/webhooks/"+goneID, key, nil)
		e.want(a, 200, "")
		if a.body["status"] != "active" {
			t.Fatalf("re-challenge with a place free: %s", a.raw)
		}
	})
}

// TestWH37_JWKSWithoutKey: the key set is served with no key at all (and with a bad one), each
// entry an OKP/Ed25519/EdDSA/sig key whose kid is its RFC 7638 thumbprint, and a fresh
// deployment gets its first key on the first fetch. Proves WH-37, WH-38.
func TestWH37_JWKSWithoutKey(t *testing.T) {
	db := storetest.OpenSQLite(t)
	rc := newWHReceiver(t)
	e := newWHEnv(t, db, rootsOf(rc.srv))
	keys := e.publishedKeys()
	if len(keys) != 1 {
		t.Fatalf("keys %v", keys)
	}
	req, _ := http.NewRequest("GET", e.base+webhooks.JWKSPath, nil)
	req.Header.Set("Authorization", "Bearer not-a-key")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("with a bad key: %d %s", res.StatusCode, res.Header.Get("Content-Type"))
	}
	if again := e.publishedKeys(); len(again) != 1 {
		t.Fatal("a second fetch made another key")
	}
}

// TestWH29_SettledJobReachesEndpointThroughRelay: a settled job's outbox row reaches a
// registered endpoint through the relay and a sweep, signed with a key of the published set,
// only for its products; chat delivers nothing; a job notified twice is delivered once; the
// per-request URL of the row gets the queue-protocol body with the X-Alt signature. Proves
// WH-04, WH-14, WH-27, WH-28, WH-29, WH-30, WH-31, WH-32, WH-33, WH-34 (no output in either
// body), WH-35, WH-39, WH-40, WH-41 over the SQL stores.
func TestWH29_SettledJobReachesEndpointThroughRelay(t *testing.T) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		photoHook := newWHReceiver(t)
		allHook := newWHReceiver(t)
		pending := newWHReceiver(t)
		pending.setEcho(false)
		callback := newWHReceiver(t)
		e := newWHEnv(t, db, rootsOf(photoHook.srv))
		storetest.NewAccount(t, db, "acct_a", auth.Pro, 1000)
		key := e.mint("acct_a")
		a := e.do("POST", "/v1/webhooks", key, map[string]any{"url": photoHook.URL(), "products": []string{"photo", "chat"}})
		e.want(a, 201, "")
		photoID := a.body["id"].(string)
		e.want(e.do("POST", "/v1/webhooks", key, map[string]any{"url": allHook.URL()}), 201, "")
		e.want(e.do("POST", "/v1/webhooks", key, map[string]any{"url": pending.URL()}), 201, "")

		e.settle("acct_a", "photo_k1", "photo", jobs.Succeeded, "", "")
		e.settle("acct_a", "music_k2", "music", jobs.Failed, "run_failed", "")
		e.settle("acct_a", "chat_k3", "chat", jobs.Succeeded, "", callback.URL())
		e.settle("acct_a", "photo_k4", "photo", jobs.Succeeded, "", callback.URL())
		e.pump()

		// WH-29: the photo-only endpoint gets photo jobs; the unfiltered one gets both products.
		got := photoHook.received("")
		if len(got) != 2 {
			t.Fatalf("photo endpoint got %d deliveries", len(got))
		}
		if n := len(allHook.received("")); n != 3 {
			t.Fatalf("unfiltered endpoint got %d deliveries", n)
		}
		// WH-14: the pending endpoint got its challenge and nothing else.
		if n := len(pending.received("")); n != 0 {
			t.Fatalf("pending endpoint got %d events", n)
		}
		var env map[string]any
		for _, g := range got {
			if err := json.Unmarshal(g.Body, &env); err != nil {
				t.Fatal(err)
			}
			if env["id"] == "evt_photo_k1_succeeded" {
				got[0] = g
				break
			}
		}
		data, _ := env["data"].(map[string]any)
		if env["id"] != "evt_photo_k1_succeeded" || env["type"] != "job.succeeded" || env["account"] != "acct_a" || env["webhook_id"] != photoID ||
			env["created"] != float64(e.clock.Now().Unix()) || data["id"] != "photo_k1" || data["object"] != "job" || data["product"] != "photo" ||
			data["status"] != "succeeded" || data["error_code"] != nil || data["credits_charged"] != float64(7) || data["credits_reserved"] != float64(9) {
			t.Fatalf("envelope %s", got[0].Body)
		}
		if len(data) != 7 || len(env) != 6 {
			t.Fatalf("envelope carries more than the job record: %s", got[0].Body)
		}
		// WH-35, WH-39, WH-41: headers, and the signature verifies with a published key.
		h := got[0].Header
		if h.Get("Content-Type") != "application/json" || h.Get(webhooks.HeaderEvent) != "job.succeeded" || h.Get(webhooks.HeaderAttempt) != "1" ||
			h.Get(webhooks.HeaderDelivery) == "" || h.Get(webhooks.HeaderAltUserID) != "acct_a" || h.Get(webhooks.HeaderAltRequestID) != "req_photo_k1" {
			t.Fatalf("headers %v", h)
		}
		keys := e.publishedKeys()
		if err := webhooks.VerifyV2(h.Get(webhooks.HeaderSignature), got[0].Body, keys, e.clock.Now(), 5*time.Minute); err != nil {
			t.Fatalf("v2 signature: %v", err)
		}
		ps, _ := webhooks.ParseSignatureHeader(h.Get(webhooks.HeaderSignature))
		if err := webhooks.VerifyAlt(keys[ps.KID], h.Get(webhooks.HeaderAltSignature), h.Get(webhooks.HeaderAltRequestID), "acct_a",
			h.Get(webhooks.HeaderAltTimestamp), got[0].Body); err != nil {
			t.Fatalf("alt signature with the same key: %v", err)
		}

		// WH-30, WH-33, WH-40, WH-27: the per-request URL gets photo_k4 once in the queue shape; chat sends nothing.
		cb := callback.received("")
		if len(cb) != 1 {
			t.Fatalf("callback got %d", len(cb))
		}
		var body map[string]any
		_ = json.Unmarshal(cb[0].Body, &body)
		payload, _ := body["payload"].(map[string]any)
		if body["request_id"] != "req_photo_k4" || body["status"] != "OK" || body["error"] != nil || body["account"] != "acct_a" ||
			body["webhook_id"] != nil || payload["id"] != "photo_k4" || len(payload) != 7 {
			t.Fatalf("per-request body %s", cb[0].Body)
		}
		if _, ok := body["gateway_request_id"]; !ok {
			t.Fatalf("per-request body lacks gateway_request_id: %s", cb[0].Body)
		}
		ch := cb[0].Header
		if err := webhooks.VerifyAlt(keys[ps.KID], ch.Get(webhooks.HeaderAltSignature), "req_photo_k4", "acct_a", ch.Get(webhooks.HeaderAltTimestamp), cb[0].Body); err != nil {
			t.Fatalf("per-request alt signature: %v", err)
		}
		if len(callback.received(webhooks.EventChallenge)) != 0 {
			t.Fatal("a per-request URL was challenged")
		}

		// WH-28: the same outcome settled again (the outbox row re-read after a crash) delivers nothing new.
		if _, err := db.SQL().Exec(`INSERT INTO events_pending SELECT seq, account_id, id, job_id, request_id, type, product, status, error_code, charged, reserved, webhook, created_at FROM events`); err != nil {
			t.Fatal(err)
		}
		e.settle("acct_a", "photo_k1", "photo", jobs.Succeeded, "", "")
		e.clock.Add(time.Minute)
		e.pump()
		if n := len(photoHook.received("")); n != 2 {
			t.Fatalf("a job notified twice was delivered %d times", n)
		}
		if n := len(callback.received("")); n != 1 {
			t.Fatalf("the per-request URL got %d", n)
		}
		evs, err := sqlstore.WebhookOutbox{DB: db}.Pending(context.Background(), 10)
		if err != nil || len(evs) != 0 {
			t.Fatalf("outbox not drained: %v %v", evs, err)
		}
	})
}

// TestRL02_WebhookRoutesBuckets proves RL-02 for the webhook routes: webhook changes (create,
// re-challenge, delete) are admitted against write and the list (a GET) against read, each
// once at cost 1, and the answer carries that admission's rate headers.
func TestRL02_WebhookRoutesBuckets(t *testing.T) {
	db := storetest.OpenSQLite(t)
	rc := newWHReceiver(t)
	e := newWHEnv(t, db, rootsOf(rc.srv))
	pacer := &recPacer{}
	e.gate.Pacer = pacer
	storetest.NewAccount(t, db, "acct_a", auth.Pro, 1000)
	key := e.mint("acct_a")

	check := func(what string, want ratelimit.Bucket, limit string, do func() *http.Response) {
		t.Helper()
		res := do()
		res.Body.Close()
		calls := pacer.take()
		if len(calls) != 1 || calls[0].Bucket != want || calls[0].Cost != 1 {
			t.Fatalf("%s: admissions %+v, want one %s at cost 1", what, calls, want)
		}
		if got := res.Header.Get("RateLimit-Limit"); got != limit {
			t.Fatalf("%s: RateLimit-Limit %q, want %s (the %s admission's)", what, got, limit, want)
		}
	}
	send := func(method, path string, body string) func() *http.Response {
		return func() *http.Response {
			var rd io.Reader
			if body != "" {
				rd = strings.NewReader(body)
			}
			req, _ := http.NewRequest(method, e.base+path, rd)
			req.Header.Set("Authorization", "Bearer "+key)
			if body != "" {
				req.Header.Set("Content-Type", "application/json")
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			return res
		}
	}
	var id string
	check("POST /v1/webhooks", ratelimit.Write, "20", func() *http.Response {
		res := send("POST", "/v1/webhooks", `{"url":"`+rc.URL()+`"}`)()
		var rec struct {
			ID string `json:"id"`
		}
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode != 201 || json.Unmarshal(b, &rec) != nil || rec.ID == "" {
			t.Fatalf("create: %d %s", res.StatusCode, b)
		}
		id = rec.ID
		return res
	})
	check("GET /v1/webhooks", ratelimit.Read, "60", send("GET", "/v1/webhooks", ""))
	check("POST /v1/webhooks/{id}", ratelimit.Write, "20", send("POST", "/v1/webhooks/"+id, ""))
	check("DELETE /v1/webhooks/{id}", ratelimit.Write, "20", send("DELETE", "/v1/webhooks/"+id, ""))
}
