package webhooks

import (
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Scheme is the deployment setting choosing how deliveries are signed.
type Scheme string

const (
	// SchemeEd25519 signs Svc-Signature with t, v2 (Ed25519, base64url) and kid, plus the
	// queue-protocol X-Alt-Webhook-Signature, both with the key ring's current key. Default.
	SchemeEd25519 Scheme = "v2"
	// SchemeHMAC is the earlier scheme: Svc-Signature: t=<ts>,v1=<hex HMAC-SHA256 of "ts.body">
	// under the endpoint's whsec_ secret. The queue-protocol headers are still Ed25519-signed.
	SchemeHMAC Scheme = "v1"
)

// Header names of a delivery (spec 02 "Delivery").
const (
	HeaderEvent        = "Svc-Event"
	HeaderDelivery     = "Svc-Delivery"
	HeaderAttempt      = "Svc-Attempt"
	HeaderSignature    = "Svc-Signature"
	HeaderAltRequestID = "X-Alt-Webhook-Request-Id"
	HeaderAltUserID    = "X-Alt-Webhook-User-Id"
	HeaderAltTimestamp = "X-Alt-Webhook-Timestamp"
	HeaderAltSignature = "X-Alt-Webhook-Signature"
)

// SignV2 returns the Svc-Signature value for body signed at t with key:
// t=<unix>,v2=<base64url Ed25519 signature over "t.body">,kid=<kid>.
func SignV2(key SigningKey, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	sig := ed25519.Sign(key.Private, v2Message(ts, body))
	return "t=" + ts + ",v2=" + base64.RawURLEncoding.EncodeToString(sig) + ",kid=" + key.KID
}

func v2Message(ts string, body []byte) []byte {
	msg := make([]byte, 0, len(ts)+1+len(body))
	msg = append(msg, ts...)
	msg = append(msg, '.')
	return append(msg, body...)
}

// AltMessage is what X-Alt-Webhook-Signature signs: request id, user id, timestamp and the
// hex SHA-256 of the body, joined by newlines.
func AltMessage(requestID, userID, timestamp string, body []byte) []byte {
	sum := sha256.Sum256(body)
	return []byte(requestID + "\n" + userID + "\n" + timestamp + "\n" + hex.EncodeToString(sum[:]))
}

// SignAlt returns the hex X-Alt-Webhook-Signature over AltMessage.
func SignAlt(key SigningKey, requestID, userID, timestamp string, body []byte) string {
	return hex.EncodeToString(ed25519.Sign(key.Private, AltMessage(requestID, userID, timestamp, body)))
}

// SignV1 returns the earlier Svc-Signature value: t=<ts>,v1=<hex HMAC-SHA256 of "ts.body">.
func SignV1(secret string, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(hmacV1(secret, ts, body))
}

func hmacV1(secret, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(v2Message(ts, body))
	return m.Sum(nil)
}

// EndpointSecret derives the whsec_ secret of an endpoint from the deployment secret: fixed for
// the endpoint id, never stored, shown at registration and by a re-challenge under SchemeHMAC.
func EndpointSecret(deploymentSecret []byte, endpointID string) string {
	k, err := hkdf.Key(sha256.New, deploymentSecret, nil, "modelexec webhooks endpoint secret v1", 32)
	if err != nil {
		panic(err) // only fails for lengths over 255*32
	}
	m := hmac.New(sha256.New, k)
	m.Write([]byte(endpointID))
	return "whsec_" + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// ParsedSignature is an Svc-Signature header split into its parts.
type ParsedSignature struct {
	T   int64
	V1  []string // hex
	V2  []string // base64url
	KID string
}

// ParseSignatureHeader splits "t=…,v2=…,kid=…" (or "t=…,v1=…"). Unknown parts are ignored.
func ParseSignatureHeader(h string) (ParsedSignature, error) {
	var p ParsedSignature
	haveT := false
	for _, part := range strings.Split(h, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return p, fmt.Errorf("webhooks: malformed signature part %q", part)
		}
		switch k {
		case "t":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return p, fmt.Errorf("webhooks: bad t: %w", err)
			}
			p.T, haveT = n, true
		case "v1":
			p.V1 = append(p.V1, v)
		case "v2":
			p.V2 = append(p.V2, v)
		case "kid":
			p.KID = v
		}
	}
	if !haveT {
		return p, errors.New("webhooks: signature has no t")
	}
	return p, nil
}

// Verification errors.
var (
	ErrSignatureMismatch = errors.New("webhooks: signature does not verify")
	ErrSignatureStale    = errors.New("webhooks: signature timestamp outside tolerance")
	ErrUnknownKID        = errors.New("webhooks: unknown kid")
)

// VerifyV2 checks an Svc-Signature v2 header against body using keys looked up by kid (never
// by position). tolerance > 0 rejects a t further than that from now, as a receiver should.
func VerifyV2(header string, body []byte, keys map[string]ed25519.PublicKey, now time.Time, tolerance time.Duration) error {
	p, err := ParseSignatureHeader(header)
	if err != nil {
		return err
	}
	pub, ok := keys[p.KID]
	if !ok {
		return ErrUnknownKID
	}
	if tolerance > 0 && absDuration(now.Sub(time.Unix(p.T, 0))) > tolerance {
		return ErrSignatureStale
	}
	msg := v2Message(strconv.FormatInt(p.T, 10), body)
	for _, s := range p.V2 {
		sig, err := base64.RawURLEncoding.DecodeString(s)
		if err == nil && ed25519.Verify(pub, msg, sig) {
			return nil
		}
	}
	return ErrSignatureMismatch
}

// VerifyAlt checks a hex X-Alt-Webhook-Signature.
func VerifyAlt(pub ed25519.PublicKey, sigHex, requestID, userID, timestamp string, body []byte) error {
	sig, err := hex.DecodeString(sigHex)
	if err != nil || !ed25519.Verify(pub, AltMessage(requestID, userID, timestamp, body), sig) {
		return ErrSignatureMismatch
	}
	return nil
}

// VerifyV1 checks the earlier HMAC header with the endpoint's whsec_ secret. The scheme itself
// enforces no replay window; tolerance > 0 applies the receiver's own.
func VerifyV1(header string, body []byte, secret string, now time.Time, tolerance time.Duration) error {
	p, err := ParseSignatureHeader(header)
	if err != nil {
		return err
	}
	if tolerance > 0 && absDuration(now.Sub(time.Unix(p.T, 0))) > tolerance {
		return ErrSignatureStale
	}
	want := hmacV1(secret, strconv.FormatInt(p.T, 10), body)
	for _, s := range p.V1 {
		got, err := hex.DecodeString(s)
		if err == nil && subtle.ConstantTimeCompare(got, want) == 1 {
			return nil
		}
	}
	return ErrSignatureMismatch
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
