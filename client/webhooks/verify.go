package webhooks

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// HeaderSignature is the header that carries the signature of a delivery.
const HeaderSignature = "Svc-Signature"

// DefaultTolerance is how far a delivery's t may be from the receiver's clock (docs/webhooks.md
// suggests 5 minutes).
const DefaultTolerance = 5 * time.Minute

// MaxBody is the largest delivery body Verify reads.
const MaxBody = 1 << 20

// Errors Verify returns; wrap-checked with errors.Is.
var (
	ErrNoSignature  = errors.New("webhooks: no v2 Svc-Signature on the request")
	ErrStale        = errors.New("webhooks: the signature's timestamp is outside the tolerance")
	ErrUnknownKey   = errors.New("webhooks: no key with the signature's kid in the JWKS")
	ErrBadSignature = errors.New("webhooks: the signature does not match the body")
)

// Verifier checks deliveries against one deployment's JWKS. Keys are fetched once and again
// only when a delivery names a kid the cached set lacks (keys rotate: the next key is
// published ahead of its first use). Safe for concurrent use.
type Verifier struct {
	JWKSURL   string
	Tolerance time.Duration    // DefaultTolerance when zero
	HTTP      *http.Client     // http.DefaultClient when nil
	Now       func() time.Time // time.Now when nil

	mu   sync.Mutex
	keys map[string]ed25519.PublicKey
}

// Verify checks r with a one-off Verifier for jwksURL. A receiver handling many deliveries
// should keep a Verifier so the key set is cached.
func Verify(r *http.Request, jwksURL string) ([]byte, error) {
	return (&Verifier{JWKSURL: jwksURL}).Verify(r)
}

// Verify reads r's body, checks its Svc-Signature and returns the body (also put back on r for
// later handlers). The body is only to be trusted when the error is nil.
func (v *Verifier) Verify(r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxBody+1))
	if err != nil {
		return nil, fmt.Errorf("webhooks: reading the body: %w", err)
	}
	if len(body) > MaxBody {
		return nil, fmt.Errorf("webhooks: body over %d bytes", MaxBody)
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return body, v.Check(r.Context(), r.Header.Get(HeaderSignature), body)
}

// Check verifies one Svc-Signature header value over body.
func (v *Verifier) Check(ctx context.Context, header string, body []byte) error {
	ts, sig, kid := parse(header)
	if ts == "" || sig == "" || kid == "" {
		return ErrNoSignature
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrNoSignature
	}
	now, tol := time.Now, v.Tolerance
	if v.Now != nil {
		now = v.Now
	}
	if tol <= 0 {
		tol = DefaultTolerance
	}
	if d := now().Sub(time.Unix(sec, 0)); d > tol || d < -tol {
		return ErrStale
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(sig, "="))
	if err != nil {
		return ErrBadSignature
	}
	key, err := v.key(ctx, kid)
	if err != nil {
		return err
	}
	msg := append([]byte(ts+"."), body...)
	if !ed25519.Verify(key, msg, raw) {
		return ErrBadSignature
	}
	return nil
}

// parse splits t=…,v2=…,kid=… (order free; v1 entries of the earlier scheme are ignored).
func parse(h string) (ts, sig, kid string) {
	for _, part := range strings.Split(h, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = val
		case "v2":
			sig = val
		case "kid":
			kid = val
		}
	}
	return ts, sig, kid
}

func (v *Verifier) key(ctx context.Context, kid string) (ed25519.PublicKey, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if k, ok := v.keys[kid]; ok {
		return k, nil
	}
	keys, err := v.fetch(ctx)
	if err != nil {
		return nil, err
	}
	v.keys = keys
	if k, ok := keys[kid]; ok {
		return k, nil
	}
	return nil, ErrUnknownKey
}

func (v *Verifier) fetch(ctx context.Context) (map[string]ed25519.PublicKey, error) {
	hc := v.HTTP
	if hc == nil {
		hc = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, v.JWKSURL, nil)
	if err != nil {
		return nil, fmt.Errorf("webhooks: JWKS URL: %w", err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("webhooks: fetching the JWKS: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("webhooks: fetching the JWKS: HTTP %d", resp.StatusCode)
	}
	var set struct {
		Keys []struct {
			Kty, Crv, X, Kid string
		} `json:"keys"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&set); err != nil {
		return nil, fmt.Errorf("webhooks: the JWKS is not a key set: %w", err)
	}
	keys := map[string]ed25519.PublicKey{}
	for _, k := range set.Keys {
		if k.Kty != "OKP" || k.Crv != "Ed25519" {
			continue
		}
		x, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(k.X, "="))
		if err != nil || len(x) != ed25519.PublicKeySize {
			continue
		}
		keys[k.Kid] = ed25519.PublicKey(x)
	}
	return keys, nil
}
