package webhooks_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/modelexec/modelexec/client/webhooks"
	server "github.com/modelexec/modelexec/internal/webhooks"
)

// keyServer serves a JWKS of keys the way the service does (go-jose, OKP Ed25519) and counts
// the fetches.
func keyServer(t *testing.T, keys ...server.SigningKey) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	set := jose.JSONWebKeySet{}
	for _, k := range keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.Public, KeyID: k.KID, Algorithm: string(jose.EdDSA), Use: "sig"})
	}
	b, err := json.Marshal(set)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(b)
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func newKey(t *testing.T, kid string) server.SigningKey {
	t.Helper()
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return server.SigningKey{KID: kid, Private: priv, Public: pub}
}

func delivery(sig string, body []byte) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(body))
	r.Header.Set(webhooks.HeaderSignature, sig)
	return r
}

// TestVerifyServiceSignatures: a delivery signed by the service's own signer verifies by kid
// against the JWKS, and the body is handed back and left readable on the request; a changed
// body, a stale or future timestamp, an unknown kid, an HMAC-only header and a missing header
// are each refused with their own error; the key set is fetched once for many deliveries.
func TestVerifyServiceSignatures(t *testing.T) {
	k1, k2 := newKey(t, "kid-one"), newKey(t, "kid-two")
	jwks, hits := keyServer(t, k1, k2)
	now := time.Unix(1_800_000_000, 0)
	v := &webhooks.Verifier{JWKSURL: jwks.URL, Now: func() time.Time { return now }}
	body := []byte(`{"type":"job.succeeded","data":{"id":"photo_abc"}}`)

	for _, k := range []server.SigningKey{k1, k2} {
		r := delivery(server.SignV2(k, now.Add(-time.Minute), body), body)
		got, err := v.Verify(r)
		if err != nil || !bytes.Equal(got, body) {
			t.Fatalf("kid %s: %v %s", k.KID, err, got)
		}
		again, _ := io.ReadAll(r.Body)
		if !bytes.Equal(again, body) {
			t.Fatalf("body not put back: %s", again)
		}
	}
	if hits.Load() != 1 {
		t.Fatalf("JWKS fetched %d times, want once", hits.Load())
	}

	cases := []struct {
		name string
		sig  string
		body []byte
		want error
	}{
		{"changed body", server.SignV2(k1, now, body), []byte(`{"type":"job.failed"}`), webhooks.ErrBadSignature},
		{"stale", server.SignV2(k1, now.Add(-6*time.Minute), body), body, webhooks.ErrStale},
		{"future", server.SignV2(k1, now.Add(6*time.Minute), body), body, webhooks.ErrStale},
		{"unknown kid", server.SignV2(newKey(t, "kid-three"), now, body), body, webhooks.ErrUnknownKey},
		{"other key, known kid", strings.Replace(server.SignV2(newKey(t, "x"), now, body), "kid=x", "kid=kid-one", 1), body, webhooks.ErrBadSignature},
		{"hmac only", server.SignV1("whsec_test", now, body), body, webhooks.ErrNoSignature},
		{"missing", "", body, webhooks.ErrNoSignature},
	}
	for _, c := range cases {
		if _, err := v.Verify(delivery(c.sig, c.body)); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

// TestVerifyOneOff: the package-level Verify checks a delivery with the default five-minute
// tolerance against the real clock.
func TestVerifyOneOff(t *testing.T) {
	k := newKey(t, "kid-one")
	jwks, _ := keyServer(t, k)
	body := []byte(`{}`)
	if _, err := webhooks.Verify(delivery(server.SignV2(k, time.Now(), body), body), jwks.URL); err != nil {
		t.Fatal(err)
	}
	if _, err := webhooks.Verify(delivery(server.SignV2(k, time.Now().Add(-10*time.Minute), body), body), jwks.URL); !errors.Is(err, webhooks.ErrStale) {
		t.Fatalf("ten minutes old: %v", err)
	}
}
