// Command compat benchmarks /compat/v1/chat/completions (issue 11 "Done when"): the gateway
// with its key check, ledger entries (quote charged, settled to the tokens used) and rate
// limits on, against a mock OpenAI upstream on loopback, at concurrency 1 and 32 (-c), next
// to the same upstream called directly in the same run. It reports throughput, the p50
// latency the gateway adds and this process's CPU time per request (the load's clients and
// the upstream included, on both sides: what the gateway costs is the difference), which a
// shared machine disturbs less than it does the rates. It is a benchmark, not a test:
// nothing here decides a pass.
//
// On PostgreSQL an unmeasured load and an ANALYZE come first (-warm-up), as autovacuum keeps a
// running service: plans made on the benchmark's seconds-old, empty tables are not those of a
// service.
//
// The plan's interactive bucket and the per-instance fuse are raised so the limiter admits
// the load while still running on every request (the point is its cost, not its pace).
//
//	go run ./bench/compat [-n 4000] [-c 1,32] [-postgres postgres://...] [-cpuprofile FILE]
package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
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
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/chat"
	"github.com/modelexec/modelexec/internal/compatapi"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/ratelimit"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/runners/openai"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

const body = `{"model":"qwen","messages":[{"role":"user","content":"Say hello in five words."}],"max_tokens":64}`

// upstream is a mock OpenAI server: a fixed answer, streamed (as the runner asks) or whole.
func upstream() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if strings.Contains(string(b), `"stream":true`) {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, "data: {\"choices\":[{\"delta\":{\"content\":\"Hello there, nice to meet.\"}}]}\n\n"+
				"data: {\"choices\":[{\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n"+
				"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":14,\"completion_tokens\":7}}\n\ndata: [DONE]\n\n")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","created":0,"model":"qwen","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there, nice to meet."},"finish_reason":"stop"}],"usage":{"prompt_tokens":14,"completion_tokens":7,"total_tokens":21}}`)
	})
}

func serve(h http.Handler) (string, func()) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	s := &http.Server{Handler: h}
	go func() { _ = s.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = s.Close() }
}

