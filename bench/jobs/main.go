// Command jobs is the job engine's load generator (issue 4 item 10): on this machine, with a
// no-op runner, it measures submit→COMPLETED jobs per second with p50/p99 latency (queue host,
// ?wait), status reads per second, for SQLite and PostgreSQL, and a bare net/http JSON handler
// as the ceiling. The service is wired as cmd/modelexec serve build() wires it, without rate
// limits (the benchmark measures the engine, not the plan's pace).
//
//	go run ./bench/jobs [-jobs 2000] [-c 16] [-reads 3s] [-postgres postgres://...]
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
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/jobview"
	"github.com/modelexec/modelexec/internal/queueapi"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

type nopRunner struct{}

func (nopRunner) Run(context.Context, runners.Job, runners.Env) (runners.Result, error) {
	return runners.Result{Document: map[string]any{"ok": true}, Done: 1}, nil
}

type nopSigner struct{}

func (nopSigner) SignGet(_ context.Context, key string) (string, time.Time, error) {
	return "https://files.invalid/" + key, time.Now().Add(15 * time.Minute), nil
}

type result struct {
	name               string
	jobsPerSec         float64
	p50, p99           time.Duration
	readsPerSec        float64
	submitted, errored int
	stmts, txs         float64 // SQL statements and transactions per job, submit to settled, HTTP included
}

func main() {
	n := flag.Int("jobs", 2000, "jobs to submit per backend")
	c := flag.Int("c", 16, "concurrent clients")
	reads := flag.Duration("reads", 3*time.Second, "how long to measure status reads")
	pg := flag.String("postgres", envOr("MODELEXEC_TEST_POSTGRES", "postgres://postgres@127.0.0.1:5432/test?sslmode=disable"), "PostgreSQL URL (empty: skip)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file")
	flag.Parse()
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: *c * 2, MaxIdleConnsPerHost: *c * 2}}

	var out []result
	ceiling := bare(client, *c, *reads)
	out = append(out, ceiling)
	for _, backend := range []string{"sqlite", "postgres"} {
		if backend == "postgres" && *pg == "" {
			continue
		}
		r, err := engine(backend, *pg, client, *n, *c, *reads)
		if err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", backend, err)
			continue
		}
		out = append(out, r)
	}
	fmt.Printf("\njobs benchmark: %d jobs, %d clients, reads for %s (no-op runner, no rate limits)\n", *n, *c, *reads)
	fmt.Printf("%-22s %12s %10s %10s %14s %10s %10s\n", "target", "jobs/s", "p50", "p99", "reads/s", "jobs/ceil", "reads/ceil")
	for _, r := range out {
		jr, rr := "", ""
		if r.name != ceiling.name {
			jr = fmt.Sprintf("%.3f", r.jobsPerSec/ceiling.jobsPerSec)
			rr = fmt.Sprintf("%.3f", r.readsPerSec/ceiling.readsPerSec)
		}
		fmt.Printf("%-22s %12.0f %10s %10s %14.0f %10s %10s", r.name, r.jobsPerSec, r.p50.Round(10*time.Microsecond), r.p99.Round(10*time.Microsecond), r.readsPerSec, jr, rr)
		if r.errored > 0 {
			fmt.Printf("  (%d errors)", r.errored)
		}
		if r.stmts > 0 {
			fmt.Printf("  %.1f SQL statements, %.2f transactions per job", r.stmts, r.txs)
		}
		fmt.Println()
	}
}

func envOr(k, d string) string {
	if v, ok := os.LookupEnv(k); ok {
		return v
	}
	return d
}

// bare is the ceiling: a net/http handler answering a small JSON document, measured with the
// same client and concurrency (its "jobs" are POSTs, its reads GETs).
func bare(client *http.Client, c int, reads time.Duration) result {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "COMPLETED", "request_id": "00000000-0000-4000-8000-000000000000"})
	}))
	defer srv.Close()
	res := result{name: "net/http JSON (ceiling)"}
	lat, errs, elapsed := load(client, c, 5000, func(i int) (*http.Request, error) {
		return http.NewRequest(http.MethodPost, srv.URL+"/svc-serverless/image-4b", strings.NewReader(`{"positivePrompt":"bench"}`))
	}, func(*http.Response, []byte) bool { return true })
	res.jobsPerSec, res.p50, res.p99, res.errored = float64(len(lat))/elapsed.Seconds(), pct(lat, 50), pct(lat, 99), errs
	res.readsPerSec = readLoad(client, c, reads, srv.URL+"/status", "")
	return res
}

