package httpapi_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/ratelimit"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// syncBuffer is a log's output, written by the server's goroutines and read by the test.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }
func (s *syncBuffer) Reset()         { s.mu.Lock(); defer s.mu.Unlock(); s.b.Reset() }
func (s *syncBuffer) Lines() []string {
	return strings.Split(strings.TrimSpace(s.String()), "\n")
}

// cutStore is the auth store whose key reads fail as a read cut short does (the request's
// context ended while it ran) once cut is set.
type cutStore struct {
	auth.Store
	cut atomic.Bool
}

func (s *cutStore) Key(ctx context.Context, id string) (auth.KeyRecord, error) {
	if s.cut.Load() {
		return auth.KeyRecord{}, context.Canceled
	}
	return s.Store.Key(ctx, id)
}

// TestERR01_RefusalOfAnUnconfirmedCallerIsAnsweredWhenItsConfirmationCannotRun: a spending
// request let through on the gate's cached principal is confirmed before any refusal is
// answered (a revoked key is answered as such). When that confirmation cannot be read, the
// refusal is still answered with its own code and body: never an empty 200, never 500.
func TestERR01_RefusalOfAnUnconfirmedCallerIsAnsweredWhenItsConfirmationCannotRun(t *testing.T) {
	db := storetest.OpenSQLite(t)
	store := &cutStore{Store: db}
	log := slog.New(slog.DiscardHandler)
	now := func() time.Time { return time.Now().UTC() }
	svc := auth.NewService(store, auth.Format{Prefix: auth.DefaultPrefix}, auth.NewHasher("deployment-secret"), now, log)
	storetest.NewAccount(t, db, "acct_cut", auth.Pro, 100)
	m, err := svc.Mint(context.Background(), auth.MintParams{AccountID: "acct_cut"})
	if err != nil {
		t.Fatal(err)
	}
	g := &httpapi.Gate{Auth: svc, Switches: &httpapi.Switches{}, Now: now, Log: log}
	refuse := httpapi.Func(func(http.ResponseWriter, *http.Request) error {
		return apierr.New(apierr.InsufficientCredits)
	})
	srv := httptest.NewServer(httpapi.Wrap(httpapi.QueueSurface, log, g.Protect(httpapi.Route{Bucket: ratelimit.Generate, Spends: true}, refuse)))
	defer srv.Close()
	call := func() (int, map[string]any) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL, nil)
		req.Header.Set("Authorization", "Bearer "+m.Key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		var body map[string]any
		_ = json.Unmarshal(b, &body)
		return res.StatusCode, body
	}
	if code, body := call(); code != http.StatusPaymentRequired || body["error"] != "insufficient_credits" {
		t.Fatalf("first call (key read from the store): %d %v", code, body)
	}
	store.cut.Store(true) // the next call is let through on the cached principal
	if code, body := call(); code != http.StatusPaymentRequired || body["error"] != "insufficient_credits" {
		t.Fatalf("a refusal whose confirmation could not be read: %d %v", code, body)
	}
}

// TestKEY13_AccessLogSaysWhichKeyIDsWereChecked: the access line names a key's public id as
// key_id once its secret was checked (an answered request, or one refused for the key's or the
// account's standing), and as claimed_key_id when the secret did not hold: a request with a
// key's public id and a made-up secret is never put on the real key in the log.
func TestKEY13_AccessLogSaysWhichKeyIDsWereChecked(t *testing.T) {
	db := storetest.OpenSQLite(t)
	var buf syncBuffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	now := func() time.Time { return time.Now().UTC() }
	svc := auth.NewService(db, auth.Format{Prefix: auth.DefaultPrefix}, auth.NewHasher("deployment-secret"), now, log)
	storetest.NewAccount(t, db, "acct_log", auth.Pro, 100)
	m, err := svc.Mint(context.Background(), auth.MintParams{AccountID: "acct_log"})
	if err != nil {
		t.Fatal(err)
	}
	g := &httpapi.Gate{Auth: svc, Switches: &httpapi.Switches{}, Now: now, Log: log}
	ok := httpapi.Func(func(w http.ResponseWriter, r *http.Request) error {
		httpapi.WriteJSON(w, r, 200, map[string]any{"ok": true})
		return nil
	})
	srv := httptest.NewServer(httpapi.Wrap(httpapi.AccountSurface, log, g.Protect(httpapi.Route{Bucket: ratelimit.Read}, ok)))
	defer srv.Close()
	line := func(key string) map[string]any {
		t.Helper()
		buf.Reset()
		req, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
		req.Header.Set("Authorization", "Bearer "+key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		for _, l := range buf.Lines() {
			var v map[string]any
			if json.Unmarshal([]byte(l), &v) == nil && v["msg"] == "request" {
				return v
			}
		}
		t.Fatalf("no access line in %q", buf.String())
		return nil
	}
	if v := line(m.Key); v["key_id"] != m.Record.ID || v["claimed_key_id"] != nil {
		t.Fatalf("an answered request: %v", v)
	}
	if v := line(storetest.ForgedSecret(m.Key)); v["status"] != float64(401) || v["claimed_key_id"] != m.Record.ID || v["key_id"] != nil {
		t.Fatalf("a request with the key's id and another secret: %v", v)
	}
	if _, err := svc.Revoke(context.Background(), m.Record.ID); err != nil {
		t.Fatal(err)
	}
	if v := line(m.Key); v["status"] != float64(401) || v["key_id"] != m.Record.ID {
		t.Fatalf("the revoked key itself: %v", v)
	}
}
