package auth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/modelexec/modelexec/internal/apierr"
)

// KeyRecord is what the store keeps of a key: never the key itself.
type KeyRecord struct {
	ID          string // 12-character public id
	AccountID   string
	SecretHash  string // HMAC-SHA256 of the secret under the deployment secret, hex
	Scopes      []Scope
	CreatedAt   time.Time
	ExpiresAt   time.Time
	RevokedAt   *time.Time
	Ceiling     Ceiling
	SpentPeriod string // UTC year-month the Spent figure counts
	Spent       int64
	// Console marks the account's console key (console_key.go): the key the console's runs
	// are charged under, which signs nothing, cannot be revoked and holds no live-key slot.
	Console bool
	// Name is what the owner called the key when minting it ("" when nothing).
	Name string
}

// KeyStatus is live, expired or revoked; neither of the last two comes back (KEY-21).
type KeyStatus string

const (
	KeyLive    KeyStatus = "live"
	KeyExpired KeyStatus = "expired"
	KeyRevoked KeyStatus = "revoked"
)

// Status of the key at now.
func (k KeyRecord) Status(now time.Time) KeyStatus {
	switch {
	case k.RevokedAt != nil:
		return KeyRevoked
	case !now.Before(k.ExpiresAt):
		return KeyExpired
	}
	return KeyLive
}

// HoldsSlot reports whether the key counts against the plan's live-key limit at now (KEY-27):
// a live key does, except the console's key, which the account did not mint.
func (k KeyRecord) HoldsSlot(now time.Time) bool { return !k.Console && k.Status(now) == KeyLive }

// SpentIn returns the key's spend in the period of now (0 after the month rolled over).
func (k KeyRecord) SpentIn(now time.Time) int64 {
	if k.SpentPeriod != Period(now) {
		return 0
	}
	return k.Spent
}

// Listed reports whether the key still shows in the key list: an expired key stays 30 days (KEY-22).
func (k KeyRecord) Listed(now time.Time) bool {
	return k.Status(now) != KeyExpired || now.Before(k.ExpiresAt.Add(30*24*time.Hour))
}

// ExpiringSoon marks keys with fewer than 14 days left (KEY-23).
func (k KeyRecord) ExpiringSoon(now time.Time) bool {
	return k.Status(now) == KeyLive && k.ExpiresAt.Sub(now) < 14*24*time.Hour
}

// Lifetimes are the offered key lifetimes in days (KEY-18).
var Lifetimes = []int{30, 90, 180, 365}

// DefaultLifetimeDays is the lifetime of a key minted without a choice.
const DefaultLifetimeDays = 90

// Store is the persistence auth needs. Methods return ErrNotFound for a missing row.
// Accounts are created and changed through the ledger, which owns them with their credits.
type Store interface {
	Account(ctx context.Context, id string) (Account, error)
	// InsertKey stores k unless the account already holds maxLive keys that hold a slot at
	// now (KeyRecord.HoldsSlot; ErrTooManyKeys); the count and the insert are atomic.
	InsertKey(ctx context.Context, k KeyRecord, maxLive int, now time.Time) error
	// InsertConsoleKey stores k, an account's console key, unless the account has its
	// console key already: then it changes nothing and answers nil, so that two writers at
	// once store one.
	InsertConsoleKey(ctx context.Context, k KeyRecord) error
	Key(ctx context.Context, id string) (KeyRecord, error)
	Keys(ctx context.Context, accountID string) ([]KeyRecord, error)
	// RevokeKey stamps the key at `at` unless it is already stamped; it returns the stamp in force.
	RevokeKey(ctx context.Context, id string, at time.Time) (time.Time, error)
	SetKeyCeiling(ctx context.Context, id string, c Ceiling) error
}

// Principal is an authenticated caller.
type Principal struct {
	Account Account
	Key     KeyRecord
	// Unconfirmed says the account's and the key's standing come from the cache, at most
	// cacheTTL old (AuthenticateSpend): whatever the request is answered must confirm them
	// first. A charge does so in its own transaction (the ledger reads the key with the
	// account it locks and refuses with the same codes); any other answer calls Confirm.
	Unconfirmed bool
}

// Service authenticates keys and manages accounts and keys.
type Service struct {
	store  Store
	format Format
	hasher Hasher
	now    func() time.Time
	log    *slog.Logger

	// cache holds recent lookups. Read-only requests are answered from it: a revocation
	// reaches reads within cacheTTL (KEY-26). Spending requests use it too, unconfirmed: the
	// charge's transaction or Confirm sees a revocation at once (KEY-25). Writes that spend
	// nothing and downloads always read afresh.
	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	p  Principal
	at time.Time
}

