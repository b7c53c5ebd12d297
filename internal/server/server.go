package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/modelexec/modelexec/internal/accountapi"
	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/batch"
	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/blobs/blobhttp"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/console"
	"github.com/modelexec/modelexec/internal/fetch"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/imagebudget"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/jobs/redisseats"
	"github.com/modelexec/modelexec/internal/jobview"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/metrics"
	"github.com/modelexec/modelexec/internal/modelhost"
	"github.com/modelexec/modelexec/internal/plans"
	"github.com/modelexec/modelexec/internal/ratelimit"
	rlredis "github.com/modelexec/modelexec/internal/ratelimit/redis"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/runners/builtin"
	"github.com/modelexec/modelexec/internal/runners/cog"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/studio"
	"github.com/modelexec/modelexec/internal/webhooks"
)

// Server is the wired service of one process.
type Server struct {
	cfg      Config
	log      *slog.Logger
	roles    Roles
	urls     URLs
	catalog  *catalog.Catalog
	plans    *plans.Plans
	jobs     *jobs.Service
	ledger   *ledger.Service
	account  *accountapi.Handler
	usage    *ledger.Usage
	console  *console.Handler // nil without a deployment secret or the API role
	lastUsed *auth.LastUsed
	bucket   *blobs.Bucket
	ownsBkt  bool
	// images is the memory the process's image decodes share: uploads verified and the
	// built-in runners' url inputs.
	images   *imagebudget.Budget
	handlers map[Role]http.Handler
	workers  []func(context.Context) error
	metrics  *metrics.Metrics // nil without an operator listener
	// hookPolicy is where webhooks may go: public hosts, plus --webhook-allow-private.
	hookPolicy webhooks.URLPolicy
	// closeNotifier releases the notices' own connection (nil when it opened none).
	closeNotifier func() error
	// draining fails /readyz once the process begins to stop (drain.go).
	draining drainer
}

// The listen addresses as shipped.
const (
	DefaultAPIAddr   = "127.0.0.1:8080"
	DefaultQueueAddr = "127.0.0.1:8081"
	DefaultSyncAddr  = "127.0.0.1:8082"
)

// sqliteInFlight is how many batches of submits, and of settlements, are written at once on
// SQLite: as many as the clients a busy process serves.
const sqliteInFlight = 64

// Batchers configures the jobs engine's submit and settle batchers for a database. SQLite's
// group commit merges the transactions that wait at one moment into one COMMIT already: with
// many batches in flight, a submit or a settlement is nearly always a batch of its own,
// written at once, and the COMMIT gathers them. PostgreSQL writes a batch while the next
// gathers.
func Batchers(d sqlstore.Dialect) (submit, settle batch.Config) {
	submit, settle = batch.DefaultConfig(), batch.DefaultConfig()
	if d == sqlstore.SQLite {
		submit.InFlight, settle.InFlight = sqliteInFlight, sqliteInFlight
	}
	return submit, settle
}

// HandOffPoll is how often a worker of a split deployment looks for jobs handed off by the
// processes that serve the surfaces.
const HandOffPoll = 200 * time.Millisecond

// HandOffPollNotified is HandOffPoll where the processes notify each other of hand-offs: the
// look is then a fallback for a lost notice.
const HandOffPollNotified = 2 * time.Second

// URLs are the public base URLs of the three surfaces (no trailing slash).
type URLs struct{ API, Queue, Sync string }

