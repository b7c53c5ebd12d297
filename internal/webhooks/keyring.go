package webhooks

import (
	"context"
	"crypto"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"
	"time"

	jose "github.com/go-jose/go-jose/v4"
)

// Rotation schedule (spec 02 "Signatures" #5).
const (
	DefaultPublishLead = 24 * time.Hour                // next key published at least this long before it signs
	DefaultKeepAfter   = 36*time.Hour + 25*time.Minute // old key kept published at least this long after the switch
	DefaultRotateEvery = 30 * 24 * time.Hour           // how long a key signs before its successor takes over
	// KeyReloadEvery is how stale a ring's view of the store may be: another process learns of
	// a new key at most this long after it was stored, so the lead before it signs includes it.
	KeyReloadEvery = time.Minute
)

// ErrNoSigningKey means no key is current; handlers answer 503 no_signing_credential.
var ErrNoSigningKey = errors.New("webhooks: no signing key")

// ErrKeyUnreadable means a stored signing key does not open under the deployment secret (the
// secret changed since the key was sealed): nothing can be signed until the secret is restored
// or the keys are replaced. Handlers answer 503 no_signing_credential.
var ErrKeyUnreadable = errors.New("webhooks: a signing key does not open under the deployment secret")

// NoSigningCredential reports whether err means the deployment cannot sign (no key, or none it
// can open): the no_signing_credential situation of spec 02.
func NoSigningCredential(err error) bool {
	return errors.Is(err, ErrNoSigningKey) || errors.Is(err, ErrKeyUnreadable)
}

// ErrDuplicate is returned by stores when a row with the same identity already exists.
var ErrDuplicate = errors.New("webhooks: duplicate")

// SigningKey is one Ed25519 key of the ring, in the clear (memory only).
type SigningKey struct {
	KID        string // RFC 7638 thumbprint (SHA-256, base64url)
	Private    ed25519.PrivateKey
	Public     ed25519.PublicKey
	PublishAt  time.Time // appears in the JWKS from here
	ActiveFrom time.Time // signs from here until the next key's ActiveFrom
}

// StoredKey is a signing key as persisted: the private seed sealed with AES-256-GCM under a key
// derived (HKDF-SHA256) from the deployment secret, the kid as additional data.
type StoredKey struct {
	KID        string
	Sealed     []byte // 12-byte nonce followed by the GCM ciphertext of the 32-byte seed
	PublishAt  time.Time
	ActiveFrom time.Time
	CreatedAt  time.Time
}

// KeyStore persists the signing keys (a table: kid primary key, sealed bytea, publish_at,
// active_from unique, created_at).
type KeyStore interface {
	// ListSigningKeys returns every stored key in any order.
	ListSigningKeys(ctx context.Context) ([]StoredKey, error)
	// InsertSigningKey adds a key; ErrDuplicate when the kid or the active_from instant is
	// taken (two processes rotating at once: the loser reloads).
	InsertSigningKey(ctx context.Context, k StoredKey) error
	// DeleteSigningKey removes a key no longer published; deleting a missing key is no error.
	DeleteSigningKey(ctx context.Context, kid string) error
}

// KeyRingConfig holds the key ring's dependencies.
type KeyRingConfig struct {
	Store       KeyStore
	Secret      []byte    // deployment secret; keys are sealed under a key derived from it
	Clock       Clock     // nil: system clock
	Rand        io.Reader // nil: crypto/rand
	PublishLead time.Duration
	KeepAfter   time.Duration
	RotateEvery time.Duration
}

// KeyRing holds the Ed25519 signing keys: which key signs now, which are published, and when
// the next one is made. Safe for concurrent use; it rereads the store at most once a minute.
type KeyRing struct {
	cfg    KeyRingConfig
	aead   cipher.AEAD
	mu     sync.Mutex
	keys   []SigningKey // by ActiveFrom, then KID
	loaded time.Time
}

