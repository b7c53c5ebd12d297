package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/plans"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/store/storetest"
)

const secret = "e2e-secret-0123456789abcdef"

// Test catalogue slugs, added to the shipped catalogue.
const (
	mFast      = "t-fast"       // refuses a queue, 10 credits per call-ish unit (quote 11 at defaults)
	mQueue     = "t-queue"      // offers a queue, max wait 600 s
	mQueueFast = "t-queue-fast" // offers a queue, max wait 600 s, expected_seconds 1 (synchronous)
	mStall     = "t-stall"      // stall ceiling 1 s
	mSlow      = "t-slow"       // expected_seconds 120: not synchronous
	mDescribed = "t-described"  // 501 model_not_connected
	mPaused    = "t-paused"     // 503 model_disabled
)

// buildCatalog is the shipped catalogue plus the test models above (copies of image-4b).
func buildCatalog(hosts catalog.Hosts) (*catalog.Catalog, error) {
	var f catalog.File
	if err := json.Unmarshal(catalog.DefaultData(), &f); err != nil {
		return nil, err
	}
	var base catalog.ModelFile
	for _, m := range f.Models {
		if m.Slug == "image-4b" {
			base = m
		}
	}
	add := func(slug string, edit func(m *catalog.ModelFile)) {
		m := base
		m.Slug, m.Label, m.Name = slug, "T"+slug, slug
		m.Price.Bands = append([]catalog.BandFile(nil), base.Price.Bands...)
		m.Price.Bands[0].CreditsPerUnit = "10"
		edit(&m)
		f.Models = append(f.Models, m)
	}
	add(mFast, func(m *catalog.ModelFile) { m.ExpectedSeconds = 1 })
	add(mQueue, func(m *catalog.ModelFile) { m.Lifecycle.Queue, m.Lifecycle.MaxWaitSeconds = catalog.QueueOffers, 600 })
	add(mQueueFast, func(m *catalog.ModelFile) {
		m.ExpectedSeconds, m.Lifecycle.Queue, m.Lifecycle.MaxWaitSeconds = 1, catalog.QueueOffers, 600
	})
	add(mStall, func(m *catalog.ModelFile) { m.Lifecycle.StallCeilingSeconds = 1 })
	add(mSlow, func(m *catalog.ModelFile) { m.ExpectedSeconds = 120 })
	add(mDescribed, func(m *catalog.ModelFile) { m.State = catalog.Described })
	add(mPaused, func(m *catalog.ModelFile) { m.State = catalog.Paused })
	return catalog.New(f, catalog.WithHosts(hosts))
}

// clock is the service's clock: real time plus an offset a test may advance (no sleeping for
// request timeouts).
type clock struct {
	mu  sync.Mutex
	off time.Duration
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().UTC().Add(c.off)
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.off += d
	c.mu.Unlock()
}

// ctlRunner behaves by the prompt it is handed: "ok" finishes at once, "block" waits until the
// test releases it (or its context ends, reporting half the work done), "refuse" refuses the
// request as written, "fail" fails.
type ctlRunner struct {
	mu      sync.Mutex
	release chan struct{}
	started chan string // request ids as they start
}

func newCtlRunner() *ctlRunner {
	return &ctlRunner{release: make(chan struct{}), started: make(chan string, 1000)}
}

// Release lets every blocked run (and every later one) finish.
func (r *ctlRunner) Release() {
	r.mu.Lock()
	defer r.mu.Unlock()
	select {
	case <-r.release:
	default:
		close(r.release)
	}
}

func (r *ctlRunner) Run(ctx context.Context, j runners.Job, env runners.Env) (runners.Result, error) {
	var in struct {
		Prompt string `json:"positivePrompt"`
	}
	_ = json.Unmarshal(j.Input, &in)
	r.started <- j.RequestID
	env.Report.Log("info", "running "+in.Prompt)
	doc := map[string]any{"images": []any{map[string]any{"width": 1024, "height": 1024}}, "prompt": in.Prompt}
	switch {
	case strings.HasPrefix(in.Prompt, "hold"): // runs until stopped, whatever Release says
		<-ctx.Done()
		return runners.Result{Done: 0.5}, ctx.Err()
	case strings.HasPrefix(in.Prompt, "stubborn"): // completes just as it is asked to stop
		<-ctx.Done()
		return runners.Result{Document: doc, Done: 1}, nil
	case strings.HasPrefix(in.Prompt, "bare-refuse"): // a refusal with no detail
		return runners.Result{}, &runners.Refusal{Code: "image_unreadable"}
	case strings.HasPrefix(in.Prompt, "chatty"): // a log line, then two more once released
		env.Report.Log("info", "step 1")
		if err := r.halfway(ctx, env); err != nil {
			return runners.Result{Done: 0.5}, err
		}
		env.Report.Log("info", "step 2")
		env.Report.Log("info", "step 3")
	case strings.HasPrefix(in.Prompt, "block"):
		if err := r.halfway(ctx, env); err != nil {
			return runners.Result{Done: 0.5}, err
		}
	case strings.HasPrefix(in.Prompt, "refuse"):
		return runners.Result{}, &runners.Refusal{Code: "content_policy", Detail: []runners.Violation{{Loc: []string{"body", "positivePrompt"}, Msg: "the model refused this prompt", Type: "content_policy"}}}
	case strings.HasPrefix(in.Prompt, "fail"):
		return runners.Result{}, &runners.Failure{Code: "run_failed", Message: "boom"}
	}
	return runners.Result{Document: doc, Done: 1}, nil
}

