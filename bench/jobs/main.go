// Command jobs is the service's benchmark (a program, not a timed test). On this machine, in
// one run, it measures the service built by server.New exactly as `modelexec serve` builds it,
// with image-4b on the built-in "noop" runner (from a catalogue file) and plan figures that
// stay out of the way (a plans file: the benchmark measures the engine, not the plans' pace):
//
//   - submit→settled jobs/s and p50/p99 latency (queue host, ?wait) at c = 1, 8 and 32 clients,
//     with 40 accounts and with one account;
//
//   - status reads/s (GET of a settled job's status URL, c = 32);
//
//   - the same machine's bare net/http JSON handler (POST and GET) at the same concurrency,
//     and each figure as a ratio of it: the bare handler is measured for half the duration
//     just before each point and half just after, and the point is divided by the mean, so a
//     machine whose speed drifts during the run (a shared host's usually does) moves both
//     sides of a ratio alike;
//
//   - the service process's CPU time per job, which a loaded machine distorts less than rates,
//     and the whole machine's busy CPU time per job (from /proc/stat, on Linux), which counts
//     the load generator's and the database server's shares too;
//
//   - SQL statements, transactions and COMMITs per job (the store's own counters; on SQLite one
//     COMMIT carries several transactions: group commit);
//
//   - the cost of a job (jobs/s, p50, statements) with 0, 100,000 and 1,000,000 rows of
//     settled history in the database (-history).
//
// The clients, for the service and for the bare handler alike, run in a load generator of their
// own (this program again, in a process of its own): the service's process runs the service
// alone, as it would behind clients from outside. -load in-process runs them in the service's
// process instead, sharing its scheduler and collector.
//
// On PostgreSQL an unmeasured load and an ANALYZE come first (-warm-up), as autovacuum keeps a
// running service's statistics.
//
//	go run ./bench/jobs [-db sqlite|postgres] [-duration 3s] [-history 0,100000,1000000] [-postgres URL] [-load separate|in-process] [-cpuprofile FILE] [-memprofile FILE]
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/plans"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

const (
	model    = "image-4b"
	accounts = 40
	secret   = "bench-secret-0123456789abcdef"
)

var (
	clientCounts  = []int{1, 8, 32}
	accountCounts = []int{accounts, 1}
)

