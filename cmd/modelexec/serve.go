package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/modelexec/modelexec/internal/accountapi"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/blobs/blobhttp"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/fetch"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/jobview"
	"github.com/modelexec/modelexec/internal/queueapi"
	"github.com/modelexec/modelexec/internal/ratelimit"
	rlredis "github.com/modelexec/modelexec/internal/ratelimit/redis"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/runners/builtin"
	"github.com/modelexec/modelexec/internal/runners/cog"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/syncapi"
)

// ServeCmd runs the service.
type ServeCmd struct {
	StoreFlags
	WebhookFlags
	Dev            bool              `help:"Development mode: create a development account on first start and print a key and a curl line."`
	APIAddr        string            `default:"127.0.0.1:8080" help:"Account API listen address."`
	QueueAddr      string            `default:"127.0.0.1:8081" help:"Queue host listen address."`
	SyncAddr       string            `default:"127.0.0.1:8082" help:"Synchronous host listen address."`
	PublicURLAPI   string            `name:"public-url-api" help:"Public base URL of the account API (default http://<api-addr>)."`
	PublicURLQueue string            `help:"Public base URL of the queue host (default http://<queue-addr>)."`
	PublicURLSync  string            `help:"Public base URL of the synchronous host (default http://<sync-addr>)."`
	Redis          string            `help:"redis:// URL: rate limits shared by every process through Redis (default: in process)."`
	Blobs          string            `help:"Blob storage: a directory (default <data>/blobs) or s3://bucket?endpoint=...&region=..."`
	Roles          string            `default:"api,queue,sync,worker,webhooks" help:"Comma-separated roles this process runs."`
	ShutdownGrace  time.Duration     `default:"20s" help:"How long shutdown waits for in-flight requests."`
	APIDisabled    bool              `help:"Answer every request 503 api_disabled (order of checks step 1)."`
	DisableProduct []string          `help:"Products to pause (api_disabled for their routes), e.g. --disable-product music."`
	Cog            map[string]string `help:"Run a model on a Cog model server instead of the built-in runner: --cog image-4b=http://gpu-1:5000 (repeatable)."`
	Catalogue      string            `help:"Catalogue file replacing the built-in one (start from the output of 'modelexec catalogue')." type:"existingfile"`
	MetricsAddr    string            `help:"Operator listener for Prometheus /metrics and /debug/pprof (e.g. 127.0.0.1:9090); off when empty. Never expose it publicly."`
}

func (c *ServeCmd) roles() map[string]bool {
	m := map[string]bool{}
	for _, r := range strings.Split(c.Roles, ",") {
		m[strings.TrimSpace(r)] = true
	}
	return m
}

func (c *ServeCmd) Run(e *env) error {
	log := c.logger(e.stderr)
	ctx := e.ctx
	if c.Dev {
		if err := checkListenFree(c.listenAddrs()); err != nil {
			return err
		}
	}
	db, err := c.open(ctx)
	if err != nil {
		return err
	}
	defer db.Close()
	svc, err := c.authService(db, c.Dev, log, utcNow)
	if err != nil {
		return err
	}
	if !svc.Configured() {
		log.Warn("no deployment secret: every keyed request answers keys_not_configured; set --secret or MODELEXEC_SECRET")
	}
	app, err := c.build(ctx, db, svc, log)
	if err != nil {
		return err
	}
	if c.Dev {
		if err := c.devBootstrap(ctx, e, db, svc); err != nil {
			return err
		}
	}
	return app.run(ctx, c, log)
}

// app is the wired service.
type app struct {
	servers map[string]*server
	workers []func(ctx context.Context) error
}

type server struct {
	addr    string
	handler http.Handler
}

func (c *ServeCmd) publicURLs() (api, queue, sync string) {
	api, queue, sync = c.PublicURLAPI, c.PublicURLQueue, c.PublicURLSync
	if api == "" {
		api = "http://" + c.APIAddr
	}
	if queue == "" {
		queue = "http://" + c.QueueAddr
	}
	if sync == "" {
		sync = "http://" + c.SyncAddr
	}
	return strings.TrimRight(api, "/"), strings.TrimRight(queue, "/"), strings.TrimRight(sync, "/")
}