// halfway reports half the work done and waits for Release, or for the run to be stopped.
func (r *ctlRunner) halfway(ctx context.Context, env runners.Env) error {
	env.Report.Progress(0.5)
	r.mu.Lock()
	rel := r.release
	r.mu.Unlock()
	select {
	case <-rel:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// harness is the whole service over HTTP.
type harness struct {
	t       testing.TB
	db      *sqlstore.DB
	clock   *clock
	auth    *auth.Service
	jobs    *jobs.Service
	cat     *catalog.Catalog
	runner  *ctlRunner
	queue   *httptest.Server
	sync    *httptest.Server
	account string
	key     string
	wrap    func(runners.Runner) runners.Runner
	// stopWorker stops the jobs service's background work as a process shutting down does;
	// the HTTP surfaces keep answering.
	stopWorker func()
	// beginStop ends the jobs service's Run and returns once it stopped taking work, without
	// waiting for Run to return (a hook inside a submit's transaction calls it).
	beginStop func()
}

type options struct {
	cfg         func(*jobs.Config)
	seats       *plans.Seats
	waitCeiling time.Duration
	plan        auth.Plan
	balance     int64
	store       func(jobs.Store) jobs.Store // wraps the jobs store (fault injection)
	streamLimit time.Duration               // the queue host's status stream limit (five minutes when 0)
	redis       string                      // --redis: seats shared through it

	// runner wraps the control runner on every model (a runner that cannot cancel, or fails
	// with a given code).
	runner func(runners.Runner) runners.Runner
}

func quietLog() *slog.Logger {
	if os.Getenv("E2E_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// newHarness builds the service with server.New, as `modelexec serve` does, serves its queue
// and synchronous hosts over httptest servers, with the test catalogue, the control runner on
// every model, and no rate limits.
func newHarness(t *testing.T, db *sqlstore.DB, o options) *harness {
	t.Helper()
	if o.plan == "" {
		o.plan = auth.Pro
	}
	if o.balance == 0 {
		o.balance = 1000
	}
	h := &harness{t: t, db: db, clock: &clock{}, runner: newCtlRunner(), wrap: o.runner}
	// The servers' URLs go into the catalogue before the handlers exist: an indirection.
	var queueH, syncH http.Handler
	h.queue = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { queueH.ServeHTTP(w, r) }))
	h.sync = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { syncH.ServeHTTP(w, r) }))
	t.Cleanup(h.sync.Close)
	t.Cleanup(h.queue.Close)
	h.auth = auth.NewService(db, auth.Format{Prefix: "svc_sk_"}, auth.NewHasher(secret), h.clock.Now, quietLog())
	p := plans.Default()
	if o.seats != nil {
		p.Seats = *o.seats
	}
	srv := h.newServer(server.Config{Roles: server.Every(), WaitCeiling: o.waitCeiling, StreamLimit: o.streamLimit,
		PublicURLQueue: h.queue.URL, PublicURLSync: h.sync.URL, Redis: o.redis}, p, o.cfg, o.store)
	h.jobs, h.cat = srv.Jobs(), srv.Catalog()
	queueH, syncH = srv.Handler(server.RoleQueue), srv.Handler(server.RoleSync)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = h.jobs.Run(ctx) }()
	h.stopWorker = func() { cancel(); <-done }
	h.beginStop = func() {
		cancel()
		for !h.jobs.Stopping() {
			runtime.Gosched() // Run is marking the engine stopped; no outcome depends on time
		}
	}
	t.Cleanup(func() { h.runner.Release(); cancel(); <-done; h.jobs.Drain() })
	h.account, h.key = h.newAccount("acct_e2e", o.plan, o.balance, nil)
	return h
}

