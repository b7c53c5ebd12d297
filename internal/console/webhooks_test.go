package console_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"html"
	"io"
	"log"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
	"github.com/modelexec/modelexec/internal/webhooks"
)

const whSecret = "console-webhooks-test-secret-0123456789"

// trustTestCert makes the process trust httptest's TLS certificate (the same for every
// httptest TLS server) as its system roots, as an operator does with SSL_CERT_FILE, so the
// server's webhook sender reaches the test receivers with its production TLS settings. The
// roots are read once per process, before the first TLS handshake.
var trustTestCert = sync.OnceValue(func() error {
	srv := httptest.NewTLSServer(http.NotFoundHandler())
	defer srv.Close()
	dir, err := os.MkdirTemp("", "modelexec-console-roots")
	if err != nil {
		return err
	}
	f := filepath.Join(dir, "roots.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(f, pemBytes, 0o600); err != nil {
		return err
	}
	return os.Setenv("SSL_CERT_FILE", f)
})

// hookReceiver is an https endpoint on loopback: it answers challenges with the nonce when
// echo is on, and records every other delivery.
type hookReceiver struct {
	srv  *httptest.Server
	mu   sync.Mutex
	echo bool
	got  []whReceived
}

type whReceived struct {
	Header http.Header
	Body   []byte
}

func newHookReceiver(t testing.TB) *hookReceiver {
	rc := &hookReceiver{echo: true}
	rc.srv = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		echo := rc.echo
		if r.Header.Get(webhooks.HeaderEvent) != webhooks.EventChallenge {
			rc.got = append(rc.got, whReceived{Header: r.Header.Clone(), Body: body})
		}
		rc.mu.Unlock()
		if r.Header.Get(webhooks.HeaderEvent) == webhooks.EventChallenge {
			var env webhooks.ChallengeEnvelope
			_ = json.Unmarshal(body, &env)
			if echo {
				_ = json.NewEncoder(w).Encode(map[string]string{"nonce": env.Data.Nonce})
				return
			}
			io.WriteString(w, "<html>hello, no nonce here</html>")
			return
		}
		io.WriteString(w, "ok")
	}))
	rc.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	t.Cleanup(rc.srv.Close)
	return rc
}

func (rc *hookReceiver) URL() string { return rc.srv.URL + "/hooks/modelexec" }

func (rc *hookReceiver) setEcho(on bool) { rc.mu.Lock(); rc.echo = on; rc.mu.Unlock() }

func (rc *hookReceiver) events() []whReceived {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return append([]whReceived(nil), rc.got...)
}

// whFixture is the whole server's account API host with the console, and users of two accounts.
type whFixture struct {
	api      *httptest.Server
	db       *sqlstore.DB
	sessions *auth.Sessions
}

func newWHFixture(t testing.TB, mutate ...func(*server.Config)) *whFixture {
	t.Helper()
	if err := trustTestCert(); err != nil {
		t.Fatal(err)
	}
	db := storetest.OpenSQLite(t)
	now := func() time.Time { return time.Now().UTC() }
	as := auth.NewService(db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher(whSecret), now, slog.New(slog.DiscardHandler))
	var h http.Handler
	f := &whFixture{db: db, api: httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))}
	t.Cleanup(f.api.Close)
	cfg := server.Config{Roles: server.Roles{server.RoleAPI: true}, Secret: whSecret, NoRateLimits: true, PublicURLAPI: f.api.URL,
		WebhookAllowPrivate: "127.0.0.1", PasswordCost: 4}
	for _, m := range mutate {
		m(&cfg)
	}
	srv, err := server.New(context.Background(), cfg, server.Deps{DB: db, Auth: as, Bucket: blobs.NewMemory(), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	h = srv.Handler(server.RoleAPI)
	f.sessions = auth.NewSessions(auth.SessionsConfig{Store: db, APIPrefix: "svc_sk_", Hasher: auth.NewHasher(whSecret), Now: now, Cost: 4})
	return f
}

// whBrowser is a signed-in person: a cookie jar, following redirects like a browser.
type whBrowser struct {
	t    testing.TB
	base string
	c    *http.Client
	csrf string
}

var whCSRFField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func (f *whFixture) signIn(t testing.TB, account, email string) *whBrowser {
	t.Helper()
	storetest.NewAccount(t, f.db, account, auth.Pro, 100000)
	const pw = "a long test passphrase"
	if _, err := f.sessions.CreateUser(context.Background(), auth.NewUser{AccountID: account, Email: email, Password: pw}); err != nil {
		t.Fatal(err)
	}
	jar, _ := cookiejar.New(nil)
	b := &whBrowser{t: t, base: f.api.URL, c: &http.Client{Jar: jar}}
	_, page := b.get("/console/sign-in")
	_, page = b.post("/console/sign-in", url.Values{"email": {email}, "password": {pw}, "csrf": {whCSRFOf(t, page)}})
	b.csrf = whCSRFOf(t, page)
	return b
}

func whCSRFOf(t testing.TB, page string) string {
	t.Helper()
	m := whCSRFField.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no csrf field in the page:\n%s", page)
	}
	return html.UnescapeString(m[1])
}

