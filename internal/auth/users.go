package auth

import (
	"context"
	"errors"
	"fmt"
	"net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/crypto/bcrypt"
)

// User signs in to the web console. An account's user (AccountID set) manages that account
// only; an operator (Operator, no account) manages every account through the operator pages.
type User struct {
	ID           string
	AccountID    string // empty for an operator
	Email        string // lower case
	Operator     bool
	PasswordHash string // bcrypt
	CreatedAt    time.Time
}

// Session is one signed-in browser. The token shown to the browser has the key layout with
// the session prefix; the store keeps the HMAC of its secret part, as for API keys.
type Session struct {
	ID         string
	UserID     string
	SecretHash string
	CreatedAt  time.Time
	ExpiresAt  time.Time
	RevokedAt  *time.Time
}

// SessionLifetime is how long a console session lasts (KEY-29).
const SessionLifetime = 12 * time.Hour

// Password bounds: long enough to resist guessing, short enough for bcrypt's 72-byte input.
const (
	MinPasswordLen = 10
	MaxPasswordLen = 72
)

// Errors of the console's users and sessions.
var (
	ErrEmailTaken     = errors.New("auth: a user with this email exists")
	ErrBadCredentials = errors.New("auth: wrong email or password")
	ErrSessionEnded   = errors.New("auth: session expired or signed out")
)

// UserStore is the persistence of console users and sessions. Methods return ErrNotFound
// for a missing row; InsertUser returns ErrEmailTaken for a taken email.
type UserStore interface {
	InsertUser(ctx context.Context, u User) error
	UserByEmail(ctx context.Context, email string) (User, error)
	User(ctx context.Context, id string) (User, error)
	Users(ctx context.Context, accountID string) ([]User, error)
	InsertSession(ctx context.Context, s Session) error
	Session(ctx context.Context, id string) (Session, error)
	// RevokeSession stamps the session at `at` unless it is already stamped.
	RevokeSession(ctx context.Context, id string, at time.Time) error
}

// SessionFormat is the token layout of console sessions: the API key layout under its own
// prefix ("svc_ss_" beside "svc_sk_"), so every surface tells a session from a key by its
// first characters, before any lookup (KEY-15).
func SessionFormat(apiPrefix string) Format {
	if p, ok := strings.CutSuffix(apiPrefix, "sk_"); ok {
		return Format{Prefix: p + "ss_"}
	}
	return Format{Prefix: apiPrefix + "ss_"}
}

// Sessions signs console users in and out.
type Sessions struct {
	store  UserStore
	format Format
	hasher Hasher
	now    func() time.Time
	cost   int
	// dummy is compared against when no user has the email, so a wrong email costs what a
	// wrong password does.
	dummy []byte
}

// SessionsConfig configures Sessions. Cost is bcrypt's work factor (0: bcrypt.DefaultCost);
// tests lower it.
type SessionsConfig struct {
	Store     UserStore
	APIPrefix string
	Hasher    Hasher
	Now       func() time.Time
	Cost      int
}

// NewSessions wires console sign-in.
func NewSessions(c SessionsConfig) *Sessions {
	cost := c.Cost
	if cost == 0 {
		cost = bcrypt.DefaultCost
	}
	dummy, _ := bcrypt.GenerateFromPassword([]byte("no user has this password"), cost)
	return &Sessions{store: c.Store, format: SessionFormat(c.APIPrefix), hasher: c.Hasher, now: c.Now, cost: cost, dummy: dummy}
}

// Format is the session token layout.
func (s *Sessions) Format() Format { return s.format }

// IsSessionToken reports whether raw has the session prefix: the check the API surfaces make
// before anything else.
func (s *Sessions) IsSessionToken(raw string) bool { return strings.HasPrefix(raw, s.format.Prefix) }

// NewUser asks for a console user.
type NewUser struct {
	AccountID string // required unless Operator
	Email     string
	Password  string
	Operator  bool
}

// CheckPassword says what is wrong with a proposed password, for a person to read.
func CheckPassword(pw string) error {
	switch n := utf8.RuneCountInString(pw); {
	case n < MinPasswordLen:
		return fmt.Errorf("the password must have at least %d characters", MinPasswordLen)
	case len(pw) > MaxPasswordLen:
		return fmt.Errorf("the password must be at most %d bytes", MaxPasswordLen)
	}
	return nil
}

