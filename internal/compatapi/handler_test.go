package compatapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/chat"
	"github.com/modelexec/modelexec/internal/compatapi"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/runners/builtin"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// compatEnv is /compat/v1 served as the account API host serves it (Wrap over the handler's
// routes), on SQLite, with the reference language models and a key that may call them all.
type compatEnv struct {
	t        *testing.T
	srv      *httptest.Server
	switches *httpapi.Switches
	key      string
	db       *sqlstore.DB
	account  string
}

func newCompatEnv(t *testing.T, lim httpapi.Limits) *compatEnv {
	t.Helper()
	now := func() time.Time { return time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC) }
	log := slog.New(slog.DiscardHandler)
	db := storetest.OpenSQLite(t)
	svc := auth.NewService(db, auth.Format{Prefix: auth.DefaultPrefix}, auth.NewHasher("deployment-secret"), now, log)
	acct := storetest.NewAccount(t, db, "acct_pro", auth.Pro, 5000)
	minted, err := svc.Mint(context.Background(), auth.MintParams{AccountID: acct.ID,
		Scopes: []auth.Scope{auth.TextWrite, auth.ChatWrite, auth.EmbeddingsWrite}})
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	langs := runners.Registry{}
	for _, m := range cat.LanguageModels("") {
		if l := m.Language(); l.Kind == catalog.KindEmbeddings {
			langs[m.Slug] = builtin.EmbeddingsRunner{Dimensions: l.Dimensions}
		} else {
			langs[m.Slug] = builtin.ChatRunner{}
		}
	}
	e := &compatEnv{t: t, switches: &httpapi.Switches{}, key: minted.Key, db: db, account: acct.ID}
	gate := &httpapi.Gate{Auth: svc, Switches: e.switches, Now: now, Log: log}
	env := func(jobs.Job, runners.Reporter) runners.Env { return runners.Env{} }
	js := jobs.New(jobs.Deps{Store: sqlstore.Jobs{DB: db}, Ledger: ledger.New(db, now), Catalog: cat, Runners: langs, Env: env,
		Seats: jobs.NewSeats(8, 8, 8), Now: now, Log: log}, jobs.DefaultConfig())
	h := &compatapi.Handler{Gate: gate, Chat: &chat.Service{Jobs: js, Catalog: cat, Runners: langs, Hub: chat.NewHub(), Now: now}, Now: now, Log: log}
	e.srv = httptest.NewServer(httpapi.WrapLimits(httpapi.AccountSurface, log, lim, h.Routes()))
	t.Cleanup(e.srv.Close)
	return e
}

// balance is the account's balance in credits.
func (e *compatEnv) balance() int64 {
	e.t.Helper()
	a, err := e.db.Account(context.Background(), e.account)
	if err != nil {
		e.t.Fatal(err)
	}
	return a.Balance
}

// compatAnswer is an answer as a client of the protocol reads it.
type compatAnswer struct {
	status int
	header http.Header
	err    struct{ Message, Type, Code, Param string }
	raw    string
}

func readAnswer(t *testing.T, res *http.Response) compatAnswer {
	t.Helper()
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	a := compatAnswer{status: res.StatusCode, header: res.Header, raw: string(b)}
	var body struct {
		Error *struct{ Message, Type, Code, Param string } `json:"error"`
	}
	if json.Unmarshal(b, &body) == nil && body.Error != nil {
		a.err = *body.Error
	}
	return a
}

func (e *compatEnv) do(method, path, body string, hdr ...string) compatAnswer {
	e.t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	return readAnswer(e.t, res)
}

// refused checks an answer is the protocol's error envelope with status and code.
func refused(t *testing.T, what string, a compatAnswer, status int, code string) {
	t.Helper()
	if a.status != status || a.err.Code != code || a.err.Message == "" || a.err.Type == "" {
		t.Fatalf("%s: %d %q, want %d %s in the protocol's envelope", what, a.status, a.raw, status, code)
	}
}

// raw sends head (request line and headers, without the blank line) and a body that ends
// early: the write side is shut after part, or, with hold, kept open until the server answers.
func (e *compatEnv) raw(head, part string, hold bool) compatAnswer {
	e.t.Helper()
	conn, err := net.Dial("tcp", e.srv.Listener.Addr().String())
	if err != nil {
		e.t.Fatal(err)
	}
	defer conn.Close()
	// The bounds under test are short; 10 s only keeps a broken build from hanging the run.
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(conn, "%s\r\nHost: test\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\n\r\n%s", head, e.key, part)
	if !hold {
		_ = conn.(*net.TCPConn).CloseWrite()
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		e.t.Fatalf("%s: no answer: %v", head, err)
	}
	return readAnswer(e.t, res)
}