// newServer is server.New over the harness's database, clock, catalogue and control runner,
// without rate limits, with an in-memory bucket (one per process: the harness's own, or
// another process over the same database).
func (h *harness) newServer(cfg server.Config, p *plans.Plans, edit func(*jobs.Config), store func(jobs.Store) jobs.Store) *server.Server {
	h.t.Helper()
	cfg.Secret, cfg.NoRateLimits = secret, true
	if cfg.PublicURLAPI == "" {
		cfg.PublicURLAPI = "http://api.e2e.invalid"
	}
	bucket := blobs.NewMemory()
	h.t.Cleanup(func() { _ = bucket.Close() })
	srv, err := server.New(context.Background(), cfg, server.Deps{DB: h.db, Auth: h.auth, Now: h.clock.Now, Log: quietLog(),
		Catalogue: buildCatalog, Plans: p, Bucket: bucket, Jobs: edit, JobStore: store,
		Runners: func(cat *catalog.Catalog) runners.Registry {
			reg := runners.Registry{}
			for _, m := range cat.Models() {
				reg[m.Slug] = h.runner
				if h.wrap != nil {
					reg[m.Slug] = h.wrap(h.runner)
				}
			}
			return reg
		}})
	if err != nil {
		h.t.Fatal(err)
	}
	return srv
}

// newJobs is another process's jobs engine over the same database (a second server.New).
func (h *harness) newJobs(store jobs.Store, cfg jobs.Config) *jobs.Service {
	h.t.Helper()
	return h.newServer(server.Config{Roles: server.Every(), PublicURLQueue: h.queue.URL, PublicURLSync: h.sync.URL}, nil,
		func(c *jobs.Config) { *c = cfg }, func(jobs.Store) jobs.Store { return store }).Jobs()
}

// newAccount creates an account with credits granted through the ledger and mints a key.
func (h *harness) newAccount(id string, plan auth.Plan, balance int64, ceiling *auth.CeilingRequest) (string, string) {
	h.t.Helper()
	storetest.NewAccount(h.t, h.db, id, plan, 0)
	if _, err := h.db.Grant(context.Background(), id, balance, h.clock.Now()); err != nil {
		h.t.Fatal(err)
	}
	m, err := h.auth.Mint(context.Background(), auth.MintParams{AccountID: id, Ceiling: ceiling})
	if err != nil {
		h.t.Fatal(err)
	}
	return id, m.Key
}

// resp is one HTTP answer.
type resp struct {
	Code   int
	Header http.Header
	Body   map[string]any
	Raw    string
}

func (r resp) str(k string) string { s, _ := r.Body[k].(string); return s }
func (r resp) num(k string) int64  { f, _ := r.Body[k].(float64); return int64(f) }

// call sends one request with the harness key (unless headers set Authorization).
func (h *harness) call(method, url, body string, hdr ...string) resp {
	h.t.Helper()
	return h.callKey(h.key, method, url, body, hdr...)
}

