package server_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// running is a server started with Run on listeners of its own.
type running struct {
	srv     *server.Server
	apiURL  string
	syncURL string
	key     string
	stop    context.CancelFunc
	done    chan error
	logs    *syncLog
	db      *sqlstore.DB
}

func startServer(t *testing.T, grace time.Duration, rn runners.Runner, edit ...func(*server.Config)) *running {
	t.Helper()
	lns := map[server.Role]net.Listener{}
	for _, role := range []server.Role{server.RoleAPI, server.RoleQueue, server.RoleSync} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[role] = ln
	}
	db := storetest.OpenSQLite(t)
	logs := &syncLog{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	as := auth.NewService(db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher(secret), func() time.Time { return time.Now().UTC() }, slog.New(slog.DiscardHandler))
	cfg := server.Config{Secret: secret, NoRateLimits: true, Listeners: lns, ShutdownGrace: grace}
	for _, e := range edit {
		e(&cfg)
	}
	srv, err := server.New(context.Background(), cfg,
		server.Deps{DB: db, Auth: as, Bucket: blobs.NewMemory(), Log: log,
			Runners: func(*catalog.Catalog) runners.Registry { return runners.Registry{"image-4b": rn} }})
	if err != nil {
		t.Fatal(err)
	}
	storetest.NewAccount(t, db, "acct_srv", auth.Pro, 100000)
	m, err := as.Mint(context.Background(), auth.MintParams{AccountID: "acct_srv"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{srv: srv, apiURL: srv.URLs().API, syncURL: srv.URLs().Sync, key: m.Key, stop: cancel, done: make(chan error, 1), logs: logs, db: db}
	go func() { r.done <- srv.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

type answer struct {
	code int
	body string
	err  error
}

// hold sends a synchronous run and answers on the channel when it is answered.
func (r *running) hold() <-chan answer {
	out := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, r.syncURL+"/svc-serverless/image-4b", strings.NewReader(`{"positivePrompt":"x"}`))
		req.Header.Set("Authorization", "Bearer "+r.key)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- answer{err: err}
			return
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		out <- answer{code: res.StatusCode, body: string(b), err: err}
	}()
	return out
}

// closed waits until the sync listener refuses connections: shutdown has begun.
func (r *running) closed(t *testing.T) {
	t.Helper()
	addr := strings.TrimPrefix(r.syncURL, "http://")
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return
		}
		c.Close()
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatal("the listener still accepts connections after the stop")
}

// TestI14_ShutdownAnswersHeldRun: a synchronous run held when the process is told to stop
// gets its result: the listeners close at once, but the workers keep running the job until
// the held connections are answered; only then does Run return. Shutdown is logged.
func TestI14_ShutdownAnswersHeldRun(t *testing.T) {
	rn := &holdRunner{started: make(chan struct{}, 1), release: make(chan struct{})}
	r := startServer(t, time.Minute, rn)
	ans := r.hold()
	<-rn.started
	r.stop()
	r.closed(t) // shutdown has begun: no new connection is taken ...
	close(rn.release)
	a := <-ans // ... and the held one gets the job's result
	if a.err != nil || a.code != http.StatusOK || !strings.Contains(a.body, `"ok":true`) {
		t.Fatalf("held run at shutdown: %d %s %v", a.code, a.body, a.err)
	}
	if err := <-r.done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	r.done <- nil // for the cleanup
	if len(r.logs.lines(t, "shutting down")) != 3 || len(r.logs.lines(t, "stopped")) != 1 {
		t.Fatalf("shutdown not logged:\n%s", r.logs)
	}
}

// TestI14_ShutdownAnswersPastGrace: a held run whose job outlasts the shutdown grace is
// answered, not cut: run_timed_out (504) with its status URL, so the caller can find the job
// that runs again elsewhere.
func TestI14_ShutdownAnswersPastGrace(t *testing.T) {
	rn := &holdRunner{started: make(chan struct{}, 4), release: make(chan struct{})}
	t.Cleanup(func() { close(rn.release) })
	r := startServer(t, 50*time.Millisecond, rn)
	ans := r.hold()
	<-rn.started
	r.stop()
	a := <-ans
	if a.err != nil || a.code != http.StatusGatewayTimeout || !strings.Contains(a.body, `"run_timed_out"`) || !strings.Contains(a.body, "status_url") {
		t.Fatalf("held run past the grace: %d %s %v", a.code, a.body, a.err)
	}
	if err := <-r.done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	r.done <- nil
}