func engine(backend, pgURL string, client *http.Client, n, c int, reads time.Duration) (result, error) {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "bench-jobs-")
	if err != nil {
		return result{}, err
	}
	defer os.RemoveAll(dir)
	dsn := filepath.Join(dir, "bench.db")
	if backend == "postgres" {
		var b [6]byte
		_, _ = rand.Read(b[:])
		schema := "bench_" + hex.EncodeToString(b[:])
		admin, err := sql.Open("pgx", pgURL)
		if err != nil {
			return result{}, err
		}
		defer admin.Close()
		if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
			return result{}, err
		}
		defer admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`) //nolint:errcheck
		u, err := url.Parse(pgURL)
		if err != nil {
			return result{}, err
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		dsn = u.String()
	}
	db, err := sqlstore.Open(ctx, dsn)
	if err != nil {
		return result{}, err
	}
	defer db.Close()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	now := func() time.Time { return time.Now().UTC() }
	var handler http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { handler.ServeHTTP(w, r) }))
	defer srv.Close()
	cat, err := catalog.Default(catalog.WithHosts(catalog.Hosts{Queue: srv.URL, Sync: srv.URL}))
	if err != nil {
		return result{}, err
	}
	reg := runners.Registry{}
	for _, m := range cat.Models() {
		reg[m.Slug] = nopRunner{}
	}
	cfg := jobs.DefaultConfig()
	cfg.ModelConcurrency = 4 * c
	cfg.InFlight = map[auth.Plan]int{auth.Pro: 1 << 30}
	env := func(j jobs.Job, rep runners.Reporter) runners.Env { return runners.Env{Report: rep} }
	js := jobs.New(sqlstore.Jobs{DB: db}, cat, reg, env, jobs.NewSeats(4*c, 4*c, 4*c), now, log, cfg)
	secret := "bench-secret"
	as := auth.NewService(db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher(secret), now, log)
	gate := &httpapi.Gate{Auth: as, Switches: &httpapi.Switches{}, Now: now, Log: log}
	handler = (&queueapi.Handler{Gate: gate, Jobs: js, URLs: jobview.URLs{Queue: srv.URL}, Signer: nopSigner{}, Now: now, Log: log}).Routes()
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() { _ = js.Run(rctx) }()

	acct := auth.Account{ID: "acct_bench", Plan: auth.Pro, Status: auth.Live, MonthlyAllowance: 0, CreatedAt: now().Add(-30 * 24 * time.Hour)}
	if err := db.CreateAccount(ctx, acct); err != nil {
		return result{}, err
	}
	if _, err := db.Grant(ctx, acct.ID, 1<<40, now()); err != nil {
		return result{}, err
	}
	m, err := as.Mint(ctx, auth.MintParams{AccountID: acct.ID})
	if err != nil {
		return result{}, err
	}
	key := m.Key
	var statusURL atomic.Value
	s0, t0 := db.Stats()
	lat, errs, elapsed := load(client, c, n, func(i int) (*http.Request, error) {
		req, err := http.NewRequest(http.MethodPost, srv.URL+"/svc-serverless/image-4b?wait=60", strings.NewReader(`{"positivePrompt":"bench"}`))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		return req, nil
	}, func(res *http.Response, body []byte) bool {
		var doc struct {
			Status    string `json:"status"`
			StatusURL string `json:"status_url"`
		}
		if res.StatusCode != 200 || json.Unmarshal(body, &doc) != nil || doc.Status != "COMPLETED" {
			if os.Getenv("BENCH_VERBOSE") != "" {
				fmt.Fprintf(os.Stderr, "%d %s\n", res.StatusCode, body)
			}
			return false
		}
		statusURL.Store(doc.StatusURL)
		return true
	})
	s1, t1 := db.Stats()
	r := result{name: "jobs " + backend, submitted: n, errored: errs}
	if len(lat) > 0 {
		r.stmts, r.txs = float64(s1-s0)/float64(len(lat)), float64(t1-t0)/float64(len(lat))
	}
	r.jobsPerSec, r.p50, r.p99 = float64(len(lat))/elapsed.Seconds(), pct(lat, 50), pct(lat, 99)
	su, _ := statusURL.Load().(string)
	if su == "" {
		return r, fmt.Errorf("no job completed (%d errors)", errs)
	}
	r.readsPerSec = readLoad(client, c, reads, su, key)
	if sum, err := db.LedgerSum(ctx, acct.ID); err == nil {
		a, _ := db.Account(ctx, acct.ID)
		if a.Balance != sum {
			fmt.Fprintf(os.Stderr, "%s: balance %d != ledger %d\n", backend, a.Balance, sum)
		}
	}
	return r, nil
}

// load sends n requests from c clients and returns the latencies of the good ones.
func load(client *http.Client, c, n int, mk func(i int) (*http.Request, error), good func(*http.Response, []byte) bool) ([]time.Duration, int, time.Duration) {
	var next atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	errs := 0
	var wg sync.WaitGroup
	start := time.Now()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			bad := 0
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					break
				}
				req, err := mk(i)
				if err != nil {
					bad++
					continue
				}
				t0 := time.Now()
				res, err := client.Do(req)
				if err != nil {
					bad++
					continue
				}
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				if good(res, body) {
					mine = append(mine, time.Since(t0))
				} else {
					bad++
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			errs += bad
			mu.Unlock()
		}()
	}
	wg.Wait()
	return lat, errs, time.Since(start)
}

// readLoad GETs u from c clients for d and returns reads per second (2xx only).
func readLoad(client *http.Client, c int, d time.Duration, u, key string) float64 {
	var ok atomic.Int64
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	start := time.Now()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				req, _ := http.NewRequest(http.MethodGet, u, nil)
				if key != "" {
					req.Header.Set("Authorization", "Bearer "+key)
				}
				res, err := client.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, res.Body)
				res.Body.Close()
				if res.StatusCode < 300 {
					ok.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	return float64(ok.Load()) / time.Since(start).Seconds()
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
