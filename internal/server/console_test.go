package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/modelexec/modelexec/internal/ledger"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// clock is the console tests' settable UTC clock: sessions and keys expire by it.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// consoleEnv is a whole server (api, queue and sync hosts over HTTP) with two accounts, each
// with a console user, and an operator.
type consoleEnv struct {
	api, queue, sync *httptest.Server
	db               *sqlstore.DB
	auth             *auth.Service
	clock            *clock
	srv              *server.Server
}

const consolePassword = "correct horse battery"

func newConsoleEnv(t testing.TB) *consoleEnv {
	t.Helper()
	e := &consoleEnv{db: storetest.OpenSQLite(t), clock: &clock{t: time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)}}
	e.auth = auth.NewService(e.db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher(secret), e.clock.Now, slog.New(slog.DiscardHandler))
	handlers := map[server.Role]http.Handler{}
	serve := func(role server.Role) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handlers[role].ServeHTTP(w, r) }))
		t.Cleanup(s.Close)
		return s
	}
	e.api, e.queue, e.sync = serve(server.RoleAPI), serve(server.RoleQueue), serve(server.RoleSync)
	cfg := server.Config{Secret: secret, NoRateLimits: true, PasswordCost: bcrypt.MinCost,
		PublicURLAPI: e.api.URL, PublicURLQueue: e.queue.URL, PublicURLSync: e.sync.URL}
	srv, err := server.New(context.Background(), cfg, server.Deps{DB: e.db, Auth: e.auth, Bucket: blobs.NewMemory(), Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range []server.Role{server.RoleAPI, server.RoleQueue, server.RoleSync} {
		handlers[role] = srv.Handler(role)
	}
	e.srv = srv
	users := auth.NewSessions(auth.SessionsConfig{Store: e.db, Now: e.clock.Now, Cost: bcrypt.MinCost})
	for _, acct := range []string{"acct_a", "acct_b"} {
		storetest.NewAccount(t, e.db, acct, auth.Pro, 1000)
		if _, err := users.CreateUser(context.Background(), auth.NewUser{AccountID: acct, Email: acct + "@example.test", Password: consolePassword}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := users.CreateUser(context.Background(), auth.NewUser{Operator: true, Email: "ops@example.test", Password: consolePassword}); err != nil {
		t.Fatal(err)
	}
	return e
}

// browser is a client with a cookie jar that does not follow redirects, so each answer is
// seen as sent.
type browser struct {
	t      testing.TB
	e      *consoleEnv
	c      *http.Client
	origin string
}

func (e *consoleEnv) browser(t testing.TB) *browser {
	jar, _ := cookiejar.New(nil)
	return &browser{t: t, e: e, c: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

type page struct {
	status   int
	location string
	body     string
	cookies  []*http.Cookie
}

func (b *browser) do(method, path string, form url.Values) page {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, b.e.api.URL+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if b.origin != "" {
		req.Header.Set("Origin", b.origin)
		req.Header.Set("Sec-Fetch-Site", "cross-site")
	}
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	return page{status: res.StatusCode, location: res.Header.Get("Location"), body: string(raw), cookies: res.Cookies()}
}

func (b *browser) get(path string) page { b.t.Helper(); return b.do(http.MethodGet, path, nil) }

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf reads the form token from a page.
func (b *browser) csrf(path string) string {
	b.t.Helper()
	p := b.get(path)
	m := csrfField.FindStringSubmatch(p.body)
	if m == nil {
		b.t.Fatalf("GET %s (%d): no csrf field", path, p.status)
	}
	return m[1]
}

// signIn answers the sign-in POST and the session token it set ("" when none).
func (b *browser) signIn(email, password string) (page, string) {
	b.t.Helper()
	p := b.do(http.MethodPost, "/console/sign-in", url.Values{"csrf": {b.csrf("/console/sign-in")}, "email": {email}, "password": {password}})
	for _, c := range p.cookies {
		if c.Name == "modelexec_session" && c.Value != "" {
			return p, c.Value
		}
	}
	return p, ""
}

func (b *browser) mustSignIn(email string) string {
	b.t.Helper()
	p, token := b.signIn(email, consolePassword)
	if p.status != http.StatusSeeOther || token == "" {
		b.t.Fatalf("sign-in as %s: %d %q", email, p.status, p.body)
	}
	return token
}

// apiCall sends a credential to a host and answers the status and the error code.
func apiCall(t *testing.T, method, u, authorization string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(method, u, strings.NewReader(`{"positivePrompt":"x"}`))
	req.Header.Set("Authorization", authorization)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var body struct {
		Error string `json:"error"`
	}
	_ = json.NewDecoder(res.Body).Decode(&body)
	return res.StatusCode, body.Error
}

// A wrong password, or an unknown email, answers the sign-in page again with 401 and one
// message for both; no session cookie is set.
func TestKEY29_ConsoleSignInRefusesWrongPassword(t *testing.T) {
	e := newConsoleEnv(t)
	b := e.browser(t)
	for _, tc := range []struct{ email, password string }{
		{"acct_a@example.test", consolePassword + "!"},
		{"nobody@example.test", consolePassword},
	} {
		p, token := b.signIn(tc.email, tc.password)
		if p.status != http.StatusUnauthorized || !strings.Contains(p.body, "Wrong email or password.") || token != "" {
			t.Fatalf("%s: %d token %q", tc.email, p.status, token)
		}
	}
	if p := b.get("/console/"); p.status != http.StatusSeeOther || p.location != "/console/sign-in" {
		t.Fatalf("after refused sign-ins the overview answers %d %q", p.status, p.location)
	}
}

// KEY-29: a console session lasts 12 hours: the cookie says so, and at 12 hours the session is
// refused (the next page is the sign-in form, with the page asked for as next).
func TestKEY29_ConsoleSessionEndsAfter12Hours(t *testing.T) {
	e := newConsoleEnv(t)
	b := e.browser(t)
	p, token := b.signIn("acct_a@example.test", consolePassword)
	if p.status != http.StatusSeeOther || p.location != "/console/" {
		t.Fatalf("sign-in: %d %q", p.status, p.location)
	}
	for _, c := range p.cookies {
		if c.Name == "modelexec_session" {
			if c.MaxAge != int((12*time.Hour)/time.Second) || !c.HttpOnly || c.SameSite != http.SameSiteLaxMode || c.Path != "/console" {
				t.Fatalf("session cookie %+v", c)
			}
		}
	}
	if !strings.HasPrefix(token, "svc_ss_") {
		t.Fatalf("session token %q", token)
	}
	e.clock.Add(12*time.Hour - time.Second)
	if p := b.get("/console/keys"); p.status != http.StatusOK {
		t.Fatalf("11:59:59 after sign-in: %d", p.status)
	}
	e.clock.Add(time.Second)
	p = b.get("/console/keys")
	if p.status != http.StatusSeeOther || p.location != "/console/sign-in?next=%2Fconsole%2Fkeys" {
		t.Fatalf("12 hours after sign-in: %d %q", p.status, p.location)
	}
	// A fresh sign-in works again.
	b.mustSignIn("acct_a@example.test")
	if p := b.get("/console/keys"); p.status != http.StatusOK {
		t.Fatalf("after signing in again: %d", p.status)
	}
}

// KEY-29: sign-out revokes the session, not just the cookie: a copy of the token replayed
// later gets the sign-in page, and the API still refuses it.
func TestKEY29_ConsoleSignOutRevokesSession(t *testing.T) {
	e := newConsoleEnv(t)
	b := e.browser(t)
	token := b.mustSignIn("acct_a@example.test")
	p := b.do(http.MethodPost, "/console/sign-out", url.Values{"csrf": {b.csrf("/console/")}})
	if p.status != http.StatusSeeOther || p.location != "/console/sign-in" {
		t.Fatalf("sign-out: %d %q", p.status, p.location)
	}
	replay := e.browser(t)
	u, _ := url.Parse(e.api.URL + "/console/")
	replay.c.Jar.SetCookies(u, []*http.Cookie{{Name: "modelexec_session", Value: token, Path: "/console"}})
	if p := replay.get("/console/"); p.status != http.StatusSeeOther || p.location != "/console/sign-in" {
		t.Fatalf("replayed token after sign-out: %d %q", p.status, p.location)
	}
	if code, err := apiCall(t, http.MethodGet, e.api.URL+"/v1/me", "Bearer "+token); code != http.StatusUnauthorized || err != "invalid_api_key" {
		t.Fatalf("revoked session token on /v1/me: %d %s", code, err)
	}
}

// KEY-15: a console session token is refused on /v1 and on the queue and synchronous hosts,
// with 401 invalid_api_key, whatever the scheme it is sent under.
func TestKEY15_SessionTokenRefusedOnEveryHost(t *testing.T) {
	e := newConsoleEnv(t)
	b := e.browser(t)
	token := b.mustSignIn("acct_a@example.test")
	for _, tc := range []struct{ method, url string }{
		{http.MethodGet, e.api.URL + "/v1/me"},
		{http.MethodGet, e.api.URL + "/v1/jobs"},
		{http.MethodPost, e.queue.URL + "/svc-serverless/image-4b"},
		{http.MethodPost, e.sync.URL + "/svc-serverless/image-4b"},
	} {
		for _, scheme := range []string{"Bearer ", "Key "} {
			if code, err := apiCall(t, tc.method, tc.url, scheme+token); code != http.StatusUnauthorized || err != "invalid_api_key" {
				t.Errorf("%s %s with %s<session>: %d %q", tc.method, tc.url, scheme, code, err)
			}
		}
	}
	// The session itself is still good in the console.
	if p := b.get("/console/"); p.status != http.StatusOK {
		t.Fatalf("console after the API refusals: %d", p.status)
	}
}

// Every console form needs the session's CSRF token and the console's own origin: without
// the token, or from another site even with it, the POST is 403 and nothing is minted.
func TestConsoleFormsNeedCSRFAndSameOrigin(t *testing.T) {
	e := newConsoleEnv(t)
	b := e.browser(t)
	b.mustSignIn("acct_a@example.test")
	token := b.csrf("/console/keys")
	mint := url.Values{"expires_days": {"30"}, "scope": {"image:write"}}
	if p := b.do(http.MethodPost, "/console/keys", mint); p.status != http.StatusForbidden {
		t.Fatalf("mint without csrf: %d", p.status)
	}
	wrong := url.Values{"csrf": {token + "x"}, "expires_days": {"30"}}
	if p := b.do(http.MethodPost, "/console/keys", wrong); p.status != http.StatusForbidden {
		t.Fatalf("mint with a wrong csrf: %d", p.status)
	}
	b.origin = "https://elsewhere.example"
	with := url.Values{"csrf": {token}, "expires_days": {"30"}}
	if p := b.do(http.MethodPost, "/console/keys", with); p.status != http.StatusForbidden || !strings.Contains(p.body, "another site") {
		t.Fatalf("mint from another origin: %d", p.status)
	}
	keys, err := e.auth.Keys(context.Background(), "acct_a")
	if err != nil || len(keys) != 1 || !keys[0].Console { // the console's own key, listed since the first visit
		t.Fatalf("keys after refused forms: %+v %v", keys, err)
	}
	b.origin = ""
	if p := b.do(http.MethodPost, "/console/keys", with); p.status != http.StatusSeeOther {
		t.Fatalf("the same form from the console: %d", p.status)
	}
	if p := b.get("/console/keys"); p.status != http.StatusOK || !strings.Contains(p.body, `id="new-key"`) {
		t.Fatalf("the same form from the console: %d", p.status)
	}
}

// Account isolation: a user of account A cannot revoke account B's key (404, the key stays
// live and usable), nor see it listed.
func TestConsoleAccountIsolation(t *testing.T) {
	e := newConsoleEnv(t)
	m, err := e.auth.Mint(context.Background(), auth.MintParams{AccountID: "acct_b"})
	if err != nil {
		t.Fatal(err)
	}
	a := e.browser(t)
	a.mustSignIn("acct_a@example.test")
	if p := a.get("/console/keys"); strings.Contains(p.body, m.Record.ID) {
		t.Fatal("account A's key list shows account B's key")
	}
	p := a.do(http.MethodPost, "/console/keys/"+m.Record.ID+"/revoke", url.Values{"csrf": {a.csrf("/console/keys")}})
	if p.status != http.StatusNotFound {
		t.Fatalf("A revoking B's key: %d", p.status)
	}
	if code, _ := apiCall(t, http.MethodGet, e.api.URL+"/v1/me", "Bearer "+m.Key); code != http.StatusOK {
		t.Fatalf("B's key after A's attempt: %d", code)
	}
	// Account pages are not operator pages: A's user is told they do not exist.
	if p := a.get("/console/operator/accounts"); p.status != http.StatusNotFound {
		t.Fatalf("an account user on the operator pages: %d", p.status)
	}
	if p := a.get("/console/operator/accounts/acct_b"); p.status != http.StatusNotFound {
		t.Fatalf("an account user on another account's operator page: %d", p.status)
	}
}

var keyRow = regexp.MustCompile(`(?s)<tr data-key="([^"]+)" class="([^"]*)">(.*?)</tr>`)

// KEY-23: the keys page marks a key with fewer than 14 days left, and says how many.
func TestKEY23_ConsoleMarksKeysExpiringWithin14Days(t *testing.T) {
	e := newConsoleEnv(t)
	m, err := e.auth.Mint(context.Background(), auth.MintParams{AccountID: "acct_a", LifetimeDays: 30})
	if err != nil {
		t.Fatal(err)
	}
	b := e.browser(t)
	row := func() (class, cells string) {
		t.Helper()
		b.mustSignIn("acct_a@example.test") // the clock moves by days: a fresh session each time
		for _, r := range keyRow.FindAllStringSubmatch(b.get("/console/keys").body, -1) {
			if r[1] == m.Record.ID {
				return r[2], r[3]
			}
		}
		t.Fatalf("key %s not listed", m.Record.ID)
		return "", ""
	}
	e.clock.Add(15 * 24 * time.Hour) // 15 days left: not yet
	if class, _ := row(); strings.Contains(class, "expiring") {
		t.Fatalf("15 days left marked: %q", class)
	}
	e.clock.Add(2*24*time.Hour + time.Minute) // 12 days and some hours left
	class, cells := row()
	if !strings.Contains(class, "expiring") || !strings.Contains(cells, "12 days left") {
		t.Fatalf("fewer than 14 days left: class %q, cells %s", class, cells)
	}
}

// The key list says when each key was last used: a key that passed the gate shows the time of
// its last request once the process has written its notes (about once a minute), another
// "never".
func TestConsoleKeysShowLastUsed(t *testing.T) {
	e := newConsoleEnv(t)
	ctx := context.Background()
	used, err := e.auth.Mint(ctx, auth.MintParams{AccountID: "acct_a"})
	if err != nil {
		t.Fatal(err)
	}
	idle, err := e.auth.Mint(ctx, auth.MintParams{AccountID: "acct_a"})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Add(time.Hour)
	if status, code := apiCall(t, http.MethodGet, e.api.URL+"/v1/me", "Bearer "+used.Key); status != http.StatusOK {
		t.Fatalf("/v1/me: %d %s", status, code)
	}
	if err := e.srv.LastUsed().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	b := e.browser(t)
	b.mustSignIn("acct_a@example.test")
	body := b.get("/console/keys").body
	cells := map[string]string{}
	for _, r := range keyRow.FindAllStringSubmatch(body, -1) {
		cells[r[1]] = r[3]
	}
	want := e.clock.Now().UTC().Format("2006-01-02 15:04:05 UTC")
	lastUsed := regexp.MustCompile(`<td class="last-used">(.*?)</td>`)
	if m := lastUsed.FindStringSubmatch(cells[used.Record.ID]); m == nil || m[1] != want {
		t.Fatalf("used key's last-used cell %v, want %s", m, want)
	}
	if m := lastUsed.FindStringSubmatch(cells[idle.Record.ID]); m == nil || !strings.Contains(m[1], "never") {
		t.Fatalf("idle key's last-used cell %v, want never", m)
	}

	// A playground run uses the Console key: its row says when, not "never" beside its spend.
	e.clock.Add(time.Hour)
	form := url.Values{"csrf": {b.csrf("/console/playground?model=image-4b")}, "model": {"image-4b"}, "idempotency_key": {"console-lastused-1"},
		"in.positivePrompt": {"a lighthouse"}, "in.width": {"256"}, "in.height": {"256"}}
	if p := b.do(http.MethodPost, "/console/playground", form); p.status != http.StatusSeeOther && p.status != http.StatusOK {
		t.Fatalf("playground run: %d %.500s", p.status, p.body)
	}
	if err := e.srv.LastUsed().Flush(ctx); err != nil {
		t.Fatal(err)
	}
	body = b.get("/console/keys").body
	want = e.clock.Now().UTC().Format("2006-01-02 15:04:05 UTC")
	consoleRow := regexp.MustCompile(`(?s)<tr[^>]*data-key="console_acct_a"[^>]*>.*?<td class="last-used">(.*?)</td>`)
	if m := consoleRow.FindStringSubmatch(body); m == nil || m[1] != want {
		t.Fatalf("the Console key's last-used cell %v after a playground run, want %s", m, want)
	}
}

// The operator's account list pages newest first, 50 a page, without skipping or repeating;
// a credit grant from the account page goes through the ledger (balance = sum of entries).
func TestConsoleOperatorAccountsPagedAndGrantThroughLedger(t *testing.T) {
	e := newConsoleEnv(t)
	ctx := context.Background()
	ledger := ledger.New(e.db, e.clock.Now)
	for i := range 60 {
		a := auth.Account{ID: fmt.Sprintf("acct_p%02d", i), Plan: auth.Free, Status: auth.Live, CreatedAt: e.clock.Now().Add(time.Duration(i) * time.Second)}
		if err := ledger.CreateAccount(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	b := e.browser(t)
	b.mustSignIn("ops@example.test")
	rows := regexp.MustCompile(`<tr data-account="([^"]+)">`)
	next := regexp.MustCompile(`href="/console/operator/accounts\?before=([^"]+)" id="older"`)
	var seen []string
	path := "/console/operator/accounts"
	for pages := 0; path != ""; pages++ {
		p := b.get(path)
		if p.status != http.StatusOK || pages > 3 {
			t.Fatalf("GET %s: %d (page %d)", path, p.status, pages)
		}
		for _, m := range rows.FindAllStringSubmatch(p.body, -1) {
			seen = append(seen, m[1])
		}
		path = ""
		if m := next.FindStringSubmatch(p.body); m != nil {
			path = "/console/operator/accounts?before=" + m[1]
		}
	}
	// Every account once (the 60 made here and the fixture's two), the 60 newest first.
	var made []string
	for _, id := range seen {
		if strings.HasPrefix(id, "acct_p") {
			made = append(made, id)
		}
	}
	if len(seen) != 62 || len(made) != 60 || made[0] != "acct_p59" || made[59] != "acct_p00" || !slices.IsSortedFunc(made, func(a, b string) int { return strings.Compare(b, a) }) {
		t.Fatalf("listed %d accounts: %v", len(seen), seen)
	}
	if p := b.get("/console/operator/accounts?before=garbage"); p.status != http.StatusBadRequest {
		t.Fatalf("malformed cursor: %d", p.status)
	}

	sum0, err := ledger.Sum(ctx, "acct_a")
	if err != nil {
		t.Fatal(err)
	}
	token := b.csrf("/console/operator/accounts/acct_a")
	p := b.do(http.MethodPost, "/console/operator/accounts/acct_a/credits", url.Values{"csrf": {token}, "amount": {"2,500"}})
	if p.status != http.StatusSeeOther {
		t.Fatalf("grant: %d %s", p.status, p.body)
	}
	a, err := ledger.Account(ctx, "acct_a")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := ledger.Sum(ctx, "acct_a")
	if err != nil || a.Balance != 3500 || sum-sum0 != 2500 {
		t.Fatalf("after a 2,500 grant on 1,000: balance %d, ledger entries moved by %d (%v)", a.Balance, sum-sum0, err)
	}
	if p := b.get("/console/operator/accounts/acct_a"); !strings.Contains(p.body, `id="balance">3,500<`) {
		t.Fatalf("account page after the grant: %d", p.status)
	}

	// An allowance past what the ledger's arithmetic allows is refused on the page, naming the
	// bound, and the account keeps its allowance.
	before, _ := ledger.Account(ctx, "acct_a")
	token = b.csrf("/console/operator/accounts/acct_a")
	p = b.do(http.MethodPost, "/console/operator/accounts/acct_a/allowance", url.Values{"csrf": {token}, "allowance": {"9223372036854775807"}})
	if p.status != http.StatusBadRequest || !strings.Contains(p.body, "The monthly allowance is a whole number of credits from 0 to 1000000000000.") {
		t.Fatalf("an allowance of 2^63-1: %d %s", p.status, p.body)
	}
	if a, _ := ledger.Account(ctx, "acct_a"); a.MonthlyAllowance != before.MonthlyAllowance {
		t.Fatalf("the refused allowance was written: %d, was %d", a.MonthlyAllowance, before.MonthlyAllowance)
	}
}

// BenchmarkConsoleOperatorAccounts: the operator's first account page and a page deep in the
// list with 10,000 accounts in the store, over HTTP. Each is one bounded read (51 rows through
// the accounts_created index), so the time does not grow with the number of accounts.
func BenchmarkConsoleOperatorAccounts(b *testing.B) {
	e := newConsoleEnv(b)
	ctx := context.Background()
	ledger := ledger.New(e.db, e.clock.Now)
	const n = 10_000
	for i := range n {
		a := auth.Account{ID: fmt.Sprintf("acct_bench%05d", i), Plan: auth.Pro, Status: auth.Live, CreatedAt: e.clock.Now().Add(time.Duration(i) * time.Second)}
		if err := ledger.CreateAccount(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
	br := e.browser(b)
	br.mustSignIn("ops@example.test")
	deep := fmt.Sprintf("/console/operator/accounts?before=%d.acct_bench%05d", e.clock.Now().Add(n/2*time.Second).UnixMicro(), n/2)
	for _, tc := range []struct{ name, path string }{
		{"first page", "/console/operator/accounts"},
		{"page 100", deep},
	} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				if p := br.get(tc.path); p.status != http.StatusOK {
					b.Fatalf("GET %s: %d", tc.path, p.status)
				}
			}
		})
	}
}

// otherProcess is a second server.New over e's database and clock: another process of the
// same service, with its own account API host.
func (e *consoleEnv) otherProcess(t testing.TB) *consoleEnv {
	t.Helper()
	o := *e
	var h http.Handler
	o.api = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(o.api.Close)
	cfg := server.Config{Secret: secret, NoRateLimits: true, PasswordCost: bcrypt.MinCost,
		PublicURLAPI: o.api.URL, PublicURLQueue: e.queue.URL, PublicURLSync: e.sync.URL}
	srv, err := server.New(context.Background(), cfg, server.Deps{DB: e.db, Auth: e.auth, Bucket: blobs.NewMemory(), Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	h, o.srv = srv.Handler(server.RoleAPI), srv
	return &o
}

// Issue 26 item 6: failed sign-ins are counted where every process sees them (the store):
// four failures on one process and one on another refuse the email's next try on either,
// even with the right password, with 429 and Retry-After; another email is not refused.
func TestConsoleSignInThrottleAcrossProcesses(t *testing.T) {
	e := newConsoleEnv(t)
	a, b := e.browser(t), e.otherProcess(t).browser(t)
	for i := range 5 {
		br := a
		if i == 4 {
			br = b
		}
		if p, _ := br.signIn("Acct_A@example.test", consolePassword+"!"); p.status != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i+1, p.status)
		}
	}
	for name, br := range map[string]*browser{"other process": b, "first process": a} {
		p, token := br.signIn("acct_a@example.test", consolePassword)
		if p.status != http.StatusTooManyRequests || token != "" || !strings.Contains(p.body, "Too many failed sign-ins") {
			t.Fatalf("%s after five failures: %d token %q", name, p.status, token)
		}
	}
	b.mustSignIn("acct_b@example.test")
	e.clock.Add(15 * time.Minute)
	a.mustSignIn("acct_a@example.test")
}