func (c *ServeCmd) build(ctx context.Context, db *sqlstore.DB, svc *auth.Service, log *slog.Logger) (*app, error) {
	apiURL, queueURL, syncURL := c.publicURLs()
	secret, err := c.secret(c.Dev)
	if err != nil {
		return nil, err
	}
	cat, err := loadCatalogue(c.Catalogue, catalog.Hosts{Queue: queueURL, Sync: syncURL})
	if err != nil {
		return nil, err
	}
	blobLoc := c.Blobs
	if blobLoc == "" {
		blobLoc = filepath.Join(c.Data, "blobs")
	}
	bucket, err := blobs.OpenBucket(ctx, blobLoc)
	if err != nil {
		return nil, fmt.Errorf("blobs: %w", err)
	}
	signingSecret := []byte(secret)
	if len(signingSecret) == 0 {
		signingSecret = []byte("unconfigured-" + newID("")) // links die with the process
	}
	signer, err := blobs.NewSigner(signingSecret, apiURL+"/files", utcNow)
	if err != nil {
		return nil, err
	}
	fetcher := fetch.New(fetch.Config{}, fetch.WithBlobs(signer, bucket))
	reg := builtin.All(builtin.Options{Now: utcNow})
	cogs, err := c.cogRunners(reg, cat, apiURL)
	if err != nil {
		return nil, err
	}
	env := func(j jobs.Job, rep runners.Reporter) runners.Env {
		return runners.Env{Inputs: fetcher, Outputs: blobs.Outputs{Store: bucket, JobID: j.RequestID}, Report: rep}
	}
	seats := jobs.NewSeats(12, 200, 1000)
	jsvc := jobs.New(sqlstore.Jobs{DB: db}, cat, reg, env, seats, utcNow, log, jobs.DefaultConfig())

	var limiter ratelimit.Limiter = ratelimit.NewMemory(ratelimit.MemoryOptions{Clock: utcNow})
	if c.Redis != "" {
		opt, err := redis.ParseURL(c.Redis)
		if err != nil {
			return nil, fmt.Errorf("--redis: %w", err)
		}
		opt.MaxRetries, opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = -1, time.Second, 500*time.Millisecond, 500*time.Millisecond
		limiter = rlredis.New(redis.NewClient(opt), rlredis.Options{Clock: utcNow})
	}
	adm := ratelimit.NewAdmission(limiter, ratelimit.AdmissionOptions{})
	switches := &httpapi.Switches{}
	switches.APIDisabled.Store(c.APIDisabled)
	paused := map[string]bool{}
	for _, p := range c.DisableProduct {
		paused[p] = true
	}
	switches.DisabledProducts.Store(&paused)
	gate := &httpapi.Gate{Auth: svc, Pacer: httpapi.Admission{Adm: adm, Now: utcNow}, Switches: switches, Now: utcNow, Log: log}
	urls := jobview.URLs{Queue: queueURL}
	acct := &accountapi.Handler{Gate: gate, Auth: svc, Jobs: jsvc, Catalog: cat, URLs: urls, Signer: signer, Files: blobhttp.New(bucket, signer, utcNow),
		Uploads: &blobs.Uploader{Signer: signer}, Usage: db, Ready: []accountapi.Pinger{db}, Now: utcNow, Log: log}
	acct.OpenAPI = accountapi.Document(cat, accountapi.WithServer(apiURL))
	hookWorkers, err := c.wireWebhooks(db, secret, apiURL, acct, log) // before acct.Routes()
	if err != nil {
		return nil, err
	}
	a := &app{servers: map[string]*server{}}
	roles := c.roles()
	if roles["api"] {
		a.servers["api"] = &server{addr: c.APIAddr, handler: withCogHooks(acct.Routes(), cogs)}
	}
	if roles["queue"] {
		q := &queueapi.Handler{Gate: gate, Jobs: jsvc, URLs: urls, Signer: signer, Now: utcNow, Log: log}
		a.servers["queue"] = &server{addr: c.QueueAddr, handler: q.Routes()}
	}
	if roles["sync"] {
		sh := &syncapi.Handler{Gate: gate, Jobs: jsvc, URLs: urls, Signer: signer, WaitCeiling: 60 * time.Second, Log: log}
		a.servers["sync"] = &server{addr: c.SyncAddr, handler: sh.Routes()}
	}
	if roles["worker"] {
		a.workers = append(a.workers, jsvc.Run, allowanceWorker(db, utcNow, time.Minute, log))
	}
	if roles["webhooks"] {
		a.workers = append(a.workers, hookWorkers...)
	}
	c.instrument(a)
	return a, nil
}

