package webhooks

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"
)

func b64url(s string) ([]byte, error) { return base64.RawURLEncoding.DecodeString(s) }

func newRing(t *testing.T, clock Clock, store KeyStore) *KeyRing {
	t.Helper()
	r, err := NewKeyRing(KeyRingConfig{Store: store, Secret: testSecret, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// Proves WH-37, WH-38: the JWKS entries and the RFC 7638 thumbprint kid.
func TestWH37_WH38_JWKSAndThumbprint(t *testing.T) {
	ctx := context.Background()
	ring := newRing(t, &fakeClock{t: t0}, NewMemKeyStore())
	if _, err := ring.Current(ctx, t0); !errors.Is(err, ErrNoSigningKey) {
		t.Fatalf("before Maintain: %v", err)
	}
	if err := ring.Maintain(ctx, t0); err != nil {
		t.Fatal(err)
	}
	doc, err := ring.JWKS(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	keys := keysFromJWKS(t, doc)
	if len(keys) != 1 {
		t.Fatalf("keys %s", doc)
	}
	for kid, pub := range keys {
		// RFC 7638 by hand: SHA-256 of {"crv":"Ed25519","kty":"OKP","x":"..."} (members sorted, no spaces).
		canon := `{"crv":"Ed25519","kty":"OKP","x":"` + base64.RawURLEncoding.EncodeToString(pub) + `"}`
		sum := sha256.Sum256([]byte(canon))
		if want := base64.RawURLEncoding.EncodeToString(sum[:]); kid != want {
			t.Fatalf("kid %s, want thumbprint %s", kid, want)
		}
	}
	// RFC 8037 appendix A.3 test vector.
	x, _ := b64url("11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo")
	if got, _ := Thumbprint(ed25519.PublicKey(x)); got != "kPrK_qmxVWaYVA9wwBF6Iuo3vVzz7TxHCTwXBygrS4k" {
		t.Fatalf("RFC 8037 thumbprint %s", got)
	}
}

// Proves WH-39, WH-40, WH-41: both signatures with the same key, verified from the JWKS only.
func TestWH39_WH40_WH41_SignAndVerify(t *testing.T) {
	ctx := context.Background()
	ring := newRing(t, &fakeClock{t: t0}, NewMemKeyStore())
	if err := ring.Maintain(ctx, t0); err != nil {
		t.Fatal(err)
	}
	key, _ := ring.Current(ctx, t0)
	doc, _ := ring.JWKS(ctx, t0)
	pubs := keysFromJWKS(t, doc)
	body := []byte(`{"id":"evt_photo_k1_succeeded","account":"acc_1"}`)

	h := SignV2(key, t0, body)
	parts := strings.Split(h, ",")
	if len(parts) != 3 || parts[0] != "t="+strconv.FormatInt(t0.Unix(), 10) || !strings.HasPrefix(parts[1], "v2=") || parts[2] != "kid="+key.KID {
		t.Fatalf("header %q", h)
	}
	sig, err := b64url(strings.TrimPrefix(parts[1], "v2="))
	if err != nil || !ed25519.Verify(pubs[key.KID], []byte(strconv.FormatInt(t0.Unix(), 10)+"."+string(body)), sig) {
		t.Fatal("v2 does not verify over t.body")
	}
	if err := VerifyV2(h, body, pubs, t0.Add(time.Minute), 5*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := VerifyV2(h, append(body, ' '), pubs, t0, 5*time.Minute); !errors.Is(err, ErrSignatureMismatch) {
		t.Fatalf("tampered body: %v", err)
	}
	if err := VerifyV2(h, body, pubs, t0.Add(6*time.Minute), 5*time.Minute); !errors.Is(err, ErrSignatureStale) {
		t.Fatalf("stale: %v", err)
	}
	if err := VerifyV2(h, body, map[string]ed25519.PublicKey{}, t0, 0); !errors.Is(err, ErrUnknownKID) {
		t.Fatalf("unknown kid: %v", err)
	}

	ts := strconv.FormatInt(t0.Unix(), 10)
	alt := SignAlt(key, "req_1", "acc_1", ts, body)
	sum := sha256.Sum256(body)
	msg := "req_1\nacc_1\n" + ts + "\n" + hex.EncodeToString(sum[:])
	raw, _ := hex.DecodeString(alt)
	if !ed25519.Verify(pubs[key.KID], []byte(msg), raw) {
		t.Fatal("alt signature does not verify over the newline-joined message")
	}
	if VerifyAlt(pubs[key.KID], alt, "req_1", "acc_2", ts, body) == nil {
		t.Fatal("alt signature verified for another user id")
	}
}

// Proves WH-43: the HMAC v1 header and the whsec_ secret fixed per endpoint id.
func TestWH43_HMACv1(t *testing.T) {
	secret := EndpointSecret(testSecret, "wh_abc")
	if !strings.HasPrefix(secret, "whsec_") || secret != EndpointSecret(testSecret, "wh_abc") {
		t.Fatalf("secret %q not stable", secret)
	}
	if secret == EndpointSecret(testSecret, "wh_abd") || secret == EndpointSecret([]byte("another-secret-0123456789"), "wh_abc") {
		t.Fatal("secret must depend on endpoint id and deployment secret")
	}
	body := []byte(`{"a":1}`)
	h := SignV1(secret, t0, body)
	ts := strconv.FormatInt(t0.Unix(), 10)
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + "." + string(body)))
	if h != "t="+ts+",v1="+hex.EncodeToString(m.Sum(nil)) {
		t.Fatalf("header %q", h)
	}
	// No replay window in the scheme: an old header still verifies without a tolerance.
	if err := VerifyV1(h, body, secret, t0.Add(48*time.Hour), 0); err != nil {
		t.Fatal(err)
	}
	if VerifyV1(h, body, EndpointSecret(testSecret, "wh_x"), t0, 0) == nil {
		t.Fatal("verified under another secret")
	}
}

// Proves WH-42: publish at least 24 h before signing, keep at least 36 h 25 min after the
// switch, each attempt signed with the key current when sent; keys sealed at rest.
func TestWH42_RotationSchedule(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: t0}
	store := NewMemKeyStore()
	ring := newRing(t, clock, store)
	if err := ring.Maintain(ctx, t0); err != nil {
		t.Fatal(err)
	}
	first, _ := ring.Current(ctx, t0)
	// Walk 70 days in sweep-sized steps; check the schedule at every step.
	type seen struct{ firstPublished, firstSigned, lastSigned, lastPublished time.Time }
	kids := map[string]*seen{}
	for at := t0; at.Before(t0.Add(70 * 24 * time.Hour)); at = at.Add(5 * time.Minute) {
		clock.Set(at)
		if err := ring.Maintain(ctx, at); err != nil {
			t.Fatal(err)
		}
		cur, err := ring.Current(ctx, at)
		if err != nil {
			t.Fatal(err)
		}
		pub, _ := ring.Published(ctx, at)
		for _, k := range pub {
			s := kids[k.KID]
			if s == nil {
				s = &seen{firstPublished: at}
				kids[k.KID] = s
			}
			s.lastPublished = at
		}
		s := kids[cur.KID]
		if s == nil {
			t.Fatalf("%v: signing key %s not published", at, cur.KID)
		}
		if s.firstSigned.IsZero() {
			s.firstSigned = at
		}
		s.lastSigned = at
	}
	if len(kids) < 3 {
		t.Fatalf("expected at least two rotations in 70 days, saw %d keys", len(kids))
	}
	for kid, s := range kids {
		if kid != first.KID && s.firstSigned.Sub(s.firstPublished) < 24*time.Hour {
			t.Errorf("%s signed %v after publication, want >= 24h", kid, s.firstSigned.Sub(s.firstPublished))
		}
		if !s.lastSigned.IsZero() && s.lastPublished.Before(t0.Add(69*24*time.Hour)) {
			if kept := s.lastPublished.Sub(s.lastSigned); kept < 36*time.Hour+25*time.Minute-5*time.Minute {
				t.Errorf("%s kept %v after its last signature, want >= 36h25m", kid, kept)
			}
		}
	}
	// Sealed at rest: the stored bytes are not the seed and do not open under another secret.
	stored, _ := store.ListSigningKeys(ctx)
	for _, s := range stored {
		if bytes.Contains(s.Sealed, first.Private.Seed()) {
			t.Fatal("seed stored in the clear")
		}
	}
	other, _ := NewKeyRing(KeyRingConfig{Store: store, Secret: []byte("a-different-deployment-secret"), Clock: clock})
	if _, err := other.Current(ctx, clock.Now()); err == nil {
		t.Fatal("keys opened under a different deployment secret")
	}
	// A second ring over the same store (another process) signs with the same current key.
	again := newRing(t, clock, store)
	a, _ := ring.Current(ctx, clock.Now())
	b, err := again.Current(ctx, clock.Now())
	if err != nil || a.KID != b.KID || !bytes.Equal(a.Private, b.Private) {
		t.Fatalf("second ring: %v %s %s", err, a.KID, b.KID)
	}
}

// Proves WH-42 (each attempt signed with the key current when sent): walking the ladder
// across a key switch, attempts before it carry the old kid and attempts after it the new one,
// each verifying against the published set of its time.
func TestWH42_RetrySignedWithNewKey(t *testing.T) {
	var ring *KeyRing
	h := newHarness(t, func(c *Config) {
		var err error
		ring, err = NewKeyRing(KeyRingConfig{Store: NewMemKeyStore(), Secret: testSecret, Clock: c.Clock, RotateEvery: 25 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		c.Keys = ring
	})
	h.keys = ring
	ep := h.register("acc_1")
	oldKey, _ := ring.Current(h.ctx, t0)
	h.rcv.setStatus(503)
	if _, err := h.svc.Notify(h.ctx, jobEvent("acc_1", "photo_k1", "photo", JobSucceeded)); err != nil {
		t.Fatal(err)
	}
	for at := t0; at.Before(t0.Add(40 * time.Hour)); at = at.Add(5 * time.Minute) {
		h.sweep(at)
	}
	newKey, _ := ring.Current(h.ctx, h.clock.Now())
	if newKey.KID == oldKey.KID {
		t.Fatal("no rotation happened")
	}
	evs := h.rcv.events()
	if len(evs) != MaxAttempts {
		t.Fatalf("%d attempts", len(evs))
	}
	switchAt := newKey.ActiveFrom
	for i, ev := range evs {
		p, _ := ParseSignatureHeader(ev.Header.Get(HeaderSignature))
		want := oldKey.KID
		if !ev.At.Before(switchAt) {
			want = newKey.KID
		}
		if p.KID != want {
			t.Errorf("attempt %d at %v signed by %s, want %s", i+1, ev.At, p.KID, want)
		}
		h.clock.Set(ev.At)
		if err := VerifyV2(ev.Header.Get(HeaderSignature), ev.Body, h.publicKeys(), ev.At, 5*time.Minute); err != nil {
			t.Errorf("attempt %d: %v", i+1, err)
		}
	}
	if last, _ := ParseSignatureHeader(evs[MaxAttempts-1].Header.Get(HeaderSignature)); last.KID != newKey.KID {
		t.Fatalf("last attempt kid %s", last.KID)
	}
	var env Envelope
	if err := json.Unmarshal(evs[0].Body, &env); err != nil || env.WebhookID == nil || *env.WebhookID != ep.ID {
		t.Fatalf("body %s", evs[0].Body)
	}
}

// Proves WH-42 (published at least 24 h before it signs, by every process): a second ring
// over the same store, which loaded its view just before the next key was stored, already
// serves that key 24 hours before it signs.
func TestWH42_EveryProcessPublishesBeforeSigning(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: t0}
	store := NewMemKeyStore()
	a := newRing(t, clock, store)
	b := newRing(t, clock, store)
	if err := a.Maintain(ctx, t0); err != nil {
		t.Fatal(err)
	}
	first, _ := a.Current(ctx, t0)
	// The rotation is due once the first key has signed RotateEvery - PublishLead.
	due := t0.Add(DefaultRotateEvery - DefaultPublishLead)
	if _, err := b.Published(ctx, due.Add(-time.Second)); err != nil { // b's view is now fresh, without the next key
		t.Fatal(err)
	}
	if err := a.Maintain(ctx, due); err != nil {
		t.Fatal(err)
	}
	keys, _ := store.ListSigningKeys(ctx)
	var next StoredKey
	for _, k := range keys {
		if k.KID != first.KID {
			next = k
		}
	}
	if next.KID == "" {
		t.Fatal("no next key stored")
	}
	for _, r := range []*KeyRing{a, b} {
		at := next.ActiveFrom.Add(-DefaultPublishLead)
		pub, err := r.Published(ctx, at)
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, k := range pub {
			found = found || k.KID == next.KID
		}
		if !found {
			t.Fatalf("24 h before the next key signs (%v) a ring does not publish it", at)
		}
		if cur, _ := r.Current(ctx, next.ActiveFrom.Add(-time.Nanosecond)); cur.KID != first.KID {
			t.Fatal("next key signs before its time")
		}
	}
}