func (b *whBrowser) do(req *http.Request) (int, string) {
	b.t.Helper()
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body)
}

func (b *whBrowser) get(path string) (int, string) {
	req, _ := http.NewRequest(http.MethodGet, b.base+path, nil)
	return b.do(req)
}

func (b *whBrowser) post(path string, form url.Values) (int, string) {
	req, _ := http.NewRequest(http.MethodPost, b.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

// submit posts a form of the page with the session's CSRF token.
func (b *whBrowser) submit(path string, form url.Values) (int, string) {
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", b.csrf)
	return b.post(path, form)
}

var whEndpointID = regexp.MustCompile(`data-webhook="(wh_[a-z0-9]+)"`)

func whEndpointIDs(page string) []string {
	var out []string
	for _, m := range whEndpointID.FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	return out
}

// whSection is the part of the page about one endpoint.
func whSection(t *testing.T, page, id string) string {
	t.Helper()
	i := strings.Index(page, `data-webhook="`+id+`"`)
	if i < 0 {
		t.Fatalf("endpoint %s is not on the page", id)
	}
	s := page[i:]
	if j := strings.Index(s, "</section>"); j >= 0 {
		s = s[:j]
	}
	return s
}

func (f *whFixture) publicKeys(t *testing.T) map[string]ed25519.PublicKey {
	t.Helper()
	res, err := http.Get(f.api.URL + webhooks.JWKSPath)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var set struct {
		Keys []struct{ Kid, X string } `json:"keys"`
	}
	if err := json.NewDecoder(res.Body).Decode(&set); err != nil {
		t.Fatal(err)
	}
	out := map[string]ed25519.PublicKey{}
	for _, k := range set.Keys {
		x, err := base64.RawURLEncoding.DecodeString(k.X)
		if err != nil {
			t.Fatal(err)
		}
		out[k.Kid] = ed25519.PublicKey(x)
	}
	return out
}

// Proves in the console WH-01/WH-05/WH-18 (an endpoint added whose receiver echoes the nonce
// is verified at once), WH-35/WH-39 (the test event arrives signed like every delivery, under
// the published keys, with its own event type) and that the delivery is listed with its
// attempts and response code; then WH-10 (delete).
func TestWH18_WH35_ConsoleAddVerifyTestEventAndDelete(t *testing.T) {
	f := newWHFixture(t)
	rc := newHookReceiver(t)
	b := f.signIn(t, "acct_hooks", "ana@example.com")

	status, page := b.get("/console/webhooks")
	if status != http.StatusOK || !strings.Contains(page, `id="no-webhooks"`) {
		t.Fatalf("empty page %d:\n%s", status, page)
	}
	status, page = b.submit("/console/webhooks", url.Values{"url": {rc.URL()}, "product": {"photo", "music"}})
	if status != http.StatusOK || !strings.Contains(page, "registered and verified") {
		t.Fatalf("add answered %d:\n%s", status, page)
	}
	ids := whEndpointIDs(page)
	if len(ids) != 1 {
		t.Fatalf("endpoints on the page: %v", ids)
	}
	id := ids[0]
	sec := whSection(t, page, id)
	for _, want := range []string{`<span class="badge active status">active</span>`, "verified", rc.URL(), "Images (photo), Music and audio (music)", "No deliveries yet."} {
		if !strings.Contains(sec, html.EscapeString(want)) && !strings.Contains(sec, want) {
			t.Errorf("endpoint section lacks %q:\n%s", want, sec)
		}
	}

	status, page = b.submit("/console/webhooks/"+id+"/test", nil)
	if status != http.StatusOK || !strings.Contains(page, "Test event delivered to "+id+" (HTTP 200") {
		t.Fatalf("test event answered %d:\n%s", status, page)
	}
	evs := rc.events()
	if len(evs) != 1 {
		t.Fatalf("receiver got %d events", len(evs))
	}
	ev := evs[0]
	if ev.Header.Get(webhooks.HeaderEvent) != webhooks.EventTest || ev.Header.Get(webhooks.HeaderAltUserID) != "acct_hooks" {
		t.Fatalf("headers %v", ev.Header)
	}
	if err := webhooks.VerifyV2(ev.Header.Get(webhooks.HeaderSignature), ev.Body, f.publicKeys(t), time.Now(), 5*time.Minute); err != nil {
		t.Fatalf("test event signature: %v", err)
	}
	var env webhooks.TestEnvelope
	if err := json.Unmarshal(ev.Body, &env); err != nil || env.Type != webhooks.EventTest || env.Account != "acct_hooks" || *env.WebhookID != id {
		t.Fatalf("test envelope %s (%v)", ev.Body, err)
	}
	sec = whSection(t, page, id)
	dlv := ev.Header.Get(webhooks.HeaderDelivery)
	row := sec[strings.Index(sec, `data-delivery="`+dlv+`"`):]
	row = row[:strings.Index(row, "</tr>")]
	for _, want := range []string{"webhook.test", `<span class="badge delivered">delivered</span>`, `<td class="num attempts">1</td>`, `HTTP <span class="status-code">200</span>`} {
		if !strings.Contains(row, want) {
			t.Errorf("delivery row lacks %q:\n%s", want, row)
		}
	}
	// Opening the delivery shows its payload (the body the receiver got), its headers and the answer.
	detail := sec[strings.Index(sec, `data-detail="`+dlv+`"`):]
	detail = detail[:strings.Index(detail, "</details>")]
	for _, want := range []string{"The endpoint answered HTTP 200", "<code>Svc-Delivery</code></dt><dd><code>" + dlv + "</code>",
		"<code>X-Alt-Webhook-User-Id</code></dt><dd><code>acct_hooks</code>", html.EscapeString(pretty(t, ev.Body))} {
		if !strings.Contains(detail, want) {
			t.Errorf("delivery detail lacks %q:\n%s", want, detail)
		}
	}

	// Resending it sends the same event (id and body) again as a new delivery, signed anew.
	if !strings.Contains(detail, `action="/console/webhooks/deliveries/`+dlv+`/resend"`) {
		t.Fatalf("the delivery has no resend form:\n%s", detail)
	}
	status, page = b.submit("/console/webhooks/deliveries/"+dlv+"/resend", nil)
	if status != http.StatusOK || !strings.Contains(page, "Resent "+dlv+" as dlv_") || !strings.Contains(page, ": delivered (HTTP 200).") {
		t.Fatalf("resend answered %d:\n%s", status, page)
	}
	if evs = rc.events(); len(evs) != 2 || !bytes.Equal(evs[1].Body, ev.Body) || evs[1].Header.Get(webhooks.HeaderDelivery) == dlv ||
		webhooks.VerifyV2(evs[1].Header.Get(webhooks.HeaderSignature), evs[1].Body, f.publicKeys(t), time.Now(), 5*time.Minute) != nil {
		t.Fatalf("the receiver got %d events after the resend", len(evs))
	}
	if status, _ := b.submit("/console/webhooks/deliveries/dlv_nosuchdelivery/resend", nil); status != http.StatusNotFound {
		t.Fatalf("resending an unknown delivery answered %d", status)
	}
	other := f.signIn(t, "acct_hooks_other", "otto@example.com")
	if status, _ := other.submit("/console/webhooks/deliveries/"+dlv+"/resend", nil); status != http.StatusNotFound || len(rc.events()) != 2 {
		t.Fatalf("another account resending the delivery answered %d (%d events)", status, len(rc.events()))
	}

	status, page = b.submit("/console/webhooks/"+id+"/delete", nil)
	if status != http.StatusOK || !strings.Contains(page, "Endpoint "+id+" deleted") || len(whEndpointIDs(page)) != 0 {
		t.Fatalf("delete answered %d:\n%s", status, page)
	}
	if status, _ := b.submit("/console/webhooks/"+id+"/delete", nil); status != http.StatusNotFound {
		t.Fatalf("deleting twice answered %d", status)
	}
}

// Proves in the console WH-13/WH-19 (a receiver that does not echo the nonce leaves the
// endpoint pending, with the reason and the excerpt of its answer shown), WH-20 (a passing
// re-challenge makes it active) and that a test event needs an active endpoint.
func TestWH13_WH20_ConsolePendingExcerptAndRechallenge(t *testing.T) {
	f := newWHFixture(t)
	rc := newHookReceiver(t)
	rc.setEcho(false)
	b := f.signIn(t, "acct_pending", "ben@example.com")

	status, page := b.submit("/console/webhooks", url.Values{"url": {rc.URL()}})
	if status != http.StatusOK || !strings.Contains(page, "registered but not verified") {
		t.Fatalf("add answered %d:\n%s", status, page)
	}
	id := whEndpointIDs(page)[0]
	sec := whSection(t, page, id)
	for _, want := range []string{`<span class="badge pending status">pending</span>`, "every product", "did not contain data.nonce",
		`<code class="verification-reason">nonce_not_echoed</code>`, `HTTP <span class="verification-status">200</span>`,
		html.EscapeString("<html>hello, no nonce here</html>")} {
		if !strings.Contains(sec, want) {
			t.Errorf("pending section lacks %q:\n%s", want, sec)
		}
	}
	if strings.Contains(sec, "send-test") {
		t.Error("a pending endpoint offers a test event")
	}
	if status, page := b.submit("/console/webhooks/"+id+"/test", nil); status != http.StatusConflict || !strings.Contains(page, "only to an active endpoint") {
		t.Fatalf("test event to a pending endpoint answered %d:\n%s", status, page)
	}

	rc.setEcho(true)
	status, page = b.submit("/console/webhooks/"+id+"/challenge", nil)
	if status != http.StatusOK || !strings.Contains(page, "passed the challenge and is active") {
		t.Fatalf("re-challenge answered %d:\n%s", status, page)
	}
	sec = whSection(t, page, id)
	if !strings.Contains(sec, `<span class="badge active status">active</span>`) || strings.Contains(sec, "data-verification") {
		t.Fatalf("after re-challenge:\n%s", sec)
	}
}

// Proves in the console WH-01/LIM-05: the API's URL rules (https, a public host, no user-info)
// refuse the form with the reason, keeping what was typed, and nothing is registered.
func TestWH01_ConsoleURLRules(t *testing.T) {
	f := newWHFixture(t)
	b := f.signIn(t, "acct_rules", "cy@example.com")
	for _, u := range []string{"http://example.com/hook", "https://10.1.2.3/hook", "https://user:pw@example.com/hook", "https://localhost/hook"} {
		status, page := b.submit("/console/webhooks", url.Values{"url": {u}})
		if status != http.StatusBadRequest || !strings.Contains(page, `class="error"`) || !strings.Contains(page, `value="`+html.EscapeString(u)+`"`) {
			t.Errorf("%s answered %d:\n%s", u, status, page)
		}
	}
	if _, page := b.get("/console/webhooks"); len(whEndpointIDs(page)) != 0 {
		t.Fatalf("a refused URL was registered: %v", whEndpointIDs(page))
	}
}

// Account isolation: another account's endpoint is not listed, and re-challenging, testing or
// deleting it by id answers 404 and changes nothing. A form without the session's token is
// refused.
func TestWH10_ConsoleWebhooksAccountIsolation(t *testing.T) {
	f := newWHFixture(t)
	rc := newHookReceiver(t)
	owner := f.signIn(t, "acct_owner", "owner@example.com")
	_, page := owner.submit("/console/webhooks", url.Values{"url": {rc.URL()}})
	id := whEndpointIDs(page)[0]

	other := f.signIn(t, "acct_other", "other@example.com")
	if _, page := other.get("/console/webhooks"); strings.Contains(page, id) {
		t.Fatal("another account's endpoint is listed")
	}
	for _, action := range []string{"challenge", "test", "delete"} {
		if status, _ := other.submit("/console/webhooks/"+id+"/"+action, nil); status != http.StatusNotFound {
			t.Errorf("%s of another account's endpoint answered %d", action, status)
		}
	}
	if status, _ := owner.post("/console/webhooks/"+id+"/delete", url.Values{}); status != http.StatusForbidden {
		t.Errorf("delete without the form token answered %d", status)
	}
	if _, page := owner.get("/console/webhooks"); len(whEndpointIDs(page)) != 1 || len(rc.events()) != 0 {
		t.Fatalf("the endpoint changed: %v, %d events", whEndpointIDs(page), len(rc.events()))
	}
}

var whsecShown = regexp.MustCompile(`<code id="whsec" class="secret">(whsec_[^<]+)</code>`)

// Proves in the console WH-43: under the earlier signing scheme the endpoint's whsec_ secret is
// shown on the answer to the registration and to a re-challenge only, never on the page
// itself, and the test event is signed v1 under it.
func TestWH43_ConsoleShowsSecretOnceUnderHMAC(t *testing.T) {
	f := newWHFixture(t, func(c *server.Config) { c.WebhookScheme = webhooks.SchemeHMAC })
	rc := newHookReceiver(t)
	b := f.signIn(t, "acct_hmac", "dee@example.com")
	status, page := b.submit("/console/webhooks", url.Values{"url": {rc.URL()}})
	m := whsecShown.FindStringSubmatch(page)
	if status != http.StatusOK || m == nil || !strings.Contains(page, "registered and verified") {
		t.Fatalf("add under HMAC answered %d:\n%s", status, page)
	}
	secret := m[1]
	id := whEndpointIDs(page)[0]
	if _, page := b.get("/console/webhooks"); strings.Contains(page, secret) || strings.Contains(page, `id="whsec"`) {
		t.Fatal("the secret is shown again on the page")
	}
	if _, page := b.submit("/console/webhooks/"+id+"/challenge", nil); !strings.Contains(page, secret) {
		t.Fatal("a re-challenge does not show the secret")
	}
	if status, _ := b.submit("/console/webhooks/"+id+"/test", nil); status != http.StatusOK {
		t.Fatalf("test event answered %d", status)
	}
	evs := rc.events()
	if len(evs) != 1 {
		t.Fatalf("%d events", len(evs))
	}
	if err := webhooks.VerifyV1(evs[0].Header.Get(webhooks.HeaderSignature), evs[0].Body, secret, time.Now(), 5*time.Minute); err != nil {
		t.Fatalf("v1 signature of the test event: %v", err)
	}
}

// BenchmarkConsoleWebhooksPage renders the webhooks page of an account whose endpoint has
// 10,000 deliveries: the page reads each endpoint's latest through an index, so its time does
// not follow the history (a benchmark, not a timed test).
func BenchmarkConsoleWebhooksPage(b *testing.B) {
	f := newWHFixture(b)
	rc := newHookReceiver(b)
	br := f.signIn(b, "acct_bench", "bench@example.com")
	_, page := br.submit("/console/webhooks", url.Values{"url": {rc.URL()}})
	id := whEndpointIDs(page)[0]
	store := sqlstore.Webhooks{DB: f.db}
	start := time.Now().Add(-48 * time.Hour)
	for i := 0; i < 10000; i += 500 {
		var batch []webhooks.NewDelivery
		for j := i; j < i+500; j++ {
			ev := "evt_photo_bench" + strconv.Itoa(j) + "_succeeded"
			batch = append(batch, webhooks.NewDelivery{ID: webhooks.DeliveryID(id, ev), EndpointID: id, Account: "acct_bench",
				EventID: ev, EventType: webhooks.EventJobSucceeded, JobID: "photo_bench" + strconv.Itoa(j), Body: []byte(`{}`)})
		}
		if _, err := store.EnqueueDeliveries(context.Background(), webhooks.EnqueueParams{Now: start.Add(time.Duration(i) * time.Second), Deliveries: batch}); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	for b.Loop() {
		if status, _ := br.get("/console/webhooks"); status != http.StatusOK {
			b.Fatalf("page answered %d", status)
		}
	}
}

// pretty indents a JSON body as the console shows it.
func pretty(t *testing.T, raw []byte) string {
	t.Helper()
	var b bytes.Buffer
	if err := json.Indent(&b, raw, "", "  "); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
