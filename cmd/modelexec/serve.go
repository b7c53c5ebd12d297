package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/modelexec/modelexec/internal/blobs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/plans"
	"github.com/modelexec/modelexec/internal/server"
	"github.com/modelexec/modelexec/internal/store"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
)

// ServeCmd runs the service.
type ServeCmd struct {
	StoreFlags
	LogFlags
	Create bool `hidden:"" help:"Ignored: serve always creates the database (accepted for scripts written for earlier releases)."`
	WebhookFlags
	ChatFlags
	StudioFlags
	MemoryFlags
	Dev              bool              `help:"Development mode: create a development account on first start and print a key and a curl line."`
	APIAddr          string            `default:"127.0.0.1:8080" help:"Account API listen address."`
	QueueAddr        string            `default:"127.0.0.1:8081" help:"Queue host listen address."`
	SyncAddr         string            `default:"127.0.0.1:8082" help:"Synchronous host listen address."`
	PublicURLAPI     string            `name:"public-url-api" help:"Public base URL of the account API (default http://<api-addr>). Give every process of a deployment the same one."`
	PublicURLQueue   string            `help:"Public base URL of the queue host (default http://<queue-addr>)."`
	PublicURLSync    string            `help:"Public base URL of the synchronous host (default http://<sync-addr>)."`
	Redis            string            `help:"redis:// URL: rate limits shared by every process through Redis (default: in process)."`
	TrustedProxies   []string          `help:"Load balancers in front of this process (addresses or CIDR ranges, e.g. --trusted-proxies 10.0.0.0/8): from them, the client's address is read from X-Forwarded-For. Empty: the connection's peer is the client." placeholder:"CIDR"`
	Blobs            string            `help:"Blob storage: a directory (default <data>/blobs) or s3://bucket?endpoint=...&region=..."`
	Roles            string            `default:"api,queue,sync,worker,webhooks" help:"Comma-separated roles this process runs."`
	ShutdownGrace    time.Duration     `default:"20s" help:"How long shutdown waits for in-flight requests."`
	DrainDelay       time.Duration     `default:"2s" help:"Told to stop, how long the process keeps serving while /readyz answers 503, so a load balancer's health check takes it out first (0 to close at once)."`
	APIDisabled      bool              `help:"Answer every request 503 api_disabled (order of checks step 1)."`
	DisableProduct   []string          `help:"Products to pause (api_disabled for their routes), e.g. --disable-product music."`
	NoUploads        bool              `help:"Take no uploaded files: POST /v1/uploads and fal's storage upload answer 503 not_configured, and file inputs come as URLs."`
	Cog              map[string]string `help:"Run a model on a Cog model server instead of the built-in runner: --cog image-4b=http://gpu-1:5000 (repeatable)."`
	CogNoCancel      []string          `help:"Models of --cog whose Cog server has no cancel route (Cog versions before it): a cancel of a running job answers 400 cancel_unsupported and the job runs to its end." placeholder:"MODEL"`
	Catalogue        string            `help:"Catalogue file replacing the built-in one (start from the output of 'modelexec catalogue')." type:"existingfile"`
	Plans            string            `help:"Plans file replacing the built-in plan figures (start from the output of 'modelexec plans')." type:"existingfile"`
	ModelConcurrency int               `help:"Jobs of one model this process runs at once (default: the plans' model_concurrency, 4 as shipped)."`
	UsageExportRows  int               `help:"Most rows one usage export (GET /v1/usage/export) holds; a window with more is refused with export_too_large (default 100000)."`
	RetainOutputs    time.Duration     `default:"720h" help:"How long a job's output files are kept after it finished (0 keeps them forever); the result of an older job answers 410 expired. Jobs and ledger entries are kept."`
	RetainUploads    time.Duration     `default:"168h" help:"How long uploaded files are kept (0 keeps them forever)."`
	MetricsAddr      string            `help:"Operator listener for Prometheus /metrics and /debug/pprof (e.g. 127.0.0.1:9090); off when empty. Never expose it publicly."`
}

