package accountapi

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// catFixture is an account API over SQLite with the default catalogue and one key that holds
// only the always-on scopes (jobs:read, assets:read): no write scope of any model.
type catFixture struct {
	cat *catalog.Catalog
	srv *httptest.Server
	key string
}

var catT0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func newCatFixture(t *testing.T) *catFixture {
	t.Helper()
	cat, err := catalog.Default()
	if err != nil {
		t.Fatal(err)
	}
	db := storetest.OpenSQLite(t)
	storetest.NewAccount(t, db, "acct_cat", auth.Pro, 1000)
	now := func() time.Time { return catT0 }
	log := slog.New(slog.DiscardHandler)
	svc := auth.NewService(db, auth.Format{Prefix: auth.DefaultPrefix}, auth.NewHasher("catalogue-test-secret"), now, log)
	m, err := svc.Mint(context.Background(), auth.MintParams{AccountID: "acct_cat", Scopes: []auth.Scope{}})
	if err != nil {
		t.Fatal(err)
	}
	h := &Handler{Gate: &httpapi.Gate{Auth: svc, Now: now, Log: log}, Auth: svc, Catalog: cat, Now: now, Log: log, OpenAPI: Document(cat)}
	srv := httptest.NewServer(h.Routes())
	t.Cleanup(srv.Close)
	return &catFixture{cat: cat, srv: srv, key: m.Key}
}

// get sends GET path, with the fixture's key when keyed, and answers the status, headers
// and body.
func (f *catFixture) get(t *testing.T, path string, keyed bool) (int, http.Header, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if keyed {
		req.Header.Set("Authorization", "Bearer "+f.key)
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, b
}

// getJSON is get decoding an object body.
func (f *catFixture) getJSON(t *testing.T, path string, keyed bool) (int, map[string]any) {
	t.Helper()
	status, _, b := f.get(t, path, keyed)
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("GET %s: %d %s: %v", path, status, b, err)
	}
	return status, v
}

// wantError checks a refusal's status, code and carried fields.
func catWantError(t *testing.T, path string, status int, body map[string]any, wantStatus int, code string, carries ...string) {
	t.Helper()
	if status != wantStatus || body["error"] != code {
		t.Fatalf("GET %s = %d %v, want %d %s", path, status, body, wantStatus, code)
	}
	for _, k := range append([]string{"error_type", "message", "retry", "charged", "docs", "request_id"}, carries...) {
		if _, ok := body[k]; !ok {
			t.Errorf("GET %s: %s missing from %v", path, k, body)
		}
	}
}

func catReadAll(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}