// New builds the handlers and workers of the roles in cfg. It opens nothing it cannot close:
// Close releases the blob bucket it opened.
func New(ctx context.Context, cfg Config, d Deps) (*Server, error) {
	if d.DB == nil || d.Auth == nil {
		return nil, errors.New("server: a database and an auth service are required")
	}
	if d.Now == nil {
		d.Now = func() time.Time { return time.Now().UTC() }
	}
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	if d.Plans == nil {
		d.Plans = plans.Default()
	}
	roles := cfg.Roles
	if roles == nil {
		roles = Every()
	}
	if !roles.Whole() && cfg.Secret == "" {
		return nil, fmt.Errorf("--roles %s: a process that runs only some roles needs the deployment secret (--secret or MODELEXEC_SECRET), the same in every process, or the links one process signs do not verify in another", roles)
	}
	for _, a := range []struct {
		addr *string
		def  string
	}{{&cfg.APIAddr, DefaultAPIAddr}, {&cfg.QueueAddr, DefaultQueueAddr}, {&cfg.SyncAddr, DefaultSyncAddr}} {
		if *a.addr == "" {
			*a.addr = a.def
		}
	}
	s := &Server{cfg: cfg, log: d.Log, roles: roles, plans: d.Plans, handlers: map[Role]http.Handler{}, ledger: ledger.New(d.DB, d.Now)}
	public, err := cfg.publicURLs()
	if err != nil {
		return nil, err
	}
	s.urls = public
	apierr.SetDocsBase(s.urls.API) // every host's `docs` links lead to the account API's pages
	build := d.Catalogue
	if build == nil {
		build = func(h catalog.Hosts) (*catalog.Catalog, error) { return catalog.Default(catalog.WithHosts(h)) }
	}
	cat, err := build(catalog.Hosts{Queue: s.urls.Queue, Sync: s.urls.Sync})
	if err != nil {
		return nil, err
	}
	s.catalog = cat

	s.bucket = d.Bucket
	if s.bucket == nil {
		loc := cfg.Blobs
		if loc == "" {
			return nil, errors.New("server: no blob storage given (a directory or an s3:// URL)")
		}
		if s.bucket, err = blobs.OpenBucket(ctx, loc); err != nil {
			return nil, fmt.Errorf("blobs: %w", err)
		}
		s.ownsBkt = true
	}
	signingSecret := []byte(cfg.Secret)
	if len(signingSecret) == 0 {
		signingSecret = []byte("unconfigured-" + randomHex(16)) // links die with the process
	} else if len(signingSecret) < 16 {
		signingSecret = []byte(webhookSecret(cfg.Secret)) // a short secret, stretched
	}
	signer, err := blobs.NewSigner(signingSecret, s.urls.API+"/files", d.Now)
	if err != nil {
		return nil, err
	}
	fopts := []fetch.Option{fetch.WithBlobs(signer, s.bucket), fetch.WithClock(d.Now)}
	if d.LoopbackFetch {
		fopts = append(fopts, fetch.AllowLoopbackForTests())
	}
	fetcher := fetch.New(fetch.Config{}, fopts...)

	s.images = imagebudget.Default()
	reg, cogs, err := s.runners(cat, d)
	if err != nil {
		return nil, err
	}
	chatSvc, err := s.wireChat(cat, reg, d.DB, d.Now)
	if err != nil {
		return nil, err
	}
	env := func(j jobs.Job, rep runners.Reporter) runners.Env {
		return runners.Env{Inputs: fetcher, Outputs: blobs.Outputs{Store: s.bucket, JobID: j.RequestID}, Report: rep}
	}
	jcfg := jobs.DefaultConfig()
	jcfg.InFlight = map[auth.Plan]int{}
	for p, n := range d.Plans.InFlight {
		jcfg.InFlight[p] = n
	}
	jcfg.ModelConcurrency = d.Plans.ModelConcurrency
	if cfg.ModelConcurrency > 0 {
		jcfg.ModelConcurrency = cfg.ModelConcurrency
	}
	jcfg.Runs = roles[RoleWorker]
	jcfg.SubmitBatch, jcfg.SettleBatch = Batchers(d.DB.Dialect())
	notifier, closeNotifier, err := cfg.notifier(d.DB)
	if err != nil {
		return nil, err
	}
	s.closeNotifier = closeNotifier
	if jcfg.Runs && !roles.Whole() {
		// Submits reach this worker through the database only (another process's hand-offs):
		// it is told of them (notifier), and looks for them every HandOffPoll besides, one
		// indexed read per model, for a notice lost or a database without notices.
		jcfg.PollEvery = HandOffPoll
		if notifier != nil {
			jcfg.PollEvery = HandOffPollNotified
		}
	}
	if d.Jobs != nil {
		d.Jobs(&jcfg)
	}
	var store jobs.Store = sqlstore.Jobs{DB: d.DB}
	if d.JobStore != nil {
		store = d.JobStore(store)
	}
	rdb, err := cfg.redisClient()
	if err != nil {
		return nil, err
	}
	seats, renewSeats := cfg.seats(d, rdb)
	s.jobs = jobs.New(jobs.Deps{Store: store, Ledger: s.ledger, Catalog: cat, Runners: reg, Env: env, Seats: seats, Now: d.Now, Log: d.Log,
		Notifier: notifier}, jcfg)
	chatSvc.Jobs = s.jobs

	gate := &httpapi.Gate{Auth: d.Auth, Switches: &httpapi.Switches{}, Now: d.Now, Log: d.Log,
		LastUsed: &auth.LastUsed{Store: d.DB}}
	if gate.Proxies, err = httpapi.ParseProxies(cfg.TrustedProxies); err != nil {
		return nil, err
	}
	s.lastUsed = gate.LastUsed
	switch {
	case d.Pacer != nil:
		gate.Pacer = d.Pacer
	case !cfg.NoRateLimits:
		limiter := d.Limiter
		if limiter == nil {
			if limiter, err = cfg.limiter(d, rdb); err != nil {
				return nil, err
			}
		}
		adm := ratelimit.NewAdmission(limiter, ratelimit.AdmissionOptions{Plans: d.Plans.Rates, FuseLimits: d.Plans.Fuse})
		gate.Pacer = httpapi.Admission{Adm: adm, Now: d.Now}
	}
	gate.Switches.APIDisabled.Store(cfg.APIDisabled)
	paused, err := pausedProducts(cat, cfg.DisableProduct)
	if err != nil {
		return nil, err
	}
	gate.Switches.DisabledProducts.Store(&paused)
	if err := s.observe(gate); err != nil {
		return nil, err
	}

	urls := jobview.URLs{Queue: s.urls.Queue}
	s.usage = ledger.NewUsage(d.DB)
	s.usage.MaxExportRows = cfg.UsageExportRows
	var uploads *blobs.Uploader
	if !cfg.NoUploads {
		uploads = &blobs.Uploader{Signer: signer}
	}
	acct := &accountapi.Handler{Gate: gate, Auth: d.Auth, Jobs: s.jobs, Catalog: cat, URLs: urls, Signer: signer,
		Files: blobhttp.New(s.bucket, signer, d.Now, s.images), Uploads: uploads, Usage: s.usage,
		Ready: readiness(&s.draining, readyCheck{d.DB, "database"}, blobs.WriteProbe{Store: s.bucket}, rdb), Now: d.Now, Log: d.Log, RetainOutputs: cfg.Retain.Outputs}
	acct.OpenAPI = accountapi.Document(cat, accountapi.WithServer(s.urls.API))
	mountChat(acct, chatSvc, gate, d.Now, d.Log)
	// Every process merging into a studio document compares and swaps on its revision, so any
	// number of processes agree.
	scfg := studio.Config{Store: sqlstore.Studio{DB: d.DB}, Now: d.Now, Log: d.Log}
	var studioListen func(context.Context) error
	if notifier != nil && roles[RoleAPI] {
		// Edits stored by any process reach the live peers of every other.
		studioListen = studioFanOut(notifier, &scfg, func() *studio.Service { return acct.Studio }, d.Log)
	}
	acct.Studio = studio.NewService(scfg)
	// Tickets are signed under the deployment secret and claimed in the database, so a ticket
	// minted by one process opens one connection on any.
	acct.Tickets, acct.TicketClaims = studio.NewTickets(signingSecret, d.Now), sqlstore.Studio{DB: d.DB}
	if acct.StudioOrigins, err = accountapi.ParseOrigins(cfg.StudioOrigins); err != nil {
		return nil, fmt.Errorf("--studio-origins: %w", err)
	}
	s.account = acct
	if s.hookPolicy, err = webhooks.ParseAllowList(cfg.WebhookAllowPrivate); err != nil {
		return nil, fmt.Errorf("--webhook-allow-private: %w", err)
	}
	hookWorkers, err := s.wireWebhooks(d.DB, acct) // before acct.Routes()
	if err != nil {
		return nil, err
	}
	if roles[RoleAPI] {
		s.console = s.wireConsole(d, cat, signer, gate)
		s.handlers[RoleAPI] = withConsole(withCogHooks(acct.Routes(), cogs), s.console, d.Log)
	}
	if roles[RoleQueue] {
		q := &modelhost.Queue{Gate: gate, Jobs: s.jobs, URLs: urls, Signer: signer, Now: d.Now, Log: d.Log, StreamLimit: cfg.StreamLimit,
			Webhooks: s.hookPolicy, RetainOutputs: cfg.Retain.Outputs}
		s.handlers[RoleQueue] = q.Routes()
	}
	if roles[RoleSync] {
		wc := cfg.WaitCeiling
		if wc == 0 {
			wc = 60 * time.Second
		}
		sh := &modelhost.Sync{Gate: gate, Jobs: s.jobs, URLs: urls, Signer: signer, WaitCeiling: wc, RetainOutputs: cfg.Retain.Outputs, Now: d.Now, Log: d.Log}
		s.handlers[RoleSync] = sh.Routes()
	}
	s.instrument()
	// The jobs engine's Run in every process: a worker's runs, and in any process the
	// batchers and the notices of the other processes (a front's held requests and streams
	// hear of the settlements a worker makes).
	s.workers = append(s.workers, s.jobs.Run)
	if studioListen != nil {
		s.workers = append(s.workers, studioListen)
	}
	if roles[RoleWorker] {
		every := cfg.AllowanceEvery
		if every == 0 {
			every = time.Minute
		}
		s.workers = append(s.workers, allowanceWorker(d.DB, d.Now, every, d.Log))
		if cfg.Retain.Outputs > 0 || cfg.Retain.Uploads > 0 {
			sweeper := &blobs.Sweeper{Bucket: s.bucket, Retention: cfg.Retain, Now: d.Now, Log: d.Log}
			s.workers = append(s.workers, sweeper.Run)
		}
	}
	if roles[RoleWebhooks] {
		s.workers = append(s.workers, hookWorkers...)
	}
	if roles[RoleAPI] || roles[RoleQueue] || roles[RoleSync] {
		s.workers = append(s.workers, gate.LastUsed.Run) // writes the keys' last use about once a minute
		if renewSeats != nil {
			s.workers = append(s.workers, renewSeats) // renews the leases of this process's seats
		}
	}
	return s, nil
}