func main() {
	if spec := os.Getenv(loadEnv); spec != "" {
		if err := generateLoad(spec); err != nil {
			fmt.Fprintln(os.Stderr, "bench: load generator:", err)
			os.Exit(1)
		}
		return
	}
	backend := flag.String("db", "sqlite", "database: sqlite or postgres")
	duration := flag.Duration("duration", 3*time.Second, "how long each measurement runs")
	history := flag.String("history", "0,100000,1000000", "comma-separated rows of settled history to measure a job's cost at")
	pg := flag.String("postgres", envOr("MODELEXEC_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "PostgreSQL URL (-db postgres)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the submit→settled loads to this file")
	memprofile := flag.String("memprofile", "", "write a profile of what the submit→settled loads allocated to this file")
	points := flag.String("clients", "1,8,32", "comma-separated client counts to measure at")
	oneAccount := flag.Bool("one-account", true, "also measure with every client on one account")
	loadWhere := flag.String("load", "separate", "where the clients run: separate (a load generator process of its own, as from outside) or in-process")
	warm := flag.Bool("warm-up", true, "PostgreSQL: run an unmeasured load and ANALYZE before the first point, as autovacuum would in a running service")
	flag.Parse()
	if *memprofile != "" {
		runtime.MemProfileRate = 0 // run samples the loads' allocations only
	}
	clientCounts = nil
	for _, s := range strings.Split(*points, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fmt.Fprintf(os.Stderr, "bench: -clients: %q is not a client count\n", s)
			os.Exit(2)
		}
		clientCounts = append(clientCounts, n)
	}
	if !*oneAccount {
		accountCounts = accountCounts[:1]
	}
	switch *loadWhere {
	case "separate":
	case "in-process":
		separateLoad = false
	default:
		fmt.Fprintf(os.Stderr, "bench: -load %q: separate or in-process\n", *loadWhere)
		os.Exit(2)
	}
	if err := run(*backend, *pg, *duration, *history, profiles{cpu: *cpuprofile, mem: *memprofile}, *warm); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// profiles names the files the profiles of the submit→settled loads go to ("" for none).
type profiles struct{ cpu, mem string }

func run(backend, pgURL string, d time.Duration, historyList string, prof profiles, warm bool) error {
	if backend != "sqlite" && backend != "postgres" {
		return fmt.Errorf("-db %q: sqlite or postgres", backend)
	}
	var histories []int
	for _, s := range strings.Split(historyList, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return fmt.Errorf("-history: %q is not a row count", s)
		}
		histories = append(histories, n)
	}
	slices.Sort(histories)
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 256}}

	b := newBare(client)
	defer b.close()
	e, err := newEngine(backend, pgURL)
	if err != nil {
		return err
	}
	defer e.close()

	if backend == "postgres" && warm {
		if err := e.warmUp(client, d); err != nil {
			return err
		}
	}
	fmt.Printf("modelexec benchmark: %s, %s per point, no-op runner (catalogue file), plans without pacing\n", backend, d)
	fmt.Printf("each point is divided by the bare handler measured %s before it and %s after it\n\n", d/2, d/2)
	fmt.Printf("%-34s %10s %10s %10s %9s %8s %8s %8s %9s %9s %11s %7s\n", "target", "jobs/s", "p50", "p99", "x bare", "stmt/job", "tx/job", "commit/j", "cpu/job", "host cpu", "alloc/job", "errors")
	// The profiles cover the submit→settled loads and the bare handler measured around them.
	if prof.mem != "" {
		runtime.MemProfileRate = 64 << 10 // sampled from here on only (main set it to none)
	}
	if prof.cpu != "" {
		f, err := os.Create(prof.cpu)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
	}
	var statusURL, statusKey string
	for _, nAcct := range accountCounts {
		for _, c := range clientCounts {
			var m measure
			ceil := b.around(c, d, func() { m = e.jobs(client, c, nAcct, d) })
			statusURL, statusKey = m.statusURL, strings.TrimPrefix(m.statusAuth, "Bearer ")
			if nAcct == accountCounts[0] {
				fmt.Printf("%-34s %10.0f %10s %10s %9s %8s %8s %8s %9s %9s %11s %7s\n", fmt.Sprintf("bare net/http POST, c=%d", c), ceil.perSec,
					round(ceil.p50), round(ceil.p99), "", "", "", "", round(ceil.cpu), round(ceil.host), ceil.allocs(), "")
			}
			fmt.Printf("%-34s %10.0f %10s %10s %9.3f %8.1f %8.2f %8.2f %9s %9s %11s %7d\n", fmt.Sprintf("submit→settled, %d acct, c=%d", nAcct, c), m.perSec,
				round(m.p50), round(m.p99), m.perSec/ceil.perSec, m.stmts, m.txs, m.commits, round(m.cpu), round(m.host), m.allocs(), m.errors)
		}
	}
	if prof.cpu != "" {
		pprof.StopCPUProfile()
	}
	if prof.mem != "" {
		if err := writeAllocs(prof.mem); err != nil {
			return err
		}
	}
	if statusURL == "" {
		return fmt.Errorf("no job settled")
	}
	var reads float64
	get := b.aroundGet(d, func() {
		reads = measured(client, loadSpec{Method: http.MethodGet, URL: statusURL, Clients: 32, Duration: d, Keys: []string{statusKey}}).perSec
	})
	fmt.Printf("\n%-34s %10.0f\n", "bare net/http GET, c=32", get)
	fmt.Printf("%-34s %10.0f %34s %9.3f\n", "status reads, c=32", reads, "", reads/get)

	// Each history point is divided by the bare handler measured around it, as above: the
	// machine's speed drifts over the minutes the history takes to write, and "x empty"
	// compares the points' shares of the bare handler, not their raw rates.
	fmt.Printf("\ncost per job by history (40 accounts, c=8)\n%-34s %10s %10s %10s %9s %9s %8s %9s %9s\n", "history rows added (all job rows)", "jobs/s", "p50", "p99", "x bare", "x empty", "stmt/job", "cpu/job", "cpu x")
	added := 0
	var base, baseCPU float64
	for _, h := range histories {
		if h > added {
			if err := e.addHistory(h - added); err != nil {
				return err
			}
			added = h
		}
		have := e.rows()
		var m measure
		ceil := b.around(8, d, func() { m = e.jobs(client, 8, accounts, d) })
		share := m.perSec / ceil.perSec
		if base == 0 {
			base, baseCPU = share, float64(m.cpu)
		}
		fmt.Printf("%-34s %10.0f %10s %10s %9.3f %9.3f %8.1f %9s %9.2f\n", fmt.Sprintf("%d (%d)", h, have), m.perSec, round(m.p50), round(m.p99),
			share, share/base, m.stmts, round(m.cpu), float64(m.cpu)/baseCPU)
	}
	return e.checkBooks()
}

