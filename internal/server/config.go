package server

import (
	"fmt"
	"log/slog"
	"net"
	"sort"
	"strings"
	"time"

	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/blobs"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/httpapi"
	"github.com/modelexec/modelexec/internal/jobs"
	"github.com/modelexec/modelexec/internal/plans"
	"github.com/modelexec/modelexec/internal/ratelimit"
	"github.com/modelexec/modelexec/internal/runners"
	"github.com/modelexec/modelexec/internal/store/sqlstore"
	"github.com/modelexec/modelexec/internal/webhooks"
)

// Role is one part of the service a process may run.
type Role string

// The roles of `serve --roles`. The three surfaces answer HTTP; worker runs jobs (and the
// monthly allowance sweep); webhooks delivers events.
const (
	RoleAPI      Role = "api"
	RoleQueue    Role = "queue"
	RoleSync     Role = "sync"
	RoleWorker   Role = "worker"
	RoleWebhooks Role = "webhooks"
	// RoleOperator names the operator listener (Prometheus /metrics and pprof) a process opens
	// when Config.MetricsAddr is set; it is not a role --roles accepts.
	RoleOperator Role = "operator"
)

// AllRoles is every role: a single process running the whole service.
var AllRoles = []Role{RoleAPI, RoleQueue, RoleSync, RoleWorker, RoleWebhooks}

// Roles is the set of roles one process runs.
type Roles map[Role]bool

// ParseRoles reads a comma-separated role list ("api,queue,sync,worker,webhooks").
func ParseRoles(s string) (Roles, error) {
	out := Roles{}
	for _, r := range strings.Split(s, ",") {
		r = strings.TrimSpace(r)
		if r == "" {
			continue
		}
		known := false
		for _, k := range AllRoles {
			if Role(r) == k {
				known = true
			}
		}
		if !known {
			return nil, fmt.Errorf("--roles: unknown role %q (roles: api, queue, sync, worker, webhooks)", r)
		}
		out[Role(r)] = true
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--roles: no role given (roles: api, queue, sync, worker, webhooks)")
	}
	return out, nil
}

// Every returns the set of every role.
func Every() Roles {
	out := Roles{}
	for _, r := range AllRoles {
		out[r] = true
	}
	return out
}

// Whole reports whether the set holds every role (one process runs the whole service).
func (r Roles) Whole() bool {
	for _, k := range AllRoles {
		if !r[k] {
			return false
		}
	}
	return true
}

func (r Roles) String() string {
	var s []string
	for k := range r {
		s = append(s, string(k))
	}
	sort.Strings(s)
	return strings.Join(s, ",")
}

