package auth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"strings"
)

// Key layout (DESIGN.md decision 1): <prefix><12-char base62 id>_<43-char base64url secret><6-char base62 checksum>.
const (
	DefaultPrefix = "svc_sk_"
	idLen         = 12
	secretLen     = 43 // 32 bytes, base64url without padding
	checksumLen   = 6
	bodyLen       = idLen + 1 + secretLen + checksumLen
)

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// ErrMalformedKey is any key refused from its shape alone (length, prefix, alphabet, checksum).
var ErrMalformedKey = errors.New("auth: malformed key")

// ParsedKey is a key that passed the shape checks; nothing has been looked up yet.
type ParsedKey struct {
	ID     string // public id
	Secret string
}

// Format mints and parses keys with one prefix.
type Format struct{ Prefix string }

// Len is the length of every key of this format (69 with svc_sk_).
func (f Format) Len() int { return len(f.Prefix) + bodyLen }

// Parse checks a presented key by offset, before any lookup (KEY-04, KEY-07).
func (f Format) Parse(raw string) (ParsedKey, error) {
	if len(raw) != f.Len() || !strings.HasPrefix(raw, f.Prefix) {
		return ParsedKey{}, ErrMalformedKey
	}
	body := raw[len(f.Prefix):]
	id, sep, secret, sum := body[:idLen], body[idLen], body[idLen+1:idLen+1+secretLen], body[idLen+1+secretLen:]
	if sep != '_' || !inAlphabet(id, isBase62) || !inAlphabet(secret, isBase64URL) || !inAlphabet(sum, isBase62) {
		return ParsedKey{}, ErrMalformedKey
	}
	if subtle.ConstantTimeCompare([]byte(sum), []byte(checksum(raw[:len(raw)-checksumLen]))) != 1 {
		return ParsedKey{}, ErrMalformedKey
	}
	return ParsedKey{ID: id, Secret: secret}, nil
}

// Mint returns a fresh key and its public id.
func (f Format) Mint() (key, id string, err error) {
	idb := make([]byte, idLen)
	for i := range idb {
		n, err := randIndex(len(base62))
		if err != nil {
			return "", "", err
		}
		idb[i] = base62[n]
	}
	sec := make([]byte, 32)
	if _, err := rand.Read(sec); err != nil {
		return "", "", err
	}
	head := f.Prefix + string(idb) + "_" + base64.RawURLEncoding.EncodeToString(sec)
	return head + checksum(head), string(idb), nil
}

// checksum is base62 of CRC32 over s, zero-padded to 6 characters (KEY-06).
func checksum(s string) string {
	v := uint64(crc32.ChecksumIEEE([]byte(s)))
	out := make([]byte, checksumLen)
	for i := checksumLen - 1; i >= 0; i-- {
		out[i] = base62[v%62]
		v /= 62
	}
	return string(out)
}

func randIndex(n int) (int, error) {
	// Rejection sampling keeps the id uniform over base62.
	var b [1]byte
	for {
		if _, err := rand.Read(b[:]); err != nil {
			return 0, err
		}
		if int(b[0]) < 256-256%n {
			return int(b[0]) % n, nil
		}
	}
}

func inAlphabet(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func isBase62(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z')
}

func isBase64URL(c byte) bool { return isBase62(c) || c == '-' || c == '_' }

// Hasher turns secrets into what the store keeps: HMAC-SHA256 under the deployment secret
// (KEY-10). The zero Hasher has no secret and refuses to work (keys_not_configured).
type Hasher struct{ secret []byte }

// NewHasher returns a Hasher; an empty secret yields one that is not configured.
func NewHasher(secret string) Hasher { return Hasher{secret: []byte(secret)} }

// Configured reports whether a deployment secret is set.
func (h Hasher) Configured() bool { return len(h.secret) > 0 }

// Hash returns the hex HMAC of secret.
func (h Hasher) Hash(secret string) string {
	m := hmac.New(sha256.New, h.secret)
	m.Write([]byte(secret))
	return hex.EncodeToString(m.Sum(nil))
}

// Equal compares a presented secret with a stored hash in constant time.
func (h Hasher) Equal(secret, stored string) bool {
	return subtle.ConstantTimeCompare([]byte(h.Hash(secret)), []byte(stored)) == 1
}