func round(d time.Duration) string { return d.Round(10 * time.Microsecond).String() }

func envOr(k, d string) string {
	if v, ok := os.LookupEnv(k); ok {
		return v
	}
	return d
}

// bareServer is a net/http handler answering a small JSON document, measured with the same
// client and the same concurrency as the service: the most this machine's HTTP stack gives.
type bareServer struct {
	client *http.Client
	srv    *httptest.Server
}

func newBare(client *http.Client) *bareServer {
	return &bareServer{client: client, srv: httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "COMPLETED", "request_id": "00000000-0000-4000-8000-000000000000"})
	}))}
}

func (b *bareServer) close() { b.srv.Close() }

func (b *bareServer) post(c int, d time.Duration) measure {
	return measured(b.client, loadSpec{Method: http.MethodPost, URL: b.srv.URL + "/svc-serverless/" + model, Clients: c, Duration: d})
}

// around measures the bare POST at c for d/2, runs point, and measures it for d/2 again: the
// mean of the two halves (rates and CPU averaged, latencies the worse half's) is the point's
// ceiling.
func (b *bareServer) around(c int, d time.Duration, point func()) measure {
	before := b.post(c, d/2)
	point()
	after := b.post(c, d/2)
	return measure{perSec: (before.perSec + after.perSec) / 2, p50: max(before.p50, after.p50), p99: max(before.p99, after.p99),
		cpu: (before.cpu + after.cpu) / 2, host: (before.host + after.host) / 2,
		allocBytes: (before.allocBytes + after.allocBytes) / 2, allocObjects: (before.allocObjects + after.allocObjects) / 2}
}

// aroundGet is around for the bare GET at c = 32.
func (b *bareServer) aroundGet(d time.Duration, point func()) float64 {
	get := loadSpec{Method: http.MethodGet, URL: b.srv.URL + "/status", Clients: 32, Duration: d / 2}
	before := measured(b.client, get)
	point()
	after := measured(b.client, get)
	return (before.perSec + after.perSec) / 2
}

// engine is the service under test over its database.
type engine struct {
	db      *sqlstore.DB
	srv     *server.Server
	http    *httptest.Server
	keys    []string
	cancel  func()
	cleanup []func()
}

func newEngine(backend, pgURL string) (*engine, error) {
	ctx := context.Background()
	e := &engine{}
	dir, err := os.MkdirTemp("", "bench-jobs-")
	if err != nil {
		return nil, err
	}
	e.cleanup = append(e.cleanup, func() { os.RemoveAll(dir) })
	dsn := filepath.Join(dir, "bench.db")
	if backend == "postgres" {
		if dsn, err = pgSchema(pgURL, e); err != nil {
			return nil, err
		}
	}
	if e.db, err = store.Open(ctx, dsn); err != nil {
		e.close()
		return nil, err
	}
	e.cleanup = append(e.cleanup, func() { e.db.Close() })

	// The operator's files: image-4b on the noop runner; plans that never refuse the load.
	var f catalog.File
	if err := json.Unmarshal(catalog.DefaultData(), &f); err != nil {
		return nil, err
	}
	for i := range f.Models {
		if f.Models[i].Slug == model {
			f.Models[i].Runner = "noop"
		}
	}
	catFile := filepath.Join(dir, "catalogue.json")
	b, _ := json.Marshal(f)
	if err := os.WriteFile(catFile, b, 0o600); err != nil {
		return nil, err
	}
	p := plans.Default()
	p.InFlight[auth.Pro] = 1 << 20
	p.Seats = plans.Seats{PerAccount: 1024, PerProduct: 1024, Platform: 1024}

	log := slog.New(slog.DiscardHandler)
	now := func() time.Time { return time.Now().UTC() }
	as := auth.NewService(e.db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher(secret), now, log)
	var h http.Handler
	e.http = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	e.cleanup = append(e.cleanup, e.http.Close)
	cfg := server.Config{Roles: server.Every(), Secret: secret, NoRateLimits: true, ModelConcurrency: 128,
		PublicURLAPI: e.http.URL, PublicURLQueue: e.http.URL, PublicURLSync: e.http.URL}
	e.srv, err = server.New(ctx, cfg, server.Deps{DB: e.db, Auth: as, Now: now, Log: log, Plans: p, Bucket: blobs.NewMemory(),
		Catalogue: func(hosts catalog.Hosts) (*catalog.Catalog, error) {
			b, err := os.ReadFile(catFile)
			if err != nil {
				return nil, err
			}
			return catalog.Load(strings.NewReader(string(b)), catalog.WithHosts(hosts))
		}})
	if err != nil {
		e.close()
		return nil, err
	}
	h = e.srv.Handler(server.RoleQueue)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = e.srv.RunWorkers(rctx) }()
	e.cancel = func() { cancel(); <-done }

	for i := range accounts {
		id := fmt.Sprintf("acct_bench_%02d", i)
		a := auth.Account{ID: id, Plan: auth.Pro, Status: auth.Live, CreatedAt: now().Add(-30 * 24 * time.Hour), AllowancePeriod: auth.Period(now())}
		if err := e.db.CreateAccount(ctx, a); err != nil {
			return nil, err
		}
		if _, err := e.db.Grant(ctx, id, ledger.MaxGrant, now()); err != nil {
			return nil, err
		}
		m, err := as.Mint(ctx, auth.MintParams{AccountID: id})
		if err != nil {
			return nil, err
		}
		e.keys = append(e.keys, m.Key)
	}
	return e, nil
}