const cacheTTL = time.Second

// unknownKeyHash is compared against when no key has the presented id.
const unknownKeyHash = "0000000000000000000000000000000000000000000000000000000000000000"

// NewService wires the auth service.
func NewService(store Store, format Format, hasher Hasher, now func() time.Time, log *slog.Logger) *Service {
	return &Service{store: store, format: format, hasher: hasher, now: now, log: log, cache: map[string]cached{}}
}

// Format is the key format in force.
func (s *Service) Format() Format { return s.format }

// Configured reports whether keys can be verified (keys_not_configured otherwise).
func (s *Service) Configured() bool { return s.hasher.Configured() }

// Parse checks a presented key's shape (order of checks step 4).
func (s *Service) Parse(raw string) (ParsedKey, error) {
	if !s.hasher.Configured() {
		return ParsedKey{}, apierr.New(apierr.KeysNotConfigured)
	}
	// A console session token is refused by its prefix, before any lookup (KEY-15): it is
	// the browser's credential for the console, never an API key.
	if strings.HasPrefix(raw, SessionFormat(s.format.Prefix).Prefix) {
		return ParsedKey{}, apierr.Newf(apierr.InvalidAPIKey,
			"this is a web console session token, which the API does not accept; send an API key minted in the console")
	}
	pk, err := s.format.Parse(raw)
	if err != nil {
		return ParsedKey{}, apierr.New(apierr.InvalidAPIKey)
	}
	return pk, nil
}

// Authenticate looks up a parsed key (order of checks step 6, first part): unknown key or wrong
// secret → invalid_api_key (one answer for both, so a guessed id learns nothing); then account
// status (banned, suspended, limited unless readOnly: account_limited without its bucket, which
// the caller adds), then the key's own status (revoked, expired). readOnly requests may be
// answered from a cache at most cacheTTL old.
func (s *Service) Authenticate(ctx context.Context, pk ParsedKey, readOnly bool) (Principal, error) {
	now := s.now()
	if readOnly {
		if p, ok := s.cached(pk, now); ok {
			return p, Standing(p.Account, p.Key, now, true)
		}
	}
	p, err := s.lookup(ctx, pk, now)
	if err != nil {
		return Principal{}, err
	}
	if err := Standing(p.Account, p.Key, now, readOnly); err != nil {
		return Principal{}, err
	}
	return p, nil
}

// AuthenticateSpend is Authenticate for a request that spends credits (a submit): a cached
// principal in good standing comes back Unconfirmed, and the request's charge confirms it in
// its transaction, so the hot path reads neither the key nor the account here. A cached
// principal whose standing refuses is read afresh before it is refused: a refusal is never
// older than the request.
func (s *Service) AuthenticateSpend(ctx context.Context, pk ParsedKey) (Principal, error) {
	now := s.now()
	if p, ok := s.cached(pk, now); ok && Standing(p.Account, p.Key, now, false) == nil {
		p.Unconfirmed = true
		return p, nil
	}
	return s.Authenticate(ctx, pk, false)
}

// Confirm reads p's key and account afresh and answers the refusal their standing calls for
// (nil when they stand), for an answer to an Unconfirmed principal that no charge confirmed:
// a refusal of a later check, or an idempotent replay.
func (s *Service) Confirm(ctx context.Context, p Principal) error {
	fresh, err := s.Fresh(ctx, p)
	if err != nil {
		return err
	}
	return Standing(fresh.Account, fresh.Key, s.now(), false)
}

// Stands reads p's key and account afresh and answers the refusal their standing calls for
// (nil when they stand): what a connection opened earlier (a studio socket, a status stream)
// asks while it stays open, so that a revocation, an expiry or a ban ends it within its next
// re-read. A key no longer on record is invalid_api_key.
func (s *Service) Stands(ctx context.Context, p Principal, readOnly bool) error {
	fresh, err := s.Fresh(ctx, p)
	if errors.Is(err, ErrNotFound) {
		return apierr.New(apierr.InvalidAPIKey)
	} else if err != nil {
		return err
	}
	return Standing(fresh.Account, fresh.Key, s.now(), readOnly)
}

