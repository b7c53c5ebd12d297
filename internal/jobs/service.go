package jobs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelexec/modelexec/internal/apierr"
	"github.com/modelexec/modelexec/internal/auth"
	"github.com/modelexec/modelexec/internal/batch"
	"github.com/modelexec/modelexec/internal/catalog"
	"github.com/modelexec/modelexec/internal/ledger"
	"github.com/modelexec/modelexec/internal/runners"
)

// Config holds the operator's figures (DESIGN.md decision 28).
type Config struct {
	Owner            string        // this process's lease owner name
	LeaseTTL         time.Duration // a running job's lease; another process may take it after
	HeartbeatEvery   time.Duration
	SweepEvery       time.Duration
	ModelConcurrency int               // jobs one process runs at once per model
	InFlight         map[auth.Plan]int // jobs an account may have in flight, per plan
	MaxAttempts      int               // runs of one job before it fails (crash recovery)
	Concurrency      map[string]int    // per-model override of ModelConcurrency
	// Runs says this process runs jobs (the worker role). Without it Submit never claims a
	// local slot: it charges and inserts the job as a hand-off a worker's sweep starts, and
	// Run does no background work (no process renews a lease it does not hold).
	Runs bool
	// HandOffWait is how long a hand-off of a model that refuses a queue waits for a worker
	// before it fails request_timeout, refunded (processes without Runs only).
	HandOffWait time.Duration
	// PollEvery, when set, makes Run look for hand-offs at that interval besides the sweep: a
	// worker that serves no surface is told of no submit, so it looks.
	PollEvery time.Duration
	// SubmitBatch and SettleBatch configure the submit and the settle batchers (internal/batch).
	SubmitBatch batch.Config
	SettleBatch batch.Config
}

// DefaultConfig is the configuration as shipped.
func DefaultConfig() Config {
	return Config{
		Owner: "proc_" + randomHex(6), LeaseTTL: 15 * time.Second, HeartbeatEvery: 5 * time.Second, SweepEvery: time.Second,
		ModelConcurrency: 4, MaxAttempts: 3, Runs: true, HandOffWait: 30 * time.Second,
		InFlight:    map[auth.Plan]int{auth.Free: 0, auth.Pro: 10, auth.Max: 25, auth.Ultimate: 50},
		SubmitBatch: batch.DefaultConfig(), SettleBatch: batch.DefaultConfig(),
	}
}

// EnvFunc gives a runner its environment for one job.
type EnvFunc func(j Job, report runners.Reporter) runners.Env

// Service runs the job state machine.
type Service struct {
	store   Store
	ledger  *ledger.Service
	catalog *catalog.Catalog
	runners runners.Registry
	env     EnvFunc
	now     func() time.Time
	log     *slog.Logger
	quiet   quietWarn // warnings of the background loops that repeat while a dependency is down
	cfg     Config
	rand    func() uint32

	broker  *broker
	seats   Seats
	finals  *finals                        // recently settled jobs (settled.go)
	submits *batch.Batcher[*pendingSubmit] // submits charged together (submit.go)
	closes  *batch.Batcher[*closing]       // settlements that move no credit, written together (settle.go)

	recorder Recorder // nil: settled jobs are logged only
	notifier Notifier // nil: one process
	handoffs chan struct{}

	mu       sync.Mutex
	slots    map[string]int         // running jobs per model in this process
	running  map[string]*runningJob // by request id
	stopping bool
	quiesced atomic.Bool // Quiesce: take no work from the database
	wg       sync.WaitGroup
	base     context.Context
	wake     chan struct{}
}

type runningJob struct {
	job      Job
	cancel   context.CancelCauseFunc
	mu       sync.Mutex
	logs     []LogLine
	progress float64
	dirty    bool
	// flushing: a write of the progress for other processes is scheduled; flushedAt: the
	// last one (or the start), so they come at most every ProgressEvery (progress.go).
	flushing  bool
	flushedAt time.Time
	// done is closed when the run is over, after its settlement (if any) was committed;
	// settled is then the job as committed (nil when the settlement failed or the process
	// stopped): a held request reads it here instead of from the database (settled.go).
	done    chan struct{}
	settled *Job
}

// Deps is what the engine is built over.
type Deps struct {
	Store   Store
	Ledger  *ledger.Service // every credit a job moves goes through it, in the job's transaction
	Catalog *catalog.Catalog
	Runners runners.Registry
	Env     EnvFunc
	Seats   Seats
	Now     func() time.Time
	Log     *slog.Logger
	// Notifier carries hand-offs and job changes between processes (notify.go); nil in a
	// service of one process.
	Notifier Notifier
}

