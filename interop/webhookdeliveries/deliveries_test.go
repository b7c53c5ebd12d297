package webhookdeliveries

import (
	"context"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/store"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/webhooks"
)

// Captured is one POST the receiver got, as written for the node tests.
type Captured struct {
	Scheme  string            `json:"scheme"` // v2 (Ed25519) or v1 (HMAC)
	Kind    string            `json:"kind"`   // challenge, event or callback
	Path    string            `json:"path"`
	Headers map[string]string `json:"headers"` // lower-case names
	BodyB64 string            `json:"body_b64"`
}

// Output is the file written to INTEROP_DELIVERIES_OUT.
type Output struct {
	Account    string            `json:"account"`
	Deliveries []Captured        `json:"deliveries"`
	Secrets    map[string]string `json:"secrets"` // endpoint path -> whsec_ shown at registration (v1)
	// ServerJWKS is what the Go side saw at the server before signing (the node test
	// fetches it again itself; this is for the failure message only).
	ServerJWKS json.RawMessage `json:"server_jwks"`
}

// webhookSecret mirrors cmd/modelexec's derivation of the webhooks key material from the
// deployment secret. If it ever drifted, opening the server's sealed keys below would fail.
func webhookSecret(secret string) []byte {
	if len(secret) >= 32 {
		return []byte(secret)
	}
	sum := sha256.Sum256([]byte("modelexec webhooks " + secret))
	return sum[:]
}

func env(t *testing.T, name string) string {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		t.Fatalf("%s is not set (interop/run.sh sets it)", name)
	}
	return v
}

// TestInteropCaptureDeliveries is not a requirement test of its own: it produces the
// deliveries that interop/test/jose.test.mjs verifies (issue 6 "Done when", jose part).
func TestInteropCaptureDeliveries(t *testing.T) {
	out := os.Getenv("INTEROP_DELIVERIES_OUT")
	if out == "" {
		t.Skip("run by interop/run.sh against a running server: set INTEROP_DELIVERIES_OUT, INTEROP_DATA, INTEROP_API_URL, INTEROP_ACCOUNT, MODELEXEC_SECRET")
	}
	data, apiURL, account := env(t, "INTEROP_DATA"), env(t, "INTEROP_API_URL"), env(t, "INTEROP_ACCOUNT")
	secret := webhookSecret(env(t, "MODELEXEC_SECRET"))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The server makes its first signing key when the JWKS is first asked for (or on its first
	// sweep); ask, so the ring below reads the key the server publishes rather than racing it.
	jwks := fetchJWKS(t, ctx, apiURL)

	db, err := store.Open(ctx, filepath.Join(data, "modelexec.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ring, err := webhooks.NewKeyRing(webhooks.KeyRingConfig{Store: sqlstore.WebhookKeys{DB: db}, Secret: secret})
	if err != nil {
		t.Fatal(err)
	}
	cur, err := ring.Current(ctx, time.Now())
	if err != nil {
		t.Fatalf("the server's current key cannot be opened with this secret: %v", err)
	}
	if !strings.Contains(string(jwks), `"kid":"`+cur.KID+`"`) {
		t.Fatalf("current kid %s is not in the server's JWKS %s", cur.KID, jwks)
	}

	var mu sync.Mutex
	var got []Captured
	recv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		h := map[string]string{}
		for k, v := range r.Header {
			h[strings.ToLower(k)] = strings.Join(v, ", ")
		}
		scheme, kind, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if h["svc-event"] == webhooks.EventChallenge {
			kind = "challenge"
		}
		mu.Lock()
		got = append(got, Captured{Scheme: scheme, Kind: kind, Path: r.URL.Path, Headers: h, BodyB64: base64.StdEncoding.EncodeToString(body)})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body) // echoes the challenge nonce
	}))
	defer recv.Close()
	roots := x509.NewCertPool()
	roots.AddCert(recv.Certificate())
	policy := webhooks.AllowLoopbackForTests(t)
	sender := webhooks.NewSender(webhooks.SenderConfig{Policy: policy, RootCAs: roots})

	res := Output{Account: account, Secrets: map[string]string{}, ServerJWKS: jwks}
	for _, sc := range []webhooks.Scheme{webhooks.SchemeEd25519, webhooks.SchemeHMAC} {
		svc, err := webhooks.NewService(webhooks.Config{Store: webhooks.NewMemStore(), Keys: ring, Sender: sender, Policy: policy,
			Scheme: sc, Secret: secret, PublicBaseURL: apiURL})
		if err != nil {
			t.Fatal(err)
		}
		path := "/" + string(sc) + "/event"
		reg, err := svc.Register(ctx, webhooks.RegisterParams{Account: account, URL: recv.URL + path, Products: []string{"photo"}})
		if err != nil {
			t.Fatal(err)
		}
		if !reg.Passed {
			t.Fatalf("%s: challenge did not pass: %+v", sc, reg.Endpoint)
		}
		if sc == webhooks.SchemeHMAC {
			if !strings.HasPrefix(reg.Secret, "whsec_") {
				t.Fatalf("v1 registration shows no whsec_ secret: %q", reg.Secret)
			}
			res.Secrets[path] = reg.Secret
		}
		charged, reserved := int64(3), int64(4)
		ev := webhooks.JobEvent{JobID: "photo_interop-" + string(sc), RequestID: fmt.Sprintf("interop-%s-%d", sc, time.Now().UnixNano()),
			GatewayRequestID: "req_interop", Account: account, Product: "photo", Status: webhooks.JobSucceeded,
			CreditsCharged: &charged, CreditsReserved: &reserved, SettledAt: time.Now().UTC(),
			CallbackURL: recv.URL + "/" + string(sc) + "/callback"}
		ids, err := svc.Notify(ctx, ev)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != 2 {
			t.Fatalf("%s: Notify enqueued %d deliveries, want 2 (endpoint and callback)", sc, len(ids))
		}
		st, err := svc.Engine().RunOnce(ctx, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s sweep: %+v", sc, st)
	}
	mu.Lock()
	res.Deliveries = got
	mu.Unlock()
	if len(res.Deliveries) != 6 {
		t.Fatalf("receiver got %d POSTs, want 6 (challenge, event, callback under each scheme)", len(res.Deliveries))
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func fetchJWKS(t *testing.T, ctx context.Context, apiURL string) json.RawMessage {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(apiURL, "/")+webhooks.JWKSPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", req.URL, resp.StatusCode, b)
	}
	return b
}