// TestERR60_CompatBodyCutShort proves ERR-60 and the body's time bound on /compat/v1: a body
// that ends early (the client shuts its write side) or stalls past the bound is answered in
// the protocol's envelope (400 invalid_json, invalid_body "did not arrive in time"), never
// 200 with an empty body. The caller's principal comes from the gate's cache after the first
// call, so every route's error is confirmed against a cancelled context: each call is made
// three times.
func TestERR60_CompatBodyCutShort(t *testing.T) {
	e := newCompatEnv(t, httpapi.Limits{BodyTimeout: 200 * time.Millisecond})
	for _, path := range []string{"/chat/completions", "/completions", "/responses", "/embeddings"} {
		for i := range 3 {
			a := e.raw("POST "+compatapi.Prefix+path+" HTTP/1.1\r\nContent-Length: 1000", `{"model":`, false)
			refused(t, fmt.Sprintf("%s cut short, call %d", path, i+1), a, http.StatusBadRequest, "invalid_json")
		}
	}
	for i := range 3 {
		a := e.raw("POST "+compatapi.Prefix+"/chat/completions HTTP/1.1\r\nContent-Length: 1000", `{"model":`, true)
		refused(t, fmt.Sprintf("stalled body, call %d", i+1), a, http.StatusBadRequest, "invalid_body")
		if !strings.Contains(a.err.Message, "did not arrive in time") {
			t.Fatalf("stalled body: %q", a.err.Message)
		}
	}
}

// TestORD01_ORD02_CompatFallback proves ORD-01, ORD-02 and KEY-16 on what no /compat/v1 route
// claims: api_disabled, then the Origin refusal, come before its 404 and 405, in the protocol's
// envelope; a 405's Allow header names every method served there, HEAD with GET.
func TestORD01_ORD02_CompatFallback(t *testing.T) {
	e := newCompatEnv(t, httpapi.DefaultLimits())
	origin := []string{"Origin", "https://app.example"}
	key := []string{"Authorization", "Bearer " + e.key}
	for _, c := range []struct{ method, path string }{
		{"OPTIONS", "/chat/completions"}, {"OPTIONS", "/nope"}, {"GET", "/nope"}, {"PUT", "/models"}, {"GET", ""},
	} {
		what := c.method + " " + compatapi.Prefix + c.path
		refused(t, what+" with Origin", e.do(c.method, compatapi.Prefix+c.path, "", append(origin, key...)...), http.StatusForbidden, "browser_origin_refused")
		e.switches.APIDisabled.Store(true)
		refused(t, what+" with the API disabled", e.do(c.method, compatapi.Prefix+c.path, "", origin...), http.StatusServiceUnavailable, "api_disabled")
		e.switches.APIDisabled.Store(false)
	}
	refused(t, "unknown path", e.do("GET", compatapi.Prefix+"/nope", ""), http.StatusNotFound, "not_found")

	a := e.do("PUT", compatapi.Prefix+"/models", "", key...)
	refused(t, "PUT /models", a, http.StatusMethodNotAllowed, "method_not_allowed")
	if got := a.header.Get("Allow"); got != "GET, HEAD" {
		t.Fatalf("Allow %q on /models, want GET, HEAD", got)
	}
	if a := e.do("HEAD", compatapi.Prefix+"/models", "", key...); a.status != http.StatusOK {
		t.Fatalf("HEAD /models: %d, yet Allow names it", a.status)
	}
	a = e.do("GET", compatapi.Prefix+"/chat/completions", "", key...)
	refused(t, "GET /chat/completions", a, http.StatusMethodNotAllowed, "method_not_allowed")
	if got := a.header.Get("Allow"); got != "POST" {
		t.Fatalf("Allow %q on /chat/completions, want POST", got)
	}
}

// TestERR60_CompatDeepJSON proves the depth bound of docs/errors.md on /compat/v1: a body
// nesting past MaxDepth is invalid_body at any depth, past encoding/json's own cap (10,000
// levels) included, never invalid_json.
func TestERR60_CompatDeepJSON(t *testing.T) {
	e := newCompatEnv(t, httpapi.DefaultLimits())
	for _, depth := range []int{httpapi.MaxDepth + 1, 9_999, 10_001, 100_000} {
		body := `{"model":"x","messages":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + "}"
		a := e.do("POST", compatapi.Prefix+"/chat/completions", body, "Authorization", "Bearer "+e.key)
		refused(t, fmt.Sprintf("depth %d", depth), a, http.StatusBadRequest, "invalid_body")
		if !strings.Contains(a.err.Message, fmt.Sprint(httpapi.MaxDepth)) {
			t.Fatalf("depth %d: %q does not name the bound", depth, a.err.Message)
		}
	}
}