// Standing is the first part of check 6 of spec 02, in its order: the account's status
// (banned, suspended, then limited unless readOnly: account_limited without its bucket, which
// the caller adds), then the key's own status (revoked, expired).
func Standing(a Account, k KeyRecord, now time.Time, readOnly bool) error {
	if err := accountStanding(a, readOnly); err != nil {
		return err
	}
	switch k.Status(now) {
	case KeyRevoked:
		return apierr.New(apierr.KeyRevoked)
	case KeyExpired:
		return apierr.New(apierr.KeyExpired)
	}
	return nil
}

// AccountStanding is Standing's first part: the account's own status. The web console asks
// it (readOnly: a limited account may still change its keys and endpoints) before a form
// changes anything.
func AccountStanding(a Account, readOnly bool) error { return accountStanding(a, readOnly) }

// accountStanding is Standing's first part: the account's own status.
func accountStanding(a Account, readOnly bool) error {
	switch a.Status {
	case Banned:
		return apierr.New(apierr.AccountBanned)
	case Suspended:
		return apierr.New(apierr.AccountSuspended)
	case Limited:
		// Spec 02 check 6 orders account_limited before the key's own status; the caller
		// (httpapi.Gate) names the bucket.
		if !readOnly {
			return apierr.New(apierr.AccountLimited)
		}
	}
	return nil
}

// Cached answers the principal cached for pk, without reading the store: a check that must not
// cost a read (a request the fuse refused) learns the key's plan from it when it is there.
func (s *Service) Cached(pk ParsedKey) (Principal, bool) { return s.cached(pk, s.now()) }

// cached answers the principal cached for pk when it is younger than cacheTTL and pk's secret
// matches it.
func (s *Service) cached(pk ParsedKey, now time.Time) (Principal, bool) {
	s.mu.Lock()
	c, ok := s.cache[pk.ID]
	s.mu.Unlock()
	if ok && now.Sub(c.at) < cacheTTL && s.hasher.Equal(pk.Secret, c.p.Key.SecretHash) {
		return c.p, true
	}
	return Principal{}, false
}

// lookup reads pk's key and account from the store and caches them: unknown key or wrong
// secret → invalid_api_key (one answer for both, so a guessed id learns nothing).
func (s *Service) lookup(ctx context.Context, pk ParsedKey, now time.Time) (Principal, error) {
	k, err := s.store.Key(ctx, pk.ID)
	if errors.Is(err, ErrNotFound) {
		// Spend the same HMAC as a wrong secret would, so timing tells an unknown id
		// from a known one no better than the answer does.
		_ = s.hasher.Equal(pk.Secret, unknownKeyHash)
		return Principal{}, apierr.New(apierr.InvalidAPIKey)
	}
	if err != nil {
		return Principal{}, fmt.Errorf("auth: read key: %w", err)
	}
	if !s.hasher.Equal(pk.Secret, k.SecretHash) {
		return Principal{}, apierr.New(apierr.InvalidAPIKey)
	}
	a, err := s.store.Account(ctx, k.AccountID)
	if err != nil {
		return Principal{}, fmt.Errorf("auth: read account: %w", err)
	}
	p := Principal{Account: a, Key: k}
	s.mu.Lock()
	if len(s.cache) > 100_000 {
		clear(s.cache)
	}
	s.cache[pk.ID] = cached{p: p, at: now}
	s.mu.Unlock()
	return p, nil
}

// MintParams asks for a new key.
type MintParams struct {
	AccountID    string
	Scopes       []Scope // nil: the default ticked set; always-on scopes are added
	LifetimeDays int     // 0: 90
	Ceiling      *CeilingRequest
	Name         string // the owner's name for the key (KeyName); "" for none
}

// MaxKeyName is the most characters a key's name holds.
const MaxKeyName = 64

// KeyName checks and tidies a key's name: spaces around it dropped, at most MaxKeyName
// characters, no control characters, and none of the invisible characters that make a name
// read as another on the keys page: direction overrides and marks (U+202E turns "evil" into
// "live") and zero-width spaces. Joiners stay: emoji and several scripts need them.
func KeyName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if utf8.RuneCountInString(name) > MaxKeyName || !utf8.ValidString(name) {
		return "", fmt.Errorf("a key's name is at most %d characters", MaxKeyName)
	}
	for _, r := range name {
		switch {
		case unicode.IsControl(r):
			return "", errors.New("a key's name is on one line: it holds no control characters (line breaks, tabs, NUL)")
		case unicode.Is(unicode.Bidi_Control, r), r == '\u200b', r == '\u2060', r == '\ufeff':
			return "", fmt.Errorf("a key's name holds no invisible direction marks or zero-width spaces (it holds U+%04X): they make a name read as another", r)
		}
	}
	return name, nil
}