// New wires the engine. Call Run to start its background work.
func New(d Deps, cfg Config) *Service {
	s := &Service{store: d.Store, ledger: d.Ledger, catalog: d.Catalog, runners: d.Runners, env: d.Env, now: d.Now, log: d.Log, cfg: cfg,
		seats: d.Seats, rand: randomUint32, broker: newBroker(), finals: newFinals(), slots: map[string]int{}, running: map[string]*runningJob{},
		base: context.Background(), wake: make(chan struct{}, 1), notifier: d.Notifier, handoffs: make(chan struct{}, 1)}
	s.submits = batch.New(cfg.SubmitBatch, func(p *pendingSubmit) string { return p.base.AccountID + "\x00" + p.base.IdempotencyKey }, s.writeSubmits)
	s.closes = batch.New(cfg.SettleBatch, func(c *closing) string { return c.job.AccountID + "\x00" + c.job.ID }, s.writeCloses)
	return s
}

// Seats returns the held-connection seats.
func (s *Service) Seats() Seats { return s.seats }

// Catalog returns the catalogue in force.
func (s *Service) Catalog() *catalog.Catalog { return s.catalog }

var idemPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,64}$`)

// ValidIdempotencyKey reports whether k matches [A-Za-z0-9._-]{1,64}.
func ValidIdempotencyKey(k string) bool { return idemPattern.MatchString(k) }

// SubmitRequest is one submit, its options already parsed by the transport.
type SubmitRequest struct {
	// Principal is the caller. A submit that succeeds has confirmed its standing (its charge's
	// transaction judged the key and account, a replay read them): Submit does not write on it,
	// its caller knows from the nil error.
	Principal      *auth.Principal
	Model          *catalog.Model
	Body           []byte
	IdempotencyKey string // empty: minted
	// JobID is the new job's id, minted by NewJobID for a caller that must know it before the
	// submit (a stream subscribes to the job's text first); empty: minted here.
	JobID          string
	Priority       Priority
	MaxQueueLength *int
	RequestTimeout time.Duration // 0: the product's deadline
	CoveredOnly    bool
	Webhook        string
}

// SubmitResult is the outcome of a submit.
type SubmitResult struct {
	Job        Job
	Replayed   bool
	Unresolved bool // dispatch could not be confirmed: 202, the charge stands
	Warnings   []catalog.Warning
	Balance    int64 // credits_remaining
}

// Submit validates and quotes a request, then charges and records it in one transaction
// (chargeSubmits): the ledger judges who pays (a pass, or credits within the key's ceiling and
// the balance), and the job takes a runner's slot, a place in the queue, or is handed off.
//
// An idempotency key belongs to the account (DESIGN 25): it answers the first request made with
// it, whatever product, model or body is sent later, and the job keeps the first request's id.
// That id is minted fresh, never built from the key (DESIGN 37): two accounts sending the same
// key make two jobs with two ids.
func (s *Service) Submit(ctx context.Context, r SubmitRequest) (SubmitResult, error) {
	m, p := r.Model, r.Principal
	now := s.now()
	requestID := newRequestID()
	key := r.IdempotencyKey
	minted := key == ""
	if minted {
		key = MintedKey(requestID)
	} else if res, ok, err := s.replay(ctx, p, key, now); ok || err != nil {
		return res, err
	}
	in, warnings, err := m.Validate(r.Body, now, s.rand)
	if err != nil {
		return SubmitResult{}, inputError(err)
	}
	q, err := m.Quote(in)
	if err != nil {
		return SubmitResult{}, inputError(err)
	}
	id := r.JobID
	switch {
	case id != "":
	case minted:
		id = m.Product + "_" + key // <product>_<minted key> (JOB-29), unique as its request id is
	default:
		id = NewJobID(m.Product)
	}
	job := Job{ID: id, AccountID: p.Account.ID, KeyID: p.Key.ID, RequestID: requestID, Model: m.Slug,
		Product: m.Product, IdempotencyKey: key, Input: in.JSON, Quoted: q.Credits, Priority: r.Priority, Webhook: r.Webhook,
		Dispatched: true, CreatedAt: now}
	if job.Priority == "" {
		job.Priority = Normal
	}
	ps := s.submit(ctx, r, job, true)
	if errors.Is(ps.err, errAlone) {
		ps = s.submit(ctx, r, job, false)
	}
	if ps.err != nil {
		return s.refused(ctx, p, key, minted, ps.err)
	}
	res := SubmitResult{Job: ps.job, Warnings: warnings, Balance: ps.balance}
	if !ps.claimed {
		s.kick()
		if !s.cfg.Runs {
			s.notify(HandOff, m.Slug)
		}
		return res, nil
	}
	if err := s.start(ps.job); err != nil {
		// The process is stopping: the charge stands and the job is picked up again when its
		// lease runs out (202 dispatch_unresolved).
		s.releaseSlot(m.Slug)
		res.Unresolved = true
		res.Job.Status = InQueue
		res.Job.Dispatched = false
	}
	return res, nil
}

// replay answers a submit under an idempotency key the account used before (ok), without a
// transaction: a principal the gate took from its cache is confirmed here, so a revoked key
// replays nothing (KEY-25).
func (s *Service) replay(ctx context.Context, p *auth.Principal, key string, now time.Time) (SubmitResult, bool, error) {
	prev, err := s.store.JobByIdempotencyKey(ctx, p.Account.ID, key)
	if errors.Is(err, ErrNotFound) {
		return SubmitResult{}, false, nil
	}
	if err != nil {
		return SubmitResult{}, false, apierr.New(apierr.JobReadFailed).Wrap(err)
	}
	if p.Unconfirmed {
		if err := s.ledger.Standing(ctx, p.Account.ID, p.Key.ID, now); err != nil {
			return SubmitResult{}, false, err
		}
	}
	return SubmitResult{Job: prev, Replayed: true}, true, nil
}

// admissionRetrySeconds is the Retry-After of a submit whose admission check could not run.
const admissionRetrySeconds = 1

// refused answers a submit its transaction refused or failed: a refusal as it is, a key taken
// by a concurrent submit as that submit's replay, and a failure with the catalogue's code
// (nothing was written: the charge, if any, was rolled back with the job).
func (s *Service) refused(ctx context.Context, p *auth.Principal, key string, minted bool, err error) (SubmitResult, error) {
	_, refusal := apierr.As(err)
	if !minted && (refusal || errors.Is(err, ErrDuplicate)) {
		// A concurrent submit under the same key was written first: its insert took the key
		// (ErrDuplicate), or this refusal was judged on what it took (the runner's slot, the
		// credits, a seat in flight). The key answers that request (JOB-28), once its standing
		// is read afresh, so that a refusal of the key or its account is never a replay.
		if prev, e := s.store.JobByIdempotencyKey(ctx, p.Account.ID, key); e == nil &&
			s.ledger.Standing(ctx, p.Account.ID, p.Key.ID, s.now()) == nil {
			return SubmitResult{Job: prev, Replayed: true}, nil
		}
	}
	if refusal {
		return SubmitResult{}, err
	}
	if errors.Is(err, ErrDuplicate) || errors.Is(err, ErrNotRecorded) {
		return SubmitResult{}, apierr.New(apierr.JobRecordFailed).Wrap(err)
	}
	if errors.Is(err, errAdmission) {
		e := apierr.Newf(apierr.ServiceBusy, "The admission check could not run just now; nothing was charged. Send the request again shortly with the same idempotency key.").
			WithRetryAfter(admissionRetrySeconds).WithStatus(503)
		return SubmitResult{}, e.Wrap(err)
	}
	return SubmitResult{}, apierr.New(apierr.CreditReserveFailed).Wrap(err)
}

// inputError maps the catalogue's refusals to the error catalogue.
func inputError(err error) error {
	var inv *catalog.InvalidError
	var np *catalog.NotPricedError
	switch {
	case errors.As(err, &inv):
		e := apierr.New(apierr.InvalidInput)
		for _, v := range inv.Violations {
			e.WithDetail(apierr.Violation{Loc: locAny(v.Loc), Msg: v.Msg, Type: v.Type})
		}
		e.WithOmitted(inv.Omitted) // the validator stopped collecting at its cap
		if len(inv.Violations) > 0 {
			e.Message = fmt.Sprintf("%s: %s", joinLoc(inv.Violations[0].Loc), inv.Violations[0].Msg)
		}
		return e
	case errors.As(err, &np):
		return apierr.Newf(apierr.BandNotPriced, "%s", np.Message).With("message", np.Message)
	}
	return err
}

func locAny(loc []string) []any {
	out := make([]any, len(loc))
	for i, l := range loc {
		out[i] = l
	}
	return out
}

func joinLoc(loc []string) string {
	s := ""
	for i, l := range loc {
		if i > 0 {
			s += "."
		}
		s += l
	}
	return s
}

// Get reads a job by request id for its own account (not_found otherwise, the same answer
// as a missing one).
func (s *Service) Get(ctx context.Context, accountID, requestID string) (Job, error) {
	if j, ok := s.finals.get(requestID); ok {
		if j.AccountID != accountID {
			return Job{}, apierr.New(apierr.NotFound)
		}
		return j, nil
	}
	j, err := s.store.JobByRequest(ctx, requestID)
	if errors.Is(err, ErrNotFound) || (err == nil && j.AccountID != accountID) {
		return Job{}, apierr.New(apierr.NotFound)
	}
	if err != nil {
		return Job{}, apierr.New(apierr.JobReadFailed).Wrap(err)
	}
	s.finals.keep(j)
	return s.live(j), nil
}

// GetByID reads a job by its job id within an account.
func (s *Service) GetByID(ctx context.Context, accountID, id string) (Job, error) {
	j, err := s.store.Job(ctx, accountID, id)
	if errors.Is(err, ErrNotFound) {
		return Job{}, apierr.New(apierr.NotFound)
	}
	if err != nil {
		return Job{}, apierr.New(apierr.JobReadFailed).Wrap(err)
	}
	return s.live(j), nil
}

// GetByKey reads the account's job submitted under an idempotency key, whatever its product.
func (s *Service) GetByKey(ctx context.Context, accountID, key string) (Job, error) {
	j, err := s.store.JobByIdempotencyKey(ctx, accountID, key)
	if errors.Is(err, ErrNotFound) {
		return Job{}, apierr.New(apierr.NotFound)
	}
	if err != nil {
		return Job{}, apierr.New(apierr.JobReadFailed).Wrap(err)
	}
	return s.live(j), nil
}

// List reads an account's jobs, newest first.
func (s *Service) List(ctx context.Context, accountID string, before time.Time, limit int) ([]Job, error) {
	js, err := s.store.ListJobs(ctx, accountID, before, limit)
	if err != nil {
		return nil, apierr.New(apierr.JobReadFailed).Wrap(err)
	}
	return js, nil
}

// QueuePosition is the number of requests ahead of a queued job. A read that fails because
// its caller went away (a client that hung up while it waited) is not the store's failure and
// is not logged.
func (s *Service) QueuePosition(ctx context.Context, j Job) int {
	n, err := s.store.QueuePosition(ctx, j)
	if err != nil && ctx.Err() == nil {
		s.quiet.warn(s.log, s.now(), "queue position", "err", err)
	}
	return n
}

// live overlays the in-memory logs and progress of a job running in this process.
func (s *Service) live(j Job) Job {
	s.mu.Lock()
	rj := s.running[j.RequestID]
	s.mu.Unlock()
	if rj != nil && !j.Settled() {
		rj.mu.Lock()
		j.Logs = append([]LogLine(nil), rj.logs...)
		j.Progress = rj.progress
		rj.mu.Unlock()
	}
	return j
}

// Wait holds until the job settles or timeout passes; it answers the latest job and whether
// the wait ran out.
func (s *Service) Wait(ctx context.Context, accountID, requestID string, timeout time.Duration) (Job, bool, error) {
	ch, unsub := s.broker.subscribe(requestID)
	defer unsub()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	poll := time.NewTicker(500 * time.Millisecond)
	defer poll.Stop()
	if j, timedOut, ok, err := s.waitRunning(ctx, accountID, requestID, deadline.C, poll.C); ok {
		return j, timedOut, err
	}
	for {
		j, err := s.Get(ctx, accountID, requestID)
		if err != nil {
			return Job{}, false, err
		}
		if j.Settled() {
			return j, false, nil
		}
		select {
		case <-ctx.Done():
			return j, true, ctx.Err()
		case <-deadline.C:
			return j, true, nil
		case <-ch:
		case <-poll.C:
		}
	}
}

// Changes returns a channel that is signalled when the job changes in this process, and a
// function to stop listening. Streams also poll.
func (s *Service) Changes(requestID string) (<-chan struct{}, func()) {
	return s.broker.subscribe(requestID)
}

// NewJobID mints a job id of product: the product, then a time-ordered random reference, so
// that ids are unique across accounts whatever idempotency key the caller sent.
func NewJobID(product string) string { return product + "_k" + newRequestID() }

// newRequestID is a version 7 UUID: the first 48 bits are the time in milliseconds, the rest
// random. Ids made in order sit side by side in every index that holds them, so the jobs of one
// COMMIT write a few index pages rather than one page each, and an index of millions of ids
// takes its inserts at its end instead of on pages long out of the cache.
func newRequestID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	ms := uint64(time.Now().UnixMilli())
	b[0], b[1], b[2], b[3], b[4], b[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
	b[6] = (b[6] & 0x0f) | 0x70
	b[8] = (b[8] & 0x3f) | 0x80
	h := hex.EncodeToString(b)
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func randomUint32() uint32 {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