// publicURLs are the configured public URLs, or http://<addr> of each surface's listener. A
// configured one must be a base the status documents and signed links can be written on
// (checkPublicURL); the refusal names its flag.
func (c Config) publicURLs() (URLs, error) {
	pick := func(flag, public string, role Role, addr string) (string, error) {
		if public != "" {
			if err := checkPublicURL(public); err != nil {
				return "", fmt.Errorf("--%s %q: %w", flag, public, err)
			}
			return strings.TrimRight(public, "/"), nil
		}
		if ln := c.Listeners[role]; ln != nil {
			return "http://" + ln.Addr().String(), nil
		}
		return "http://" + addr, nil
	}
	var u URLs
	var err error
	if u.API, err = pick("public-url-api", c.PublicURLAPI, RoleAPI, c.APIAddr); err != nil {
		return URLs{}, err
	}
	if u.Queue, err = pick("public-url-queue", c.PublicURLQueue, RoleQueue, c.QueueAddr); err != nil {
		return URLs{}, err
	}
	if u.Sync, err = pick("public-url-sync", c.PublicURLSync, RoleSync, c.SyncAddr); err != nil {
		return URLs{}, err
	}
	return u, nil
}

// checkPublicURL accepts a base URL (CheckBaseURL) without user-info: clients would be sent
// the credentials.
func checkPublicURL(v string) error {
	if err := CheckBaseURL(v); err != nil {
		return err
	}
	if u, _ := url.Parse(v); u.User != nil {
		return errors.New("holds a user name or password: a public URL is shown to every client")
	}
	return nil
}