// Minted is a new key: the only moment the full key exists outside the caller's hands.
type Minted struct {
	Key    string
	Record KeyRecord
}

// Mint creates a key (KEY-14, KEY-18, KEY-27).
func (s *Service) Mint(ctx context.Context, p MintParams) (Minted, error) {
	if !s.hasher.Configured() {
		return Minted{}, apierr.New(apierr.KeysNotConfigured)
	}
	days := p.LifetimeDays
	if days == 0 {
		days = DefaultLifetimeDays
	}
	name, err := KeyName(p.Name)
	if err != nil {
		return Minted{}, err
	}
	valid := false
	for _, d := range Lifetimes {
		valid = valid || d == days
	}
	if !valid {
		return Minted{}, fmt.Errorf("key lifetime is 30, 90, 180 or 365 days, not %d", days)
	}
	a, err := s.store.Account(ctx, p.AccountID)
	if err != nil {
		return Minted{}, fmt.Errorf("account %s: %w", p.AccountID, err)
	}
	if a.Status == Banned { // every key of a banned account is refused: a new one would only count as live
		return Minted{}, apierr.Newf(apierr.AccountBanned, "The account is banned: it mints no keys.")
	}
	c := Ceiling{Mode: FollowPlan}
	if p.Ceiling != nil {
		if c, err = c.Apply(*p.Ceiling, a.MonthlyAllowance); err != nil {
			return Minted{}, err
		}
	}
	key, id, err := s.format.Mint()
	if err != nil {
		return Minted{}, err
	}
	now := s.now().UTC()
	rec := KeyRecord{
		ID: id, AccountID: a.ID, SecretHash: s.hasher.Hash(key[len(s.format.Prefix)+idLen+1 : len(key)-checksumLen]),
		Scopes: Normalize(p.Scopes), CreatedAt: now, ExpiresAt: now.AddDate(0, 0, days), Ceiling: c,
		SpentPeriod: Period(now), Name: name,
	}
	if err := s.store.InsertKey(ctx, rec, a.Plan.MaxLiveKeys(), now); err != nil {
		if errors.Is(err, ErrTooManyKeys) {
			return Minted{}, fmt.Errorf("account %s already holds %d live keys (plan %s): revoke one first: %w", a.ID, a.Plan.MaxLiveKeys(), a.Plan, err)
		}
		return Minted{}, err
	}
	s.log.Info("key minted", "key_id", id, "account", a.ID)
	return Minted{Key: key, Record: rec}, nil
}

// Revoke stamps a key; revoking twice answers the original stamp (KEY-24). The console's key
// is refused (ErrConsoleKey): the account's console runs under it.
func (s *Service) Revoke(ctx context.Context, id string) (time.Time, error) {
	k, err := s.store.Key(ctx, id)
	if err != nil {
		return time.Time{}, err
	}
	if k.Console {
		return time.Time{}, ErrConsoleKey
	}
	at, err := s.store.RevokeKey(ctx, id, s.now().UTC())
	if err != nil {
		return time.Time{}, err
	}
	s.mu.Lock()
	delete(s.cache, id)
	s.mu.Unlock()
	s.log.Info("key revoked", "key_id", id, "revoked_at", at)
	return at, nil
}

// SetCeiling changes a key's cap within the rules; spend so far stays counted. The console's
// key has none of its own (ErrConsoleKey).
func (s *Service) SetCeiling(ctx context.Context, id string, r CeilingRequest) (Ceiling, error) {
	k, err := s.store.Key(ctx, id)
	if err != nil {
		return Ceiling{}, err
	}
	if k.Console {
		return Ceiling{}, ErrConsoleKey
	}
	a, err := s.store.Account(ctx, k.AccountID)
	if err != nil {
		return Ceiling{}, err
	}
	c, err := k.Ceiling.Apply(r, a.MonthlyAllowance)
	if err != nil {
		return Ceiling{}, err
	}
	return c, s.store.SetKeyCeiling(ctx, id, c)
}

// Keys lists an account's keys still shown (an expired key stays 30 days).
func (s *Service) Keys(ctx context.Context, accountID string) ([]KeyRecord, error) {
	all, err := s.store.Keys(ctx, accountID)
	if err != nil {
		return nil, err
	}
	now := s.now()
	var out []KeyRecord
	for _, k := range all {
		if k.Listed(now) {
			out = append(out, k)
		}
	}
	return out, nil
}

// Account reads an account.
func (s *Service) Account(ctx context.Context, id string) (Account, error) {
	return s.store.Account(ctx, id)
}
