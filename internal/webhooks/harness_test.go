package webhooks

import (
	"context"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/json"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

var testSecret = []byte("deployment-secret-for-tests-0123456789")

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func (c *fakeClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

type received struct {
	Header http.Header
	Body   []byte
	At     time.Time
}

// receiver is a real HTTPS server on loopback. Challenges are echoed unless echo is off; other
// requests get status (200 by default).
type receiver struct {
	srv    *httptest.Server
	clock  *fakeClock
	mu     sync.Mutex
	reqs   []received
	status int
	echo   bool
	answer func(r *http.Request, body []byte) (int, string) // overrides everything when set
}

func newReceiver(t *testing.T, clock *fakeClock) *receiver {
	rc := &receiver{clock: clock, status: 200, echo: true}
	rc.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.reqs = append(rc.reqs, received{Header: r.Header.Clone(), Body: body, At: clock.Now()})
		status, echo, answer := rc.status, rc.echo, rc.answer
		rc.mu.Unlock()
		if answer != nil {
			code, text := answer(r, body)
			w.WriteHeader(code)
			io.WriteString(w, text)
			return
		}
		if r.Header.Get(HeaderEvent) == EventChallenge {
			var env ChallengeEnvelope
			_ = json.Unmarshal(body, &env)
			if echo {
				w.Header().Set("Content-Type", "application/json")
				json.NewEncoder(w).Encode(map[string]string{"nonce": env.Data.Nonce})
				return
			}
			w.WriteHeader(200)
			io.WriteString(w, `{"ok":true}`)
			return
		}
		w.WriteHeader(status)
		io.WriteString(w, "ok")
	}))
	rc.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // handshake noise when servers close
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *receiver) URL() string { return rc.srv.URL + "/hook" }

func (rc *receiver) setStatus(code int) {
	rc.mu.Lock()
	rc.status = code
	rc.mu.Unlock()
}

func (rc *receiver) setEcho(on bool) {
	rc.mu.Lock()
	rc.echo = on
	rc.mu.Unlock()
}

// events returns the non-challenge requests received so far.
func (rc *receiver) events() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []received
	for _, r := range rc.reqs {
		if r.Header.Get(HeaderEvent) != EventChallenge {
			out = append(out, r)
		}
	}
	return out
}

func (rc *receiver) all() []received {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]received(nil), rc.reqs...)
}

type harness struct {
	t      *testing.T
	ctx    context.Context
	clock  *fakeClock
	store  *MemStore
	keys   *KeyRing
	rcv    *receiver
	sender *Sender
	svc    *Service
	cfg    Config
}

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func newHarness(t *testing.T, mutate ...func(*Config)) *harness {
	t.Helper()
	ctx := context.Background()
	clock := &fakeClock{t: t0}
	keys, err := NewKeyRing(KeyRingConfig{Store: NewMemKeyStore(), Secret: testSecret, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := keys.Maintain(ctx, clock.Now()); err != nil {
		t.Fatal(err)
	}
	rcv := newReceiver(t, clock)
	pool := x509.NewCertPool()
	pool.AddCert(rcv.srv.Certificate())
	policy := AllowLoopbackForTests(t)
	sender := NewSender(SenderConfig{Policy: policy, RootCAs: pool})
	h := &harness{t: t, ctx: ctx, clock: clock, store: NewMemStore(), keys: keys, rcv: rcv, sender: sender}
	h.cfg = Config{Store: h.store, Keys: keys, Sender: sender, Clock: clock, Policy: policy,
		Secret: testSecret, PublicBaseURL: "https://api.example.com", Jitter: func() float64 { return 0 }}
	for _, m := range mutate {
		m(&h.cfg)
	}
	h.svc, err = NewService(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// newEngine is a fresh engine over the same store, as after a restart.
func (h *harness) newEngine() *Engine {
	e, err := NewEngine(h.cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	return e
}

func (h *harness) register(account string, products ...string) Endpoint {
	h.t.Helper()
	reg, err := h.svc.Register(h.ctx, RegisterParams{Account: account, URL: h.rcv.URL(), Products: products})
	if err != nil {
		h.t.Fatal(err)
	}
	return reg.Endpoint
}

func (h *harness) sweep(at time.Time) SweepStats {
	h.t.Helper()
	h.clock.Set(at)
	s, err := h.svc.Engine().RunOnce(h.ctx, at)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

func (h *harness) endpoint(id string) Endpoint {
	h.t.Helper()
	e, err := h.store.GetEndpoint(h.ctx, id)
	if err != nil {
		h.t.Fatal(err)
	}
	return e
}

func (h *harness) publicKeys() map[string]ed25519.PublicKey {
	h.t.Helper()
	doc, err := h.keys.JWKS(h.ctx, h.clock.Now())
	if err != nil {
		h.t.Fatal(err)
	}
	return keysFromJWKS(h.t, doc)
}

func keysFromJWKS(t *testing.T, doc []byte) map[string]ed25519.PublicKey {
	t.Helper()
	var set struct {
		Keys []struct {
			Kty, Crv, Alg, Use, X, Kid string
		} `json:"keys"`
	}
	if err := json.Unmarshal(doc, &set); err != nil {
		t.Fatal(err)
	}
	out := map[string]ed25519.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "OKP" || k.Crv != "Ed25519" || k.Alg != "EdDSA" || k.Use != "sig" || k.Kid == "" {
			t.Fatalf("jwks entry %+v", k)
		}
		x, err := b64url(k.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			t.Fatalf("jwks x %q: %v", k.X, err)
		}
		out[k.Kid] = ed25519.PublicKey(x)
	}
	return out
}

func jobEvent(account, job, product, status string) JobEvent {
	charged, reserved := int64(12), int64(15)
	ev := JobEvent{JobID: job, RequestID: "req_" + job, GatewayRequestID: "gw_" + job, Account: account, Product: product,
		Status: status, CreditsCharged: &charged, CreditsReserved: &reserved, SettledAt: t0}
	if status != JobSucceeded {
		code := "stalled"
		ev.ErrorCode = &code
	}
	return ev
}