func (a *app) run(ctx context.Context, c *ServeCmd, log *slog.Logger) error {
	g, ctx := errgroup.WithContext(ctx)
	for name, s := range a.servers {
		ln, err := net.Listen("tcp", s.addr)
		if err != nil {
			return fmt.Errorf("%s listener: %w", name, err)
		}
		hs := &http.Server{Handler: s.handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
		log.Info("listening", "surface", name, "addr", ln.Addr().String())
		g.Go(func() error {
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
		g.Go(func() error {
			<-ctx.Done()
			sctx, cancel := context.WithTimeout(context.Background(), c.ShutdownGrace)
			defer cancel()
			return hs.Shutdown(sctx)
		})
	}
	for _, w := range a.workers {
		g.Go(func() error {
			if err := w(ctx); err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		})
	}
	err := g.Wait()
	log.Info("stopped")
	return err
}

// devBootstrap creates the development account on first start and prints a fresh key and a
// working curl line; later starts say where the account is.
func (c *ServeCmd) devBootstrap(ctx context.Context, e *env, db *sqlstore.DB, svc *auth.Service) error {
	marker := filepath.Join(c.Data, "dev-account")
	if b, err := os.ReadFile(marker); err == nil {
		id := strings.TrimSpace(string(b))
		fmt.Fprintf(e.stdout, "Development account %s (mint another key: go run ./cmd/modelexec keys mint --account %s)\n", id, id)
		return nil
	}
	now := utcNow()
	a := auth.Account{ID: newID("acct_"), Plan: auth.Pro, Status: auth.Live, Balance: 10000,
		MonthlyAllowance: auth.DefaultMonthlyAllowance(auth.Pro), AllowancePeriod: auth.Period(now), CreatedAt: now.Add(-48 * time.Hour)}
	if err := db.CreateAccount(ctx, a); err != nil {
		return err
	}
	m, err := svc.Mint(ctx, auth.MintParams{AccountID: a.ID})
	if err != nil {
		return err
	}
	if err := os.WriteFile(marker, []byte(a.ID+"\n"), 0o600); err != nil {
		return err
	}
	base := c.PublicURLAPI
	if base == "" {
		base = "http://" + c.APIAddr
	}
	fmt.Fprintf(e.stdout, "Development account %s (plan pro, 10000 credits)\nAPI key (shown once): %s\nTry:\n  curl -s -H 'Authorization: Bearer %s' %s/v1/me\n", a.ID, m.Key, m.Key, base)
	fmt.Fprintf(e.stdout, "Lost the key? Mint another: modelexec keys mint --data %s --account %s\n", c.Data, a.ID)
	return nil
}

// cogRunners replaces the built-in runner of each --cog model by a Cog runner, whose
// prediction webhooks come back to the account API at /internal/cog/{slug}.
func (c *ServeCmd) cogRunners(reg runners.Registry, cat *catalog.Catalog, apiURL string) (map[string]*cog.Runner, error) {
	out := map[string]*cog.Runner{}
	for slug, base := range c.Cog {
		if _, ok := cat.Model(slug); !ok {
			return nil, fmt.Errorf("--cog %s: no such model", slug)
		}
		rn, err := cog.New(cog.Config{BaseURL: base, WebhookURL: apiURL + "/internal/cog/" + slug})
		if err != nil {
			return nil, fmt.Errorf("--cog %s: %w", slug, err)
		}
		reg[slug] = rn
		out[slug] = rn
	}
	return out, nil
}

// withCogHooks mounts the Cog prediction webhook in front of the account API. The per-run
// token in the URL is the credential (Cog signs nothing).
func withCogHooks(api http.Handler, cogs map[string]*cog.Runner) http.Handler {
	if len(cogs) == 0 {
		return api
	}
	mux := http.NewServeMux()
	mux.Handle("/", api)
	mux.HandleFunc("POST /internal/cog/{slug}", func(w http.ResponseWriter, r *http.Request) {
		rn, ok := cogs[r.PathValue("slug")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			http.Error(w, "read error", http.StatusBadRequest)
			return
		}
		q := r.URL.Query()
		if err := rn.Complete(q.Get("id"), q.Get("token"), body); err != nil {
			http.Error(w, "unknown prediction", http.StatusNotFound)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}