func main() {
	n := flag.Int("n", 4000, "requests per run")
	pg := flag.String("postgres", "", "PostgreSQL URL; the benchmark works in a schema of its own, dropped at exit (default: SQLite in a temp dir)")
	prof := flag.String("cpuprofile", "", "write a CPU profile of the whole run")
	cs := flag.String("c", "1,32", "concurrencies to measure, comma-separated")
	warm := flag.Bool("warm-up", true, "PostgreSQL: run an unmeasured load and ANALYZE before the first point")
	flag.Parse()
	var conc []int
	for _, f := range strings.Split(*cs, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 1 {
			fmt.Fprintf(os.Stderr, "-c %q: want positive integers\n", *cs)
			os.Exit(2)
		}
		conc = append(conc, c)
	}
	if *prof != "" {
		f, err := os.Create(*prof)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		_ = pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if err := run(*n, conc, *pg, *warm); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

func run(n int, conc []int, pg string, warm bool) error {
	ctx := context.Background()
	upURL, stopUp := serve(upstream())
	defer stopUp()

	dir, err := os.MkdirTemp("", "compat-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	dsn := filepath.Join(dir, "bench.db")
	if pg != "" {
		// A throwaway schema: the benchmark never touches the database's own tables.
		var b [6]byte
		_, _ = rand.Read(b[:])
		schema := "bench_" + hex.EncodeToString(b[:])
		admin, err := sql.Open("pgx", pg)
		if err != nil {
			return err
		}
		defer admin.Close()
		if _, err := admin.Exec(`CREATE SCHEMA ` + schema); err != nil {
			return err
		}
		defer admin.Exec(`DROP SCHEMA ` + schema + ` CASCADE`) //nolint:errcheck
		u, err := url.Parse(pg)
		if err != nil {
			return err
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		dsn = u.String()
	}
	db, err := store.Open(ctx, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	now := func() time.Time { return time.Now().UTC() }
	cat, err := catalog.Default()
	if err != nil {
		return err
	}
	model, _ := cat.LanguageModel("qwen")
	up, err := openai.New(openai.Config{BaseURL: upURL + "/v1", Model: "mock", Kind: catalog.KindChat})
	if err != nil {
		return err
	}
	hub := chat.NewHub()
	langs := runners.Registry{"qwen": chat.Meter{Model: model, Inner: up, Hub: hub}}
	cfg := jobs.DefaultConfig()
	cfg.SubmitBatch, cfg.SettleBatch = server.Batchers(db.Dialect()) // as serve runs them
	cfg.ModelConcurrency = 256
	cfg.InFlight = map[auth.Plan]int{auth.Pro: 1 << 30}
	env := func(j jobs.Job, rep runners.Reporter) runners.Env { return runners.Env{Report: rep} }
	js := jobs.New(jobs.Deps{Store: sqlstore.Jobs{DB: db}, Ledger: ledger.New(db, now), Catalog: cat, Runners: langs, Env: env,
		Seats: jobs.NewSeats(64, 64, 64), Now: now, Log: log}, cfg)
	// The engine runs as the service runs it: its submit batcher, sweeps and heartbeats.
	runCtx, stopRun := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- js.Run(runCtx) }()
	defer func() { stopRun(); <-ran }()
	as := auth.NewService(db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher("bench-secret"), now, log)

	// Rate limits on, with room for the load: the pro plan's interactive bucket and the fuse raised.
	ratelimit.Plans[string(auth.Pro)][ratelimit.Interactive] = ratelimit.Rate{Burst: 1 << 20, Refill: 1_000_000_000, Period: time.Minute}
	fuse := map[ratelimit.Bucket]int{}
	for _, b := range ratelimit.Buckets {
		fuse[b] = 1 << 30
	}
	adm := ratelimit.NewAdmission(ratelimit.NewMemory(ratelimit.MemoryOptions{Clock: now}), ratelimit.AdmissionOptions{FuseLimits: fuse})
	gate := &httpapi.Gate{Auth: as, Pacer: httpapi.Admission{Adm: adm, Now: now}, Switches: &httpapi.Switches{}, Now: now, Log: log}
	svc := &chat.Service{Jobs: js, Catalog: cat, Runners: langs, Hub: hub, Now: now}
	gwURL, stopGw := serve(httpapi.Wrap(httpapi.AccountSurface, log, (&compatapi.Handler{Gate: gate, Chat: svc, Now: now, Log: log}).Routes()))
	defer stopGw()

	acct := auth.Account{ID: "acct_bench", Plan: auth.Pro, Status: auth.Live, CreatedAt: now().Add(-30 * 24 * time.Hour)}
	if err := db.CreateAccount(ctx, acct); err != nil {
		return err
	}
	if _, err := db.Grant(ctx, acct.ID, ledger.MaxGrant, now()); err != nil {
		return err
	}
	m, err := as.Mint(ctx, auth.MintParams{AccountID: acct.ID})
	if err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256, MaxConnsPerHost: 256}}

	backend := "sqlite"
	if pg != "" {
		backend = "postgres"
	}
	compat := gwURL + "/compat/v1/chat/completions"
	if pg != "" && warm {
		load(client, 32, n, compat, m.Key)
		if _, err := db.SQL().ExecContext(ctx, `ANALYZE`); err != nil {
			return err
		}
	}
	fmt.Printf("compat bench: %d requests per run, store %s, GOMAXPROCS %d, upstream and gateway on loopback\n\n", n, backend, runtime.GOMAXPROCS(0))
	fmt.Printf("%-4s %-10s %10s %10s %10s %10s %8s\n", "c", "target", "req/s", "p50", "p99", "cpu/req", "errors")
	for _, c := range conc {
		direct := load(client, c, n, upURL+"/v1/chat/completions", "")
		s0, t0 := db.Stats()
		c0 := db.Commits()
		gw := load(client, c, n, compat, m.Key)
		s1, t1 := db.Stats()
		c1 := db.Commits()
		for _, r := range []stats{direct, gw} {
			fmt.Printf("%-4d %-10s %10.0f %10s %10s %10s %8d\n", c, r.name, r.rps, r.p50.Round(time.Microsecond), r.p99.Round(time.Microsecond), r.cpu.Round(time.Microsecond), r.errs)
		}
		fmt.Printf("c=%d: the gateway adds %s at p50 and %s of CPU a request (%.3f of the direct throughput)\n", c,
			(gw.p50 - direct.p50).Round(time.Microsecond), (gw.cpu - direct.cpu).Round(time.Microsecond), gw.rps/direct.rps)
		// Warm-up requests are counted too: a few in thousands.
		per := func(a, b int64) float64 { return float64(b-a) / float64(max(n, 1)) }
		fmt.Printf("c=%d: %.1f statements, %.2f transactions and %.2f COMMITs a request\n\n", c, per(s0, s1), per(t0, t1), per(c0, c1))
	}
	var charged, jobsN int64
	if err := db.SQL().QueryRow(`SELECT COALESCE(SUM(charged), 0), COUNT(*) FROM jobs WHERE account_id = $1`, acct.ID).Scan(&charged, &jobsN); err != nil {
		return err
	}
	fmt.Printf("ledger: %d jobs, %d credits charged in all (each settled to 21 tokens, never above its quote)\n", jobsN, charged)
	return nil
}

type stats struct {
	name     string
	rps      float64
	p50, p99 time.Duration
	cpu      time.Duration // this process's CPU time per request
	errs     int
}

// cpuTime is the CPU time this process has used so far, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// load sends n requests from c workers and measures each.
func load(client *http.Client, c, n int, url, key string) stats {
	var next atomic.Int64
	var mu sync.Mutex
	var lat []time.Duration
	var errs atomic.Int64
	var wg sync.WaitGroup
	// Warm the connections so the first requests do not pay for dialling.
	for range min(c, 8) {
		send(client, url, key)
	}
	start, cpu0 := time.Now(), cpuTime()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for int(next.Add(1)) <= n {
				t0 := time.Now()
				if !send(client, url, key) {
					errs.Add(1)
					continue
				}
				mine = append(mine, time.Since(t0))
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	slices.Sort(lat)
	name := "direct"
	if key != "" {
		name = "gateway"
	}
	s := stats{name: name, rps: float64(len(lat)) / elapsed.Seconds(), errs: int(errs.Load())}
	if len(lat) > 0 {
		s.cpu = cpu / time.Duration(len(lat))
		s.p50, s.p99 = lat[len(lat)*50/100], lat[min(len(lat)-1, len(lat)*99/100)]
	}
	return s
}

func send(client *http.Client, url, key string) bool {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := client.Do(req)
	if err != nil {
		return false
	}
	b, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(b), "Hello there") {
		if os.Getenv("BENCH_VERBOSE") != "" {
			fmt.Fprintf(os.Stderr, "%d %s\n", res.StatusCode, b)
		}
		return false
	}
	return true
}