// pgSchema makes a fresh schema for the run (dropped at the end) and returns its DSN.
func pgSchema(pgURL string, e *engine) (string, error) {
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "bench_" + hex.EncodeToString(b[:])
	u, err := url.Parse(pgURL)
	if err != nil {
		return "", err
	}
	// The schema is made over a plain connection, without the store's own parameters.
	plain, q := *u, u.Query()
	q.Del("pool_max_conns")
	plain.RawQuery = q.Encode()
	admin, err := sql.Open("pgx", plain.String())
	if err != nil {
		return "", err
	}
	if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
		admin.Close()
		return "", fmt.Errorf("create schema (is PostgreSQL up at %s?): %w", pgURL, err)
	}
	e.cleanup = append(e.cleanup, func() { _, _ = admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`); admin.Close() })
	q = u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}

func (e *engine) close() {
	if e.cancel != nil {
		e.cancel()
	}
	for i := len(e.cleanup) - 1; i >= 0; i-- {
		e.cleanup[i]()
	}
}

// jobs submits with ?wait from c clients over nAcct accounts for d: submit→settled.
func (e *engine) jobs(client *http.Client, c, nAcct int, d time.Duration) measure {
	s0, t0 := e.db.Stats()
	c0 := e.db.Commits()
	m := measured(client, loadSpec{Method: http.MethodPost, URL: e.http.URL + "/svc-serverless/" + model + "?wait=60",
		Clients: c, Duration: d, Keys: e.keys[:nAcct], Jobs: true})
	s1, t1 := e.db.Stats()
	c1 := e.db.Commits()
	if m.n > 0 {
		m.stmts, m.txs = float64(s1-s0)/float64(m.n), float64(t1-t0)/float64(m.n)
		m.commits = float64(c1-c0) / float64(m.n)
	}
	return m
}

// warmUp runs an unmeasured load and then ANALYZE, as autovacuum does within a minute in a
// running service. PostgreSQL plans a prepared statement for the tables as they are when it is
// first run often enough, and keeps that plan until the table's statistics change: planned on
// the benchmark's seconds-old, empty tables, the in-flight count and the batch settlement scan
// every job row, a cost a service pays only until its first ANALYZE.
func (e *engine) warmUp(client *http.Client, d time.Duration) error {
	e.jobs(client, 8, accounts, d/2)
	_, err := e.db.SQL().ExecContext(context.Background(), `ANALYZE`)
	return err
}

func (e *engine) rows() int {
	var n int
	_ = e.db.SQL().QueryRow(`SELECT count(*) FROM jobs`).Scan(&n)
	return n
}

// historyRequestID is the request id the service would have given history row g, created at
// at (microseconds): a UUIDv7 of that millisecond, so history sorts before new jobs in every
// index of ids, as it does in a service that has run for a while. (The job's id is built from
// it as the service builds one; its minted idempotency key is kept as nothing, as the service
// keeps one.)
func historyRequestID(at int64, g int) string {
	ms := uint64(at / 1000)
	return fmt.Sprintf("%08x-%04x-7%03x-8%03x-%012x", ms>>16, ms&0xffff, (g>>12)&0xfff, g&0xfff, g)
}

// addHistory inserts n settled jobs spread over the accounts, a year old and a millisecond
// apart, with the ids the service gives (historyRequestID): one generate_series statement on
// PostgreSQL, multi-row INSERTs of 500 in one transaction per 50,000 rows on SQLite; then as
// many events and ledger entries (addHistoryRecords).
func (e *engine) addHistory(n int) error {
	ctx := context.Background()
	start := e.rows()
	old := time.Now().Add(-365 * 24 * time.Hour).UnixMicro()
	const cols = `account_id, id, key_id, request_id, model, product, idem_key, input, status, outcome, quoted, reserved, charged, created_at, started_at, finished_at`
	if e.db.Dialect() == sqlstore.Postgres {
		_, err := e.db.SQL().ExecContext(ctx, `INSERT INTO jobs (`+cols+`)
 SELECT 'acct_bench_' || lpad((g % 40)::text, 2, '0'), 'photo_k' || r, 'hist', r, $1, 'photo', '', '{}', 'COMPLETED', 'succeeded', 11, 11, 11,
  $2::bigint + g * 1000, $2::bigint + g * 1000, $2::bigint + g * 1000 + 500
 FROM (SELECT g, lpad(to_hex(ms >> 16), 8, '0') || '-' || lpad(to_hex(ms & 65535), 4, '0') || '-7' || lpad(to_hex((g >> 12) & 4095), 3, '0') ||
   '-8' || lpad(to_hex(g & 4095), 3, '0') || '-' || lpad(to_hex(g), 12, '0') AS r
   FROM (SELECT g, ($2::bigint + g * 1000) / 1000 AS ms FROM generate_series($3::bigint, $4::bigint) g) t) h`, model, old, start, start+n-1)
		if err == nil {
			err = e.addHistoryRecords(ctx, old+int64(start)*1000, old+int64(start+n)*1000)
		}
		if err == nil {
			_, err = e.db.SQL().ExecContext(ctx, `ANALYZE jobs; ANALYZE ledger_entries; ANALYZE events`)
		}
		return err
	}
	const batch = 500
	for done := 0; done < n; {
		tx, err := e.db.SQL().BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		for k := 0; k < 100 && done < n; k++ {
			m := min(batch, n-done)
			var sb strings.Builder
			args := make([]any, 0, m*4)
			sb.WriteString(`INSERT INTO jobs (` + cols + `) VALUES `)
			for i := range m {
				g := start + done + i
				if i > 0 {
					sb.WriteString(",")
				}
				sb.WriteString(`(?, ?, 'hist', ?, '` + model + `', 'photo', '', '{}', 'COMPLETED', 'succeeded', 11, 11, 11, ?, ?, ?)`)
				at := old + int64(g)*1000
				r := historyRequestID(at, g)
				args = append(args, fmt.Sprintf("acct_bench_%02d", g%accounts), "photo_k"+r, r, at, at, at+500)
			}
			if _, err := tx.ExecContext(ctx, sb.String(), args...); err != nil {
				_ = tx.Rollback()
				return err
			}
			done += m
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	if err := e.addHistoryRecords(ctx, old+int64(start)*1000, old+int64(start+n)*1000); err != nil {
		return err
	}
	// No ANALYZE: the service never runs one on SQLite, so its plans at this history are those
	// measured. The bulk load's WAL is copied into the database file before the measurement,
	// so the figure is the cost of a job at that history, not of a checkpoint of a million
	// rows running beside it.
	_, err := e.db.SQL().ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`)
	return err
}

