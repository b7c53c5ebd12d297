package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
)

// testConsoleUsers covers the web console's users and sessions: a unique email, reads by
// email, id and account, and a session's revocation stamp kept from the first sign-out.
func testConsoleUsers(t *testing.T, s Stores) {
	ctx := context.Background()
	at := time.Date(2026, 11, 23, 8, 0, 0, 0, time.UTC)
	a := auth.User{ID: "usr_a", AccountID: "acct_a", Email: "ana@example.com", PasswordHash: "$2a$04$hash", CreatedAt: at}
	op := auth.User{ID: "usr_o", Email: "ops@example.com", PasswordHash: "$2a$04$hash", Operator: true, CreatedAt: at}
	for _, u := range []auth.User{a, op} {
		if err := s.Users.InsertUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Users.InsertUser(ctx, auth.User{ID: "usr_b", AccountID: "acct_b", Email: "ana@example.com", PasswordHash: "x", CreatedAt: at}); !errors.Is(err, auth.ErrEmailTaken) {
		t.Fatalf("second user with the same email: %v, want ErrEmailTaken", err)
	}
	got, err := s.Users.UserByEmail(ctx, "ana@example.com")
	if err != nil || got != a {
		t.Fatalf("UserByEmail = %+v, %v; want %+v", got, err, a)
	}
	if got, err := s.Users.User(ctx, "usr_o"); err != nil || !got.Operator || got.AccountID != "" {
		t.Fatalf("User(operator) = %+v, %v", got, err)
	}
	if _, err := s.Users.User(ctx, "usr_none"); !errors.Is(err, auth.ErrNotFound) {
		t.Fatalf("missing user: %v, want ErrNotFound", err)
	}
	if us, err := s.Users.Users(ctx, "acct_a"); err != nil || len(us) != 1 || us[0].ID != "usr_a" {
		t.Fatalf("Users(acct_a) = %+v, %v", us, err)
	}

	sess := auth.Session{ID: "sess1", UserID: "usr_a", SecretHash: "abc", CreatedAt: at, ExpiresAt: at.Add(auth.SessionLifetime)}
	if err := s.Users.InsertSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	if got, err := s.Users.Session(ctx, "sess1"); err != nil || got.RevokedAt != nil || !got.ExpiresAt.Equal(sess.ExpiresAt) || got.SecretHash != "abc" {
		t.Fatalf("Session = %+v, %v", got, err)
	}
	first, second := at.Add(time.Hour), at.Add(2*time.Hour)
	for _, stamp := range []time.Time{first, second} {
		if err := s.Users.RevokeSession(ctx, "sess1", stamp); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := s.Users.Session(ctx, "sess1"); err != nil || got.RevokedAt == nil || !got.RevokedAt.Equal(first) {
		t.Fatalf("revoked twice: %+v, %v; want the first stamp %v", got, err, first)
	}
	if _, err := s.Users.Session(ctx, "none"); !errors.Is(err, auth.ErrNotFound) {
		t.Fatalf("missing session: %v, want ErrNotFound", err)
	}
}