// Config is what an operator decides: addresses, public URLs, roles, the deployment secret,
// the data locations and the knobs. The zero value of each field is the shipped default.
type Config struct {
	Roles Roles // nil: every role

	// MetricsAddr, when set, opens the operator listener: Prometheus /metrics with every
	// surface's requests counted and timed, and net/http/pprof. Never expose it publicly.
	MetricsAddr string
	// Listen addresses of the three surfaces; a Listeners entry replaces the address.
	APIAddr, QueueAddr, SyncAddr string
	// Public base URLs (default http://<addr>). Every process of a deployment must be given the
	// same ones: the signed /files/ links name the account API's public URL, and a worker
	// recognises a link as one of the deployment's own by that prefix and the secret.
	PublicURLAPI, PublicURLQueue, PublicURLSync string

	// Secret is the deployment secret (key hashing is the auth service's; here: signed links
	// and webhook key sealing). Empty: keys are not configured, links die with the process,
	// webhooks are not served, and a process that does not run every role refuses to start.
	Secret string

	Redis         string          // redis:// URL for shared rate limits; empty: in process
	NoRateLimits  bool            // no pacing at all (tests and the benchmark measure the engine)
	Blobs         string          // directory or s3:// URL; ignored when Deps.Bucket is set
	ShutdownGrace time.Duration   // how long shutdown waits for in-flight requests (20 s)
	WaitCeiling   time.Duration   // longest a synchronous run holds its connection (60 s)
	StreamLimit   time.Duration   // longest a queue status stream stays open (5 min)
	WebhookScheme webhooks.Scheme // ed25519 (default) or hmac
	// WebhookAllowPrivate is the operator's comma-separated list of private ranges webhooks
	// may reach (serve --webhook-allow-private); empty, as shipped: public hosts only.
	WebhookAllowPrivate string
	// TrustedProxies are the load balancers in front of the process (serve --trusted-proxies:
	// addresses or CIDR ranges): from them, X-Forwarded-For names the client whose address
	// keys a keyless answer's rate bucket and the console's count of failed sign-ins. Empty:
	// the connection's peer is the client.
	TrustedProxies []string
	// StudioOrigins are the origins whose pages may open the studio live route with a ticket
	// (serve --studio-origins); empty: none.
	StudioOrigins []string
	// DrainDelay is how long a stopping process keeps its listeners open while /readyz answers
	// 503 (0: none; `serve --drain-delay`, 2 s as shipped). Give at least the load balancer's health
	// check interval times the failures it counts before it takes a process out.
	DrainDelay time.Duration

	APIDisabled    bool
	DisableProduct []string
	// NoUploads turns uploads off (serve --no-uploads): the upload routes stay in the API and
	// answer 503 not_configured, so clients learn to send file inputs as URLs.
	NoUploads bool

	// Cog maps a model slug to the base URL of a Cog model server that runs it.
	Cog map[string]string
	// CogNoCancel lists the models of Cog whose server has no cancel route (Cog versions
	// before it): a cancel of a running job of theirs answers 400 cancel_unsupported.
	CogNoCancel []string

	// OpenAIUpstream runs language models on OpenAI-compatible servers:
	// model=URL[,key=...][,name=...] each (ParseUpstream).
	OpenAIUpstream []string

	// ReferenceModels runs the built-in reference chat and embeddings runners for the language
	// models the catalogue gives them (serve --dev or --reference-models); off, those models
	// answer chat_not_configured unless an upstream runs them (DESIGN 36).
	ReferenceModels bool

	// ModelConcurrency is how many jobs of one model this process runs at once (0: the plan
	// figures' default).
	ModelConcurrency int

	// AllowanceEvery is the interval of the monthly allowance sweep (1 minute).
	AllowanceEvery time.Duration

	// Retain is how long output and upload files are kept (blobs.Retention; zero fields keep
	// them forever). Processes with the worker role sweep older ones every hour.
	Retain blobs.Retention

	// UsageExportRows is the most rows one usage export (one file) holds; a window with more
	// is refused with export_too_large (0: ledger.DefaultExportRows).
	UsageExportRows int

	// PasswordCost is bcrypt's work factor for console passwords (0: the library's default;
	// tests lower it).
	PasswordCost int

	// Listeners, by surface ("api", "queue", "sync"), replace the listen addresses (tests
	// bind 127.0.0.1:0 first so the public URLs are known before the catalogue is built).
	Listeners map[Role]net.Listener
}

// Deps are what the process hands in: the store, the auth service, the clock and the logger,
// and, for tests and the benchmark, replacements of parts New would otherwise build.
type Deps struct {
	DB   *sqlstore.DB
	Auth *auth.Service
	Now  func() time.Time // UTC clock (time.Now().UTC() when nil)
	Log  *slog.Logger

	// Catalogue builds the catalogue for the hosts' public URLs (the built-in one when nil).
	Catalogue func(catalog.Hosts) (*catalog.Catalog, error)
	// Plans are the plan figures (plans.Default() when nil).
	Plans *plans.Plans
	// Runners, when set, gives runners that replace the built-in ones by slug (after Cog).
	Runners func(*catalog.Catalog) runners.Registry
	// Bucket replaces the blob bucket opened from Config.Blobs.
	Bucket *blobs.Bucket
	// Limiter replaces the in-process or Redis limiter.
	Limiter ratelimit.Limiter
	// Pacer replaces the whole rate-limit admission (tests record what the gate asks).
	Pacer httpapi.Pacer
	// Jobs edits the jobs engine's configuration after New has filled it from Config.
	Jobs func(*jobs.Config)
	// JobStore wraps the jobs store (fault injection in tests).
	JobStore func(jobs.Store) jobs.Store
	// Fetch adds options to the input fetcher (tests allow loopback).
	LoopbackFetch bool
}