// addHistoryRecords gives the history jobs created in [from, to) their events, as settled jobs
// leave them (delivered already), and the accounts as many more ledger entries: grants of one
// credit through the ledger (the only writer of entries), 32 at a time, round the accounts.
func (e *engine) addHistoryRecords(ctx context.Context, from, to int64) error {
	n, err := e.addHistoryEvents(ctx, from, to)
	if err != nil {
		return fmt.Errorf("history events: %w", err)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < n; i = next.Add(1) - 1 {
				if _, err := e.db.Grant(ctx, fmt.Sprintf("acct_bench_%02d", i%accounts), 1, time.Now()); err != nil {
					errs <- fmt.Errorf("history ledger entries: %w", err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// addHistoryEvents writes the events of the history jobs created in [from, to), delivered
// already: in one transaction, the events and their removal from the queue of events to fan
// out, which the database's trigger filled as they were written.
func (e *engine) addHistoryEvents(ctx context.Context, from, to int64) (int64, error) {
	tx, err := e.db.SQL().BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer tx.Rollback()
	res, err := tx.ExecContext(ctx, `INSERT INTO events (account_id, id, job_id, request_id, type, product, status, charged, reserved, created_at)
 SELECT account_id, 'evt_' || request_id, id, request_id, 'job.succeeded', product, 'succeeded', charged, reserved, finished_at
 FROM jobs WHERE key_id = 'hist' AND created_at >= $1 AND created_at < $2`, from, to)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM events_pending WHERE job_id IN (SELECT id FROM jobs
 WHERE key_id = 'hist' AND created_at >= $1 AND created_at < $2)`, from, to); err != nil {
		return 0, err
	}
	return n, tx.Commit()
}

// checkBooks says whether every account's balance equals the sum of its ledger entries.
func (e *engine) checkBooks() error {
	ctx := context.Background()
	for i := range accounts {
		id := fmt.Sprintf("acct_bench_%02d", i)
		sum, err := e.db.LedgerSum(ctx, id)
		if err != nil {
			return err
		}
		a, err := e.db.Account(ctx, id)
		if err != nil {
			return err
		}
		if a.Balance != sum {
			return fmt.Errorf("%s: balance %d != ledger %d", id, a.Balance, sum)
		}
	}
	return nil
}

// measure is one load's figures.
type measure struct {
	n, errors  int
	perSec     float64
	p50, p99   time.Duration
	stmts, txs float64
	commits    float64 // COMMITs per job: below tx/job when group commit carries several
	// cpu is this process's CPU time (user and system; the load's clients too with -load
	// in-process) per good request: a figure that holds on a machine shared with other work,
	// where rates do not.
	cpu time.Duration
	// host is the whole machine's busy CPU time (every process, the database server's
	// included; steal and I/O wait not counted) per good request; 0 where /proc/stat is not.
	host time.Duration
	// allocBytes and allocObjects are what this process's heap allocated per good request
	// (the load's clients too with -load in-process): the garbage the collector's share of cpu
	// grows with.
	allocBytes, allocObjects float64
	statusURL                string
	statusAuth               string // the Authorization of the request that made statusURL
}

// measured runs spec (runLoad) and adds what this process and the machine spent on it: CPU
// time per good request.
func measured(client *http.Client, spec loadSpec) measure {
	cpu0, host0, bytes0, objects0 := cpuTime(), hostBusy(), heapAllocs("bytes"), heapAllocs("objects")
	r, err := runLoad(client, spec)
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
	m := measure{n: r.N, errors: r.Errors, perSec: r.PerSec, p50: r.P50, p99: r.P99, statusURL: r.StatusURL, statusAuth: r.Auth}
	if m.n > 0 {
		m.cpu = (cpuTime() - cpu0) / time.Duration(m.n)
		m.allocBytes = float64(heapAllocs("bytes")-bytes0) / float64(m.n)
		m.allocObjects = float64(heapAllocs("objects")-objects0) / float64(m.n)
		if host0 > 0 {
			m.host = (hostBusy() - host0) / time.Duration(m.n)
		}
	}
	return m
}

// allocs is the heap allocated per good request, bytes and objects.
func (m measure) allocs() string {
	return fmt.Sprintf("%.1fK/%.0f", m.allocBytes/1024, m.allocObjects)
}

// heapAllocs is the heap this process has allocated so far, in bytes or objects (runtime/metrics'
// /gc/heap/allocs), read without stopping the world.
func heapAllocs(unit string) uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:" + unit}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// cpuTime is the CPU time this process has used so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// hostBusy is the machine's busy CPU time so far, all cores together: /proc/stat's user, nice,
// system, irq and softirq (USER_HZ, 100 a second on Linux); 0 where it cannot be read.
func hostBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 8 || f[0] != "cpu" {
		return 0
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7} {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0
		}
		ticks += n
	}
	return time.Duration(ticks) * 10 * time.Millisecond
}

func pct(lat []time.Duration, p int) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	s := slices.Clone(lat)
	slices.Sort(s)
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[i]
}

// writeAllocs writes the allocations profiled so far to path.
func writeAllocs(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
