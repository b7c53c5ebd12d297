package e2e_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

// TestMain lets the test binary serve as the crashing process: with E2E_CHILD_DSN set it runs
// the queue host and the worker on that database until it is killed.
func TestMain(m *testing.M) {
	if dsn := os.Getenv("E2E_CHILD_DSN"); dsn != "" {
		if err := serveChild(dsn, os.Getenv("E2E_CHILD_ADDR_FILE")); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// slowRunner takes 1.5 s per job unless its context ends first.
type slowRunner struct{}

func (slowRunner) Run(ctx context.Context, j runners.Job, env runners.Env) (runners.Result, error) {
	env.Report.Progress(0.1)
	select {
	case <-time.After(1500 * time.Millisecond):
		return runners.Result{Document: map[string]any{"ok": true}, Done: 1}, nil
	case <-ctx.Done():
		return runners.Result{Done: 0.1}, ctx.Err()
	}
}

// serveChild builds the service with server.New (queue host and worker) with short leases
// (2 s) so a restart takes crashed jobs over quickly.
func serveChild(dsn, addrFile string) error {
	ctx := context.Background()
	db, err := store.Open(ctx, dsn)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	base := "http://" + ln.Addr().String()
	log := quietLog()
	now := func() time.Time { return time.Now().UTC() }
	as := auth.NewService(db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher(secret), now, log)
	bucket := blobs.NewMemory()
	cfg := server.Config{Roles: server.Roles{server.RoleQueue: true, server.RoleWorker: true}, Secret: secret, NoRateLimits: true,
		PublicURLAPI: "http://api.e2e.invalid", PublicURLQueue: base, PublicURLSync: base, Listeners: map[server.Role]net.Listener{server.RoleQueue: ln}}
	srv, err := server.New(ctx, cfg, server.Deps{DB: db, Auth: as, Now: now, Log: log, Catalogue: buildCatalog, Bucket: bucket,
		Jobs: func(c *jobs.Config) {
			c.LeaseTTL, c.HeartbeatEvery, c.SweepEvery = 2*time.Second, 300*time.Millisecond, 200*time.Millisecond
			c.Concurrency = map[string]int{mQueue: 3}
		},
		Runners: func(cat *catalog.Catalog) runners.Registry {
			reg := runners.Registry{}
			for _, m := range cat.Models() {
				reg[m.Slug] = slowRunner{}
			}
			return reg
		}})
	if err != nil {
		return err
	}
	go func() { _ = srv.Run(ctx) }()
	if err := os.WriteFile(addrFile+".tmp", []byte(base), 0o600); err != nil {
		return err
	}
	if err := os.Rename(addrFile+".tmp", addrFile); err != nil {
		return err
	}
	select {}
}

type child struct {
	cmd  *exec.Cmd
	base string
}

func startChild(t *testing.T, dsn string) *child {
	t.Helper()
	dir := t.TempDir()
	addrFile := filepath.Join(dir, "addr")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "E2E_CHILD_DSN="+dsn, "E2E_CHILD_ADDR_FILE="+addrFile)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(addrFile); err == nil {
			return &child{cmd: cmd, base: string(b)}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("child did not start")
	return nil
}

// crashDB opens a fresh database of the backend and returns it with a DSN a second process
// can open.
func crashDB(t *testing.T, backend string) (*sqlstore.DB, string) {
	t.Helper()
	ctx := context.Background()
	if backend == "sqlite" {
		path := filepath.Join(t.TempDir(), "crash.db")
		db, err := store.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db, path
	}
	dsn := storetest.PostgresDSN(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "crash_" + hex.EncodeToString(b[:])
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`); admin.Close() })
	u, _ := url.Parse(dsn)
	qv := u.Query()
	qv.Set("search_path", schema)
	u.RawQuery = qv.Encode()
	db, err := store.Open(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, u.String()
}

// TestQST11_CrashMidRun kills the serving process (SIGKILL) while jobs run and wait, restarts
// it, and proves every job settles exactly once, succeeded, charged its quote once, the
// balance equals the grant less the charges and the sum of the ledger, and each settled job
// has exactly one event. Proves QST-11, PRICE-02, issue 4 "crash test".
func TestQST11_CrashMidRun(t *testing.T) {
	if testing.Short() {
		t.Skip("crash test starts processes")
	}
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			db, dsn := crashDB(t, backend)
			h := &harness{t: t, db: db, clock: &clock{}}
			h.auth = auth.NewService(db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher(secret), h.clock.Now, quietLog())
			const grant = 1000
			acct, key := h.newAccount("acct_crash", auth.Pro, grant, nil)
			h.account, h.key = acct, key

			c1 := startChild(t, dsn)
			const n = 8
			var ids []string
			for i := range n {
				r := h.call(http.MethodPost, c1.base+"/svc-serverless/"+mQueue, fmt.Sprintf(`{"positivePrompt":"crash %d"}`, i),
					"Idempotency-Key", fmt.Sprintf("crash-%d", i))
				if r.Code != 200 {
					t.Fatalf("submit %d: %d %s", i, r.Code, r.Raw)
				}
				ids = append(ids, r.str("request_id"))
			}
			// Kill once three run (charged) and five wait (not charged).
			deadline := time.Now().Add(10 * time.Second)
			for h.countStatus("IN_PROGRESS") < 3 {
				if time.Now().After(deadline) {
					t.Fatal("jobs did not start")
				}
				time.Sleep(20 * time.Millisecond)
			}
			time.Sleep(300 * time.Millisecond)
			if err := c1.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			_ = c1.cmd.Wait()
			running, queued := h.countStatus("IN_PROGRESS"), h.countStatus("IN_QUEUE")
			if running == 0 || running+queued+h.countStatus("COMPLETED") != n {
				t.Fatalf("at the kill: %d running, %d queued", running, queued)
			}
			t.Logf("killed with %d running, %d queued, %d settled", running, queued, h.countStatus("COMPLETED"))

			startChild(t, dsn)
			deadline = time.Now().Add(40 * time.Second)
			for h.countStatus("COMPLETED") < n {
				if time.Now().After(deadline) {
					t.Fatalf("after restart only %d of %d settled", h.countStatus("COMPLETED"), n)
				}
				time.Sleep(50 * time.Millisecond)
			}
			var charged int64
			retried := 0
			for _, id := range ids {
				j := h.job(id)
				if j.Outcome != jobs.Succeeded || j.Charged != j.Quoted {
					t.Errorf("job %s: %s charged %d of %d (%s)", j.ID, j.Outcome, j.Charged, j.Quoted, j.ErrorMessage)
				}
				if j.Attempts > 1 {
					retried++
				}
				charged += j.Charged
			}
			if retried == 0 {
				t.Error("no job was run again after the crash")
			}
			if b := h.balance(); b != grant-charged {
				t.Errorf("balance %d, want %d - %d", b, grant, charged)
			}
			checkBooks(t, db)
		})
	}
}

func (h *harness) countStatus(status string) int {
	h.t.Helper()
	var n int
	if err := h.db.SQL().QueryRow(`SELECT count(*) FROM jobs WHERE status = ` + quote(status)).Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