func (c *ServeCmd) Run(e *env) error {
	if err := c.checkDurations(); err != nil {
		return err
	}
	if err := c.checkUpstreams(); err != nil {
		return err
	}
	if err := c.checkCounts(); err != nil {
		return err
	}
	log := c.logger(e.stderr)
	ctx := e.ctx
	if err := c.applyMemory(e.getenv); err != nil {
		return err
	}
	if c.Dev {
		// The one-time key is printed once: check the ports before minting it.
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
	srv, err := c.build(ctx, db, svc, log)
	if err != nil {
		return err
	}
	defer srv.Close()
	if c.Dev {
		if err := c.devBootstrap(ctx, e, db, svc, srv.Plans()); err != nil {
			return err
		}
	}
	return srv.Run(ctx)
}

// checkDurations refuses a negative duration: --retain-outputs=-1h would keep files for ever
// and --drain-delay=-5s not drain, each silently.
func (c *ServeCmd) checkDurations() error {
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"--shutdown-grace", c.ShutdownGrace}, {"--drain-delay", c.DrainDelay},
		{"--retain-outputs", c.RetainOutputs}, {"--retain-uploads", c.RetainUploads}} {
		if d.v < 0 {
			return fmt.Errorf("%s is %s: give a duration of 0 or more (such as 30s, 2h or 720h)", d.flag, d.v)
		}
	}
	return nil
}

// checkCounts refuses a negative count: the server reads anything not above 0 as "the
// default", so --model-concurrency=-3 would run 4 jobs at once and --usage-export-rows=-1 allow
// 100000 rows, each silently. 0 still means the default, as the help says.
func (c *ServeCmd) checkCounts() error {
	for _, n := range []struct {
		flag string
		v    int
	}{{"--model-concurrency", c.ModelConcurrency}, {"--usage-export-rows", c.UsageExportRows}} {
		if n.v < 0 {
			return fmt.Errorf("%s is %d: give a number of 1 or more (0 or none for the default)", n.flag, n.v)
		}
	}
	return nil
}

// config maps the flags to the server's configuration.
func (c *ServeCmd) config() (server.Config, error) {
	roles, err := server.ParseRoles(c.Roles)
	if err != nil {
		return server.Config{}, err
	}
	scheme, err := server.ParseWebhookScheme(c.WebhookScheme)
	if err != nil {
		return server.Config{}, err
	}
	secret, err := c.secret(c.Dev)
	if err != nil {
		return server.Config{}, err
	}
	blobLoc := c.Blobs
	if blobLoc == "" {
		blobLoc = filepath.Join(c.Data, "blobs")
	}
	return server.Config{Roles: roles, APIAddr: c.APIAddr, QueueAddr: c.QueueAddr, SyncAddr: c.SyncAddr,
		PublicURLAPI: c.PublicURLAPI, PublicURLQueue: c.PublicURLQueue, PublicURLSync: c.PublicURLSync,
		Secret: secret, Redis: c.Redis, Blobs: blobLoc, ShutdownGrace: c.ShutdownGrace, WebhookScheme: scheme,
		APIDisabled: c.APIDisabled, DisableProduct: c.DisableProduct, NoUploads: c.NoUploads, Cog: c.Cog, CogNoCancel: c.CogNoCancel, ModelConcurrency: c.ModelConcurrency,
		MetricsAddr: c.MetricsAddr, OpenAIUpstream: c.OpenAIUpstream, ReferenceModels: c.ReferenceModels || c.Dev, WebhookAllowPrivate: c.WebhookAllowPrivate,
		UsageExportRows: c.UsageExportRows, Retain: blobs.Retention{Outputs: c.RetainOutputs, Uploads: c.RetainUploads}, StudioOrigins: c.StudioOrigins, TrustedProxies: c.TrustedProxies,
		DrainDelay: c.DrainDelay}, nil
}

// build wires the service from the flags (server.New does the wiring).
func (c *ServeCmd) build(ctx context.Context, db *sqlstore.DB, svc *auth.Service, log *slog.Logger) (*server.Server, error) {
	return c.buildWith(ctx, db, svc, log, nil)
}