func (h *harness) callKey(key, method, url, body string, hdr ...string) resp {
	h.t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		h.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	given := map[string]bool{}
	for i := 0; i+1 < len(hdr); i += 2 {
		if given[hdr[i]] {
			req.Header.Add(hdr[i], hdr[i+1]) // a header named twice is sent on two lines
			continue
		}
		given[hdr[i]] = true
		req.Header.Set(hdr[i], hdr[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	out := resp{Code: res.StatusCode, Header: res.Header, Raw: string(raw)}
	_ = json.Unmarshal(raw, &out.Body)
	return out
}

func (h *harness) submit(slug, query, body string, hdr ...string) resp {
	h.t.Helper()
	u := h.queue.URL + "/svc-serverless/" + slug
	if query != "" {
		u += "?" + query
	}
	return h.call(http.MethodPost, u, body, hdr...)
}

func (h *harness) status(r resp, logs bool) resp {
	h.t.Helper()
	u := r.str("status_url")
	if logs {
		u += "?logs=1"
	}
	return h.call(http.MethodGet, u, "")
}

func (h *harness) balanceOf(account string) int64 {
	h.t.Helper()
	a, err := h.db.Account(context.Background(), account)
	if err != nil {
		h.t.Fatal(err)
	}
	return a.Balance
}

func (h *harness) balance() int64 { return h.balanceOf(h.account) }

// waitSettled polls the store until the request settles (no sleeping on a timer the service
// owns: the runner's own pace decides).
func (h *harness) waitSettled(requestID string) jobs.Job {
	h.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		j, err := sqlstore.Jobs{DB: h.db}.JobByRequest(context.Background(), requestID)
		if err == nil && j.Settled() {
			return j
		}
		time.Sleep(10 * time.Millisecond)
	}
	h.t.Fatalf("request %s did not settle", requestID)
	return jobs.Job{}
}

// waitStarted waits until the runner has been handed n runs.
func (h *harness) waitStarted(n int) []string {
	h.t.Helper()
	var ids []string
	for len(ids) < n {
		select {
		case id := <-h.runner.started:
			ids = append(ids, id)
		case <-time.After(10 * time.Second):
			h.t.Fatalf("only %d of %d runs started", len(ids), n)
		}
	}
	return ids
}

func (h *harness) job(requestID string) jobs.Job {
	h.t.Helper()
	j, err := sqlstore.Jobs{DB: h.db}.JobByRequest(context.Background(), requestID)
	if err != nil {
		h.t.Fatal(err)
	}
	return j
}

func (h *harness) countJobs() int {
	h.t.Helper()
	var n int
	if err := h.db.SQL().QueryRow(`SELECT count(*) FROM jobs`).Scan(&n); err != nil {
		h.t.Fatal(err)
	}
	return n
}

// checkBooks proves the invariants after a test: every account's balance equals the sum of
// its ledger entries; every settled job has exactly one event and an unsettled one none; each
// job's ledger movements sum to minus what it was charged; no job is charged above its quote.
func (h *harness) checkBooks() {
	h.t.Helper()
	checkBooks(h.t, h.db)
}

func checkBooks(t testing.TB, db *sqlstore.DB) {
	t.Helper()
	h := &harness{t: t, db: db}
	ctx := context.Background()
	rows, err := h.db.SQL().QueryContext(ctx, `SELECT id FROM accounts`)
	if err != nil {
		h.t.Fatal(err)
	}
	var accts []string
	for rows.Next() {
		var id string
		_ = rows.Scan(&id)
		accts = append(accts, id)
	}
	rows.Close()
	for _, a := range accts {
		sum, err := h.db.LedgerSum(ctx, a)
		if err != nil {
			h.t.Fatal(err)
		}
		if bal := h.balanceOf(a); bal != sum {
			h.t.Errorf("account %s: balance %d != sum of ledger entries %d", a, bal, sum)
		}
	}
	rows, err = h.db.SQL().QueryContext(ctx, `SELECT j.id, j.status, j.outcome, j.product, j.quoted, j.charged, j.reserved,
 (SELECT count(*) FROM events e WHERE e.account_id = j.account_id AND e.job_id = j.id),
 (SELECT COALESCE(SUM(l.amount), 0) FROM ledger_entries l WHERE l.account_id = j.account_id AND l.job_id = j.id),
 (SELECT count(*) FROM ledger_entries l WHERE l.account_id = j.account_id AND l.job_id = j.id AND l.kind = 'charge')
 FROM jobs j`)
	if err != nil {
		h.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var id, status, outcome, product string
		var quoted, charged, reserved, events, moved, charges int64
		if err := rows.Scan(&id, &status, &outcome, &product, &quoted, &charged, &reserved, &events, &moved, &charges); err != nil {
			h.t.Fatal(err)
		}
		settled := status == string(jobs.Completed)
		switch {
		case product == catalog.ProductChat && events != 0:
			// A chat turn has no event: the request that paid for it answers it (spec 02 "Events").
			h.t.Errorf("chat turn %s: %d events, want none", id, events)
		case product == catalog.ProductChat:
		case settled && events != 1:
			h.t.Errorf("job %s (%s): %d events, want exactly 1", id, outcome, events)
		case !settled && events != 0:
			h.t.Errorf("job %s (%s): %d events before settling", id, status, events)
		}
		if charges > 1 {
			h.t.Errorf("job %s charged %d times", id, charges)
		}
		if charged > quoted || reserved > quoted {
			h.t.Errorf("job %s: charged %d reserved %d above the quote %d", id, charged, reserved, quoted)
		}
		if settled && moved != -charged {
			h.t.Errorf("job %s (%s): ledger moved %d, want -%d (charged)", id, outcome, moved, charged)
		}
	}
}

// each runs f against a fresh database of each backend with a harness built by o.
func each(t *testing.T, o options, f func(t *testing.T, h *harness)) {
	storetest.Each(t, func(t *testing.T, db *sqlstore.DB) {
		h := newHarness(t, db, o)
		f(t, h)
		h.checkBooks()
	})
}

func prettyBody(v any) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", " ")
	_ = enc.Encode(v)
	return b.String()
}
