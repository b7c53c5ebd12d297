package webhooks

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Proves WH-05, WH-11, WH-12, WH-15, WH-18: registration challenges once with a signed
// envelope and an echoing receiver becomes active and verified; the record has every field.
func TestWH15_WH18_RegisterChallengeEchoed(t *testing.T) {
	h := newHarness(t)
	reg, err := h.svc.Register(h.ctx, RegisterParams{Account: "acc_1", URL: h.rcv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	if !reg.Passed || reg.Endpoint.Status != StatusActive || !reg.Endpoint.Verified || reg.Endpoint.VerifiedAt == nil {
		t.Fatalf("endpoint %+v", reg.Endpoint)
	}
	reqs := h.rcv.all()
	if len(reqs) != 1 {
		t.Fatalf("%d challenge requests", len(reqs))
	}
	c := reqs[0]
	var env map[string]any
	if err := json.Unmarshal(c.Body, &env); err != nil {
		t.Fatal(err)
	}
	data := env["data"].(map[string]any)
	if !strings.HasPrefix(env["id"].(string), "evt_challenge_") || env["type"] != EventChallenge || env["account"] != "acc_1" ||
		env["webhook_id"] != reg.Endpoint.ID || env["created"].(float64) != float64(t0.Unix()) ||
		data["webhook_id"] != reg.Endpoint.ID || data["nonce"] == "" || data["how"] == "" {
		t.Fatalf("challenge envelope %s", c.Body)
	}
	if err := VerifyV2(c.Header.Get(HeaderSignature), c.Body, h.publicKeys(), t0, 5*time.Minute); err != nil {
		t.Fatalf("challenge signature: %v", err)
	}
	rec := h.svc.Record(reg.Endpoint)
	b, _ := json.Marshal(rec)
	var m map[string]any
	json.Unmarshal(b, &m)
	for _, f := range []string{"id", "object", "url", "products", "status", "created_at", "verified", "verified_at", "verify_keys",
		"signature_algorithm", "consecutive_failures", "last_success_at", "last_failure_at", "last_status_code", "disabled_reason"} {
		if _, ok := m[f]; !ok {
			t.Errorf("record lacks %s: %s", f, b)
		}
	}
	if m["object"] != "webhook" || m["products"] != nil || m["verify_keys"] != "https://api.example.com/.well-known/jwks.json" ||
		m["signature_algorithm"] != "EdDSA" || m["created_at"] != "2026-11-21T10:00:00Z" || m["verification"] != nil || m["secret"] != nil {
		t.Fatalf("record %s", b)
	}
	if strings.Contains(string(b), data["nonce"].(string)) {
		t.Fatal("nonce leaked into the record")
	}
}

// Proves WH-16: the nonce passes anywhere in a 2xx body; anything else fails with a reason.
func TestWH16_ChallengeJudgement(t *testing.T) {
	const nonce = "0123456789abcdef0123456789abcdef"
	pass := []string{
		`{"nonce":"` + nonce + `"}`, `{"challenge":"` + nonce + `"}`, `{"data":{"nonce":"` + nonce + `"}}`,
		nonce, "<html><body><p>" + nonce + "</p></body></html>", "echo: " + nonce + "\n",
	}
	for _, body := range pass {
		if ok, v := JudgeChallenge(Answer{StatusCode: 200, Body: []byte(body)}, nonce); !ok {
			t.Errorf("%q failed: %+v", body, v)
		}
	}
	if ok, _ := JudgeChallenge(Answer{StatusCode: 204, Body: []byte(nonce)}, nonce); !ok {
		t.Error("any 2xx passes")
	}
	long := strings.Repeat("x", 300) + nonce
	cases := []struct {
		ans    Answer
		reason string
		body   string
	}{
		{Answer{StatusCode: 200, Body: []byte(`{"ok":true}`)}, "nonce_not_echoed", `{"ok":true}`},
		{Answer{StatusCode: 500, Body: []byte(`{"nonce":"` + nonce + `"}`)}, "status_500", `{"nonce":"[nonce]"}`},
		{Answer{StatusCode: 301, Body: []byte(nonce)}, "status_301", "[nonce]"},
		{Answer{StatusCode: 403, Body: []byte("wrong account")}, "status_403", "wrong account"},
		{Answer{StatusCode: 200, Body: []byte(long[:250])}, "nonce_not_echoed", strings.Repeat("x", 200)},
		{Answer{Failure: FailTimeout}, "timeout", ""},
		{Answer{Failure: FailBlocked}, "blocked_address", ""},
	}
	for _, c := range cases {
		ok, v := JudgeChallenge(c.ans, nonce)
		if ok || v == nil || v.Reason != c.reason || v.Body != c.body {
			t.Errorf("%+v: ok %v verification %+v, want %s %q", c.ans.StatusCode, ok, v, c.reason, c.body)
		}
	}
}

// Proves WH-13, WH-14, WH-17, WH-19, WH-20, WH-08: a challenge not echoed leaves the endpoint
// pending with verification (nothing queued for it); a re-challenge that passes activates it.
func TestWH19_WH20_PendingThenRechallenge(t *testing.T) {
	h := newHarness(t)
	h.rcv.setEcho(false)
	reg, err := h.svc.Register(h.ctx, RegisterParams{Account: "acc_1", URL: h.rcv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	ep := reg.Endpoint
	if reg.Passed || ep.Status != StatusPending || ep.Verified || ep.Verification == nil || ep.Verification.Reason != ChallengeNonceNotEchoed ||
		ep.Verification.Body != `{"ok":true}` || *ep.Verification.StatusCode != 200 {
		t.Fatalf("endpoint %+v %+v", ep, ep.Verification)
	}
	b, _ := json.Marshal(h.svc.Record(ep))
	if !strings.Contains(string(b), `"verification":{"reason":"nonce_not_echoed","status_code":200,"body":"{\"ok\":true}"}`) {
		t.Fatalf("record %s", b)
	}
	ids, err := h.svc.Notify(h.ctx, jobEvent("acc_1", "photo_k1", "photo", JobSucceeded))
	if err != nil || len(ids) != 0 {
		t.Fatalf("pending endpoint got deliveries %v %v", ids, err)
	}
	h.sweep(t0.Add(5 * time.Minute))
	if n := len(h.rcv.events()); n != 0 {
		t.Fatalf("pending endpoint received %d events", n)
	}
	// A failed re-challenge keeps the status and updates verification.
	h.rcv.answer = func(*http.Request, []byte) (int, string) { return 502, "bad gateway" }
	again, err := h.svc.Rechallenge(h.ctx, "acc_1", ep.ID)
	if err != nil || again.Endpoint.Status != StatusPending || again.Endpoint.Verification.Reason != "status_502" {
		t.Fatalf("failed re-challenge %+v %v", again.Endpoint, err)
	}
	h.rcv.answer = nil
	h.rcv.setEcho(true)
	again, err = h.svc.Rechallenge(h.ctx, "acc_1", ep.ID)
	if err != nil || !again.Passed || again.Endpoint.Status != StatusActive || !again.Endpoint.Verified || again.Endpoint.Verification != nil {
		t.Fatalf("re-challenge %+v %v", again.Endpoint, err)
	}
	// Another account cannot re-challenge it.
	if _, err := h.svc.Rechallenge(h.ctx, "acc_2", ep.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("other account: %v", err)
	}
	// The nonce of every challenge sent never appears in a record.
	for _, r := range h.rcv.all() {
		var env ChallengeEnvelope
		json.Unmarshal(r.Body, &env)
		for _, e := range []Endpoint{ep, again.Endpoint} {
			b, _ := json.Marshal(h.svc.Record(e))
			if strings.Contains(string(b), env.Data.Nonce) {
				t.Fatal("nonce in record")
			}
		}
	}
}

// Proves WH-09: a stored URL that no longer passes answers *URLError (409 invalid_url).
func TestWH09_RechallengeStoredURLRefused(t *testing.T) {
	h := newHarness(t)
	ep := h.register("acc_1")
	strict, err := NewService(Config{Store: h.store, Keys: h.keys, Clock: h.clock})
	if err != nil {
		t.Fatal(err)
	}
	_, err = strict.Rechallenge(h.ctx, "acc_1", ep.ID)
	if urlReason(err) != ReasonPrivateHost {
		t.Fatalf("err %v", err)
	}
	if _, err := strict.Rechallenge(h.ctx, "acc_1", "wh_missing"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("missing: %v", err)
	}
}

// Proves WH-01, WH-02, WH-03, WH-06, LIM-06: registration refusals.
func TestWH03_WH06_RegisterRefusals(t *testing.T) {
	h := newHarness(t)
	if _, err := h.svc.Register(h.ctx, RegisterParams{Account: "a", URL: "https://10.1.2.3/x"}); urlReason(err) != ReasonPrivateHost {
		t.Fatalf("private: %v", err)
	}
	if _, err := h.svc.Register(h.ctx, RegisterParams{Account: "a", URL: "http://example.com/"}); urlReason(err) != ReasonNotHTTPS {
		t.Fatalf("http: %v", err)
	}
	var pe *ProductsError
	_, err := h.svc.Register(h.ctx, RegisterParams{Account: "a", URL: h.rcv.URL(), Products: []string{"photo", "images"}})
	if !errors.As(err, &pe) || pe.Product != "images" || strings.Join(pe.Allowed, ",") != "photo,music,threed,video,external,chat,embeddings" {
		t.Fatalf("products: %v", err)
	}
	reg, err := h.svc.Register(h.ctx, RegisterParams{Account: "a", URL: h.rcv.URL(), Products: []string{}})
	if err != nil || reg.Endpoint.Products != nil {
		t.Fatalf("empty products must be every product (null): %v %v", reg.Endpoint.Products, err)
	}
	if b, _ := json.Marshal(h.svc.Record(reg.Endpoint)); !strings.Contains(string(b), `"products":null`) {
		t.Fatalf("record %s", b)
	}
	for i := 0; i < 4; i++ {
		h.register("a", "photo", "chat")
	}
	if _, err := h.svc.Register(h.ctx, RegisterParams{Account: "a", URL: h.rcv.URL()}); !errors.Is(err, ErrTooManyWebhooks) || h.svc.MaxEndpoints() != 5 {
		t.Fatalf("sixth: %v", err)
	}
	// Another account is not affected.
	h.register("b")
	// A dead endpoint does not count.
	eps, _ := h.svc.List(h.ctx, "a")
	h.store.mu.Lock()
	e := h.store.endpoints[eps[0].ID]
	e.Status = StatusDead
	h.store.endpoints[e.ID] = e
	h.store.mu.Unlock()
	if _, err := h.svc.Register(h.ctx, RegisterParams{Account: "a", URL: h.rcv.URL()}); err != nil {
		t.Fatalf("dead one counted: %v", err)
	}
}

// Proves WH-07, WH-10: list (oldest first, own account only) and delete (queued deliveries
// deleted, existed false the second time).
func TestWH07_WH10_ListAndDelete(t *testing.T) {
	h := newHarness(t)
	a := h.register("acc_1")
	h.clock.Advance(time.Second)
	b := h.register("acc_1")
	h.register("acc_2")
	eps, err := h.svc.List(h.ctx, "acc_1")
	if err != nil || len(eps) != 2 || eps[0].ID != a.ID || eps[1].ID != b.ID {
		t.Fatalf("list %v %v", eps, err)
	}
	h.rcv.setStatus(500)
	h.svc.Notify(h.ctx, jobEvent("acc_1", "photo_k1", "photo", JobSucceeded))
	h.sweep(h.clock.Now())
	if ds, _ := h.store.ListDeliveries(h.ctx, ListDeliveriesParams{EndpointID: a.ID}); len(ds) != 1 || ds[0].Status != DeliveryScheduled {
		t.Fatalf("deliveries %+v", ds)
	}
	if existed, err := h.svc.Delete(h.ctx, "acc_2", a.ID); existed || err != nil {
		t.Fatal("deleted another account's endpoint")
	}
	if existed, err := h.svc.Delete(h.ctx, "acc_1", a.ID); !existed || err != nil {
		t.Fatalf("delete %v %v", existed, err)
	}
	if ds, _ := h.store.ListDeliveries(h.ctx, ListDeliveriesParams{EndpointID: a.ID}); len(ds) != 0 {
		t.Fatalf("queued deliveries kept: %+v", ds)
	}
	if existed, _ := h.svc.Delete(h.ctx, "acc_1", a.ID); existed {
		t.Fatal("existed twice")
	}
	before := len(h.rcv.events())
	h.sweep(h.clock.Now().Add(6 * time.Minute))
	for _, r := range h.rcv.events()[before:] {
		var env Envelope
		json.Unmarshal(r.Body, &env)
		if *env.WebhookID == a.ID {
			t.Fatal("deleted endpoint still delivered")
		}
	}
}

// Proves WH-43 through the service: under the HMAC setting the whsec_ secret is returned at
// registration and by a re-challenge, and deliveries carry v1 signatures under it.
func TestWH43_HMACSchemeDeliveries(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Scheme = SchemeHMAC })
	reg, err := h.svc.Register(h.ctx, RegisterParams{Account: "acc_1", URL: h.rcv.URL()})
	if err != nil || reg.Secret == "" || reg.Secret != EndpointSecret(testSecret, reg.Endpoint.ID) {
		t.Fatalf("secret %q %v", reg.Secret, err)
	}
	if r := h.svc.RegistrationRecord(reg); r.Secret != reg.Secret || r.SignatureAlgorithm != "HMAC-SHA256" {
		t.Fatalf("record %+v", r)
	}
	again, _ := h.svc.Rechallenge(h.ctx, "acc_1", reg.Endpoint.ID)
	if again.Secret != reg.Secret {
		t.Fatal("secret changed")
	}
	h.svc.Notify(h.ctx, jobEvent("acc_1", "photo_k1", "photo", JobSucceeded))
	h.sweep(t0)
	ev := h.rcv.events()[0]
	if err := VerifyV1(ev.Header.Get(HeaderSignature), ev.Body, reg.Secret, t0, 0); err != nil {
		t.Fatalf("v1: %v (%s)", err, ev.Header.Get(HeaderSignature))
	}
	if !strings.Contains(ev.Header.Get(HeaderSignature), ",v1=") || strings.Contains(ev.Header.Get(HeaderSignature), "v2=") {
		t.Fatalf("header %s", ev.Header.Get(HeaderSignature))
	}
	// The queue-protocol signature is still Ed25519.
	pubs := h.publicKeys()
	var ok bool
	for _, pub := range pubs {
		ok = ok || VerifyAlt(pub, ev.Header.Get(HeaderAltSignature), ev.Header.Get(HeaderAltRequestID), "acc_1", ev.Header.Get(HeaderAltTimestamp), ev.Body) == nil
	}
	if !ok {
		t.Fatal("alt signature")
	}
}

// Proves WH-17: a receiver that echoes the nonce in another letter case fails the challenge,
// and the nonce is blanked from the verification body in whatever case it came back.
func TestWH17_NonceBlankedInAnyCase(t *testing.T) {
	const nonce = "0123456789abcdef0123456789abcdef"
	upper := strings.ToUpper(nonce)
	mixed := "0123456789AbCdEf0123456789aBcDeF"
	ok, v := JudgeChallenge(Answer{StatusCode: 200, Body: []byte(`{"nonce":"` + upper + `","n2":"` + mixed + `"}`)}, nonce)
	if ok || v == nil || v.Reason != ChallengeNonceNotEchoed {
		t.Fatalf("upper-cased echo: passed %v, verification %+v", ok, v)
	}
	if want := `{"nonce":"[nonce]","n2":"[nonce]"}`; v.Body != want {
		t.Fatalf("verification body %q, want %q", v.Body, want)
	}
	// A refused answer holding the nonce in every case, next to multi-byte text.
	ok, v = JudgeChallenge(Answer{StatusCode: 403, Body: []byte(`é` + nonce + `é` + upper + mixed)}, nonce)
	if ok || v == nil || v.Body != `é[nonce]é[nonce][nonce]` {
		t.Fatalf("403 answer: passed %v, verification %+v", ok, v)
	}
}

// Proves WH-16 (anywhere in the body, HTML included): a receiver answering the challenge with
// an HTML page whose nonce comes after more than 2 KB of markup passes; deliveries still read
// at most 2 KB (WH-45).
func TestWH16_NonceDeepInHTMLPage(t *testing.T) {
	h := newHarness(t)
	page := "<html><head>" + strings.Repeat("<meta name=\"x\" content=\"padding\">", 200) + "</head><body>"
	if len(page) <= MaxAnswerRead {
		t.Fatalf("page head is only %d bytes", len(page))
	}
	h.rcv.answer = func(r *http.Request, body []byte) (int, string) {
		var env ChallengeEnvelope
		_ = json.Unmarshal(body, &env)
		return 200, page + "<p>" + env.Data.Nonce + "</p></body></html>"
	}
	reg, err := h.svc.Register(h.ctx, RegisterParams{Account: "acc_1", URL: h.rcv.URL()})
	if err != nil || !reg.Passed || reg.Endpoint.Status != StatusActive {
		t.Fatalf("register: %+v %v", reg.Endpoint, err)
	}
	ans := h.sender.Post(h.ctx, h.rcv.URL(), http.Header{}, []byte(`{}`))
	if len(ans.Body) != MaxAnswerRead {
		t.Fatalf("a delivery read %d bytes, want %d", len(ans.Body), MaxAnswerRead)
	}
}

// Embeddings calls are jobs that send their event like any other product's (docs/chat.md): an
// endpoint may take them by name (it was refused invalid_products), and one that takes only
// photo does not get them.
func TestWH03_EmbeddingsEventsByProduct(t *testing.T) {
	h := newHarness(t)
	h.register("acc_1", "embeddings")
	h.register("acc_1", "photo")
	ids := h.notify(jobEvent("acc_1", "embeddings_k1", "embeddings", JobSucceeded))
	h.sweep(t0)
	evs := h.rcv.events()
	if len(ids) != 1 || len(evs) != 1 || !strings.Contains(string(evs[0].Body), `"product":"embeddings"`) {
		t.Fatalf("an embeddings event made deliveries %v and reached the receiver %d times, want once, for the embeddings endpoint", ids, len(evs))
	}
}
