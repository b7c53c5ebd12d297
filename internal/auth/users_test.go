package auth

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"golang.org/x/crypto/bcrypt"
)

// memUsers is an in-memory UserStore.
type memUsers struct {
	mu       sync.Mutex
	users    map[string]User
	sessions map[string]Session
}

func newMemUsers() *memUsers {
	return &memUsers{users: map[string]User{}, sessions: map[string]Session{}}
}

func (m *memUsers) InsertUser(_ context.Context, u User) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, o := range m.users {
		if o.Email == u.Email {
			return ErrEmailTaken
		}
	}
	m.users[u.ID] = u
	return nil
}

func (m *memUsers) UserByEmail(_ context.Context, email string) (User, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, u := range m.users {
		if u.Email == email {
			return u, nil
		}
	}
	return User{}, ErrNotFound
}

func (m *memUsers) User(_ context.Context, id string) (User, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u, ok := m.users[id]
	if !ok {
		return u, ErrNotFound
	}
	return u, nil
}

func (m *memUsers) Users(_ context.Context, accountID string) ([]User, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []User
	for _, u := range m.users {
		if u.AccountID == accountID {
			out = append(out, u)
		}
	}
	return out, nil
}

func (m *memUsers) InsertSession(_ context.Context, s Session) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.sessions[s.ID] = s
	return nil
}

func (m *memUsers) Session(_ context.Context, id string) (Session, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.sessions[id]
	if !ok {
		return s, ErrNotFound
	}
	return s, nil
}

func (m *memUsers) RevokeSession(_ context.Context, id string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.sessions[id]
	if s.RevokedAt == nil {
		s.RevokedAt = &at
		m.sessions[id] = s
	}
	return nil
}

func newTestSessions(now *time.Time) (*Sessions, *memUsers) {
	store := newMemUsers()
	return NewSessions(SessionsConfig{Store: store, APIPrefix: DefaultPrefix, Hasher: NewHasher("test-secret-test-secret"),
		Now: func() time.Time { return *now }, Cost: bcrypt.MinCost}), store
}

func TestKEY29_SessionLastsTwelveHoursAndSignOutRevokes(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	s, store := newTestSessions(&now)
	if _, err := s.CreateUser(ctx, NewUser{AccountID: "acct_a", Email: "Ana@Example.com", Password: "correct horse battery"}); err != nil {
		t.Fatal(err)
	}
	for _, u := range store.users {
		if u.Email != "ana@example.com" || !strings.HasPrefix(u.PasswordHash, "$2") {
			t.Fatalf("stored user %+v: want a lower-case email and a bcrypt hash", u)
		}
	}
	token, _, sess, err := s.SignIn(ctx, "ana@example.com", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(token, "svc_ss_") || sess.ExpiresAt.Sub(sess.CreatedAt) != 12*time.Hour {
		t.Fatalf("token %q expires %v after creation; want svc_ss_ and 12h", token[:10], sess.ExpiresAt.Sub(sess.CreatedAt))
	}
	if strings.Contains(store.sessions[sess.ID].SecretHash, token[len("svc_ss_")+13:len(token)-6]) {
		t.Fatal("the store keeps the session secret itself")
	}
	now = now.Add(12*time.Hour - time.Second)
	if _, _, err := s.Resolve(ctx, token); err != nil {
		t.Fatalf("11:59:59 after sign-in: %v", err)
	}
	now = now.Add(time.Second)
	if _, _, err := s.Resolve(ctx, token); !errors.Is(err, ErrSessionEnded) {
		t.Fatalf("12 hours after sign-in: %v, want ErrSessionEnded", err)
	}

	now = now.Add(time.Hour)
	token, _, _, err = s.SignIn(ctx, "ANA@example.com ", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.SignOut(ctx, token); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Resolve(ctx, token); !errors.Is(err, ErrSessionEnded) {
		t.Fatalf("after sign-out: %v, want ErrSessionEnded", err)
	}
	if err := s.SignOut(ctx, token); err != nil {
		t.Fatalf("signing out twice: %v", err)
	}
}

func TestSignInRefusesWrongPasswordAndUnknownEmailAlike(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	s, _ := newTestSessions(&now)
	if _, err := s.CreateUser(ctx, NewUser{AccountID: "acct_a", Email: "ana@example.com", Password: "correct horse battery"}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ email, pw string }{{"ana@example.com", "wrong horse battery"}, {"bob@example.com", "correct horse battery"},
		{"not an email", "x"}, {"", ""}} {
		if _, _, _, err := s.SignIn(ctx, c.email, c.pw); !errors.Is(err, ErrBadCredentials) {
			t.Errorf("SignIn(%q): %v, want ErrBadCredentials", c.email, err)
		}
	}
	// A forged token of the right shape, and an API key, are not sessions.
	forged, _, _ := s.Format().Mint()
	key, _, _ := Format{Prefix: DefaultPrefix}.Mint()
	for _, tok := range []string{forged, key, "", "svc_ss_short"} {
		if _, _, err := s.Resolve(ctx, tok); !errors.Is(err, ErrSessionEnded) {
			t.Errorf("Resolve(%.12q): %v, want ErrSessionEnded", tok, err)
		}
	}
}

func TestCreateUserChecks(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	s, _ := newTestSessions(&now)
	for _, n := range []NewUser{
		{AccountID: "acct_a", Email: "ana@example.com", Password: "short"},
		{AccountID: "acct_a", Email: "ana@example.com", Password: strings.Repeat("x", 73)},
		{AccountID: "acct_a", Email: "not-an-email", Password: "long enough password"},
		{Email: "ops@example.com", Password: "long enough password"},                                      // neither account nor operator
		{AccountID: "acct_a", Operator: true, Email: "ops@example.com", Password: "long enough password"}, // both
	} {
		if _, err := s.CreateUser(ctx, n); err == nil {
			t.Errorf("CreateUser(%+v) succeeded", n)
		}
	}
	if _, err := s.CreateUser(ctx, NewUser{Operator: true, Email: "ops@example.com", Password: "long enough password"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateUser(ctx, NewUser{AccountID: "acct_b", Email: "OPS@example.com", Password: "long enough password"}); !errors.Is(err, ErrEmailTaken) {
		t.Fatalf("a taken email: %v, want ErrEmailTaken", err)
	}
}

func TestKEY15_SessionTokenRefusedAsAPIKey(t *testing.T) {
	now := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	s, _ := newTestSessions(&now)
	svc := NewService(newMemStore(), Format{Prefix: DefaultPrefix}, NewHasher("test-secret-test-secret"), func() time.Time { return now }, nil)
	tok, _, _ := s.Format().Mint()
	_, err := svc.Parse(tok)
	if !apierr.Is(err, apierr.InvalidAPIKey) {
		t.Fatalf("Parse(session token): %v, want invalid_api_key", err)
	}
	if e, _ := apierr.As(err); !strings.Contains(e.Message, "session") {
		t.Fatalf("message %q does not say it is a session token", e.Message)
	}
	if got := SessionFormat("acme_sk_").Prefix; got != "acme_ss_" {
		t.Fatalf("SessionFormat(acme_sk_) = %q", got)
	}
}
