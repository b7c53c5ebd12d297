package webhooks_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"

	"github.com/modelexec/modelexec/client/webhooks"
	server "github.com/modelexec/modelexec/internal/webhooks"
)

// TestWH44_UnknownKidRefetchesAtMostOnceAMinute: deliveries naming kids the set lacks (forged,
// or a key not yet fetched) make the Verifier fetch the JWKS at most once a minute; within the
// minute they are refused ErrUnknownKey without a fetch, and after it a key published since
// is found. While a fetch is under way, deliveries by a cached key verify without waiting on it.
func TestWH44_UnknownKidRefetchesAtMostOnceAMinute(t *testing.T) {
	k1, k2 := newKey(t, "kid-one"), newKey(t, "kid-two")
	var (
		mu        sync.Mutex
		published = []server.SigningKey{k1}
		hits      atomic.Int32
		gate      chan struct{} // when set, a fetch waits on it
		started   = make(chan struct{}, 100)
	)
	jwks := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		mu.Lock()
		g, keys := gate, append([]server.SigningKey(nil), published...)
		mu.Unlock()
		started <- struct{}{}
		if g != nil {
			<-g
		}
		set := jose.JSONWebKeySet{}
		for _, k := range keys {
			set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.Public, KeyID: k.KID, Algorithm: string(jose.EdDSA), Use: "sig"})
		}
		_ = json.NewEncoder(w).Encode(set)
	}))
	defer jwks.Close()
	var clock atomic.Int64
	clock.Store(1_800_000_000)
	now := func() time.Time { return time.Unix(clock.Load(), 0) }
	v := &webhooks.Verifier{JWKSURL: jwks.URL, Now: now}
	body := []byte(`{"account":"acct_1"}`)

	if _, err := v.Verify(delivery(server.SignV2(k1, now(), body), body)); err != nil {
		t.Fatal(err)
	}
	<-started
	for i := range 20 {
		forged := newKey(t, "forged-"+string(rune('a'+i)))
		if _, err := v.Verify(delivery(server.SignV2(forged, now(), body), body)); !errors.Is(err, webhooks.ErrUnknownKey) {
			t.Fatalf("forged kid %d: %v", i, err)
		}
	}
	if hits.Load() != 1 {
		t.Fatalf("JWKS fetched %d times for 20 forged kids within the minute, want once", hits.Load())
	}

	// A minute on, k2 is published; a delivery by it fetches the set again, once.
	mu.Lock()
	published = append(published, k2)
	gate = make(chan struct{})
	mu.Unlock()
	clock.Add(61)
	done := make(chan error, 1)
	go func() {
		_, err := v.Verify(delivery(server.SignV2(k2, now(), body), body))
		done <- err
	}()
	<-started // the fetch is under way and held
	if _, err := v.Verify(delivery(server.SignV2(k1, now(), body), body)); err != nil {
		t.Fatalf("a cached key while a fetch is under way: %v", err)
	}
	mu.Lock()
	close(gate)
	mu.Unlock()
	if err := <-done; err != nil {
		t.Fatalf("the key published since: %v", err)
	}
	if hits.Load() != 2 {
		t.Fatalf("JWKS fetched %d times, want 2", hits.Load())
	}
}

// TestWH39_AnyV2ValueVerifies: a header with several v2 values (a valid one among forged ones,
// in any order) is accepted; VerifyAccount also refuses a valid delivery for another account.
func TestWH39_AnyV2ValueVerifies(t *testing.T) {
	k := newKey(t, "kid-one")
	jwks, _ := keyServer(t, k)
	now := time.Unix(1_800_000_000, 0)
	v := &webhooks.Verifier{JWKSURL: jwks.URL, Now: func() time.Time { return now }}
	body := []byte(`{"account":"acct_1"}`)
	valid := server.SignV2(k, now, body) // t=…,v2=…,kid=…
	ts, rest, _ := strings.Cut(valid, ",v2=")
	sig, kid, _ := strings.Cut(rest, ",kid=")
	for _, h := range []string{
		ts + ",v2=" + sig + ",v2=AAAA,kid=" + kid,
		ts + ",v2=AAAA,v2=" + sig + ",kid=" + kid,
	} {
		if _, err := v.Verify(delivery(h, body)); err != nil {
			t.Fatalf("%s: %v", h, err)
		}
	}
	if _, err := v.Verify(delivery(ts+",v2=AAAA,v2=BBBB,kid="+kid, body)); !errors.Is(err, webhooks.ErrBadSignature) {
		t.Fatalf("no valid v2: %v", err)
	}
	if _, err := v.VerifyAccount(delivery(valid, body), "acct_1"); err != nil {
		t.Fatal(err)
	}
	if _, err := v.VerifyAccount(delivery(valid, body), "acct_2"); !errors.Is(err, webhooks.ErrOtherAccount) {
		t.Fatalf("another account's delivery: %v", err)
	}
}
