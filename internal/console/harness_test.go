package console_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

const secret = "console-test-secret-0123456789"

// site is a whole server (real catalogue, built-in runners, SQLite, blobs in memory) with its
// account API host, where the console lives, on a test listener.
type site struct {
	srv      *server.Server
	db       *sqlstore.DB
	auth     *auth.Service
	sessions *auth.Sessions
	url      string
}

func newSite(t testing.TB, edit ...func(*server.Config, *server.Deps)) *site {
	t.Helper()
	return newSiteOn(t, storetest.OpenSQLite(t), edit...)
}

// newSiteOn is newSite over db (PostgreSQL, say).
func newSiteOn(t testing.TB, db *sqlstore.DB, edit ...func(*server.Config, *server.Deps)) *site {
	t.Helper()
	now := func() time.Time { return time.Now().UTC() }
	as := auth.NewService(db, auth.Format{Prefix: auth.DefaultPrefix}, auth.NewHasher(secret), now, slog.New(slog.DiscardHandler))
	var h http.Handler
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	cfg := server.Config{Secret: secret, NoRateLimits: true, PublicURLAPI: ts.URL, PasswordCost: 4}
	deps := server.Deps{DB: db, Auth: as, Bucket: blobs.NewMemory()}
	for _, e := range edit {
		e(&cfg, &deps)
	}
	srv, err := server.New(context.Background(), cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Jobs().Drain() })
	h = srv.Handler(server.RoleAPI)
	sessions := auth.NewSessions(auth.SessionsConfig{Store: db, APIPrefix: auth.DefaultPrefix, Hasher: auth.NewHasher(secret), Now: now, Cost: 4})
	return &site{srv: srv, db: db, auth: as, sessions: sessions, url: ts.URL}
}

// person is a signed-in browser: a cookie jar that does not follow redirects, so each answer
// is seen as sent.
type person struct {
	t    testing.TB
	s    *site
	c    *http.Client
	csrf string
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// signIn makes an account with credits, a user of it, and signs that user in through the
// sign-in form.
func (s *site) signIn(t testing.TB, account string, credits int64) *person {
	t.Helper()
	return s.signInOn(t, account, auth.Pro, credits)
}

// signInOn is signIn with an account on plan.
func (s *site) signInOn(t testing.TB, account string, plan auth.Plan, credits int64) *person {
	t.Helper()
	storetest.NewAccount(t, s.db, account, plan, credits)
	email := account + "@example.com"
	if _, err := s.sessions.CreateUser(context.Background(), auth.NewUser{AccountID: account, Email: email, Password: "correct horse battery"}); err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	p := &person{t: t, s: s, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	_, page := p.get("/console/sign-in")
	res := p.post("/console/sign-in", url.Values{"csrf": {match(t, csrfField, page)}, "email": {email}, "password": {"correct horse battery"}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign-in answered %d", res.StatusCode)
	}
	_, home := p.get("/console/")
	p.csrf = match(t, csrfField, home)
	return p
}

func match(t testing.TB, re *regexp.Regexp, s string) string {
	t.Helper()
	m := re.FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("%s not found in %.2000s", re, s)
	}
	return m[1]
}

func (p *person) get(path string) (int, string) {
	p.t.Helper()
	res, err := p.c.Get(p.s.url + path)
	if err != nil {
		p.t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func (p *person) post(path string, form url.Values) *http.Response {
	p.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.s.url+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", p.s.url)
	res, err := p.c.Do(req)
	if err != nil {
		p.t.Fatal(err)
	}
	return res
}

func body(res *http.Response) string {
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return string(b)
}
