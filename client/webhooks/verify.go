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
	ErrOtherAccount = errors.New("webhooks: the delivery is for another account")
)

// RefetchInterval is the least time between two fetches of the JWKS (spec 02 "Signatures"
// #3: on an unknown kid refetch the set, at most once a minute).
const RefetchInterval = time.Minute

// FetchTimeout bounds one fetch of the JWKS when the Verifier's HTTP client has no timeout.
const FetchTimeout = 10 * time.Second

// Verifier checks deliveries against one deployment's JWKS. Keys are fetched once and again
// when a delivery names a kid the cached set lacks (keys rotate: the next key is published
// ahead of its first use), at most once every RefetchInterval: an unknown kid within the
// interval is refused ErrUnknownKey without a fetch, so forged kids cannot make it fetch on
// every delivery. One fetch runs at a time, outside the lock, so verifications by known keys
// never wait on the network. Safe for concurrent use.
type Verifier struct {
	JWKSURL   string
	Tolerance time.Duration    // DefaultTolerance when zero
	HTTP      *http.Client     // a client with a FetchTimeout timeout when nil
	Now       func() time.Time // time.Now when nil

	mu       sync.Mutex
	keys     map[string]ed25519.PublicKey
	fetched  time.Time     // when the last fetch started; zero before the first
	inFlight chan struct{} // closed when the fetch under way ends; nil when none is
}

// Verify checks r with a one-off Verifier for jwksURL: the Ed25519 v2 signature by kid and
// the timestamp tolerance, nothing else (v1 HMAC and X-Alt-Webhook-Signature are not checked).
// It does not check whose delivery it is: the receiver must compare the body's account with
// its own account id (docs/webhooks.md step 4), or call Verifier.VerifyAccount. A receiver
// handling many deliveries should keep a Verifier so the key set is cached.
func Verify(r *http.Request, jwksURL string) ([]byte, error) {
	return (&Verifier{JWKSURL: jwksURL}).Verify(r)
}

// Verify reads r's body, checks its Svc-Signature (v2 Ed25519 and t) and returns the body (also
// put back on r for later handlers). The body is only to be trusted when the error is nil, and
// only as a delivery of the service: whose it is, VerifyAccount checks.
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
	ts, sigs, kid := parse(header)
	if ts == "" || len(sigs) == 0 || kid == "" {
		return ErrNoSignature
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrNoSignature
	}
	now, tol := v.now, v.Tolerance
	if tol <= 0 {
		tol = DefaultTolerance
	}
	if d := now().Sub(time.Unix(sec, 0)); d > tol || d < -tol {
		return ErrStale
	}
	key, err := v.key(ctx, kid)
	if err != nil {
		return err
	}
	msg := append([]byte(ts+"."), body...)
	for _, sig := range sigs { // the delivery stands when any v2 value verifies
		raw, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(sig, "="))
		if err == nil && ed25519.Verify(key, msg, raw) {
			return nil
		}
	}
	return ErrBadSignature
}

// VerifyAccount is Verify, then the receiver's own check (docs/webhooks.md step 4): the body's
// account must be account, the receiver's account id (the id of GET /v1/me). One key signs
// for every account, so a valid signature alone does not make a delivery yours.
func (v *Verifier) VerifyAccount(r *http.Request, account string) ([]byte, error) {
	body, err := v.Verify(r)
	if err != nil {
		return nil, err
	}
	var doc struct {
		Account string `json:"account"`
	}
	if json.Unmarshal(body, &doc) != nil || doc.Account == "" || doc.Account != account {
		return nil, ErrOtherAccount
	}
	return body, nil
}

// parse splits t=…,v2=…,kid=… (order free; v1 entries of the earlier scheme are ignored). A
// header may carry several v2 values: each is returned.
func parse(h string) (ts string, sigs []string, kid string) {
	for _, part := range strings.Split(h, ",") {
		k, val, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = val
		case "v2":
			if val != "" {
				sigs = append(sigs, val)
			}
		case "kid":
			kid = val
		}
	}
	return ts, sigs, kid
}

func (v *Verifier) key(ctx context.Context, kid string) (ed25519.PublicKey, error) {
	for {
		v.mu.Lock()
		if k, ok := v.keys[kid]; ok {
			v.mu.Unlock()
			return k, nil
		}
		if wait := v.inFlight; wait != nil { // another delivery is fetching: see what it brings
			v.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		now := v.now()
		if !v.fetched.IsZero() && now.Sub(v.fetched) < RefetchInterval {
			v.mu.Unlock()
			return nil, ErrUnknownKey
		}
		done := make(chan struct{})
		v.fetched, v.inFlight = now, done
		v.mu.Unlock()

		keys, err := v.fetch(ctx)
		v.mu.Lock()
		if err == nil {
			v.keys = keys
		}
		v.inFlight = nil
		close(done)
		k, ok := v.keys[kid]
		v.mu.Unlock()
		switch {
		case ok:
			return k, nil
		case err != nil:
			return nil, err
		default:
			return nil, ErrUnknownKey
		}
	}
}

func (v *Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

func (v *Verifier) fetch(ctx context.Context) (map[string]ed25519.PublicKey, error) {
	hc := v.HTTP
	if hc == nil {
		hc = &http.Client{Timeout: FetchTimeout}
	}
	if hc.Timeout == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, FetchTimeout)
		defer cancel()
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
