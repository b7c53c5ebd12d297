package console_test

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"testing"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestConsoleSignInFromEitherOfTwoTabs: a sign-in page opened in a second tab does not spoil
// the first one's form: both carry the browser's one seed, and either signs in.
func TestConsoleSignInFromEitherOfTwoTabs(t *testing.T) {
	s := newSite(t)
	storetest.NewAccount(t, s.db, "acct_tabs", auth.Pro, 100)
	if _, err := s.sessions.CreateUser(context.Background(), auth.NewUser{AccountID: "acct_tabs", Email: "tabs@example.com", Password: "correct horse battery"}); err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	p := &person{t: t, s: s, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	_, tab1 := p.get("/console/sign-in?next=%2Fconsole%2Fkeys")
	_, tab2 := p.get("/console/sign-in?next=%2Fconsole%2Fusage")
	_ = match(t, csrfField, tab2)
	res := p.post("/console/sign-in", url.Values{"csrf": {match(t, csrfField, tab1)}, "email": {"tabs@example.com"},
		"password": {"correct horse battery"}, "next": {"/console/keys"}})
	page := body(res)
	if res.StatusCode != http.StatusSeeOther || res.Header.Get("Location") != "/console/keys" {
		t.Fatalf("signing in from the first tab after a second opened the sign-in answered %d %q: %.1500s",
			res.StatusCode, res.Header.Get("Location"), page)
	}
	// A form whose token matches no seed is still refused.
	other, _ := cookiejar.New(nil)
	q := &person{t: t, s: s, c: &http.Client{Jar: other, CheckRedirect: p.c.CheckRedirect}}
	q.get("/console/sign-in")
	res = q.post("/console/sign-in", url.Values{"csrf": {match(t, csrfField, tab1)}, "email": {"tabs@example.com"}, "password": {"correct horse battery"}})
	body(res)
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("another browser's sign-in token answered %d, want 403", res.StatusCode)
	}
}