// NewKeyRing builds a ring; call Maintain (the delivery sweep does) to create and rotate keys.
func NewKeyRing(cfg KeyRingConfig) (*KeyRing, error) {
	if cfg.Store == nil {
		return nil, errors.New("webhooks: key ring needs a KeyStore")
	}
	if len(cfg.Secret) < 16 {
		return nil, errors.New("webhooks: key ring needs a deployment secret of at least 16 bytes")
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.PublishLead == 0 {
		cfg.PublishLead = DefaultPublishLead
	}
	if cfg.KeepAfter == 0 {
		cfg.KeepAfter = DefaultKeepAfter
	}
	if cfg.RotateEvery == 0 {
		cfg.RotateEvery = DefaultRotateEvery
	}
	if cfg.RotateEvery <= cfg.PublishLead {
		return nil, errors.New("webhooks: RotateEvery must exceed PublishLead")
	}
	k, err := hkdf.Key(sha256.New, cfg.Secret, nil, "modelexec webhooks signing keys v1", 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(k)
	if err != nil {
		return nil, err
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	return &KeyRing{cfg: cfg, aead: aead}, nil
}

// Thumbprint returns the RFC 7638 thumbprint of an Ed25519 public key, base64url: its kid.
func Thumbprint(pub ed25519.PublicKey) (string, error) {
	tp, err := (&jose.JSONWebKey{Key: pub}).Thumbprint(crypto.SHA256)
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(tp), nil
}

func (r *KeyRing) seal(kid string, seed []byte) ([]byte, error) {
	nonce := make([]byte, r.aead.NonceSize())
	if _, err := io.ReadFull(r.cfg.Rand, nonce); err != nil {
		return nil, err
	}
	return r.aead.Seal(nonce, nonce, seed, []byte(kid)), nil
}

func (r *KeyRing) open(s StoredKey) (SigningKey, error) {
	n := r.aead.NonceSize()
	if len(s.Sealed) < n {
		return SigningKey{}, fmt.Errorf("webhooks: key %s: sealed value too short", s.KID)
	}
	seed, err := r.aead.Open(nil, s.Sealed[:n], s.Sealed[n:], []byte(s.KID))
	if err != nil {
		return SigningKey{}, fmt.Errorf("%w: key %s: %v", ErrKeyUnreadable, s.KID, err)
	}
	if len(seed) != ed25519.SeedSize {
		return SigningKey{}, fmt.Errorf("webhooks: key %s: bad seed length", s.KID)
	}
	priv := ed25519.NewKeyFromSeed(seed)
	pub := priv.Public().(ed25519.PublicKey)
	return SigningKey{KID: s.KID, Private: priv, Public: pub, PublishAt: s.PublishAt, ActiveFrom: s.ActiveFrom}, nil
}

func (r *KeyRing) reload(ctx context.Context, now time.Time) error {
	stored, err := r.cfg.Store.ListSigningKeys(ctx)
	if err != nil {
		return err
	}
	keys := make([]SigningKey, 0, len(stored))
	for _, s := range stored {
		k, err := r.open(s)
		if err != nil {
			return err
		}
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if !keys[i].ActiveFrom.Equal(keys[j].ActiveFrom) {
			return keys[i].ActiveFrom.Before(keys[j].ActiveFrom)
		}
		return keys[i].KID < keys[j].KID
	})
	r.keys, r.loaded = keys, now
	return nil
}

func (r *KeyRing) ensureLoaded(ctx context.Context, now time.Time) error {
	if r.loaded.IsZero() || now.Sub(r.loaded) >= KeyReloadEvery || now.Before(r.loaded) {
		return r.reload(ctx, now)
	}
	return nil
}

// currentIndex returns the index of the key signing at now, or -1.
func (r *KeyRing) currentIndex(now time.Time) int {
	cur := -1
	for i, k := range r.keys {
		if !k.ActiveFrom.After(now) {
			cur = i
		}
	}
	return cur
}

// Current returns the key that signs at now (each attempt asks anew, so a retry after the
// switch is signed with the new key). ErrNoSigningKey before the first Maintain.
func (r *KeyRing) Current(ctx context.Context, now time.Time) (SigningKey, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.ensureLoaded(ctx, now); err != nil {
		return SigningKey{}, err
	}
	i := r.currentIndex(now)
	if i < 0 {
		return SigningKey{}, ErrNoSigningKey
	}
	return r.keys[i], nil
}

// Published returns the keys in the JWKS at now: published already, and not yet past
// KeepAfter since their successor took over.
func (r *KeyRing) Published(ctx context.Context, now time.Time) ([]SigningKey, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.ensureLoaded(ctx, now); err != nil {
		return nil, err
	}
	return r.publishedLocked(now), nil
}

func (r *KeyRing) publishedLocked(now time.Time) []SigningKey {
	var out []SigningKey
	for i, k := range r.keys {
		if k.PublishAt.After(now) {
			continue
		}
		if i+1 < len(r.keys) && !now.Before(r.keys[i+1].ActiveFrom.Add(r.cfg.KeepAfter)) {
			continue
		}
		out = append(out, k)
	}
	return out
}

// JWKS returns the document served at GET /.well-known/jwks.json: every published key as
// {kty OKP, crv Ed25519, alg EdDSA, use sig, x, kid}.
func (r *KeyRing) JWKS(ctx context.Context, now time.Time) ([]byte, error) {
	keys, err := r.Published(ctx, now)
	if err != nil {
		return nil, err
	}
	set := jose.JSONWebKeySet{Keys: []jose.JSONWebKey{}}
	for _, k := range keys {
		set.Keys = append(set.Keys, jose.JSONWebKey{Key: k.Public, KeyID: k.KID, Algorithm: string(jose.EdDSA), Use: "sig"})
	}
	return json.Marshal(set)
}

// Maintain creates the first key when there is none (published and signing at once: nobody can
// have cached an older set), publishes the next key PublishLead (plus KeyReloadEvery, so that
// every process serves it that long ahead) before it takes over once the
// current one has signed for RotateEvery minus PublishLead, and deletes keys past KeepAfter
// after their successor took over. The delivery sweep calls it every run.
func (r *KeyRing) Maintain(ctx context.Context, now time.Time) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := r.reload(ctx, now); err != nil {
		return err
	}
	cur := r.currentIndex(now)
	switch {
	case len(r.keys) == 0:
		if err := r.insert(ctx, now, now, now); err != nil {
			return err
		}
	case cur >= 0 && cur == len(r.keys)-1:
		k := r.keys[cur]
		switchAt := k.ActiveFrom.Add(r.cfg.RotateEvery)
		if !now.Before(switchAt.Add(-r.cfg.PublishLead)) {
			// Every process publishes the key PublishLead before it signs: a ring that loaded
			// just before the insert shows it KeyReloadEvery later.
			if earliest := now.Add(r.cfg.PublishLead + KeyReloadEvery); switchAt.Before(earliest) {
				switchAt = earliest
			}
			if err := r.insert(ctx, now, now, switchAt); err != nil {
				return err
			}
		}
	}
	// Forget keys no longer published: their successor took over more than KeepAfter ago.
	for i := 0; i+1 < len(r.keys); i++ {
		if !now.Before(r.keys[i+1].ActiveFrom.Add(r.cfg.KeepAfter)) && i+1 <= r.currentIndex(now) {
			if err := r.cfg.Store.DeleteSigningKey(ctx, r.keys[i].KID); err != nil {
				return err
			}
		}
	}
	return r.reload(ctx, now)
}

func (r *KeyRing) insert(ctx context.Context, now, publishAt, activeFrom time.Time) error {
	seed := make([]byte, ed25519.SeedSize)
	if _, err := io.ReadFull(r.cfg.Rand, seed); err != nil {
		return err
	}
	pub := ed25519.NewKeyFromSeed(seed).Public().(ed25519.PublicKey)
	kid, err := Thumbprint(pub)
	if err != nil {
		return err
	}
	sealed, err := r.seal(kid, seed)
	if err != nil {
		return err
	}
	err = r.cfg.Store.InsertSigningKey(ctx, StoredKey{KID: kid, Sealed: sealed, PublishAt: publishAt, ActiveFrom: activeFrom, CreatedAt: now})
	if errors.Is(err, ErrDuplicate) {
		return nil // another process made it; the reload picks theirs up
	}
	return err
}

// MemKeyStore is an in-memory KeyStore.
type MemKeyStore struct {
	mu   sync.Mutex
	keys map[string]StoredKey
}

// NewMemKeyStore returns an empty MemKeyStore.
func NewMemKeyStore() *MemKeyStore { return &MemKeyStore{keys: map[string]StoredKey{}} }

func (m *MemKeyStore) ListSigningKeys(context.Context) ([]StoredKey, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]StoredKey, 0, len(m.keys))
	for _, k := range m.keys {
		k.Sealed = append([]byte(nil), k.Sealed...)
		out = append(out, k)
	}
	return out, nil
}

func (m *MemKeyStore) InsertSigningKey(_ context.Context, k StoredKey) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, o := range m.keys {
		if o.KID == k.KID || o.ActiveFrom.Equal(k.ActiveFrom) {
			return ErrDuplicate
		}
	}
	k.Sealed = append([]byte(nil), k.Sealed...)
	m.keys[k.KID] = k
	return nil
}

func (m *MemKeyStore) DeleteSigningKey(_ context.Context, kid string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.keys, kid)
	return nil
}