// CheckBaseURL accepts a URL that paths are appended to (a public URL, an upstream's base):
// absolute http or https with a host, and no query, fragment or spaces. It answers what is
// wrong in words that follow the value ("… is not an absolute http(s) URL").
func CheckBaseURL(v string) error {
	u, err := url.Parse(v)
	switch {
	case strings.ContainsAny(v, " \t"):
		return errors.New("contains spaces")
	case err != nil || !u.IsAbs() || u.Opaque != "":
		return errors.New("is not an absolute http(s) URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Errorf("has the scheme %q: only http and https are served", u.Scheme)
	case u.Host == "" || u.Hostname() == "":
		return errors.New("has no host")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.ContainsAny(v, "?#"):
		return errors.New("has a query or fragment: paths are appended to it")
	}
	return nil
}

// redisClient is the client of the Redis cfg names (nil when none): it shares the rate limits
// and the held-connection seats between processes.
func (c Config) redisClient() (*redis.Client, error) {
	if c.Redis == "" {
		return nil, nil
	}
	opt, err := redis.ParseURL(c.Redis)
	if err != nil {
		return nil, fmt.Errorf("--redis: %w", err)
	}
	opt.MaxRetries, opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = -1, time.Second, 500*time.Millisecond, 500*time.Millisecond
	return redis.NewClient(opt), nil
}

// limiter is the shared Redis limiter when there is a Redis, else the in-process one.
func (c Config) limiter(d Deps, rdb *redis.Client) (ratelimit.Limiter, error) {
	if rdb == nil {
		return ratelimit.NewMemory(ratelimit.MemoryOptions{Clock: d.Now, Plans: d.Plans.Rates}), nil
	}
	return rlredis.New(rdb, rlredis.Options{Clock: d.Now, Plans: d.Plans.Rates}), nil
}

// seats are the held-connection seats: counted in Redis, across processes, when there is one
// (with the worker that renews this process's leases), else in this process.
func (c Config) seats(d Deps, rdb *redis.Client) (jobs.Seats, func(context.Context) error) {
	sp := d.Plans.Seats
	if rdb == nil {
		return jobs.NewSeats(sp.PerAccount, sp.PerProduct, sp.Platform), nil
	}
	s := redisseats.New(rdb, redisseats.Options{PerAccount: sp.PerAccount, PerProduct: sp.PerProduct, Platform: sp.Platform, Log: d.Log})
	return s, s.Run
}

// runners is the registry: the built-in reference runners, a catalogue entry's "runner"
// choice, the Cog servers of cfg.Cog, then the test's replacements.
func (s *Server) runners(cat *catalog.Catalog, d Deps) (runners.Registry, map[string]*cog.Runner, error) {
	builtins := builtin.All(builtin.Options{Now: d.Now, Images: s.images})
	reg := runners.Registry{}
	for slug, rn := range builtins {
		reg[slug] = rn
	}
	for _, m := range cat.Models() {
		switch {
		case m.Runner == "":
		case m.Runner == builtin.Noop:
			reg[m.Slug] = builtin.NewNoop()
		case builtins[m.Runner] != nil:
			reg[m.Slug] = builtins[m.Runner]
		default:
			return nil, nil, fmt.Errorf("catalogue model %s: runner %q is not a built-in runner (%q, or the slug of a built-in model)", m.Slug, m.Runner, builtin.Noop)
		}
	}
	cogs := map[string]*cog.Runner{}
	for slug, base := range s.cfg.Cog {
		m, ok := cat.Model(slug)
		if !ok {
			return nil, nil, fmt.Errorf("--cog %s: no such model", slug)
		}
		rn, err := cog.New(cog.Config{BaseURL: base, WebhookURL: s.urls.API + "/internal/cog/" + slug,
			CancelUnsupported: slices.Contains(s.cfg.CogNoCancel, slug), MapURLs: m.MapURLs})
		if err != nil {
			return nil, nil, fmt.Errorf("--cog %s: %w", slug, err)
		}
		reg[slug], cogs[slug] = rn, rn
	}
	for _, slug := range s.cfg.CogNoCancel {
		if _, ok := s.cfg.Cog[slug]; !ok {
			return nil, nil, fmt.Errorf("--cog-no-cancel %s: the model runs on no Cog server (give --cog %s=URL)", slug, slug)
		}
	}
	if d.Runners != nil {
		for slug, rn := range d.Runners(cat) {
			reg[slug] = rn
		}
	}
	if s.cfg.Roles[RoleWorker] {
		// A model a worker cannot run would take every submit, charge it and fail it: say so
		// when the process starts instead.
		for _, m := range cat.Models() {
			if _, ok := reg[m.Slug]; !ok && m.State != catalog.Described {
				return nil, nil, fmt.Errorf("catalogue model %s has no runner: give it \"runner\" (%q, or the slug of a built-in model), run it on a Cog server with --cog %s=URL, or make its state %q",
					m.Slug, builtin.Noop, m.Slug, catalog.Described)
			}
		}
	}
	return reg, cogs, nil
}

// Handler is the HTTP surface of role (nil when this process does not serve it).
func (s *Server) Handler(role Role) http.Handler { return s.handlers[role] }

// LastUsed is the keys' last-use notes of this process (written by a worker about once a minute).
func (s *Server) LastUsed() *auth.LastUsed { return s.lastUsed }

// Jobs is the jobs engine.
func (s *Server) Jobs() *jobs.Service { return s.jobs }

// Usage reads accounts' spend (the usage routes and the console's charts share it).
func (s *Server) Usage() *ledger.Usage { return s.usage }

// Catalog is the catalogue in force.
func (s *Server) Catalog() *catalog.Catalog { return s.catalog }

// Plans are the plan figures in force.
func (s *Server) Plans() *plans.Plans { return s.plans }

// URLs are the public base URLs.
func (s *Server) URLs() URLs { return s.urls }

// Workers is how many background workers Run starts.
func (s *Server) Workers() int { return len(s.workers) }

// Close releases what New opened (the blob bucket, the notices' Redis client).
func (s *Server) Close() error {
	var err error
	if s.closeNotifier != nil {
		err = s.closeNotifier()
	}
	if s.ownsBkt {
		err = errors.Join(err, s.bucket.Close())
	}
	return err
}

// addr is the listen address of a surface.
func (c Config) addr(role Role) string {
	switch role {
	case RoleAPI:
		return c.APIAddr
	case RoleQueue:
		return c.QueueAddr
	case RoleOperator:
		return c.MetricsAddr
	}
	return c.SyncAddr
}

// Run serves every surface of the process and runs its workers until ctx ends, then shuts
// down gracefully (see shutdown): held connections (synchronous runs, waits, status
// streams) are answered before the listeners close, and only then are the workers stopped,
// so a held run whose job finishes within ShutdownGrace still gets its result.
func (s *Server) Run(ctx context.Context) error {
	grace := s.cfg.ShutdownGrace
	if grace == 0 {
		grace = 20 * time.Second
	}
	// Every listener is bound before any worker starts: an address in use stops the process
	// with one line, before it has taken a job or a delivery.
	listeners, err := s.listen()
	if err != nil {
		return err
	}
	// Requests are served under held, not ctx: they end when shutdown says so, not the moment
	// the process is asked to stop. Workers run under work, stopped after the listeners.
	held, endHeld := context.WithCancel(context.WithoutCancel(ctx))
	defer endHeld()
	work, stopWork := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWork()
	ctx, stopServing := context.WithCancel(ctx)
	defer stopServing()
	workers := make(chan error, 1)
	go func() {
		err := s.RunWorkers(work)
		if err != nil {
			stopServing() // a failed worker stops the process
		}
		workers <- err
	}()
	g, gctx := errgroup.WithContext(ctx)
	// Told to stop, the process drains first (drain), then each listener shuts down.
	drained := make(chan struct{})
	var servers []*http.Server
	for _, l := range listeners {
		role, ln, h := l.role, l.ln, s.handlers[l.role]
		hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 120 * time.Second,
			ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
			BaseContext: func(net.Listener) context.Context { return held }}
		s.log.Info("listening", "surface", string(role), "addr", ln.Addr().String())
		servers = append(servers, hs)
		g.Go(func() error {
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
		g.Go(func() error {
			<-drained
			return s.shutdown(hs, role, grace, endHeld)
		})
	}
	g.Go(func() error {
		<-gctx.Done()
		s.drain(servers)
		close(drained)
		return nil
	})
	err = g.Wait()
	stopWork()
	err = errors.Join(err, <-workers)
	s.log.Info("stopped", "err", err)
	return err
}

// pausedProducts is --disable-product as the gate reads it. A name that is not the product of
// a model of the catalogue would pause nothing: it is refused, naming those there are.
func pausedProducts(cat *catalog.Catalog, names []string) (map[string]bool, error) {
	known := map[string]bool{}
	for _, m := range cat.Models() {
		known[m.Product] = true
	}
	paused := map[string]bool{}
	for _, p := range names {
		if !known[p] {
			return nil, fmt.Errorf("--disable-product %q: no model of the catalogue is of that product; the products are %s", p, strings.Join(slices.Sorted(maps.Keys(known)), ", "))
		}
		paused[p] = true
	}
	return paused, nil
}

// roleListener is one surface's bound listener.
type roleListener struct {
	role Role
	ln   net.Listener
}

// listen binds the listener of every surface the process serves (those given in
// Config.Listeners are taken as they are); on a failure it closes those it bound and names
// the surface and its address.
func (s *Server) listen() ([]roleListener, error) {
	var out []roleListener
	for _, role := range []Role{RoleAPI, RoleQueue, RoleSync, RoleOperator} {
		if s.handlers[role] == nil {
			continue
		}
		ln := s.cfg.Listeners[role]
		if ln == nil {
			var err error
			if ln, err = net.Listen("tcp", s.cfg.addr(role)); err != nil {
				for _, l := range out {
					if s.cfg.Listeners[l.role] == nil {
						l.ln.Close()
					}
				}
				return nil, fmt.Errorf("%s listener: %w", role, err)
			}
		}
		out = append(out, roleListener{role, ln})
	}
	return out, nil
}

// AnswerTime is how long held requests get to write their answer once shutdown has ended
// their contexts (after ShutdownGrace).
const AnswerTime = 2 * time.Second

// shutdown closes one listener and waits up to grace for its requests; the listeners close
// at once, held requests go on with the workers still running. Those still held when grace
// runs out have their contexts ended (endHeld), so each answers rather than being cut: a
// synchronous run answers run_timed_out with its status URL (the job is not lost: its lease
// is given back and it runs again), a wait answers the job as it stands, a stream ends.
func (s *Server) shutdown(hs *http.Server, role Role, grace time.Duration, endHeld context.CancelFunc) error {
	s.log.Info("shutting down", "surface", string(role), "grace", grace.String())
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	err := hs.Shutdown(ctx)
	if !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	s.log.Warn("held requests past the shutdown grace: answering them now", "surface", string(role))
	endHeld()
	actx, cancel2 := context.WithTimeout(context.Background(), AnswerTime)
	defer cancel2()
	if err := hs.Shutdown(actx); err != nil {
		s.log.Warn("requests cut at shutdown", "surface", string(role), "err", err)
		return hs.Close()
	}
	return nil
}

// RunWorkers runs the process's background workers until ctx ends (Run calls it; tests that
// serve the handlers themselves call it directly).
func (s *Server) RunWorkers(ctx context.Context) error {
	g, ctx := errgroup.WithContext(ctx)
	for _, w := range s.workers {
		g.Go(func() error {
			if err := w(ctx); err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		})
	}
	return g.Wait()
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