// NormalizeEmail checks an address and returns it in lower case.
func NormalizeEmail(email string) (string, error) {
	email = strings.ToLower(strings.TrimSpace(email))
	a, err := mail.ParseAddress(email)
	if err != nil || a.Address != email || len(email) > 254 {
		return "", fmt.Errorf("%q is not an email address", email)
	}
	return email, nil
}

// CreateUser stores a new user with a bcrypt hash of the password.
func (s *Sessions) CreateUser(ctx context.Context, n NewUser) (User, error) {
	email, err := NormalizeEmail(n.Email)
	if err != nil {
		return User{}, err
	}
	if err := CheckPassword(n.Password); err != nil {
		return User{}, err
	}
	if n.Operator != (n.AccountID == "") {
		return User{}, errors.New("a user belongs to exactly one account, or is an operator")
	}
	hash, err := bcrypt.GenerateFromPassword([]byte(n.Password), s.cost)
	if err != nil {
		return User{}, fmt.Errorf("auth: hash password: %w", err)
	}
	u := User{ID: NewID("usr_"), AccountID: n.AccountID, Email: email, Operator: n.Operator, PasswordHash: string(hash), CreatedAt: s.now()}
	if err := s.store.InsertUser(ctx, u); err != nil {
		return User{}, err
	}
	return u, nil
}

// SignIn checks an email and password and opens a session; the token is shown once, to be
// kept in a cookie. One answer, ErrBadCredentials, for an unknown email and a wrong password.
func (s *Sessions) SignIn(ctx context.Context, email, password string) (string, User, Session, error) {
	email, _ = NormalizeEmail(email)
	u, err := s.store.UserByEmail(ctx, email)
	if errors.Is(err, ErrNotFound) || email == "" {
		_ = bcrypt.CompareHashAndPassword(s.dummy, []byte(password))
		return "", User{}, Session{}, ErrBadCredentials
	}
	if err != nil {
		return "", User{}, Session{}, fmt.Errorf("auth: read user: %w", err)
	}
	if bcrypt.CompareHashAndPassword([]byte(u.PasswordHash), []byte(password)) != nil {
		return "", User{}, Session{}, ErrBadCredentials
	}
	token, id, err := s.format.Mint()
	if err != nil {
		return "", User{}, Session{}, err
	}
	pk, err := s.format.Parse(token)
	if err != nil {
		return "", User{}, Session{}, err
	}
	now := s.now()
	sess := Session{ID: id, UserID: u.ID, SecretHash: s.hasher.Hash(pk.Secret), CreatedAt: now, ExpiresAt: now.Add(SessionLifetime)}
	if err := s.store.InsertSession(ctx, sess); err != nil {
		return "", User{}, Session{}, fmt.Errorf("auth: store session: %w", err)
	}
	return token, u, sess, nil
}

// Resolve returns the user and session of a token, or ErrSessionEnded for a token that is
// malformed, unknown, expired or signed out.
func (s *Sessions) Resolve(ctx context.Context, token string) (User, Session, error) {
	pk, err := s.format.Parse(token)
	if err != nil {
		return User{}, Session{}, ErrSessionEnded
	}
	sess, err := s.store.Session(ctx, pk.ID)
	if errors.Is(err, ErrNotFound) {
		_ = s.hasher.Equal(pk.Secret, unknownKeyHash)
		return User{}, Session{}, ErrSessionEnded
	}
	if err != nil {
		return User{}, Session{}, fmt.Errorf("auth: read session: %w", err)
	}
	if !s.hasher.Equal(pk.Secret, sess.SecretHash) || sess.RevokedAt != nil || !s.now().Before(sess.ExpiresAt) {
		return User{}, Session{}, ErrSessionEnded
	}
	u, err := s.store.User(ctx, sess.UserID)
	if err != nil {
		return User{}, Session{}, fmt.Errorf("auth: read user: %w", err)
	}
	return u, sess, nil
}

// SignOut revokes the session of a token (KEY-29). An unknown or ended token is not an error:
// the browser is signed out either way.
func (s *Sessions) SignOut(ctx context.Context, token string) error {
	_, sess, err := s.Resolve(ctx, token)
	if errors.Is(err, ErrSessionEnded) {
		return nil
	}
	if err != nil {
		return err
	}
	return s.store.RevokeSession(ctx, sess.ID, s.now())
}

// Users lists an account's console users.
func (s *Sessions) Users(ctx context.Context, accountID string) ([]User, error) {
	return s.store.Users(ctx, accountID)
}