// buildWith is build with the flags' configuration edited first (nil: as the flags give it);
// tests lower the console's bcrypt cost through it.
func (c *ServeCmd) buildWith(ctx context.Context, db *sqlstore.DB, svc *auth.Service, log *slog.Logger, edit func(*server.Config)) (*server.Server, error) {
	cfg, err := c.config()
	if err != nil {
		return nil, err
	}
	if edit != nil {
		edit(&cfg)
	}
	p, err := loadPlans(c.Plans)
	if err != nil {
		return nil, err
	}
	return server.New(ctx, cfg, server.Deps{DB: db, Auth: svc, Now: utcNow, Log: log, Plans: p,
		Catalogue: func(h catalog.Hosts) (*catalog.Catalog, error) { return loadCatalogue(c.Catalogue, h) }})
}

// devConsoleEmail is the development account's console user.
const devConsoleEmail = "dev@localhost"

// devBootstrap creates the development account on first start and prints a fresh key and a
// working curl line; later starts say where the account is. The data folder's marker is
// believed only while the database holds its account: on a new database (another --database,
// or the SQLite file deleted) the account is made again, as on a first start.
func (c *ServeCmd) devBootstrap(ctx context.Context, e *env, db *sqlstore.DB, svc *auth.Service, p *plans.Plans) error {
	marker := filepath.Join(c.Data, "dev-account")
	if b, err := os.ReadFile(marker); err == nil {
		id := strings.TrimSpace(string(b))
		_, err := db.Account(ctx, id)
		if err == nil {
			fmt.Fprintf(e.stdout, "Development account %s (mint another key: modelexec keys mint%s --account %s)\n", id, c.storeArgs(), id)
			return nil
		}
		if !errors.Is(err, auth.ErrNotFound) {
			return err
		}
	}
	// A second process on a shared database (another data folder, one PostgreSQL) joins the
	// development account the first made: its console user names it.
	if u, err := db.UserByEmail(ctx, devConsoleEmail); err == nil {
		return c.devJoin(e, marker, u.AccountID)
	} else if !errors.Is(err, auth.ErrNotFound) {
		return err
	}
	now := utcNow()
	a := auth.Account{ID: auth.NewID("acct_"), Plan: auth.Pro, Status: auth.Live, Balance: 10000,
		MonthlyAllowance: p.MonthlyAllowance(auth.Pro), AllowancePeriod: auth.Period(now), CreatedAt: now.Add(-48 * time.Hour)}
	if err := db.CreateAccount(ctx, a); err != nil {
		return err
	}
	m, err := svc.Mint(ctx, auth.MintParams{AccountID: a.ID})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(c.Data, 0o700); err != nil {
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
	fmt.Fprintf(e.stdout, "Lost the key? Mint another: modelexec keys mint%s --account %s\n", c.storeArgs(), a.ID)
	pw := randomPassword()
	if _, err := consoleSessions(db).CreateUser(ctx, auth.NewUser{AccountID: a.ID, Email: devConsoleEmail, Password: pw}); errors.Is(err, auth.ErrEmailTaken) {
		// Another process made the development account at the same moment: the key above is
		// this account's, and the console signs in to the other's.
		u, err := db.UserByEmail(ctx, devConsoleEmail)
		if err != nil {
			return err
		}
		fmt.Fprintf(e.stdout, "Another process made the development account %s at the same time; its console user signs in there.\n", u.AccountID)
		return nil
	} else if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Web console: %s/console/ — sign in as %s with password %s (shown once)\n", base, devConsoleEmail, pw)
	return nil
}

// storeArgs are the flags a console command needs to reach the store this process runs on (and,
// in dev mode, the secret kept in its data folder): --data unless the default, --database when
// given (without its password, which the operator has). Empty when the defaults do.
func (c *ServeCmd) storeArgs() string {
	var out string
	if c.Data != "./data" {
		out += " --data " + shellQuote(c.Data)
	}
	if c.Database != "" {
		out += " --database " + shellQuote(store.Redacted(c.Database))
	}
	return out
}

// shellQuote quotes s for a POSIX shell when it holds anything but plain characters.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:@%+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// devJoin records, in this process's data folder, the development account another process
// made on the shared database, and says how to reach it.
func (c *ServeCmd) devJoin(e *env, marker, accountID string) error {
	if err := os.MkdirAll(c.Data, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(marker, []byte(accountID+"\n"), 0o600); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "Development account %s, made by another process on this database (mint a key: modelexec keys mint%s --account %s; the console user is %s)\n",
		accountID, c.storeArgs(), accountID, devConsoleEmail)
	return nil
}
