package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

const secret = "server-test-secret-0123456789"

// holdRunner runs until released, telling the test each start.
type holdRunner struct {
	started chan struct{}
	release chan struct{}
}

func (h *holdRunner) Run(ctx context.Context, _ runners.Job, _ runners.Env) (runners.Result, error) {
	h.started <- struct{}{}
	select {
	case <-h.release:
		return runners.Result{Document: map[string]any{"ok": true}, Done: 1}, nil
	case <-ctx.Done():
		return runners.Result{}, ctx.Err()
	}
}

type fixture struct {
	srv  *server.Server
	sync *httptest.Server
	key  string
}

func newFixture(t *testing.T, cfg server.Config, rn runners.Runner) *fixture {
	t.Helper()
	db := storetest.OpenSQLite(t)
	as := auth.NewService(db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher(secret), func() time.Time { return time.Now().UTC() }, slog.New(slog.DiscardHandler))
	var h http.Handler
	f := &fixture{sync: httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))}
	t.Cleanup(f.sync.Close)
	cfg.Secret, cfg.NoRateLimits, cfg.PublicURLSync = secret, true, f.sync.URL
	srv, err := server.New(context.Background(), cfg, server.Deps{DB: db, Auth: as, Bucket: blobs.NewMemory(),
		Runners: func(*catalog.Catalog) runners.Registry { return runners.Registry{"image-4b": rn} }})
	if err != nil {
		t.Fatal(err)
	}
	f.srv, h = srv, srv.Handler(server.RoleSync)
	storetest.NewAccount(t, db, "acct_srv", auth.Pro, 100000)
	m, err := as.Mint(context.Background(), auth.MintParams{AccountID: "acct_srv"})
	if err != nil {
		t.Fatal(err)
	}
	f.key = m.Key
	return f
}

func (f *fixture) run(t *testing.T) (int, string) {
	req, _ := http.NewRequest(http.MethodPost, f.sync.URL+"/svc-serverless/image-4b", strings.NewReader(`{"positivePrompt":"x"}`))
	req.Header.Set("Authorization", "Bearer "+f.key)
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, ""
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestI10_ModelConcurrency: --model-concurrency N is how many jobs of one model the process
// runs at once: with N = 2 and two runs held, a third run of a model that refuses a queue is
// answered service_busy over HTTP; released, the two complete. Proves issue 10 item 6.
func TestI10_ModelConcurrency(t *testing.T) {
	rn := &holdRunner{started: make(chan struct{}, 8), release: make(chan struct{})}
	f := newFixture(t, server.Config{ModelConcurrency: 2}, rn)
	var once sync.Once
	release := func() { once.Do(func() { close(rn.release) }) }
	t.Cleanup(func() { release(); f.srv.Jobs().Drain() })
	done := make(chan int, 2)
	for range 2 {
		go func() { code, _ := f.run(t); done <- code }()
	}
	<-rn.started
	<-rn.started
	if code, body := f.run(t); code != http.StatusTooManyRequests || !strings.Contains(body, `"service_busy"`) {
		t.Fatalf("third run with two held at concurrency 2: %d %s", code, body)
	}
	release()
	for range 2 {
		if code := <-done; code != http.StatusOK {
			t.Fatalf("held run: %d", code)
		}
	}
}

// TestI10_RolesRefuseWithoutSecret: a process of some roles only must share the deployment
// secret with the others (its signed links must verify there): without one it does not start,
// and the message says what to set.
func TestI10_RolesRefuseWithoutSecret(t *testing.T) {
	db := storetest.OpenSQLite(t)
	as := auth.NewService(db, auth.Format{}, auth.NewHasher(""), time.Now, slog.New(slog.DiscardHandler))
	roles, err := server.ParseRoles("api,queue,sync")
	if err != nil {
		t.Fatal(err)
	}
	_, err = server.New(context.Background(), server.Config{Roles: roles}, server.Deps{DB: db, Auth: as, Bucket: blobs.NewMemory()})
	if err == nil || !strings.Contains(err.Error(), "MODELEXEC_SECRET") {
		t.Fatalf("split roles without a secret: %v", err)
	}
	if _, err := server.ParseRoles("api,cron"); err == nil || !strings.Contains(err.Error(), `"cron"`) {
		t.Fatalf("unknown role: %v", err)
	}
}
